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
