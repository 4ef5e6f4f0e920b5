package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/kci-dev/kci/wire"
)

// The guest's Cost of a window. The context accountant (acct.go) is the
// primary measurement: every ns of the window by context, the traffic's
// datagrams in that same window; the host's whole-path is its non-idle
// time but the agent's own threads (their work follows the timing, not
// the variant), over those datagrams. Cost also keeps the idle clock's
// busy time, the fallback when the accountant cannot run: /proc/stat's
// busy columns count in USER_HZ ticks (10 ms), ~1 µs per packet over a
// 2 s icount window, far coarser than the programs; the tick-sched idle
// clock behind them (idle_sleeptime, stopped at every interrupt entry)
// is kept in ns in /proc/timer_list; busy = (now_B − now_A) − Δidle −
// Δiowait per CPU, each CPU read by a thread pinned to it so its idle
// clock is current. /proc/stat is the last fallback (tick resolution).
//
// The Go collector is off while the traffic lives (quiesceGC): a
// collection landing in some windows and not others was ~1 µs/pkt.

// userHZ is /proc/stat's tick (USER_HZ is 100 on every architecture kci
// boots).
const userHZ = 100

const tickNs = 1_000_000_000 / userHZ

// idleClock is one CPU's tick-sched clock as /proc/timer_list shows it.
type idleClock struct {
	cpu                  int
	now, idle, iowait    uint64 // ns
	haveIdle, haveIowait bool
}

// parseTimerList reads "now at N nsecs" and, per "cpu: N" section, the
// .idle_sleeptime and .iowait_sleeptime lines.
func parseTimerList(b []byte) ([]idleClock, error) {
	var now uint64
	var haveNow bool
	var out []idleClock
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "now at "):
			f := strings.Fields(line)
			v, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/timer_list: %q: %w", line, err)
			}
			now, haveNow = v, true
		case strings.HasPrefix(line, "cpu: "):
			n, err := strconv.Atoi(strings.TrimSpace(line[len("cpu: "):]))
			if err != nil {
				return nil, fmt.Errorf("/proc/timer_list: %q: %w", line, err)
			}
			out = append(out, idleClock{cpu: n, now: now})
		case strings.HasPrefix(line, ".idle_sleeptime") || strings.HasPrefix(line, ".iowait_sleeptime"):
			if len(out) == 0 {
				continue
			}
			v, err := nsField(line)
			if err != nil {
				return nil, err
			}
			c := &out[len(out)-1]
			if strings.HasPrefix(line, ".idle") {
				c.idle, c.haveIdle = v, true
			} else {
				c.iowait, c.haveIowait = v, true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("/proc/timer_list: %w", err)
	}
	if !haveNow {
		return nil, fmt.Errorf("/proc/timer_list: no \"now at\" line")
	}
	return out, nil
}

// nsField parses "  .name : 123 nsecs".
func nsField(line string) (uint64, error) {
	_, rest, ok := strings.Cut(line, ":")
	f := strings.Fields(rest)
	if !ok || len(f) == 0 {
		return 0, fmt.Errorf("/proc/timer_list: %q: no value", line)
	}
	v, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/timer_list: %q: %w", line, err)
	}
	return v, nil
}

// readIdleClocks reads every CPU's idle clock, each from a thread pinned
// to that CPU (its own entry is then current: an idle CPU's clock lags
// until it wakes), and pins the thread back to home. ok is false when the
// kernel shows no idle clock (no NO_HZ_COMMON): callers fall back to
// /proc/stat.
func readIdleClocks(ncpu, home int) (clocks []idleClock, ok bool, err error) {
	defer func() {
		if perr := pinThread(home); perr != nil && err == nil {
			err = perr
		}
	}()
	for cpu := 0; cpu < ncpu; cpu++ {
		if err := pinThread(cpu); err != nil {
			return nil, false, err
		}
		b, err := os.ReadFile("/proc/timer_list")
		if err != nil {
			return nil, false, nil // no timer_list: the tick fallback
		}
		all, err := parseTimerList(b)
		if err != nil {
			return nil, false, err
		}
		c, found := findClock(all, cpu)
		if !found || !c.haveIdle {
			return nil, false, nil
		}
		clocks = append(clocks, c)
	}
	return clocks, true, nil
}

func findClock(all []idleClock, cpu int) (idleClock, bool) {
	for _, c := range all {
		if c.cpu == cpu {
			return c, true
		}
	}
	return idleClock{}, false
}

// idleBusy is Σ over CPUs of (window, busy) from two idle-clock
// snapshots. A CPU missing from either side is an error: the sum would
// silently cover fewer CPUs.
func idleBusy(a, b []idleClock) (window, busy uint64, err error) {
	if len(a) != len(b) {
		return 0, 0, fmt.Errorf("idle clocks: %d CPUs before the window, %d after", len(a), len(b))
	}
	for i := range a {
		if a[i].cpu != b[i].cpu {
			return 0, 0, fmt.Errorf("idle clocks: cpu %d before, cpu %d after", a[i].cpu, b[i].cpu)
		}
		if b[i].now < a[i].now || b[i].idle < a[i].idle || b[i].iowait < a[i].iowait {
			return 0, 0, fmt.Errorf("idle clocks: cpu %d went backwards", a[i].cpu)
		}
		w := b[i].now - a[i].now
		idle := (b[i].idle - a[i].idle) + (b[i].iowait - a[i].iowait)
		if idle > w {
			idle = w // the idle clock and "now" are read a few ns apart
		}
		window += w
		busy += w - idle
	}
	return window, busy, nil
}

// tickBusy is the /proc/stat fallback: Σ over CPUs of (window, busy,
// softirq) in ns, from ticks.
func tickBusy(a, b []cpuTimes) (window, busy, soft uint64) {
	prev := map[int]cpuTimes{}
	for _, t := range a {
		prev[t.cpu] = t
	}
	for _, t := range b {
		p, ok := prev[t.cpu]
		if !ok {
			continue
		}
		total := t.total() - p.total()
		idle := (t.idle - p.idle) + (t.iowait - p.iowait)
		window += total * tickNs
		busy += (total - idle) * tickNs
		soft += (t.soft - p.soft) * tickNs
	}
	return window, busy, soft
}

// costOf assembles the window's Cost. clocks are nil when the kernel has
// no idle clock.
func costOf(clkA, clkB []idleClock, statA, statB []cpuTimes, progs []wire.ProgStat, lo wire.LoStat) (*wire.Cost, error) {
	c := &wire.Cost{}
	tw, tb, soft := tickBusy(statA, statB)
	c.SoftirqNs = soft
	if clkA != nil && clkB != nil {
		w, b, err := idleBusy(clkA, clkB)
		if err != nil {
			return nil, err
		}
		c.IdleSource, c.ResolutionNs, c.CPUWindowNs, c.BusyNs = wire.IdleTimerList, 1, w, b
	} else {
		c.IdleSource, c.ResolutionNs, c.CPUWindowNs, c.BusyNs = wire.IdleProcStat, tickNs, tw, tb
	}
	for _, p := range progs {
		c.BPFNs += p.RunTimeNs
		if p.Type == "sched_cls" && p.RunCnt > c.Packets {
			c.Packets = p.RunCnt
		}
	}
	c.PacketSource = wire.PacketsRefCnt
	if len(progs) == 0 {
		c.Packets, c.PacketSource = lo.TxPackets, wire.PacketsLoTx
	}
	return c, nil
}
