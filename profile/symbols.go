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
		if elf.ST_TYPE(y.Info) == elf.STT_FUNC && y.Value != 0 {
			fs = append(fs, Func{Name: y.Name, Start: y.Value, Size: y.Size})
		}
	}
	if len(fs) == 0 {
		return nil, fmt.Errorf("kernel symbols: %s has no function symbols (stripped?)", vmlinux)
	}
	return NewKernelSymbols(fs), nil
}

// Func is one function symbol: its name, start address and size (0 =
// unknown: it ends where the next one starts).
type Func struct {
	Name        string
	Start, Size uint64
}

// NewKernelSymbols indexes fs (at least one) for Lookup.
func NewKernelSymbols(fs []Func) *KernelSymbols {
	s := &KernelSymbols{}
	for _, f := range fs {
		s.funcs = append(s.funcs, symbol{name: f.Name, start: f.Start, end: f.Start + f.Size})
	}
	sort.Slice(s.funcs, func(i, j int) bool {
		a, b := s.funcs[i], s.funcs[j]
		if a.start != b.start {
			return a.start < b.start
		}
		return a.name < b.name
	})
	for i := range s.funcs {
		if s.funcs[i].end == s.funcs[i].start && i+1 < len(s.funcs) {
			s.funcs[i].end = s.funcs[i+1].start
		}
	}
	s.text = [2]uint64{s.funcs[0].start, s.funcs[len(s.funcs)-1].end}
	return s
}

// Lookup names the function holding addr ("" when none does). Of aliases
// at one address the first by name is given, so the answer is stable.
func (s *KernelSymbols) Lookup(addr uint64) string {
	if addr < s.text[0] || addr >= s.text[1] {
		return ""
	}
	i := sort.Search(len(s.funcs), func(i int) bool { return s.funcs[i].start > addr })
	for j := i - 1; j >= 0 && j >= i-4; j-- {
		if f := s.funcs[j]; addr >= f.start && addr < f.end {
			for j > 0 && s.funcs[j-1].start == f.start {
				j--
			}
			return s.funcs[j].name
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
