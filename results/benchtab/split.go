package benchtab

import (
	"math"
	"slices"
	"sort"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// SplitMinShare is the smallest share of a program's call a function is
// named at in a CallSplit; the others are summed into SplitOther.
const SplitMinShare = 0.01

// The rows of a CallSplit that are no one function.
const (
	SplitOther  = "[other functions, each < 1 %]"
	SplitNested = "[calls made inside it]" // contexts nested in the program's call: another program's run
)

// CallSplit is one program's calls split by function (the plugin's
// splits, results.CallCount.Funcs): what a call ran, per call, as a
// profile's children of the program read, in Unit.
type CallSplit struct {
	Variant string `json:"variant"`
	Prog    string `json:"prog"`
	// Unit is results.ModelledCyclesPerCallLabel under the cache model,
	// else results.InstructionsPerCallLabel.
	Unit string `json:"unit"`
	// Boots is how many boots the means are over; Total the call's
	// whole count a call (nested calls included), mean over them.
	Boots int         `json:"boots"`
	Total float64     `json:"total"`
	Funcs []SplitFunc `json:"funcs"`
	// Accountant is what kci's context accountant ran inside the calls,
	// a call (mean): taken out of Total and of every row (ProgCall).
	Accountant float64 `json:"accountant,omitempty"`
	// Under the cache model, the split functions' instructions a call,
	// and the model's penalties on them: instruction fetches', and the
	// rest (data accesses'), means over the boots.
	Insns      float64 `json:"insns,omitempty"`
	FetchStall float64 `json:"fetch_stall,omitempty"`
	DataStall  float64 `json:"data_stall,omitempty"`
}

// SplitFunc is one function's part of a program's call, a call: mean,
// lowest and highest over the boots (0 in a boot it did not run in),
// and the mean's share of the call's Total.
type SplitFunc struct {
	Name  string  `json:"name"`
	Mean  float64 `json:"mean"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	Share float64 `json:"share"`
	// Fetch is, under the cache model, the part of Mean that is the
	// penalties of the function's instruction fetches (mean).
	Fetch float64 `json:"fetch,omitempty"`
}

// splitKey is one program of one variant in one unit.
type splitKey struct{ variant, prog, unit string }

// splitBoot is one boot's split of a program's calls, a call: the call's
// whole count and the accountant taken out of it, and its functions'
// counts (in the split's unit), instructions and fetch penalties.
type splitBoot struct {
	total, accountant, insns, fetch float64
	funcs, fetchOf                  map[string]float64
}

// splitBoots collects, per program, each boot's calls split a call.
type splitBoots struct {
	order []splitKey
	boots map[splitKey][]splitBoot
}

// add records v's programs' splits in one boot.
func (s *splitBoots) add(variant string, e *results.Exact) {
	if e == nil {
		return
	}
	unit := results.InstructionsPerCallLabel
	if e.Model != "" {
		unit = results.ModelledCyclesPerCallLabel
	}
	for _, c := range verdict.ProgCalls(e) {
		if len(c.Funcs) == 0 || c.Calls == 0 {
			continue
		}
		n := float64(c.Calls)
		per := func(insns, cycles uint64) float64 {
			if e.Model != "" {
				return float64(cycles) / n
			}
			return float64(insns) / n
		}
		b := splitBoot{total: per(c.Insns, c.Cycles), accountant: per(c.Accountant.Insns, c.Accountant.Cycles),
			funcs: map[string]float64{}, fetchOf: map[string]float64{}}
		for _, f := range c.Funcs {
			b.funcs[f.Name] += per(f.Insns, f.Cycles)
			b.fetchOf[f.Name] += float64(f.Fetch) / n
			b.insns += float64(f.Insns) / n
			b.fetch += float64(f.Fetch) / n
		}
		k := splitKey{variant, c.Prog, unit}
		if s.boots == nil {
			s.boots = map[splitKey][]splitBoot{}
		}
		if _, ok := s.boots[k]; !ok {
			s.order = append(s.order, k)
		}
		s.boots[k] = append(s.boots[k], b)
	}
}

// table is the collected splits, in variants' order (as given), then
// programs' names.
func (s *splitBoots) table(variants []string) []CallSplit {
	rank := map[string]int{}
	for i, v := range variants {
		rank[v] = i
	}
	keys := slices.Clone(s.order)
	sort.SliceStable(keys, func(i, j int) bool {
		if rank[keys[i].variant] != rank[keys[j].variant] {
			return rank[keys[i].variant] < rank[keys[j].variant]
		}
		return keys[i].prog < keys[j].prog
	})
	var out []CallSplit
	for _, k := range keys {
		out = append(out, splitOf(k, s.boots[k]))
	}
	return out
}

// splitOf summarises one program's boots: its functions by mean, those
// under SplitMinShare summed, and what nested calls ran.
func splitOf(k splitKey, boots []splitBoot) CallSplit {
	cs := CallSplit{Variant: k.variant, Prog: k.prog, Unit: k.unit, Boots: len(boots)}
	names := map[string]bool{}
	for _, b := range boots {
		for n := range b.funcs {
			names[n] = true
		}
	}
	nested := make([]float64, len(boots))
	other := make([]float64, len(boots))
	for i, b := range boots {
		cs.Total += b.total / float64(len(boots))
		cs.Accountant += b.accountant / float64(len(boots))
		nested[i] = b.total
		for _, x := range b.funcs {
			nested[i] -= x
		}
		if k.unit == results.ModelledCyclesPerCallLabel {
			cs.Insns += b.insns / float64(len(boots))
			cs.FetchStall += b.fetch / float64(len(boots))
			cs.DataStall += (b.total - nested[i] - b.insns - b.fetch) / float64(len(boots))
		}
	}
	var otherFetch float64
	for n := range names {
		vals := make([]float64, len(boots))
		fetch := 0.0
		for i, b := range boots {
			vals[i] = b.funcs[n]
			fetch += b.fetchOf[n] / float64(len(boots))
		}
		f := summary(n, vals, cs.Total, fetch)
		if f.Share < SplitMinShare {
			for i := range other {
				other[i] += vals[i]
			}
			otherFetch += f.Fetch
			continue
		}
		cs.Funcs = append(cs.Funcs, f)
	}
	sort.Slice(cs.Funcs, func(i, j int) bool {
		if cs.Funcs[i].Mean != cs.Funcs[j].Mean {
			return cs.Funcs[i].Mean > cs.Funcs[j].Mean
		}
		return cs.Funcs[i].Name < cs.Funcs[j].Name
	})
	for _, r := range []struct {
		name string
		vals []float64
	}{{SplitOther, other}, {SplitNested, nested}} {
		fetch := 0.0
		if r.name == SplitOther {
			fetch = otherFetch
		}
		if f := summary(r.name, r.vals, cs.Total, fetch); f.Max >= 0.5 {
			cs.Funcs = append(cs.Funcs, f)
		}
	}
	return cs
}

// summary is vals' mean, lowest and highest, and the mean's share of
// total, with its fetch part.
func summary(name string, vals []float64, total, fetch float64) SplitFunc {
	f := SplitFunc{Name: name, Min: math.Inf(1), Max: math.Inf(-1), Fetch: fetch}
	for _, x := range vals {
		f.Mean += x / float64(len(vals))
		f.Min = math.Min(f.Min, x)
		f.Max = math.Max(f.Max, x)
	}
	if total > 0 {
		f.Share = f.Mean / total
	}
	return f
}
