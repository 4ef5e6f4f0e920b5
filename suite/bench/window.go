package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/kci-dev/kci/suite/netns"
	"github.com/kci-dev/kci/wire"
	"golang.org/x/sys/unix"
)

// window is what one measurement window saw.
type window struct {
	progs     []wire.ProgStat
	lo        wire.LoStat
	cpus      []wire.CPUStat
	cost      *wire.Cost
	perSecond []uint64
	received  uint64
	elapsed   time.Duration
	exact     int // the plugin's window index (mark.go)
}

// edges is what is read at the window's edges besides the kernel's own
// counters: the variant's programs and the accountant (nil: none).
type edges struct {
	coll  *ebpf.Collection
	names []string
	acct  *accountant
}

// snapshot is the counters read at one edge of the window.
type snapshot struct {
	progs  []wire.ProgStat
	stat   []cpuTimes
	lo     wire.LoStat
	clocks []idleClock // nil: no idle clock, /proc/stat's ticks instead
	acct   acctSnap
	mark   int // the exact-count window the edge opened
	// markSent is the traffic's datagrams read next to the plugin's
	// marker (ok: the accountant runs).
	markSent   uint64
	markSentOK bool
}

// takeSnapshot reads the window's counters, innermost first: the
// plugin's marker, the traffic's datagrams (with several vCPUs the others
// go on sending through every read at the edges, so the plugin's counts
// are divided by the datagrams written between the markers, MarkPackets),
// the idle clocks and the accountant (whose rows divide by its own
// window's datagrams), then the rest, outside the whole-path window.
func takeSnapshot(env *Env, ns *netns.NS, e edges, home int, before bool) (snapshot, error) {
	var s snapshot
	var err error
	clocks := func() error {
		c, ok, err := readIdleClocks(env.ncpu, home)
		if ok {
			s.clocks = c
		}
		if err == nil && e.acct != nil {
			s.acct, err = e.acct.read()
		}
		return err
	}
	sentAtMark := func() error {
		if e.acct == nil {
			return nil
		}
		var err error
		s.markSent, err = e.acct.sentNow()
		s.markSentOK = err == nil
		return err
	}
	coll, names := e.coll, e.names
	if !before {
		env.marks.end()
		if err := sentAtMark(); err != nil {
			return s, err
		}
		if err := clocks(); err != nil {
			return s, err
		}
	}
	if coll != nil {
		if s.progs, err = progStats(coll, names); err != nil {
			return s, err
		}
	}
	if s.stat, err = readProcStat(); err != nil {
		return s, err
	}
	if s.lo, err = loStats(ns); err != nil {
		return s, err
	}
	if before {
		if err = clocks(); err == nil {
			err = sentAtMark()
		}
		s.mark = env.marks.start()
	}
	return s, err
}

// measureWindow holds BPF_ENABLE_STATS open for the window only and takes
// before/after snapshots around it, sampling the received packets every
// second from a thread pinned to the sampler CPU.
func measureWindow(ctx context.Context, env *Env, ns *netns.NS, e edges, tr *traffic, p wire.BenchParams) (window, error) {
	type result struct {
		w   window
		err error
	}
	done := make(chan result, 1)
	go func() {
		var w window
		err := func() error {
			home := cpuFor([]int{p.SamplerCPU}, 0, []int{wire.DefaultBench().SamplerCPU}, env.ncpu)
			if err := pinThread(home); err != nil {
				env.logf("bench: %v", err)
			}
			stats, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
			if err != nil {
				return fmt.Errorf("BPF_ENABLE_STATS: %w", err)
			}
			defer func() { _ = stats.Close() }()
			a, err := takeSnapshot(env, ns, e, home, true)
			if err != nil {
				return err
			}
			recvA := tr.totalReceived()
			start := time.Now()
			last := recvA
			secs := int(p.Window / time.Second)
			if secs < 1 {
				secs = 1
			}
			for i := 1; i <= secs; i++ {
				if err := sleepCtx(ctx, time.Until(start.Add(time.Duration(i)*time.Second))); err != nil {
					return err
				}
				now := tr.totalReceived()
				w.perSecond = append(w.perSecond, now-last)
				last = now
			}
			w.elapsed = time.Since(start)
			b, err := takeSnapshot(env, ns, e, home, false)
			if err != nil {
				return err
			}
			_ = stats.Close()
			w.received = last - recvA
			w.exact = a.mark
			w.progs = progDelta(a.progs, b.progs)
			w.cpus = cpuDelta(a.stat, b.stat)
			w.lo = loDelta(a.lo, b.lo)
			if a.clocks == nil || b.clocks == nil {
				a.clocks, b.clocks = nil, nil
			}
			if w.cost, err = costOf(a.clocks, b.clocks, a.stat, b.stat, w.progs, w.lo); err != nil {
				return err
			}
			addContexts(w.cost, a.acct, b.acct, env.ncpu)
			if a.markSentOK && b.markSentOK {
				w.cost.MarkPackets = b.markSent - a.markSent
			}
			return nil
		}()
		done <- result{w, err}
	}()
	r := <-done
	return r.w, r.err
}

func progTypeName(t ebpf.ProgramType) string {
	switch t {
	case ebpf.SchedCLS:
		return "sched_cls"
	case ebpf.Tracing:
		return "tracing"
	case ebpf.XDP:
		return "xdp"
	}
	return t.String()
}

func progStats(coll *ebpf.Collection, names []string) ([]wire.ProgStat, error) {
	var out []wire.ProgStat
	for _, n := range names {
		p := coll.Programs[n]
		s, err := p.Stats()
		if err != nil {
			return nil, fmt.Errorf("program %s stats: %w", n, err)
		}
		out = append(out, wire.ProgStat{Name: n, Type: progTypeName(p.Type()), RunTimeNs: uint64(s.Runtime), RunCnt: s.RunCount})
	}
	return out, nil
}

func progDelta(a, b []wire.ProgStat) []wire.ProgStat {
	prev := map[string]wire.ProgStat{}
	for _, p := range a {
		prev[p.Name] = p
	}
	out := make([]wire.ProgStat, 0, len(b))
	for _, p := range b {
		q := prev[p.Name]
		p.RunTimeNs -= q.RunTimeNs
		p.RunCnt -= q.RunCnt
		out = append(out, p)
	}
	return out
}

func loStats(ns *netns.NS) (wire.LoStat, error) {
	l, err := ns.Link("lo")
	if err != nil {
		return wire.LoStat{}, err
	}
	s := l.Attrs().Statistics
	if s == nil {
		return wire.LoStat{}, errors.New("lo: no statistics from netlink")
	}
	return wire.LoStat{
		RxPackets: s.RxPackets, TxPackets: s.TxPackets,
		RxErrors: s.RxErrors, TxErrors: s.TxErrors,
		RxDropped: s.RxDropped, TxDropped: s.TxDropped,
	}, nil
}

func loDelta(a, b wire.LoStat) wire.LoStat {
	return wire.LoStat{
		RxPackets: b.RxPackets - a.RxPackets, TxPackets: b.TxPackets - a.TxPackets,
		RxErrors: b.RxErrors - a.RxErrors, TxErrors: b.TxErrors - a.TxErrors,
		RxDropped: b.RxDropped - a.RxDropped, TxDropped: b.TxDropped - a.TxDropped,
	}
}
