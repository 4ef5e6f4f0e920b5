package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kci-dev/kci/wire"
)

// Validation thresholds.
const (
	// minDelivered is the share of the planned packets lo must carry in
	// the window; less means the guest could not keep up and the CPU
	// numbers describe an overloaded machine.
	minDelivered = 0.9
	// stallFraction: a second below this share of the median second is a
	// stall (the user's bimodal runs).
	stallFraction = 0.5
)

// withNsPerPkt sets NsPerPkt on each program: run_time_ns over the
// variant's packet count, which is the largest run_cnt among its sched_cls
// programs (every packet passes egress and ingress once), so reapers that
// run per skb are weighted by packets. A program that never ran costs 0.
func withNsPerPkt(progs []wire.ProgStat) []wire.ProgStat {
	var ref uint64
	for _, p := range progs {
		if p.Type == "sched_cls" && p.RunCnt > ref {
			ref = p.RunCnt
		}
	}
	out := slices.Clone(progs)
	for i := range out {
		out[i].NsPerPkt = 0
		if ref > 0 && out[i].RunCnt > 0 {
			out[i].NsPerPkt = float64(out[i].RunTimeNs) / float64(ref)
		}
	}
	return out
}

// coarseClock says why the window's BPF stats cannot be trusted: BPF
// stats time programs with sched_clock(), which falls back to jiffies when
// the guest cannot use its TSC (a TCG guest whose TSC calibration failed
// on a busy host): every run_time_ns is then a multiple of a tick, and
// programs that ran thousands of times may show 0 ns.
func coarseClock(progs []wire.ProgStat) string {
	var ran, nonzero int
	for _, p := range progs {
		if p.RunCnt == 0 {
			continue
		}
		ran++
		if p.RunTimeNs == 0 && p.RunCnt >= 100 {
			return fmt.Sprintf("BPF stats clock too coarse: %s ran %d times in 0 ns (sched_clock at tick resolution?)", p.Name, p.RunCnt)
		}
		if p.RunTimeNs != 0 {
			nonzero++
			if p.RunTimeNs%1_000_000 != 0 {
				return ""
			}
		}
	}
	if nonzero > 0 {
		return fmt.Sprintf("BPF stats clock too coarse: every run_time_ns of %d programs is a whole number of milliseconds (sched_clock at tick resolution?)", ran)
	}
	return ""
}

// measurement is what validate judges.
type measurement struct {
	progs      []wire.ProgStat // BPF stats over the window
	rule       rule
	counters   map[string]uint64 // stats map totals since attach, after the traffic drained
	lo         wire.LoStat       // lo delta over the window
	perSecond  []uint64          // packets received per second of the window
	plannedPPS float64           // all pairs together
	window     time.Duration
}

// validate applies the user's rules; a non-empty reason means the
// repetition must not be averaged in.
func validate(m measurement) (bool, string) {
	var why []string
	c := m.counters
	eg, in := c["EGRESS"], c["INGRESS"]
	if eg == 0 && m.rule != ruleNone {
		why = append(why, "no packet counted at egress")
	}
	switch m.rule {
	case ruleFloor:
		if in != eg {
			why = append(why, fmt.Sprintf("INGRESS %d != EGRESS %d", in, eg))
		}
	case ruleExt:
		if f := c["FOUND"]; f != in || in != eg {
			why = append(why, fmt.Sprintf("FOUND %d, INGRESS %d, EGRESS %d: the extension was not found on every packet%s",
				f, in, eg, nonzero(c, "CREATE_FAIL", "FIND_FAIL", "SLICE_FAIL", "BADMAGIC")))
		}
	case ruleReapExact:
		// Every entry is written at egress or copied to a clone of an
		// armed skb (skb_copy), and must be reaped exactly once.
		if r, cp := c["FREE_REAPED"], c["COPY"]; r != eg+cp {
			what := fmt.Sprintf("EGRESS %d", eg)
			if cp != 0 {
				what = fmt.Sprintf("EGRESS %d + COPY %d", eg, cp)
			}
			why = append(why, fmt.Sprintf("FREE_REAPED %d != %s: entries not reaped exactly once", r, what))
		}
		if u := c["UPDATE_ERROR"]; u != 0 {
			why = append(why, fmt.Sprintf("UPDATE_ERROR %d", u))
		}
	case ruleReapBound:
		if r, cp := c["FREE_REAPED"], c["COPY"]; r > eg+cp {
			why = append(why, fmt.Sprintf("FREE_REAPED %d > EGRESS %d + COPY %d: reaped more than was written", r, eg, cp))
		}
	}
	if bad := nonzeroLo(m.lo); bad != "" {
		why = append(why, "lo: "+bad)
	}
	if planned := m.plannedPPS * m.window.Seconds(); planned > 0 && float64(m.lo.RxPackets) < minDelivered*planned {
		why = append(why, fmt.Sprintf("lo received %d packets in the window, %.0f planned (under %.0f%%): the guest did not keep up",
			m.lo.RxPackets, planned, 100*minDelivered))
	}
	if s := stall(m.perSecond); s != "" {
		why = append(why, s)
	}
	if s := coarseClock(m.progs); s != "" {
		why = append(why, s)
	}
	if len(why) > 0 {
		return false, strings.Join(why, "; ")
	}
	return true, ""
}

func nonzero(c map[string]uint64, names ...string) string {
	var parts []string
	for _, n := range names {
		if c[n] != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", n, c[n]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func nonzeroLo(l wire.LoStat) string {
	var parts []string
	for _, f := range []struct {
		name string
		v    uint64
	}{{"rx_errors", l.RxErrors}, {"tx_errors", l.TxErrors}, {"rx_dropped", l.RxDropped}, {"tx_dropped", l.TxDropped}} {
		if f.v != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", f.name, f.v))
		}
	}
	return strings.Join(parts, ", ")
}

// stall finds a second well below the median second.
func stall(series []uint64) string {
	if len(series) == 0 {
		return "no per-second packet samples"
	}
	sorted := slices.Clone(series)
	slices.Sort(sorted)
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	for i, v := range series {
		if float64(v) < stallFraction*float64(med) {
			return fmt.Sprintf("stall: second %d of the window had %d packets, median %d", i+1, v, med)
		}
	}
	return ""
}
