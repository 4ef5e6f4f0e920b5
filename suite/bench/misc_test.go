package bench

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/bpf"
	"github.com/kci-dev/kci/suite/caps"
	"github.com/kci-dev/kci/wire"
)

func TestCPUFor(t *testing.T) {
	def := []int{0, 2, 4}
	cases := []struct {
		list    []int
		i, ncpu int
		want    int
	}{
		{[]int{0, 2, 4}, 1, 8, 2},
		{[]int{0, 2, 4}, 2, 2, 0}, // CPU 4 folded onto a 2-CPU guest
		{[]int{1, 3, 5}, 2, 2, 1},
		{[]int{1, 3, 5}, 4, 8, 3}, // more pairs than CPUs listed: wrap
		{nil, 1, 8, 2},            // empty: the user's layout
		{[]int{6}, 0, 1, 0},
	}
	for _, c := range cases {
		if got := cpuFor(c.list, c.i, def, c.ncpu); got != c.want {
			t.Errorf("cpuFor(%v, %d, ncpu %d) = %d, want %d", c.list, c.i, c.ncpu, got, c.want)
		}
	}
}

func TestPPSPerPair(t *testing.T) {
	// The user's setup: 14 Mbit/s of 36-byte datagrams per pair, three
	// pairs, about 146k pps in total.
	p := wire.DefaultBench()
	total := ppsPerPair(p) * float64(p.Pairs)
	if math.Abs(total-145833.33) > 0.01 {
		t.Errorf("default total pps = %.2f, want 145833.33", total)
	}
	if ppsPerPair(wire.BenchParams{RateMbit: 1}) != 0 {
		t.Error("zero payload size should give no rate")
	}
}

func TestWithDefaults(t *testing.T) {
	p := WithDefaults(wire.BenchParams{Pairs: 1, Window: 2 * time.Second})
	if p.Pairs != 1 || p.Window != 2*time.Second || p.PayloadSize != 36 || p.RateMbit != 14 {
		t.Errorf("WithDefaults = %+v", p)
	}
}

// The host checks variant names against wire.VariantNames before any
// build; the guest's table must know exactly those, in that order.
func TestVariantNamesAreTheHostsList(t *testing.T) {
	if got, want := strings.Join(variantNames(), ","), strings.Join(wire.VariantNames, ","); got != want {
		t.Errorf("guest variants %s, host's list (wire.VariantNames) %s", got, want)
	}
}

func TestLookupVariant(t *testing.T) {
	for name, want := range map[string]string{"cnt": "cnt", "gtp-gtpchurn": "gtpchurn", "ext-cnt": "cnt", "gtplru": "gtplru"} {
		v, err := Lookup(name)
		if err != nil || v.name != want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", name, v.name, err, want)
		}
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("unknown variant accepted")
	}
	if v, err := Lookup("gtp-none"); err != nil || v.object != "" || v.rule != ruleNone {
		t.Errorf("Lookup(gtp-none) = %+v, %v; want the baseline without an object", v, err)
	}
	for _, v := range variants() {
		if v.object == "" {
			continue // the baseline attaches nothing
		}
		spec, err := bpf.Spec(v.object)
		if err != nil {
			t.Errorf("variant %s: %v", v.name, err)
			continue
		}
		for name, p := range spec.Programs {
			if p.Type.String() == "SchedCLS" && p.AttachType.String() != "TCXIngress" && p.AttachType.String() != "TCXEgress" {
				t.Errorf("variant %s: %s has no tc direction (%v)", v.name, name, p.AttachType)
			}
		}
	}
}

// The clients' wake-ups are the grid's next point, never now: a client
// that finished exactly on a grid point must not spin through it.
func TestNextTick(t *testing.T) {
	for _, c := range []struct{ now, want time.Duration }{
		{0, time.Millisecond},
		{1500 * time.Microsecond, 2 * time.Millisecond},
		{2 * time.Millisecond, 3 * time.Millisecond},
		{2*time.Millisecond - 1, 2 * time.Millisecond},
	} {
		if got := nextTick(c.now); got != c.want {
			t.Errorf("nextTick(%v) = %v, want %v", c.now, got, c.want)
		}
	}
}

// TestMissing: a stock kernel lacks what the gtp variant needs, named in
// its order; a kernel with the gated tracepoint series lacks nothing.
func TestMissing(t *testing.T) {
	stock := wire.Caps{
		Kfuncs:      map[string]bool{"bpf_cast_to_kern_ctx": true, "bpf_dynptr_slice": true, "bpf_dynptr_slice_rdwr": true},
		Tracepoints: map[string]bool{"kfree_skb": true, "consume_skb": true},
		MapTypes:    map[string]bool{"BPF_MAP_TYPE_HASH": true, "BPF_MAP_TYPE_LRU_PERCPU_HASH": true},
	}
	gtp := wire.Caps{
		Kfuncs:      map[string]bool{"bpf_cast_to_kern_ctx": true, "bpf_trace_skb": true},
		Tracepoints: map[string]bool{"skb_free": true, "skb_copy": true},
		MapTypes:    map[string]bool{bpf.RHashType: true},
	}
	v, err := Lookup("gtp")
	if err != nil {
		t.Fatal(err)
	}
	want := "kernel lacks kfunc bpf_trace_skb, tracepoint skb_free, tracepoint skb_copy, map type BPF_MAP_TYPE_RHASH"
	if got := caps.Missing(stock, v.requires); got != want {
		t.Errorf("missing = %q, want %q", got, want)
	}
	if got := caps.Missing(gtp, v.requires); got != "" {
		t.Errorf("on a gtp kernel: missing %q", got)
	}
}
