package bench

import (
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/kci-dev/kci/wire"
)

// timerList is /proc/timer_list cut to the lines parseTimerList reads and
// a few around them, as 6.12 prints it.
func timerList(now uint64, idle, iowait [2]uint64) string {
	var b strings.Builder
	b.WriteString("Timer List Version: v0.10\nHRTIMER_MAX_CLOCK_BASES: 8\n")
	b.WriteString("now at " + u(now) + " nsecs\n\n")
	for cpu := 0; cpu < 2; cpu++ {
		b.WriteString("cpu: " + u(uint64(cpu)) + "\n clock 0:\n  .base:               0\n  .index:      0\n")
		b.WriteString("  .idle_calls     : 12\n  .idle_entrytime : 99 nsecs\n")
		b.WriteString("  .idle_sleeptime : " + u(idle[cpu]) + " nsecs\n")
		b.WriteString("  .iowait_sleeptime: " + u(iowait[cpu]) + " nsecs\n")
		b.WriteString("  .last_jiffies   : 4294\njiffies: 4294\n\n")
	}
	b.WriteString("Tick Device: mode:     1\n")
	return b.String()
}

func u(v uint64) string { return strconv.FormatUint(v, 10) }

func TestParseTimerList(t *testing.T) {
	cs, err := parseTimerList([]byte(timerList(5_000_000_000, [2]uint64{1_000, 2_000}, [2]uint64{7, 0})))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Fatalf("parsed %d CPUs, want 2: %+v", len(cs), cs)
	}
	want := idleClock{cpu: 1, now: 5_000_000_000, idle: 2_000, iowait: 0, haveIdle: true, haveIowait: true}
	if cs[1] != want {
		t.Errorf("cpu 1 = %+v, want %+v", cs[1], want)
	}
	if cs[0].idle != 1_000 || cs[0].iowait != 7 {
		t.Errorf("cpu 0 = %+v", cs[0])
	}
	for _, bad := range []string{"cpu: 0\n", "now at x nsecs\n", "now at 1 nsecs\ncpu: 0\n  .idle_sleeptime : x nsecs\n"} {
		if _, err := parseTimerList([]byte(bad)); err == nil {
			t.Errorf("parseTimerList(%q) = nil error", bad)
		}
	}
}

func TestIdleBusy(t *testing.T) {
	a := []idleClock{{cpu: 0, now: 1000, idle: 100}, {cpu: 1, now: 1010, idle: 200, iowait: 5}}
	// cpu0: 2000 ns window, 1500 idle → 500 busy; cpu1: 2000 ns, 1800 idle
	// + 100 iowait → 100 busy.
	b := []idleClock{{cpu: 0, now: 3000, idle: 1600}, {cpu: 1, now: 3010, idle: 2000, iowait: 105}}
	w, busy, err := idleBusy(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if w != 4000 || busy != 600 {
		t.Errorf("idleBusy = window %d busy %d, want 4000 600", w, busy)
	}
	if _, _, err := idleBusy(a, b[:1]); err == nil {
		t.Error("a CPU missing after the window: no error")
	}
	if _, _, err := idleBusy(b, a); err == nil {
		t.Error("clocks going backwards: no error")
	}
}

func TestCostOf(t *testing.T) {
	sa, err := parseProcStat([]byte(statA))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := parseProcStat([]byte(statB))
	if err != nil {
		t.Fatal(err)
	}
	progs := []wire.ProgStat{
		{Name: "e", Type: "sched_cls", RunTimeNs: 300, RunCnt: 10},
		{Name: "i", Type: "sched_cls", RunTimeNs: 200, RunCnt: 9},
		{Name: "free", Type: "tracing", RunTimeNs: 50, RunCnt: 40},
	}
	ca := []idleClock{{cpu: 0, now: 0, idle: 0}}
	cb := []idleClock{{cpu: 0, now: 10_000, idle: 4_000}}
	c, err := costOf(ca, cb, sa, sb, progs, wire.LoStat{TxPackets: 11})
	if err != nil {
		t.Fatal(err)
	}
	want := wire.Cost{IdleSource: wire.IdleTimerList, ResolutionNs: 1, CPUWindowNs: 10_000, BusyNs: 6_000,
		SoftirqNs: 10 * tickNs, BPFNs: 550, Packets: 10, PacketSource: wire.PacketsRefCnt}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("costOf = %+v, want %+v", *c, want)
	}
	// No idle clock: /proc/stat's ticks (statB − statA: 200 ticks, 65 busy),
	// and no programs: lo's packets.
	c, err = costOf(nil, nil, sa, sb, nil, wire.LoStat{TxPackets: 11})
	if err != nil {
		t.Fatal(err)
	}
	want = wire.Cost{IdleSource: wire.IdleProcStat, ResolutionNs: tickNs, CPUWindowNs: 200 * tickNs, BusyNs: 60 * tickNs,
		SoftirqNs: 10 * tickNs, Packets: 11, PacketSource: wire.PacketsLoTx}
	if !reflect.DeepEqual(*c, want) {
		t.Errorf("costOf (ticks) = %+v, want %+v", *c, want)
	}
}

func TestVerifyTime(t *testing.T) {
	log := "func#0 @0\nverification time 1234 usec\nstack depth 8\nprocessed 57 insns (limit 1000000)\n"
	if got := verifyTime(log); got != 1234 {
		t.Errorf("verifyTime = %d, want 1234", got)
	}
	if got := verifyTime("processed 57 insns"); got != 0 {
		t.Errorf("verifyTime without the line = %d", got)
	}
}
