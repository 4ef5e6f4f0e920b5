package verdict

import (
	"fmt"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results"
)

// LoadRow is one program's verifier and JIT facts, base vs patched, the
// way BPF CI compares veristat output. Verified instructions and sizes
// are the kernel's own counts and the same in every boot of a kernel; a
// kernel whose boots disagree shows the range. Times are medians.
type LoadRow struct {
	Variant string   `json:"variant"`
	Program string   `json:"program"`
	Base    LoadSide `json:"base"`
	Patched LoadSide `json:"patched"`
}

// LoadSide is one kernel's facts for a program; Failed is why the
// variant's programs did not load there (the verifier's or loader's
// error), Boots how many boots loaded it.
type LoadSide struct {
	Boots         int    `json:"boots"`
	VerifiedInsns string `json:"verified_insns"` // "123" or "120..125"
	XlatedBytes   string `json:"xlated_bytes"`
	JitedBytes    string `json:"jited_bytes"`
	VerifyUs      uint64 `json:"verify_us"` // median verifier time, guest µs
	LoadNs        int64  `json:"load_ns"`   // median load of the whole variant
	Failed        string `json:"failed,omitempty"`
}

// loads gathers the tree's load facts per variant and program, in boot
// order of first appearance.
func loads(run *results.Run, tree string) []LoadRow {
	facts := map[loadKey]map[string][]results.ProgLoad{}
	failed := map[string]map[string]string{} // variant → role → error
	var order []loadKey
	for _, b := range SortedBoots(run) {
		if b.Tree != tree {
			continue
		}
		for _, v := range b.Variants {
			if v.LoadError != "" {
				if failed[v.Variant] == nil {
					failed[v.Variant] = map[string]string{}
					order = append(order, loadKey{v.Variant, ""})
				}
				failed[v.Variant][b.Role] = v.LoadError
			}
			for _, l := range v.Loads {
				k := loadKey{v.Variant, l.Name}
				if facts[k] == nil {
					facts[k] = map[string][]results.ProgLoad{}
					order = append(order, k)
				}
				facts[k][b.Role] = append(facts[k][b.Role], l)
			}
		}
	}
	var out []LoadRow
	for _, k := range order {
		if k.prog == "" && hasProgs(facts, k.variant) {
			continue // listed with its programs below
		}
		r := LoadRow{Variant: k.variant, Program: k.prog}
		r.Base = loadSide(facts[k][results.RoleBase], failed[k.variant][results.RoleBase])
		r.Patched = loadSide(facts[k][results.RolePatched], failed[k.variant][results.RolePatched])
		out = append(out, r)
	}
	return out
}

type loadKey struct{ variant, prog string }

func hasProgs(facts map[loadKey]map[string][]results.ProgLoad, variant string) bool {
	for k := range facts {
		if k.variant == variant && k.prog != "" {
			return true
		}
	}
	return false
}

func loadSide(ls []results.ProgLoad, failed string) LoadSide {
	s := LoadSide{Boots: len(ls), Failed: failed}
	if len(ls) == 0 {
		return s
	}
	var ins, xl, jit []float64
	var us, ns []float64
	for _, l := range ls {
		ins = append(ins, float64(l.VerifiedInsns))
		xl = append(xl, float64(l.XlatedBytes))
		jit = append(jit, float64(l.JitedBytes))
		us = append(us, float64(l.VerifyUs))
		ns = append(ns, float64(l.LoadNs))
	}
	s.VerifiedInsns, s.XlatedBytes, s.JitedBytes = intRange(ins), intRange(xl), intRange(jit)
	s.VerifyUs, s.LoadNs = uint64(summarize(us).Median), int64(summarize(ns).Median)
	return s
}

func intRange(xs []float64) string {
	lo, hi := stats.MinMax(xs)
	if lo == hi {
		return fmt.Sprintf("%.0f", lo)
	}
	return fmt.Sprintf("%.0f..%.0f", lo, hi)
}
