package boot

import (
	"testing"

	"github.com/kci-dev/kci/profile"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/vm/tcgplugin"
	"github.com/kci-dev/kci/wire"
)

// A window's blocks go to the variant's programs by their JIT ranges, to
// the accountant's as the observer, to vmlinux's functions, to user
// space, and what none holds to the outside bucket; the small ones fold.
func TestAttribute(t *testing.T) {
	syms := profile.NewKernelSymbols([]profile.Func{{Name: "htab_map_update_elem", Start: 0xffffffff81000000, Size: 0x100}})
	v := wire.VariantResult{
		Variant:  "hash",
		Loads:    []wire.ProgLoad{{Name: "hash_write", JIT: []wire.CodeRange{{Prog: "hash_write", Addr: 0xffffffffa0000000, Len: 0x80}}}},
		Observer: []wire.CodeRange{{Prog: "acct_enter", Addr: 0xffffffffa0001000, Len: 0x40}},
		Cost:     &wire.Cost{Packets: 1000, AcctPackets: 100},
	}
	w := &tcgplugin.Window{Insns: 5000 + 20 + 300 + 40 + 2 + 11, PCs: []tcgplugin.PC{
		{Addr: 0x401000, Insns: 300},
		{Addr: 0xffffffff81000010, Insns: 3000, Mem: 10},
		{Addr: 0xffffffff81000080, Insns: 2000},
		{Addr: 0xffffffff81000200, Insns: 40}, // past every symbol
		{Addr: 0xffffffffa0000010, Insns: 20},
		{Addr: 0xffffffffa0001000, Insns: 11},
		{Addr: 0xffffffffa0002000, Insns: 2}, // JIT'd code of no known program: 0.02/pkt, still its bucket
	}}
	e := attribute(w, v, syms)
	if e.Packets != 100 {
		t.Errorf("packets %d, want the accountant's 100", e.Packets)
	}
	got := map[string]uint64{}
	var sum uint64
	for _, f := range e.Funcs {
		got[f.Name] = f.Insns
		sum += f.Insns
	}
	want := map[string]uint64{"htab_map_update_elem": 5000, results.FuncUser: 300, results.FuncOutside: 42,
		"bpf:hash_write": 20, "observer:acct_enter": 11}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d insns, want %d (all: %v)", k, got[k], n, got)
		}
	}
	if sum != w.Insns || e.Funcs[0].Name != "htab_map_update_elem" {
		t.Errorf("funcs sum to %d (want the window's %d), first %s", sum, w.Insns, e.Funcs[0].Name)
	}
}
