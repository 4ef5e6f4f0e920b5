package profile

import (
	"debug/elf"
	"fmt"
	"sort"
)

// KernelSymbols are a kernel's functions by address, read from its vmlinux on
// the host: what the QEMU plugin's counts, which carry addresses only
// (its symbol lookup does not reach into a bzImage), are attributed by.
type KernelSymbols struct {
	funcs []symbol // sorted by start
	text  [2]uint64
	// labels are code symbols without a type (the entry code's
	// asm_sysvec_*, entry_SYSCALL_64): only Where names them, so the
	// counts' attribution stays on functions.
	labels []symbol
}

type symbol struct {
	name       string
	start, end uint64
}

// LoadKernelSymbols reads vmlinux's function symbols. A symbol without a
// size ends where the next one starts.
func LoadKernelSymbols(vmlinux string) (*KernelSymbols, error) {
	f, err := elf.Open(vmlinux)
	if err != nil {
		return nil, fmt.Errorf("kernel symbols: %w", err)
	}
	defer func() { _ = f.Close() }()
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("kernel symbols of %s: %w", vmlinux, err)
	}
	var fs []Func
	for _, y := range syms {
		switch {
		case y.Value == 0:
		case elf.ST_TYPE(y.Info) == elf.STT_FUNC:
			fs = append(fs, Func{Name: y.Name, Start: y.Value, Size: y.Size})
		case elf.ST_TYPE(y.Info) == elf.STT_NOTYPE && inCode(f, y):
			fs = append(fs, Func{Name: y.Name, Start: y.Value, Size: y.Size, Label: true})
		}
	}
	s := NewKernelSymbols(fs)
	if len(s.funcs) == 0 {
		return nil, fmt.Errorf("kernel symbols: %s has no function symbols (stripped?)", vmlinux)
	}
	return s, nil
}

// inCode: y is in an executable section (not a data label).
func inCode(f *elf.File, y elf.Symbol) bool {
	i := int(y.Section)
	return i > 0 && i < len(f.Sections) && f.Sections[i].Flags&elf.SHF_EXECINSTR != 0
}

// Func is one function symbol: its name, start address and size (0 =
// unknown: it ends where the next one starts). A Label is a code symbol
// without a type, which only Where names, and only with a size.
type Func struct {
	Name        string
	Start, Size uint64
	Label       bool
}

// NewKernelSymbols indexes fs (at least one function) for Lookup.
func NewKernelSymbols(fs []Func) *KernelSymbols {
	s := &KernelSymbols{}
	for _, f := range fs {
		y := symbol{name: f.Name, start: f.Start, end: f.Start + f.Size}
		if f.Label {
			if f.Size > 0 { // a sizeless label marks a place (_etext), not code
				s.labels = append(s.labels, y)
			}
		} else {
			s.funcs = append(s.funcs, y)
		}
	}
	sortSymbols(s.funcs)
	sortSymbols(s.labels)
	if len(s.funcs) > 0 {
		s.text = [2]uint64{s.funcs[0].start, s.funcs[len(s.funcs)-1].end}
	}
	return s
}

// sortSymbols orders ys by start, then name, and ends each sizeless one
// where the next one starts.
func sortSymbols(ys []symbol) {
	sort.Slice(ys, func(i, j int) bool {
		a, b := ys[i], ys[j]
		if a.start != b.start {
			return a.start < b.start
		}
		return a.name < b.name
	})
	for i := range ys {
		if ys[i].end == ys[i].start && i+1 < len(ys) {
			ys[i].end = ys[i+1].start
		}
	}
}

// Lookup names the function holding addr ("" when none does). Of aliases
// at one address the first by name is given, so the answer is stable.
func (s *KernelSymbols) Lookup(addr uint64) string {
	if addr < s.text[0] || addr >= s.text[1] {
		return ""
	}
	return holder(s.funcs, addr)
}

// Where names the function holding addr, else the code label (entry
// code has no function symbol): what a hang report prints.
func (s *KernelSymbols) Where(addr uint64) string {
	if n := s.Lookup(addr); n != "" {
		return n
	}
	return holder(s.labels, addr)
}

// holder is the first by name of the symbols of ys holding addr.
func holder(ys []symbol, addr uint64) string {
	i := sort.Search(len(ys), func(i int) bool { return ys[i].start > addr })
	for j := i - 1; j >= 0 && j >= i-4; j-- {
		if f := ys[j]; addr >= f.start && addr < f.end {
			for j > 0 && ys[j-1].start == f.start {
				j--
			}
			return ys[j].name
		}
	}
	return ""
}

// Starts are the start addresses of the functions whose names match, by
// name (a name bound to several addresses, as a static function in two
// files, gives its lowest).
func (s *KernelSymbols) Starts(match func(name string) bool) map[string]uint64 {
	out := map[string]uint64{}
	for _, f := range s.funcs {
		if !match(f.name) {
			continue
		}
		if a, ok := out[f.name]; !ok || f.start < a {
			out[f.name] = f.start
		}
	}
	return out
}
