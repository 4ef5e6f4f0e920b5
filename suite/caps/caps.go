// Package caps is what the running kernel offers BPF (the probe the
// guest reports as wire.Caps) and what a survival cell or a bench variant
// needs of it (Requirement), so a test the kernel cannot run is skipped
// naming what is missing.
package caps

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/kci-dev/kci/suite/netns"
	"github.com/kci-dev/kci/wire"
)

// Kfuncs, tracepoints and link kinds the suite cares about.
var (
	probedKfuncs = []string{
		"bpf_dynptr_from_skb_ext", "bpf_trace_skb",
		"bpf_cast_to_kern_ctx", "bpf_dynptr_slice", "bpf_dynptr_slice_rdwr",
	}
	probedTracepoints = []string{"skb_free", "skb_copy", "skb_scrub", "kfree_skb", "consume_skb"}
	probedLinks       = []string{"veth", "ipip", "gre"}
	probedXDPHelpers  = map[string]asm.BuiltinFunc{"bpf_xdp_adjust_meta": asm.FnXdpAdjustMeta}
	// kfuncs every kernel with kfunc BTF tags marks; if one carries the
	// tag, the BTF has tags and an untagged function is not a kfunc.
	tagWitnesses = []string{"bpf_cast_to_kern_ctx", "bpf_rcu_read_lock", "bpf_dynptr_slice"}
)

const kfuncTag = "bpf_kfunc"

// fromBTF reads what the kernel's BTF says it has: kfuncs (functions,
// tagged bpf_kfunc when the BTF carries such tags; pahole before 1.26
// emits none), tracepoints (btf_trace_<name> typedefs, which is what
// tp_btf attaches by) and the map types of enum bpf_map_type.
func fromBTF(spec *btf.Spec) wire.Caps {
	c := wire.Caps{Kfuncs: map[string]bool{}, Tracepoints: map[string]bool{}, MapTypes: map[string]bool{}}
	tagged := false
	for _, name := range tagWitnesses {
		var fn *btf.Func
		if spec.TypeByName(name, &fn) == nil && slices.Contains(fn.Tags, kfuncTag) {
			tagged = true
			break
		}
	}
	for _, name := range probedKfuncs {
		var fn *btf.Func
		c.Kfuncs[name] = spec.TypeByName(name, &fn) == nil && (!tagged || slices.Contains(fn.Tags, kfuncTag))
	}
	for _, name := range probedTracepoints {
		var td *btf.Typedef
		c.Tracepoints[name] = spec.TypeByName("btf_trace_"+name, &td) == nil
	}
	var enum *btf.Enum
	if spec.TypeByName("bpf_map_type", &enum) == nil {
		for _, v := range enum.Values {
			c.MapTypes[v.Name] = true
		}
	}
	return c
}

// probeTCX tries a TCX attachment on lo of a scratch namespace.
func probeTCX() (bool, error) {
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.SchedCLS,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.Mov.Imm(asm.R0, 0), // TC_ACT_OK
			asm.Return(),
		},
	})
	if err != nil {
		return false, fmt.Errorf("tcx probe: load program: %w", err)
	}
	defer func() { _ = prog.Close() }()
	ns, err := netns.New("kci-probe")
	if err != nil {
		return false, fmt.Errorf("tcx probe: %w", err)
	}
	defer ns.Close()
	idx, err := ns.Ifindex("lo")
	if err != nil {
		return false, err
	}
	var l link.Link
	err = ns.Do(func() error {
		var err error
		l, err = link.AttachTCX(link.TCXOptions{Interface: idx, Program: prog, Attach: ebpf.AttachTCXIngress})
		return err
	})
	if errors.Is(err, ebpf.ErrNotSupported) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("tcx probe: %w", err)
	}
	return true, l.Close()
}

// probeXDPHelpers loads, for each helper, an XDP program that calls it:
// the kernel's own answer, which its BTF does not give (a kernel may
// name a helper and refuse it to the program type).
func probeXDPHelpers() (map[string]bool, error) {
	out := map[string]bool{}
	var errs []error
	for name, fn := range probedXDPHelpers {
		err := features.HaveProgramHelper(ebpf.XDP, fn)
		switch {
		case err == nil:
			out[name] = true
		case errors.Is(err, ebpf.ErrNotSupported):
			out[name] = false
		default:
			errs = append(errs, fmt.Errorf("XDP helper probe %s: %w", name, err))
		}
	}
	return out, errors.Join(errs...)
}

// probeLinks tries to create each kind of device the survival paths use,
// in a scratch namespace; "not supported" from the kernel means absent.
func probeLinks() (map[string]bool, error) {
	ns, err := netns.New("kci-probe")
	if err != nil {
		return nil, fmt.Errorf("link probe: %w", err)
	}
	defer ns.Close()
	out := map[string]bool{}
	var errs []error
	for _, kind := range probedLinks {
		var l netlink.Link
		attrs := netlink.LinkAttrs{Name: "kprobe-" + kind}
		local, remote := []byte{198, 18, 255, 1}, []byte{198, 18, 255, 2}
		switch kind {
		case "veth":
			l = &netlink.Veth{LinkAttrs: attrs, PeerName: "kprobe-peer"}
		case "ipip":
			l = &netlink.Iptun{LinkAttrs: attrs, Local: local, Remote: remote}
		case "gre":
			l = &netlink.Gretun{LinkAttrs: attrs, Local: local, Remote: remote}
		}
		err := ns.Handle().LinkAdd(l)
		switch {
		case err == nil:
			out[kind] = true
		case NotSupported(err):
			out[kind] = false
		default:
			errs = append(errs, fmt.Errorf("link probe %s: %w", kind, err))
		}
	}
	return out, errors.Join(errs...)
}

// Probe is the full capability probe of the running kernel.
func Probe(kernel *btf.Spec) (wire.Caps, error) {
	c := fromBTF(kernel)
	var errs []error
	tcx, err := probeTCX()
	c.TCX = tcx
	errs = append(errs, err)
	c.Links, err = probeLinks()
	errs = append(errs, err)
	c.XDPHelpers, err = probeXDPHelpers()
	errs = append(errs, err)
	return c, errors.Join(errs...)
}

// Requirement is one capability a variant or carrier needs.
type Requirement struct {
	kind string // kfunc | tracepoint | map type | link | XDP helper
	name string
}

func (r Requirement) String() string { return r.kind + " " + r.name }

// Kfunc needs the kfunc named n.
func Kfunc(n string) Requirement { return Requirement{"kfunc", n} }

// Tracepoint needs the BTF tracepoint n (what tp_btf attaches by).
func Tracepoint(n string) Requirement { return Requirement{"tracepoint", n} }

// MapType needs the map type n of enum bpf_map_type.
func MapType(n string) Requirement { return Requirement{"map type", n} }

// XDPHelper needs an XDP program to be let call the helper n.
func XDPHelper(n string) Requirement { return Requirement{"XDP helper", n} }

// LinkKind needs devices of kind n (veth, ipip, gre).
func LinkKind(n string) Requirement { return Requirement{"link", n} }

// has is whether c offers r.
func has(c wire.Caps, r Requirement) bool {
	switch r.kind {
	case "kfunc":
		return c.Kfuncs[r.name]
	case "tracepoint":
		return c.Tracepoints[r.name]
	case "map type":
		return c.MapTypes[r.name]
	case "link":
		return c.Links[r.name]
	case "XDP helper":
		return c.XDPHelpers[r.name]
	}
	return false
}

// Missing lists the requirements the kernel lacks, as "kernel lacks ..."
// text for a skip, or "" when nothing is missing.
func Missing(c wire.Caps, reqs []Requirement) string {
	var miss []string
	for _, r := range reqs {
		if !has(c, r) {
			miss = append(miss, r.String())
		}
	}
	if len(miss) == 0 {
		return ""
	}
	return "kernel lacks " + strings.Join(miss, ", ")
}

// NotSupported is the kernel's own "this kernel cannot do that".
func NotSupported(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, ebpf.ErrNotSupported)
}
