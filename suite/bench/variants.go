package bench

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/kci-dev/kci/bpf"
	"github.com/kci-dev/kci/suite/caps"
	"github.com/kci-dev/kci/wire"
)

// rule is how a variant's stats counters prove the run measured what it
// claims to.
type rule int

const (
	ruleFloor     rule = iota // cnt: INGRESS == EGRESS
	ruleExt                   // FOUND == INGRESS == EGRESS
	ruleReapExact             // FREE_REAPED == EGRESS (+ COPY), no update errors
	ruleReapBound             // FREE_REAPED <= EGRESS: an LRU may evict first
	ruleNone                  // no programs: lo's counters only
)

// Variant is one benchmark configuration: an object, what it needs from
// the kernel, how to adjust the spec, and how to validate.
type Variant struct {
	name     string
	object   string
	requires []caps.Requirement
	rule     rule
	prepare  func(spec *ebpf.CollectionSpec, kernel *btf.Spec) error
}

// gtpReqs are what the gated-tracepoint variants need; the rhash ones also
// need the map type.
func gtpReqs(rhash bool) []caps.Requirement {
	r := []caps.Requirement{caps.Kfunc("bpf_trace_skb"), caps.Kfunc("bpf_cast_to_kern_ctx"), caps.Tracepoint("skb_free"), caps.Tracepoint("skb_copy")}
	if rhash {
		r = append(r, caps.MapType(bpf.RHashType))
	}
	return r
}

// variants lists every benchmark variant, in the order they run.
func variants() []Variant {
	return []Variant{
		// The whole-path baseline: the same traffic, nothing attached.
		{name: wire.NoneVariant, rule: ruleNone},
		{name: "cnt", object: bpf.Cnt, rule: ruleFloor},
		{name: "ext", object: bpf.Ext, rule: ruleExt,
			requires: []caps.Requirement{caps.Kfunc("bpf_dynptr_from_skb_ext"), caps.Kfunc("bpf_dynptr_slice"), caps.Kfunc("bpf_dynptr_slice_rdwr")}},
		{name: "gtp", object: bpf.Gtp, rule: ruleReapExact, requires: gtpReqs(true),
			prepare: func(s *ebpf.CollectionSpec, k *btf.Spec) error { return bpf.UseRHash(s, k, 16384, 16384) }},
		// No hint and a huge max: the table grows and shrinks with nearly
		// every packet (resize churn).
		{name: "gtpchurn", object: bpf.Gtp, rule: ruleReapExact, requires: gtpReqs(true),
			prepare: func(s *ebpf.CollectionSpec, k *btf.Spec) error { return bpf.UseRHash(s, k, 0, 1<<20) }},
		{name: "gtplru", object: bpf.GtpLRU, rule: ruleReapBound, requires: gtpReqs(false)},
		{name: "hash", object: bpf.Hash, rule: ruleReapExact,
			requires: []caps.Requirement{caps.Tracepoint("kfree_skb"), caps.Tracepoint("consume_skb")}},
		{name: "lru", object: bpf.LRU, rule: ruleReapBound,
			requires: []caps.Requirement{caps.Tracepoint("kfree_skb"), caps.Tracepoint("consume_skb")}},
	}
}

// variantNames lists the names variants() knows.
func variantNames() []string {
	var out []string
	for _, v := range variants() {
		out = append(out, v.name)
	}
	return out
}

// Lookup finds a variant by name; "<tree>-<name>" (the host's naming,
// e.g. gtp-gtpchurn) is accepted too. wire.VariantBase is the one rule,
// which the host checks before any build.
func Lookup(name string) (Variant, error) {
	base := wire.VariantBase(name)
	for _, v := range variants() {
		if v.name == base {
			return v, nil
		}
	}
	return Variant{}, fmt.Errorf("unknown variant %q (known: %s)", name, strings.Join(variantNames(), ", "))
}

// spec returns the variant's collection spec, adjusted for the kernel.
func (v Variant) spec(kernel *btf.Spec) (*ebpf.CollectionSpec, error) {
	s, err := bpf.Spec(v.object)
	if err != nil {
		return nil, err
	}
	if v.prepare != nil {
		if err := v.prepare(s, kernel); err != nil {
			return nil, fmt.Errorf("variant %s: %w", v.name, err)
		}
	}
	return s, nil
}
