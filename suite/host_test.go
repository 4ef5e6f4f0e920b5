package suite

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kci-dev/kci/suite/survival"
	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/wire"
)

// recorder collects a run's events the way the host would see them.
type recorder struct {
	mu     sync.Mutex
	events []event.Event
}

func (r *recorder) emit(typ string, v any) error {
	ev, err := event.New(typ, v)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
	return nil
}

func decodeAll[T any](t *testing.T, evs []event.Event, typ string) []T {
	t.Helper()
	var out []T
	for _, e := range evs {
		if e.Type != typ {
			continue
		}
		var v T
		if err := e.Decode(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// testPlan is a test-sized run: every variant, survival on, short windows
// and a rate a 1–2 CPU TCG guest sustains.
func testPlan() wire.Plan {
	return wire.Plan{
		Sanity:   true,
		Survival: true,
		Variants: []string{"none", "cnt", "ext", "gtp", "gtpchurn", "gtplru", "hash", "lru"},
		Bench: wire.BenchParams{
			Pairs: 2, PayloadSize: 36, RateMbit: 0.25,
			ServerLead: 300 * time.Millisecond, Warmup: 700 * time.Millisecond, Window: 2 * time.Second,
			ServerCPUs: []int{0, 2, 4}, ClientCPUs: []int{1, 3, 5}, SamplerCPU: 6,
		},
	}
}

// TestHostKernelRun runs the whole suite on the machine's own kernel, as
// root, in namespaces it creates: a development check of the real BPF and
// netlink paths. The release check is the guest test (guest_test.go).
func TestHostKernelRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real BPF programs and namespaces on the host kernel: skipped in -short mode")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (CAP_BPF, CAP_NET_ADMIN, CAP_SYS_ADMIN) on the host")
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		t.Skip("host kernel has no BTF (/sys/kernel/btf/vmlinux)")
	}
	plan := testPlan()
	// The host is not the kernel under test: its debug options would
	// void numbers, not the checks here, so sanity only reports.
	plan.Sanity = false
	rec := &recorder{}
	// Since v6.18 the server's CPU hands each datagram it read back to
	// the client's, which frees it (consume_skb: hash's reaper) at its
	// next NET_RX softirq; the bench's flush after the traffic runs that
	// softirq, so hash's exact rule holds on such a host kernel too (it
	// missed the last few skbs without the flush).
	start := time.Now()
	err := Run(context.Background(), plan, rec.emit)
	t.Logf("suite ran in %s", time.Since(start).Round(time.Millisecond))
	for _, s := range decodeAll[wire.Sanity](t, rec.events, event.Sanity) {
		t.Logf("sanity: %+v", s)
	}
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	checkStockRun(t, rec.events, plan)
}

// runWant is what a run on one kernel tree must show.
type runWant struct {
	skips    map[string]string // variant -> exact skip reason; the rest must run and validate
	extCells string            // what every skb-ext cell must observe (wire.Cell.Observed): skip or survives
	// acctOptional: the kernel may refuse the context accountant (the
	// host's may forbid fentry on ksys_read); kci's own kernels must run it.
	acctOptional bool
	// xdpMetaOptional: the kernel may refuse XDP bpf_xdp_adjust_meta (a
	// sandbox host's does), skipping the xdp-meta row; kci's own kernels
	// must let it, so the probe saying otherwise there is a failure.
	xdpMetaOptional bool
}

const (
	lacksExt    = "kernel lacks kfunc bpf_dynptr_from_skb_ext"
	lacksGtp    = "kernel lacks kfunc bpf_trace_skb, tracepoint skb_free, tracepoint skb_copy"
	lacksGtpMap = lacksGtp + ", map type BPF_MAP_TYPE_RHASH"
)

// stockWant: no series, so ext and gtp* are skipped naming what is missing.
func stockWant() runWant {
	return runWant{
		skips:    map[string]string{"ext": lacksExt, "gtp": lacksGtpMap, "gtpchurn": lacksGtpMap, "gtplru": lacksGtp},
		extCells: "skip",
	}
}

// extWant: the skb extension series; its extension must survive every path.
func extWant() runWant {
	return runWant{
		skips:    map[string]string{"gtp": lacksGtpMap, "gtpchurn": lacksGtpMap, "gtplru": lacksGtp},
		extCells: "survives",
	}
}

// gtpWant: the gated tracepoint series, with the rhash map.
func gtpWant() runWant {
	return runWant{skips: map[string]string{"ext": lacksExt}, extCells: "skip"}
}

// checkStockRun checks a run on a kernel without the ext and gtp series.
func checkStockRun(t *testing.T, evs []event.Event, plan wire.Plan) {
	t.Helper()
	w := stockWant()
	w.acctOptional, w.xdpMetaOptional = true, true
	checkRun(t, evs, plan, w)
}

// checkRun checks a run's events against what its kernel must show.
func checkRun(t *testing.T, evs []event.Event, plan wire.Plan, want runWant) {
	t.Helper()
	caps := decodeAll[wire.Caps](t, evs, event.Caps)
	if len(caps) != 1 {
		t.Fatalf("%d caps events, want 1", len(caps))
	}
	b, _ := json.Marshal(caps[0])
	t.Logf("caps: %s", b)
	if !want.xdpMetaOptional && !caps[0].XDPHelpers["bpf_xdp_adjust_meta"] {
		t.Errorf("the capability probe says XDP programs may not call bpf_xdp_adjust_meta on a kernel that lets them: %v", caps[0].XDPHelpers)
	}

	cells := decodeAll[wire.Cell](t, evs, event.Cell)
	if n := survival.Size(); len(cells) != n {
		t.Errorf("%d cells, want %d", len(cells), n)
	}
	for _, c := range cells {
		t.Logf("cell %-12s %-14s expected %-8s observed %-8s pass %v  %s", c.Carrier, c.Path, c.Expected, c.Observed, c.Pass, c.Detail)
		if !c.Pass {
			t.Errorf("cell %s × %s: expected %s (%s), observed %s: %s", c.Carrier, c.Path, c.Expected, c.Reason, c.Observed, c.Detail)
		}
		if c.Carrier != "skb-ext" {
			continue
		}
		if c.Observed != want.extCells {
			t.Errorf("cell skb-ext × %s: observed %s (%s), want %s", c.Path, c.Observed, c.Reason, want.extCells)
		}
		if want.extCells == "skip" && !strings.HasPrefix(c.Reason, lacksExt) {
			t.Errorf("cell skb-ext × %s skipped for %q, want the reason to name bpf_dynptr_from_skb_ext", c.Path, c.Reason)
		}
	}

	results := decodeAll[wire.VariantResult](t, evs, event.Variant)
	if len(results) != len(plan.Variants) {
		t.Fatalf("%d variant events, want %d", len(results), len(plan.Variants))
	}
	for _, r := range results {
		if reason, ok := want.skips[r.Variant]; ok {
			if r.Skipped != reason {
				t.Errorf("variant %s: skipped %q, want %q", r.Variant, r.Skipped, reason)
			}
			continue
		}
		t.Logf("variant %s (%s): valid %v %s, pps %.0f, window %s, counters %v, lo %+v, per second %v",
			r.Variant, r.Attach, r.Valid, r.Invalid, r.PPS, r.Window.Round(time.Millisecond), r.Counters, r.Lo, r.PerSecond)
		for _, p := range r.Programs {
			t.Logf("  %-14s %-9s run_cnt %8d run_time_ns %10d  %.1f ns/pkt", p.Name, p.Type, p.RunCnt, p.RunTimeNs, p.NsPerPkt)
		}
		if r.Skipped != "" || !r.Valid {
			t.Errorf("variant %s: skipped %q, valid %v: %s", r.Variant, r.Skipped, r.Valid, r.Invalid)
		}
		for _, p := range r.Programs {
			if p.Type == "sched_cls" && (p.RunCnt == 0 || p.NsPerPkt <= 0) {
				t.Errorf("variant %s: program %s did not run in the window: %+v", r.Variant, p.Name, p)
			}
		}
		checkCost(t, r)
		checkContexts(t, r, want.acctOptional)
	}
}

// checkContexts: the accountant ran in every window, saw every tracepoint
// (kci's kernels have them all), and its categories partition its window:
// they sum to the window's length on the CPUs, and every datagram written
// in it went through a read, a write and a NET_RX softirq.
func checkContexts(t *testing.T, r wire.VariantResult, optional bool) {
	t.Helper()
	c := r.Cost
	if c == nil {
		return
	}
	if optional && len(c.Contexts) == 0 {
		t.Logf("variant %s: this kernel refused the context accountant: %s", r.Variant, c.AcctNote)
		return
	}
	if c.AcctNote != "" || len(c.Contexts) == 0 || c.AcctPackets == 0 {
		t.Errorf("variant %s: no complete context accounting: %q, %d contexts, %d packets", r.Variant, c.AcctNote, len(c.Contexts), c.AcctPackets)
		return
	}
	ctx := map[string]wire.ContextTime{}
	var sum uint64
	for _, x := range c.Contexts {
		ctx[x.Name] = x
		sum += x.Ns
		t.Logf("  context %-16s %12d ns %8d entries  %8.1f ns/pkt", x.Name, x.Ns, x.Entries, float64(x.Ns)/float64(c.AcctPackets))
	}
	t.Logf("  accountant: %d packets in %d ns; idle clock: %d busy of %d ns", c.AcctPackets, c.AcctWindowNs, c.BusyNs, c.CPUWindowNs)
	d := float64(sum) - float64(c.AcctWindowNs)
	switch {
	case ctx["unsynced"].Ns != 0:
		t.Errorf("variant %s: %d ns of the window not attributed to any context", r.Variant, ctx["unsynced"].Ns)
	case d*d > 1e-4*float64(c.AcctWindowNs)*float64(c.AcctWindowNs): // 1 %: its edges are read µs from the clock's
		t.Errorf("variant %s: contexts sum to %d ns, the accountant's window is %d", r.Variant, sum, c.AcctWindowNs)
	case ctx["path"].Entries < 2*c.AcctPackets || ctx["softirq:net_rx"].Entries < c.AcctPackets/2:
		t.Errorf("variant %s: %d packets but %d read/write entries and %d NET_RX softirqs",
			r.Variant, c.AcctPackets, ctx["path"].Entries, ctx["softirq:net_rx"].Entries)
	}
}

// checkCost: every variant that ran has its whole-path cost, measured in
// ns (the idle clock), at least what its programs alone cost, and the
// verifier facts of each program it loaded.
func checkCost(t *testing.T, r wire.VariantResult) {
	t.Helper()
	c := r.Cost
	if c == nil {
		t.Errorf("variant %s: no whole-path cost", r.Variant)
		return
	}
	t.Logf("  whole-path: busy %d ns of %d (%s, resolution %d ns), softirq %d ns, bpf %d ns, %d packets (%s): %.1f ns/pkt",
		c.BusyNs, c.CPUWindowNs, c.IdleSource, c.ResolutionNs, c.SoftirqNs, c.BPFNs, c.Packets, c.PacketSource, float64(c.BusyNs)/float64(max(c.Packets, 1)))
	var bpfSum uint64
	for _, p := range r.Programs {
		bpfSum += p.RunTimeNs
	}
	switch {
	case c.IdleSource != wire.IdleTimerList:
		t.Errorf("variant %s: idle from %s, want the ns idle clock (/proc/timer_list)", r.Variant, c.IdleSource)
	case c.Packets == 0:
		t.Errorf("variant %s: whole-path over no packets: %+v", r.Variant, c)
	case c.BPFNs != bpfSum:
		t.Errorf("variant %s: cost counts %d ns of BPF, the programs %d", r.Variant, c.BPFNs, bpfSum)
	case c.BusyNs < bpfSum || c.BusyNs > c.CPUWindowNs:
		t.Errorf("variant %s: busy %d ns, want between the bpf_stats sum %d and the window %d", r.Variant, c.BusyNs, bpfSum, c.CPUWindowNs)
	}
	if r.Variant == wire.NoneVariant {
		if len(r.Programs) != 0 || c.PacketSource != wire.PacketsLoTx {
			t.Errorf("baseline: programs %v, packets from %s; want none, lo_tx", r.Programs, c.PacketSource)
		}
		return
	}
	if len(r.Loads) != len(r.Programs) {
		t.Errorf("variant %s: %d load records for %d programs", r.Variant, len(r.Loads), len(r.Programs))
	}
	for _, l := range r.Loads {
		t.Logf("  load %-14s verified %5d insns, xlated %5d B, jited %5d B, verify %d µs, collection %.1f ms",
			l.Name, l.VerifiedInsns, l.XlatedBytes, l.JitedBytes, l.VerifyUs, float64(l.LoadNs)/1e6)
		if l.VerifiedInsns == 0 || l.XlatedBytes == 0 || l.JitedBytes == 0 {
			t.Errorf("variant %s: program %s load facts missing: %+v", r.Variant, l.Name, l)
		}
	}
}
