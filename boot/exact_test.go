package boot

import (
	"reflect"
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

// A window's call contexts are named by their targets as its blocks are:
// a program's entry is in its JIT range (call:bpf:<prog>), the
// accountant's (call:observer:<prog>), a subprogram's in its own range;
// targets of one name add up, but those of no known code keep their
// addresses apart; and Funcs stay as they were.
func TestAttributeCalls(t *testing.T) {
	syms := profile.NewKernelSymbols([]profile.Func{{Name: "htab_map_update_elem", Start: 0xffffffff81000000, Size: 0x100}})
	v := wire.VariantResult{
		Variant: "hash",
		Loads: []wire.ProgLoad{{Name: "hash_write", JIT: []wire.CodeRange{
			{Prog: "hash_write", Addr: 0xffffffffa0000000, Len: 0x80},
			{Prog: "hash_write/1", Addr: 0xffffffffa0000080, Len: 0x40},
		}}},
		Observer: []wire.CodeRange{{Prog: "acct_enter", Addr: 0xffffffffa0001000, Len: 0x40}},
		Cost:     &wire.Cost{Packets: 1000},
	}
	w := &tcgplugin.Window{Insns: 1000, PCs: []tcgplugin.PC{{Addr: 0xffffffffa0000000, Insns: 1000, Execs: 10}},
		Contexts: []tcgplugin.Context{
			{Target: 0xffffffffa0000000, Calls: 10, Insns: 900, Mem: 30, Cycles: 1200},
			{Target: 0xffffffffa0000080, Calls: 10, Insns: 100, Mem: 5, Cycles: 110},
			{Target: 0xffffffffa0001000, Calls: 3, Insns: 30, Mem: 2, Cycles: 40},
			{Target: 0xffffffffa0002000, Calls: 1, Insns: 7},
			{Target: 0xffffffffa0003000, Calls: 1, Insns: 5},
		}}
	e := attribute(w, v, syms)
	want := []results.CallCount{
		{Name: "call:bpf:hash_write", Calls: 10, Insns: 900, Mem: 30, Cycles: 1200},
		{Name: "call:bpf:hash_write/1", Calls: 10, Insns: 100, Mem: 5, Cycles: 110},
		{Name: "call:observer:acct_enter", Calls: 3, Insns: 30, Mem: 2, Cycles: 40},
		{Name: "call:" + results.FuncOutside + " ffffffffa0002000", Calls: 1, Insns: 7},
		{Name: "call:" + results.FuncOutside + " ffffffffa0003000", Calls: 1, Insns: 5},
	}
	if !reflect.DeepEqual(e.Calls, want) {
		t.Errorf("Calls:\n got %+v\nwant %+v", e.Calls, want)
	}
	if len(e.Funcs) != 1 || e.Funcs[0] != (results.FuncCount{Name: "bpf:hash_write", Insns: 1000}) {
		t.Errorf("Funcs = %+v, want the blocks' alone", e.Funcs)
	}
	if e := attribute(&tcgplugin.Window{}, v, syms); e.Calls != nil {
		t.Errorf("a window without contexts has Calls %+v", e.Calls)
	}

	// Splits: a program's own code and the kernel's functions it called,
	// by name, largest first; each call gets its targets' alone, and
	// targets of no known code keep theirs apart.
	w.Splits = []tcgplugin.Split{
		{Target: 0xffffffffa0000000, Addr: 0xffffffffa0000000, Execs: 10, Insns: 300, Cycles: 310},
		{Target: 0xffffffffa0000000, Addr: 0xffffffffa0000040, Execs: 10, Insns: 100, Cycles: 100},
		{Target: 0xffffffffa0000000, Addr: 0xffffffff81000000, Execs: 10, Insns: 200, Cycles: 600, Fetch: 240},
		{Target: 0xffffffffa0000000, Addr: 0xffffffff81000080, Execs: 5, Insns: 50, Cycles: 90},
		{Target: 0xffffffffa0000080, Addr: 0xffffffffa0000080, Execs: 10, Insns: 100, Cycles: 110},
		{Target: 0xffffffffa0002000, Addr: 0xffffffff81000000, Execs: 1, Insns: 7},
	}
	e = attribute(w, v, syms)
	wantSplit := map[string][]results.FuncCount{
		"call:bpf:hash_write": {
			{Name: "htab_map_update_elem", Insns: 250, Cycles: 690, Fetch: 240},
			{Name: "bpf:hash_write", Insns: 400, Cycles: 410},
		},
		"call:bpf:hash_write/1":                             {{Name: "bpf:hash_write/1", Insns: 100, Cycles: 110}},
		"call:" + results.FuncOutside + " ffffffffa0002000": {{Name: "htab_map_update_elem", Insns: 7}},
	}
	for _, c := range e.Calls {
		if !reflect.DeepEqual(c.Funcs, wantSplit[c.Name]) {
			t.Errorf("%s: Funcs\n got %+v\nwant %+v", c.Name, c.Funcs, wantSplit[c.Name])
		}
	}

	// Nests: the calls made inside a program's, by their names, summed.
	w.Nests = []tcgplugin.Nest{
		{Outer: 0xffffffffa0000000, Inner: 0xffffffffa0000080, Calls: 10, Insns: 100, Mem: 5, Cycles: 110},
		{Outer: 0xffffffffa0000000, Inner: 0xffffffffa0001000, Calls: 2, Insns: 20, Mem: 1, Cycles: 30},
		{Outer: 0xffffffffa0000000, Inner: 0xffffffffa0001010, Calls: 1, Insns: 10, Mem: 1, Cycles: 10},
		{Outer: 0xffffffffa0002000, Inner: 0xffffffffa0001000, Calls: 1, Insns: 7},
	}
	e = attribute(w, v, syms)
	wantInside := map[string][]results.CallCount{
		"call:bpf:hash_write": {
			{Name: "call:bpf:hash_write/1", Calls: 10, Insns: 100, Mem: 5, Cycles: 110},
			{Name: "call:observer:acct_enter", Calls: 3, Insns: 30, Mem: 2, Cycles: 40},
		},
		"call:" + results.FuncOutside + " ffffffffa0002000": {{Name: "call:observer:acct_enter", Calls: 1, Insns: 7}},
	}
	for _, c := range e.Calls {
		if !reflect.DeepEqual(c.Inside, wantInside[c.Name]) {
			t.Errorf("%s: Inside\n got %+v\nwant %+v", c.Name, c.Inside, wantInside[c.Name])
		}
	}
}

// The plugin's counts divide by the datagrams written between its
// markers; a record from an agent that did not read them falls back to
// the accountant's window, then to the window's own packet count.
func TestExactPackets(t *testing.T) {
	for _, c := range []struct {
		cost *wire.Cost
		want uint64
	}{
		{nil, 0},
		{&wire.Cost{Packets: 10430, AcctPackets: 10478, MarkPackets: 10422}, 10422},
		{&wire.Cost{Packets: 10430, AcctPackets: 10478}, 10478},
		{&wire.Cost{Packets: 10430}, 10430},
	} {
		if got := exactPackets(wire.VariantResult{Cost: c.cost}); got != c.want {
			t.Errorf("cost %+v: %d packets, want %d", c.cost, got, c.want)
		}
	}
}
