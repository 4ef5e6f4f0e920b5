package main

import (
	"errors"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/benchtab"
	"github.com/kci-dev/kci/results/render"
)

// hardwareFlags are kci bench's --hardware, --hardware-tree and --hardware-floor: the
// user's bpf_stats sets from his own machine, set beside kci's table.
type hardwareFlags struct {
	dirs, trees []string
	floorNs     float64
}

func (h *hardwareFlags) register(f *pflag.FlagSet) {
	f.StringArrayVar(&h.dirs, "hardware", nil, "a set of bpf_stats dumps from real hardware (a directory of <tree>-<variant>.bpfstats, "+
		"as bpfstats.py --agg reads); the arguments after it that are no kci run directories are sets too: "+
		"--hardware results-1 results-2 results-3")
	f.StringArrayVar(&h.trees, "hardware-tree", nil, "HWTREE=TREE: the sets' HWTREE-* variants are kci's TREE-* rows "+
		"(gtp=gtp+patched: a kci test run's patched kernel); default: the same name")
	f.Float64Var(&h.floorNs, "hardware-floor", 0, "NS: bpf_stats' own floor on the sets' machine, ns a call (what it reads for a program "+
		"that does nothing: go test -run '^$' -bench StatsFloor ./bpf there), taken off every call, so his rows compare "+
		"with kci's call rows, which hold no clock reads; one figure for every hook, where a path's hooks can differ "+
		"(tc egress above ingress: docs/cost.md)")
}

// hardwareInput is the sets read and their trees mapped to kci's, checked.
type hardwareInput struct {
	sets    benchtab.AggTable
	trees   map[string]string
	floorNs float64
}

// splitBenchArgs tells kci bench's arguments apart: kci run directories
// are RUNDIRs; with --hardware every other argument is one more set.
func splitBenchArgs(args []string, hardware bool) (runDirs, sets []string) {
	for _, a := range args {
		if hardware && !results.IsRunDir(a) {
			sets = append(sets, a)
			continue
		}
		runDirs = append(runDirs, a)
	}
	return runDirs, sets
}

// readHardware reads --hardware's sets (and the sets among the
// arguments) and --hardware-tree, before anything else is done; nil
// without --hardware. Whatever is wrong is a usage error naming it.
func (h hardwareFlags) read(more []string) (*hardwareInput, error) {
	if len(h.dirs) == 0 {
		switch {
		case len(h.trees) > 0:
			return nil, job.Usagef("--hardware-tree maps the names of --hardware's sets: give --hardware too")
		case h.floorNs != 0:
			return nil, job.Usagef("--hardware-floor is taken off --hardware's sets: give --hardware too")
		}
		return nil, nil
	}
	if !(h.floorNs >= 0) || math.IsInf(h.floorNs, 0) {
		return nil, job.Usagef("--hardware-floor %v: want the ns a call bpf_stats reads for an empty program, 0 or more", h.floorNs)
	}
	sets, err := benchtab.ReadHardware(append(slices.Clone(h.dirs), more...), h.floorNs)
	var he *benchtab.HardwareError
	if errors.As(err, &he) {
		return nil, job.Usagef("--hardware %s: %s", he.Path, he.What)
	} else if err != nil {
		return nil, job.Usagef("--hardware: %v", err)
	}
	hw := &hardwareInput{sets: sets, trees: map[string]string{}, floorNs: h.floorNs}
	have := benchtab.HardwareTrees(sets)
	for _, m := range h.trees {
		from, to, ok := strings.Cut(m, "=")
		switch {
		case !ok || from == "" || to == "" || strings.Contains(to, "="):
			return nil, job.Usagef("--hardware-tree %q: want HWTREE=TREE (gtp=gtp+patched)", m)
		case !slices.Contains(have, from):
			return nil, job.Usagef("--hardware-tree %s: the sets have no %s-* variant (their trees: %s)", m, from, strings.Join(have, ", "))
		case hw.trees[from] != "":
			return nil, job.Usagef("--hardware-tree %s: %s is mapped twice (to %s, then %s)", m, from, hw.trees[from], to)
		}
		hw.trees[from] = to
	}
	return hw, nil
}

// check refuses sets none of whose variants is one of kci's rows (rows,
// on trees), and a --hardware-tree to a tree kci has not: before any
// boot, with the rows kci bench will have.
func (hw *hardwareInput) check(rows, trees []string) error {
	for from, to := range hw.trees {
		if !slices.Contains(trees, to) {
			return job.Usagef("--hardware-tree %s=%s: kci's table has no tree %s (its trees: %s)", from, to, to, strings.Join(trees, ", "))
		}
	}
	pairs, onlyHW, _ := benchtab.MatchHardware(benchtab.VariantNames(hw.sets), rows, hw.trees)
	if len(pairs) == 0 {
		return job.Usagef("--hardware: no variant of the sets (%s) is a row of kci's table (%s): bench the trees they ran on (--tree), "+
			"or map a tree's name (--hardware-tree HWTREE=TREE)", strings.Join(onlyHW, ", "), strings.Join(rows, ", "))
	}
	return nil
}

// plannedRows are the rows kci bench's boots will give: every tree's
// variants, <tree>-<variant> (a variant a kernel cannot run is skipped
// then, and listed beside the hardware as a row without a number).
func plannedRows(p *project.File, named, variants []string) (rows, trees []string) {
	trees = named
	if len(trees) == 0 {
		for _, t := range p.Trees {
			trees = append(trees, t.Name)
		}
	}
	for _, t := range trees {
		for _, v := range withBaseline(variants, p.Bench.Variants) {
			rows = append(rows, results.VariantLabel(t, v))
		}
	}
	return rows, trees
}

// tableTrees are the trees of a bench table's rows, in order.
func tableTrees(bt benchtab.BenchTable) []string {
	var out []string
	for _, v := range benchtab.VariantNames(bt.Agg) {
		t, _, _ := strings.Cut(v, "-")
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// writeBench prints the bench table, and beside it the hardware's when
// there is any.
func writeBench(w io.Writer, bt benchtab.BenchTable, hw *hardwareInput) error {
	if err := render.BenchText(w, bt); err != nil || hw == nil {
		return err
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return err
	}
	return render.HardwareText(w, benchtab.BuildHardware(bt, hw.sets, hw.trees, hw.floorNs), bt.Model)
}
