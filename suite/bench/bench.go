// Package bench is the guest's benchmark: each variant's programs loaded
// and attached, the pinned UDP traffic driven through them, and one
// window measured (BPF stats, the whole path's cost, the context
// accountant, the plugin's exact-count markers) and validated against
// the variant's own counters.
package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sort"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/kci-dev/kci/bpf"
	"github.com/kci-dev/kci/suite/attach"
	"github.com/kci-dev/kci/suite/caps"
	"github.com/kci-dev/kci/suite/netns"
	"github.com/kci-dev/kci/wire"
)

// Setup is what the runner gives the bench for one run.
type Setup struct {
	Kernel *btf.Spec // the running kernel's BTF
	Caps   wire.Caps // what the capability probe found
	NCPU   int
	Logf   func(format string, args ...any) // progress lines
	// Profile, when set, has each variant's window sampled and receives
	// the profile (profile.go).
	Profile func(wire.Profile) error
}

// Env is what every variant of one run shares.
type Env struct {
	kernel *btf.Spec
	caps   wire.Caps
	ncpu   int
	logf   func(format string, args ...any)
	// profile, when set, samples each variant's window and hands the
	// profile on (profile.go).
	profile func(wire.Profile) error
	// acct is the context accountant (nil: it could not run; acctNote
	// says why, or which interrupts it cannot see).
	acct     *accountant
	acctNote string
	// marks numbers the plugin's exact-count windows (mark.go);
	// observer is where the accountant's programs were JIT'd.
	marks    marker
	observer []wire.CodeRange
}

// Start makes the run's environment and starts the context accountant,
// which stays attached until Close (startAcct says why).
func Start(s Setup) *Env {
	env := &Env{kernel: s.Kernel, caps: s.Caps, ncpu: s.NCPU, logf: s.Logf, profile: s.Profile}
	startAcct(env)
	return env
}

// Close releases what the run's windows shared.
func (env *Env) Close() error {
	if env.acct == nil {
		return nil
	}
	return env.acct.close()
}

// WithDefaults fills the zero fields of p that have no meaningful zero
// from wire.DefaultBench.
func WithDefaults(p wire.BenchParams) wire.BenchParams {
	d := wire.DefaultBench()
	if p.Pairs == 0 {
		p.Pairs = d.Pairs
	}
	if p.PayloadSize == 0 {
		p.PayloadSize = d.PayloadSize
	}
	if p.RateMbit == 0 {
		p.RateMbit = d.RateMbit
	}
	if p.Window == 0 {
		p.Window = d.Window
	}
	return p
}

// drainDelay lets packets in flight reach the servers (and skbs their
// reapers) before the totals are read.
const drainDelay = 200 * time.Millisecond

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Run measures one variant. The error is for the machinery (no
// namespace, no sockets); a variant that cannot run, or ran but does not
// validate, says so in the result. A variant without an object (none)
// runs the same traffic with nothing attached: the whole-path baseline.
func (env *Env) Run(ctx context.Context, v Variant, p wire.BenchParams, name string) (wire.VariantResult, error) {
	res := wire.VariantResult{Variant: name}
	var coll *ebpf.Collection
	var spec *ebpf.CollectionSpec
	if v.object != "" {
		var ok bool
		if coll, spec, ok = loadVariant(env, v, &res); !ok {
			return res, nil
		}
		defer coll.Close()
	}

	ns, err := netns.New("kci-bench")
	if err != nil {
		return res, fmt.Errorf("bench %s: %w", name, err)
	}
	defer ns.Close()

	var names []string
	var atts []attach.Attachment
	defer func() { _ = attach.DetachAll(atts) }()
	if coll != nil {
		res.Attach = "clsact"
		if env.caps.TCX {
			res.Attach = "tcx"
		}
		names = sortedKeys(coll.Programs)
		if atts, res.Invalid = attachVariant(env, ns, spec, coll, names); res.Invalid != "" {
			return res, nil
		}
	}

	w, err := drive(ctx, env, ns, coll, names, p, name)
	if err != nil {
		return res, err
	}
	var counters map[string]uint64
	if coll != nil {
		if counters, err = readCounters(coll.Maps[bpf.StatsMap], bpf.Counters(v.object)); err != nil {
			return res, fmt.Errorf("bench %s: %w", name, err)
		}
	}
	if err := attach.DetachAll(atts); err != nil {
		return res, fmt.Errorf("bench %s: detach: %w", name, err)
	}
	atts = nil
	record(&res, w, counters, v, p)
	res.Observer = env.observer
	return res, nil
}

// drive runs the variant's traffic: servers, then clients, the warm-up,
// the measured window (profiled when asked), and the drain, so the
// counters read afterwards hold every packet the window's flows sent.
func drive(ctx context.Context, env *Env, ns *netns.NS, coll *ebpf.Collection, names []string, p wire.BenchParams, name string) (window, error) {
	acct := env.acct
	defer raisePs(2*p.Pairs + 4)()
	// The collector stays off while the real-time traffic threads live:
	// its stop-the-world would wait on goroutines that never yield
	// (rawsys.go), and its stack scans are what a real-time thread must
	// not wait on.
	defer quiesceGC()()
	tr, err := newTraffic(ns, p, env.ncpu)
	if err != nil {
		return window{}, fmt.Errorf("bench %s: %w", name, err)
	}
	defer func() { _ = tr.close() }()
	tr.startServers()
	if err := sleepCtx(ctx, p.ServerLead); err != nil {
		return window{}, err
	}
	// From here to the window's end the plugin's cache model runs: the
	// warm-up fills its caches with this variant's traffic.
	env.marks.arm()
	tr.startClients()
	if err := sleepCtx(ctx, p.Warmup); err != nil {
		return window{}, err
	}
	if acct != nil {
		if err := acct.track(tr.threads()); err != nil {
			return window{}, fmt.Errorf("bench %s: %w", name, err)
		}
	}
	stopProfile := profileWindow(env, p, name)
	w, err := measureWindow(ctx, env, ns, edges{coll, names, acct}, tr, p)
	stopProfile()
	if err != nil {
		return window{}, fmt.Errorf("bench %s: %w", name, err)
	}
	if w.cost != nil {
		w.cost.AcctNote = env.acctNote
	}
	tr.stopClients()
	time.Sleep(drainDelay)
	if err := tr.flushDeferred(); err != nil {
		return window{}, fmt.Errorf("bench %s: %w", name, err)
	}
	if err := tr.close(); err != nil {
		return window{}, fmt.Errorf("bench %s: traffic: %w", name, err)
	}
	time.Sleep(drainDelay)
	return w, nil
}

// raisePs gives the Go runtime at least n Ps until restore: one for every
// traffic thread, which holds it for the traffic's life (rawsys.go), and
// some for the agent. (With the guest's one P per CPU, each thread coming
// back from read or write used to wait for the P another held, a futex
// hand-off whose count depended on timing.)
func raisePs(n int) (restore func()) {
	old := runtime.GOMAXPROCS(0)
	runtime.GOMAXPROCS(max(old, n))
	return func() { runtime.GOMAXPROCS(old) }
}

// startAcct starts the context accountant for the whole run (attaching
// and detaching it per variant would leave its teardown, trampolines
// freed after an RCU-tasks grace period, to the next variant's window);
// when it cannot run, the windows are still measured and the note says
// why.
func startAcct(env *Env) {
	a, err := startAccountant(env.kernel)
	if err != nil {
		env.logf("bench: %v", err)
		env.acctNote = err.Error()
		return
	}
	env.acct, env.acctNote = a, a.skippedNote()
	env.observer = a.jitRanges()
}

// quiesceGC collects and scavenges the agent's heap and turns the
// collector off until restore: a Go GC marks the parsed kernel BTF the
// agent holds (10+ ms of guest CPU under TCG), and one landing in some
// variants' windows and not others was the whole-path rows' lumps. The
// traffic's life allocates only the per-second samples.
func quiesceGC() (restore func()) {
	debug.FreeOSMemory()
	old := debug.SetGCPercent(-1)
	return func() { debug.SetGCPercent(old) }
}

// record puts the window's numbers in res and validates them.
func record(res *wire.VariantResult, w window, counters map[string]uint64, v Variant, p wire.BenchParams) {
	res.Programs = withNsPerPkt(w.progs)
	res.Counters = counters
	res.Lo = w.lo
	res.PerSecond = w.perSecond
	res.CPUs = w.cpus
	res.Cost = w.cost
	res.Window = w.elapsed
	res.ExactWindow = &w.exact
	if w.elapsed > 0 {
		res.PPS = float64(w.received) / w.elapsed.Seconds()
	}
	res.Valid, res.Invalid = validate(measurement{
		progs: w.progs, rule: v.rule, counters: counters, lo: w.lo, perSecond: w.perSecond,
		plannedPPS: ppsPerPair(p) * float64(p.Pairs), window: w.elapsed,
	})
}

// loadVariant loads the variant's collection, recording the verifier and
// JIT facts of every program in res.Loads; ok false means res says why
// the variant did not run (missing capability, or it would not load).
func loadVariant(env *Env, v Variant, res *wire.VariantResult) (*ebpf.Collection, *ebpf.CollectionSpec, bool) {
	if miss := caps.Missing(env.caps, v.requires); miss != "" {
		res.Skipped = miss
		// Ask the kernel too: if it loads after all, the probe is wrong.
		if spec, err := v.spec(env.kernel); err == nil {
			if coll, err := ebpf.NewCollection(spec); err == nil {
				coll.Close()
				res.Skipped = ""
				res.Invalid = "capability probe says " + miss + ", yet the programs loaded"
			}
		}
		return nil, nil, false
	}
	spec, err := v.spec(env.kernel)
	if err != nil {
		res.Invalid = fmt.Sprintf("the kernel advertises everything %s needs, yet: %v", v.name, err)
		return nil, nil, false
	}
	coll, loads, err := loadWithFacts(spec)
	res.Loads = loads
	if err != nil {
		res.LoadError = err.Error()
		res.Invalid = fmt.Sprintf("the kernel advertises everything %s needs, yet loading failed: %v", v.name, err)
		return nil, nil, false
	}
	return coll, spec, true
}

// attachVariant attaches every program; a non-empty reason means one
// would not attach.
func attachVariant(env *Env, ns *netns.NS, spec *ebpf.CollectionSpec, coll *ebpf.Collection, names []string) ([]attach.Attachment, string) {
	var atts []attach.Attachment
	for _, pn := range names {
		ps := spec.Programs[pn]
		prog := coll.Programs[pn]
		var a attach.Attachment
		var err error
		switch ps.Type {
		case ebpf.SchedCLS:
			dir := attach.Ingress
			if ps.AttachType == ebpf.AttachTCXEgress {
				dir = attach.Egress
			}
			a, err = attach.TC(ns, "lo", dir, prog, env.caps.TCX)
		case ebpf.Tracing:
			a, err = attach.Tracing(prog)
		default:
			err = fmt.Errorf("program %s: unexpected type %v", pn, ps.Type)
		}
		if err != nil {
			_ = attach.DetachAll(atts)
			return nil, fmt.Sprintf("attach %s: %v", pn, err)
		}
		atts = append(atts, a)
	}
	return atts, ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// readCounters sums the per-CPU stats array and names the keys.
func readCounters(m *ebpf.Map, names []string) (map[string]uint64, error) {
	if m == nil {
		return nil, errors.New("object has no stats map")
	}
	out := map[string]uint64{}
	for k, name := range names {
		var per []uint64
		if err := m.Lookup(uint32(k), &per); err != nil {
			return nil, fmt.Errorf("stats[%d]: %w", k, err)
		}
		var sum uint64
		for _, v := range per {
			sum += v
		}
		out[name] = sum
	}
	return out, nil
}
