package caps

import (
	"bytes"
	"testing"

	"github.com/cilium/ebpf/btf"
)

// fakeKernel builds BTF holding the given functions (name -> tags),
// tracepoint typedefs and map types.
func fakeKernel(t *testing.T, funcs map[string][]string, tracepoints []string, mapTypes ...string) *btf.Spec {
	t.Helper()
	proto := &btf.FuncProto{Return: &btf.Int{Name: "int", Size: 4, Encoding: btf.Signed}}
	var types []btf.Type
	for name, tags := range funcs {
		types = append(types, &btf.Func{Name: name, Type: proto, Linkage: btf.GlobalFunc, Tags: tags})
	}
	for _, tp := range tracepoints {
		types = append(types, &btf.Typedef{Name: "btf_trace_" + tp, Type: &btf.Pointer{Target: proto}})
	}
	enum := &btf.Enum{Name: "bpf_map_type", Size: 4}
	for i, m := range mapTypes {
		enum.Values = append(enum.Values, btf.EnumValue{Name: m, Value: uint64(i)})
	}
	types = append(types, enum)
	b, err := btf.NewBuilder(types, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := b.Marshal(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := btf.LoadSpecFromReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestFromBTFUntagged(t *testing.T) {
	// pahole < 1.26: kfuncs are plain functions.
	k := fakeKernel(t,
		map[string][]string{"bpf_cast_to_kern_ctx": nil, "bpf_dynptr_slice": nil, "bpf_dynptr_from_skb_ext": nil},
		[]string{"kfree_skb", "consume_skb"},
		"BPF_MAP_TYPE_UNSPEC", "BPF_MAP_TYPE_HASH")
	c := fromBTF(k)
	for name, want := range map[string]bool{"bpf_dynptr_from_skb_ext": true, "bpf_cast_to_kern_ctx": true, "bpf_trace_skb": false} {
		if c.Kfuncs[name] != want {
			t.Errorf("kfunc %s: %v, want %v", name, c.Kfuncs[name], want)
		}
	}
	if !c.Tracepoints["kfree_skb"] || c.Tracepoints["skb_free"] {
		t.Errorf("tracepoints = %v", c.Tracepoints)
	}
	if !c.MapTypes["BPF_MAP_TYPE_HASH"] || c.MapTypes["BPF_MAP_TYPE_RHASH"] {
		t.Errorf("map types = %v", c.MapTypes)
	}
}

func TestFromBTFTagged(t *testing.T) {
	// With kfunc tags, an untagged function of the same name is not a
	// kfunc (say, an internal helper that happens to share the name).
	k := fakeKernel(t,
		map[string][]string{"bpf_cast_to_kern_ctx": {"bpf_kfunc"}, "bpf_trace_skb": {"bpf_kfunc"}, "bpf_dynptr_from_skb_ext": nil},
		nil, "BPF_MAP_TYPE_RHASH")
	c := fromBTF(k)
	if !c.Kfuncs["bpf_trace_skb"] || c.Kfuncs["bpf_dynptr_from_skb_ext"] {
		t.Errorf("kfuncs = %v, want bpf_trace_skb only", c.Kfuncs)
	}
	if !c.MapTypes["BPF_MAP_TYPE_RHASH"] {
		t.Errorf("map types = %v", c.MapTypes)
	}
}
