package survival

import (
	"strings"
	"testing"

	"github.com/kci-dev/kci/bpf"
	"github.com/kci-dev/kci/wire"
)

func stockCaps() wire.Caps {
	return wire.Caps{
		Kfuncs:      map[string]bool{"bpf_cast_to_kern_ctx": true, "bpf_dynptr_slice": true, "bpf_dynptr_slice_rdwr": true},
		Tracepoints: map[string]bool{"kfree_skb": true, "consume_skb": true},
		MapTypes:    map[string]bool{"BPF_MAP_TYPE_HASH": true, "BPF_MAP_TYPE_LRU_PERCPU_HASH": true},
		TCX:         true,
		Links:       map[string]bool{"veth": true, "ipip": true, "gre": true},
		XDPHelpers:  map[string]bool{"bpf_xdp_adjust_meta": true},
	}
}

func extCaps() wire.Caps {
	c := stockCaps()
	c.Kfuncs["bpf_dynptr_from_skb_ext"] = true
	return c
}

func gtpCaps() wire.Caps {
	c := stockCaps()
	c.Kfuncs["bpf_trace_skb"] = true
	c.Tracepoints["skb_free"], c.Tracepoints["skb_copy"], c.Tracepoints["skb_scrub"] = true, true, true
	c.MapTypes[bpf.RHashType] = true
	return c
}

func TestExpectationsDeclared(t *testing.T) {
	for _, c := range carriers() {
		for _, p := range paths() {
			o := expect(c, p, stockCaps())
			switch {
			case o.expected == errored:
				t.Errorf("%s × %s: no expectation declared", c.name, p.name)
			case o.reason == "":
				t.Errorf("%s × %s: expectation %s without a kernel reason", c.name, p.name, o.expected)
			}
		}
	}
	for k := range stockOutcomes {
		known := false
		for _, c := range carriers() {
			for _, p := range paths() {
				known = known || (k == [2]string{c.name, p.name})
			}
		}
		if !known {
			t.Errorf("stockOutcomes has %v, which is no cell", k)
		}
	}
}

func TestExpectExtCarrier(t *testing.T) {
	ext := carriers()[0]
	if ext.name != "skb-ext" {
		t.Fatalf("first carrier %s, want skb-ext", ext.name)
	}
	for _, p := range paths() {
		if o := expect(ext, p, stockCaps()); o.expected != skip || o.reason != "kernel lacks kfunc bpf_dynptr_from_skb_ext" {
			t.Errorf("stock kernel, skb-ext × %s: %+v, want skip naming the kfunc", p.name, o)
		}
		if o := expect(ext, p, gtpCaps()); o.expected != skip {
			t.Errorf("gtp kernel, skb-ext × %s: %+v, want skip", p.name, o)
		}
		// The series' claim: on its kernel the extension survives
		// every path, including the ones that scrub across netns.
		if o := expect(ext, p, extCaps()); o.expected != survives {
			t.Errorf("ext kernel, skb-ext × %s: %+v, want survives", p.name, o)
		}
	}
}

func TestExpectStockFacts(t *testing.T) {
	get := func(carrier, path string) string {
		for _, c := range carriers() {
			for _, p := range paths() {
				if c.name == carrier && p.name == path {
					return expect(c, p, stockCaps()).expected
				}
			}
		}
		t.Fatalf("no cell %s × %s", carrier, path)
		return ""
	}
	// skb->mark is scrubbed crossing netns, except by a peer redirect.
	for path, want := range map[string]string{
		"loopback": survives, "veth": survives, "veth-netns": lost, "redirect": lost,
		"redirect-peer": survives, "ipip": survives, "forward": lost,
	} {
		if got := get("skb-mark", path); got != want {
			t.Errorf("skb-mark × %s: %s, want %s", path, got, want)
		}
	}
	// The same skb object travels every path.
	for _, p := range paths() {
		if got := get("skb-ptr-map", p.name); got != survives {
			t.Errorf("skb-ptr-map × %s: %s, want survives", p.name, got)
		}
	}
}

func TestExpectMissingLink(t *testing.T) {
	caps := stockCaps()
	caps.Links["gre"] = false
	var gre pathDef
	for _, p := range paths() {
		if p.name == "gre" {
			gre = p
		}
	}
	o := expect(carriers()[1], gre, caps)
	if o.expected != skip || o.reason != "kernel lacks link gre" {
		t.Errorf("without gre: %+v, want skip naming link gre", o)
	}
}

// A kernel that refuses XDP programs bpf_xdp_adjust_meta (a sandbox
// host's does, though its BTF names the helper) skips the xdp-meta row
// naming the helper, and only that row.
func TestExpectRefusedXDPHelper(t *testing.T) {
	caps := stockCaps()
	caps.XDPHelpers["bpf_xdp_adjust_meta"] = false
	for _, c := range carriers() {
		for _, p := range paths() {
			o := expect(c, p, caps)
			refused := o.expected == skip && o.reason == "kernel lacks XDP helper bpf_xdp_adjust_meta"
			if refused != (c.name == "xdp-meta") {
				t.Errorf("without bpf_xdp_adjust_meta, %s × %s: %+v", c.name, p.name, o)
			}
		}
	}
}

func TestObserve(t *testing.T) {
	res := func(vals ...uint64) (r [bpf.ResMax]uint64) {
		copy(r[:], vals)
		return r
	}
	// written, write_fail, seen, ok, absent, mismatch
	cases := []struct {
		res  [bpf.ResMax]uint64
		want string
		in   string
	}{
		{res(4, 0, 4, 4, 0, 0), survives, "intact 4"},
		{res(4, 0, 4, 0, 4, 0), lost, "absent 4"},
		{res(4, 0, 4, 0, 0, 4), lost, "mismatched 4"},
		{res(4, 0, 4, 2, 2, 0), errored, "some packets kept"},
		{res(4, 0, 3, 3, 0, 0), errored, "did not see every test packet"},
		{res(2, 2, 4, 2, 2, 0), errored, "writer did not store"},
	}
	for _, c := range cases {
		got, detail := observe(c.res, 4, 4)
		if got != c.want || !strings.Contains(detail, c.in) {
			t.Errorf("observe(%v) = %s, %q; want %s containing %q", c.res[:6], got, detail, c.want, c.in)
		}
	}
}
