package benchtab

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results"
)

// AggSet is one repetition set of the user's table: per variant, the cost
// of each program.
type AggSet struct {
	Label    string
	Variants []AggEntry
}

// AggEntry is one variant's measurement within a set.
type AggEntry struct {
	Variant string
	Costs   []results.ProgCost
}

// AggTable is the user's cross-set summary: for each variant, each
// program's ns/pkt per set, and the variant total as mean ± spread with
// spread = (max − min) / 2 over the sets.
type AggTable struct {
	Title string `json:"title,omitempty"`
	// Median: the totals column is the median over the sets, as the main
	// report's (kci run directories); otherwise the mean, as the user's
	// mail prints his .bpfstats sets.
	Median   bool         `json:"-"`
	Unit     string       `json:"unit"`
	Metric   string       `json:"metric,omitempty"`
	Sets     []string     `json:"sets"`
	Variants []AggVariant `json:"variants"`
	Notes    []string     `json:"notes,omitempty"`
}

// AggVariant is one variant's block of the table.
type AggVariant struct {
	Variant  string    `json:"variant"`
	Programs []AggProg `json:"programs"`
	Totals   []float64 `json:"totals"` // per set; NaN where the set lacks the variant
	Mean     float64   `json:"mean"`
	Median   float64   `json:"median"`
	Spread   float64   `json:"spread"`
}

// AggProg is one program's row: ns/pkt per set (NaN where the set lacks
// the variant).
type AggProg struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

// BuildAgg aggregates sets. Variants are listed in order of first
// appearance, programs likewise; a program missing from a set that has its
// variant counts 0 there, as a program that did not run.
func BuildAgg(title string, sets []AggSet) AggTable {
	t := AggTable{Title: title}
	vidx := map[string]int{}
	for _, s := range sets {
		t.Sets = append(t.Sets, s.Label)
		for _, e := range s.Variants {
			if _, ok := vidx[e.Variant]; !ok {
				vidx[e.Variant] = len(t.Variants)
				t.Variants = append(t.Variants, AggVariant{Variant: e.Variant})
			}
		}
	}
	for vi := range t.Variants {
		v := &t.Variants[vi]
		pidx := map[string]int{}
		v.Totals = make([]float64, len(sets))
		for si, s := range sets {
			e := findEntry(s, v.Variant)
			if e == nil {
				v.Totals[si] = math.NaN()
				continue
			}
			for _, c := range e.Costs {
				if _, ok := pidx[c.Name]; !ok {
					pidx[c.Name] = len(v.Programs)
					v.Programs = append(v.Programs, AggProg{Name: c.Name})
				}
			}
			v.Totals[si] = results.Total(e.Costs)
		}
		for pi := range v.Programs {
			p := &v.Programs[pi]
			p.Values = make([]float64, len(sets))
			for si, s := range sets {
				e := findEntry(s, v.Variant)
				if e == nil {
					p.Values[si] = math.NaN()
					continue
				}
				for _, c := range e.Costs {
					if c.Name == p.Name {
						p.Values[si] += c.NsPerPkt
					}
				}
			}
		}
		v.Mean, v.Spread = meanSpread(v.Totals)
		v.Median = stats.Median(stats.Present(v.Totals)) // of the sets that have the variant
	}
	return t
}

func findEntry(s AggSet, variant string) *AggEntry {
	for i := range s.Variants {
		if s.Variants[i].Variant == variant {
			return &s.Variants[i]
		}
	}
	return nil
}

// neverRan: a program that cost 0 in every set did not run: no row.
func neverRan(p AggProg) bool {
	for _, x := range p.Values {
		if x != 0 && !math.IsNaN(x) {
			return false
		}
	}
	return true
}

// Center is the totals column's figure for v and its name: the median
// over the sets when t.Median, else the mean.
func (t AggTable) Center(v AggVariant) (float64, string) {
	if t.Median {
		return v.Median, "median"
	}
	return v.Mean, "mean"
}

// meanSpread is the mean and the half range of the sets present (NaN
// marks an absent one); NaN for none.
func meanSpread(xs []float64) (mean, spread float64) {
	ok := stats.Present(xs)
	mean, _ = stats.MeanVar(ok)
	return mean, stats.HalfRange(ok)
}

// readBpfstatsSet reads one set directory of <variant>.bpfstats files, in
// file name order; the set is labelled with the directory's base name.
func readBpfstatsSet(dir string) (AggSet, error) {
	set := AggSet{Label: filepath.Base(filepath.Clean(dir))}
	names, err := bpfstatsFiles(dir)
	if err != nil {
		return set, fmt.Errorf("results: agg: %w", err)
	}
	for _, n := range names {
		progs, err := results.ReadBpfstats(filepath.Join(dir, n))
		if err != nil {
			var be *results.BpfstatsError
			if errors.As(err, &be) {
				return set, fmt.Errorf("results: agg: %s: %s", be.File, be.What)
			}
			return set, fmt.Errorf("results: agg: %w", err)
		}
		costs, _ := results.PerPacket(progs)
		set.Variants = append(set.Variants, AggEntry{Variant: strings.TrimSuffix(n, results.BpfstatsExt), Costs: costs})
	}
	if len(set.Variants) == 0 {
		return set, fmt.Errorf("results: agg: %s: no %s files and no %s", dir, results.BpfstatsExt, results.RunFile)
	}
	return set, nil
}

// bpfstatsFiles are the names of dir's .bpfstats files, sorted (the
// user's bpfstats.py reads them in that order; his .json and .log files
// beside them are not bpftool's).
func bpfstatsFiles(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), results.BpfstatsExt) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// runSets turns a run record into sets, one per repetition, separately for
// base and patched kernels (mixing them in one mean would hide the very
// difference under test). Variants are named <tree>-<variant>; invalid and
// skipped results are left out and listed in notes. prefix, if not empty,
// goes before each set label to tell runs apart.
func runSets(run *results.Run, prefix string) (byRole map[string][]AggSet, notes []string) {
	byRole = map[string][]AggSet{}
	type key struct {
		role string
		rep  int
	}
	idx := map[key]int{}
	boots := append([]results.Boot(nil), run.Boots...)
	sort.SliceStable(boots, func(i, j int) bool { return boots[i].Seq < boots[j].Seq })
	for _, b := range boots {
		label := fmt.Sprintf("rep-%d", b.Rep)
		if prefix != "" {
			label = fmt.Sprintf("%s/%d", prefix, b.Rep)
		}
		if b.Error != "" {
			notes = append(notes, fmt.Sprintf("excluded: %s %s %s: boot failed: %s", label, b.Tree, b.Role, b.Error))
			continue // nothing of a failed boot enters the numbers
		}
		k := key{b.Role, b.Rep}
		for _, v := range b.Variants {
			name := results.VariantLabel(b.Tree, v.Variant)
			switch {
			case v.Skipped != "":
				notes = append(notes, fmt.Sprintf("skipped: %s %s %s: %s", label, name, b.Role, v.Skipped))
				continue
			case !v.Valid:
				notes = append(notes, fmt.Sprintf("excluded: %s %s %s: invalid: %s", label, name, b.Role, v.Invalid))
				continue
			}
			i, ok := idx[k]
			if !ok {
				i = len(byRole[b.Role])
				idx[k] = i
				byRole[b.Role] = append(byRole[b.Role], AggSet{Label: label})
			}
			costs, _ := results.PerPacket(v.Programs)
			byRole[b.Role][i].Variants = append(byRole[b.Role][i].Variants, AggEntry{Variant: name, Costs: costs})
		}
	}
	for role := range byRole {
		sets := byRole[role]
		sort.SliceStable(sets, func(i, j int) bool { return repOf(sets[i].Label) < repOf(sets[j].Label) })
	}
	return byRole, notes
}

func repOf(label string) int {
	i := strings.LastIndexAny(label, "-/")
	var n int
	if _, err := fmt.Sscanf(label[i+1:], "%d", &n); err != nil {
		return 0 // not numbered
	}
	return n
}

// AggTrees aggregates the run directories' (or .bpfstats sets') bench
// results, over the given trees only (all if empty); a tree no run has,
// or trees with plain .bpfstats sets, are refused.
func AggTrees(dirs, trees []string) ([]AggTable, error) {
	plain, runs, runDirs, err := readAggDirs(dirs)
	if err != nil {
		return nil, err
	}
	if len(trees) > 0 && len(plain) > 0 {
		return nil, fmt.Errorf("results: agg: --tree picks trees of kci run directories; %s is a directory of .bpfstats sets, which has none", plain[0].Label)
	}
	for _, t := range trees {
		found := false
		for _, r := range runs {
			found = found || slices.Contains(r.TreeNames(), t)
		}
		if !found {
			return nil, fmt.Errorf("results: agg: no run has tree %q", t)
		}
	}
	var tables []AggTable
	if len(plain) > 0 {
		t := BuildAgg("", plain)
		t.Unit = "ns/pkt"
		tables = append(tables, t)
	}
	if len(runs) > 0 {
		tables = append(tables, runTables(runs, runDirs, trees)...)
	}
	return tables, nil
}

// readAggDirs reads each directory as a kci run or a set of .bpfstats
// files.
func readAggDirs(dirs []string) (plain []AggSet, runs []*results.Run, runDirs []string, err error) {
	for _, d := range dirs {
		if results.IsRunDir(d) {
			r, err := results.Load(d)
			if err != nil {
				return nil, nil, nil, err
			}
			runs = append(runs, r)
			runDirs = append(runDirs, d)
			continue
		}
		s, err := readBpfstatsSet(d)
		if err != nil {
			return nil, nil, nil, err
		}
		plain = append(plain, s)
	}
	return plain, runs, runDirs, nil
}

// runTables are the runs' tables, one per kernel role, titled with the
// runs' directories and what the numbers measure; the runs' notes go
// under the last.
func runTables(runs []*results.Run, runDirs, trees []string) []AggTable {
	sets := map[string][]AggSet{}
	var notes, names []string
	emulated, icount := false, true
	for i, r := range runs {
		prefix := ""
		if len(runs) > 1 {
			prefix = r.ID
		}
		byRole, n := runSets(onlyTrees(r, trees), prefix)
		for role, s := range byRole {
			sets[role] = append(sets[role], s...)
		}
		notes = append(notes, n...)
		emulated = emulated || r.Emulated("")
		icount = icount && r.ClockMode("") == results.ClockICount
		names = append(names, filepath.Base(filepath.Clean(runDirs[i])))
	}
	var tables []AggTable
	for _, role := range []string{results.RoleBase, results.RolePatched} {
		if len(sets[role]) == 0 {
			continue
		}
		title := fmt.Sprintf("%s kernels, %s", role, strings.Join(names, " "))
		metric := "wall-time"
		switch {
		case icount:
			title += " (" + results.InstructionTimeLabel + ")"
			metric = "instruction-time"
		case emulated:
			title += " (ns/pkt, " + results.EmulatedLabel + ")"
			metric = "emulated wall-time"
		default:
			title += " (ns/pkt)"
		}
		t := BuildAgg(title, sets[role])
		t.Median, t.Unit, t.Metric = true, "ns/pkt", metric
		for i := range t.Variants {
			// As in the main report: a program that never ran is no row.
			t.Variants[i].Programs = slices.DeleteFunc(t.Variants[i].Programs, neverRan)
		}
		tables = append(tables, t)
	}
	if len(notes) > 0 && len(tables) > 0 {
		last := &tables[len(tables)-1]
		last.Notes = append(last.Notes, notes...)
	}
	return tables
}

// onlyTrees is run with the boots of the given trees only (all if none).
func onlyTrees(r *results.Run, trees []string) *results.Run {
	if len(trees) == 0 {
		return r
	}
	c := *r
	c.Boots = nil
	for _, b := range r.Boots {
		if slices.Contains(trees, b.Tree) {
			c.Boots = append(c.Boots, b)
		}
	}
	return &c
}
