package profile

import "testing"

func TestKernelSymbolsLookup(t *testing.T) {
	s := NewKernelSymbols([]Func{
		{Name: "b_alias", Start: 0xffffffff81000100, Size: 0x40},
		{Name: "a_func", Start: 0xffffffff81000100, Size: 0x40},
		{Name: "sizeless", Start: 0xffffffff81000200},
		{Name: "last", Start: 0xffffffff81000300, Size: 0x10},
	})
	for addr, want := range map[uint64]string{
		0xffffffff81000100: "a_func", // of aliases, the first by name
		0xffffffff8100013f: "a_func",
		0xffffffff81000140: "", // a gap between a sized symbol and the next
		0xffffffff810002ff: "sizeless",
		0xffffffff8100030f: "last",
		0xffffffff81000310: "",
		0x400000:           "",
	} {
		if got := s.Lookup(addr); got != want {
			t.Errorf("Lookup(%#x) = %q, want %q", addr, got, want)
		}
	}
}

// Entry code has symbols without a type: a hang report names them (Where),
// the counts' attribution does not (Lookup), and a label inside a
// function gives way to the function.
func TestKernelSymbolsWhere(t *testing.T) {
	s := NewKernelSymbols([]Func{
		{Name: "native_safe_halt", Start: 0xffffffff81c5f2a0, Size: 0x10},
		{Name: "asm_sysvec_call_function_single", Start: 0xffffffff818014b0, Size: 31, Label: true},
		{Name: "inner_label", Start: 0xffffffff81c5f2a4, Size: 2, Label: true},
		{Name: "_etext", Start: 0xffffffff81d00000, Label: true},
	})
	for addr, want := range map[uint64][2]string{
		0xffffffff818014b0: {"", "asm_sysvec_call_function_single"},
		0xffffffff818014ce: {"", "asm_sysvec_call_function_single"},
		0xffffffff818014cf: {"", ""},
		0xffffffff81c5f2a4: {"native_safe_halt", "native_safe_halt"},
		0xffffffff81d00010: {"", ""},
	} {
		if got := s.Lookup(addr); got != want[0] {
			t.Errorf("Lookup(%#x) = %q, want %q", addr, got, want[0])
		}
		if got := s.Where(addr); got != want[1] {
			t.Errorf("Where(%#x) = %q, want %q", addr, got, want[1])
		}
	}
}
