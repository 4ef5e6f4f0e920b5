package job

import (
	"fmt"
	"sync"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/profile"
	"github.com/kci-dev/kci/results"
)

// coverage answers, for a run's patches, whether the benchmark ran them:
// each hunk's changed lines are mapped to a kernel's code once (its
// vmlinux's line table: added lines in the patched kernel, removed ones
// in the base), and each boot's windows are looked up for how often
// they entered that code. It needs the plugin's blocks (icount boots);
// other boots record no runs, and the reports say so.
type coverage struct {
	hunks []hunkRef
	mu    sync.Mutex
	code  map[string][]kernel.LineCode // by vmlinux path and side
}

// hunkRef is one hunk of the run's patches: of patch number patchNo
// (from 1, in the run's order).
type hunkRef struct {
	key, patch string
	patchNo    int
	h          kernel.Hunk
}

// allPatches selects every patch's hunks: kci test maps the whole series
// onto the tree's patched kernel (and its base).
const allPatches = 0

// newCoverage reads the patches' hunks; nil without patches.
func newCoverage(patches []kernel.Patch) (*coverage, error) {
	c := &coverage{code: map[string][]kernel.LineCode{}}
	for i, p := range patches {
		hs, err := p.Hunks()
		if err != nil {
			return nil, err
		}
		for _, h := range hs {
			c.hunks = append(c.hunks, hunkRef{key: fmt.Sprintf("%d.%d", i+1, h.Index), patch: p.Subject, patchNo: i + 1, h: h})
		}
	}
	if len(c.hunks) == 0 {
		return nil, nil
	}
	return c, nil
}

// lines is hunk h's changed lines on side: added (patched), removed (base).
func (h hunkRef) lines(side string) kernel.LineSet {
	if side == results.RoleBase {
		return kernel.LineSet{File: h.h.OldFile, Lines: h.h.Removed}
	}
	return kernel.LineSet{File: h.h.File, Lines: h.h.Added}
}

// codeFor is where the side lines of patch patchNo's hunks (allPatches:
// every patch's) compiled to in k, mapped once; hunks of other patches
// get an empty LineCode (their lines are another tree state's).
func (c *coverage) codeFor(k *kernel.Artifacts, side string, patchNo int) ([]kernel.LineCode, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := fmt.Sprintf("%s\x00%s\x00%d", k.Vmlinux, side, patchNo)
	if code, ok := c.code[key]; ok {
		return code, nil
	}
	sets := make([]kernel.LineSet, len(c.hunks))
	for i, h := range c.hunks {
		if patchNo == allPatches || h.patchNo == patchNo {
			sets[i] = h.lines(side)
		}
	}
	code, err := kernel.LinesCode(k.Vmlinux, sets)
	if err != nil {
		return nil, &kernel.InfraError{Op: "coverage of " + k.Release, Err: err}
	}
	c.code[key] = code
	return code, nil
}

// records are the hunks' records on a tree (of patch patchNo, or
// allPatches): each hunk's patched side when it adds lines, its base side
// when it removes some.
func (c *coverage) records(base, patched *kernel.Artifacts, patchNo int) ([]results.Hunk, error) {
	var out []results.Hunk
	for _, side := range []struct {
		role string
		k    *kernel.Artifacts
	}{{results.RolePatched, patched}, {results.RoleBase, base}} {
		if side.k == nil || side.k.Vmlinux == "" {
			continue // a series prefix that did not build: no code to map
		}
		code, err := c.codeFor(side.k, side.role, patchNo)
		if err != nil {
			return nil, err
		}
		funcOf := symbolsOf(side.k)
		for i, h := range c.hunks {
			if len(code[i].Lines) == 0 {
				continue
			}
			fn := ""
			if len(code[i].Ranges) > 0 {
				fn = funcOf(code[i].Ranges[0].Lo)
			}
			r := results.Hunk{Key: h.key, Name: h.h.NameIn(fn), Patch: h.patch, Side: side.role, Lines: len(code[i].Lines),
				Ranges: len(code[i].Ranges), NoCode: code[i].NoCode}
			for _, cr := range code[i].Ranges {
				r.Bytes += cr.Hi - cr.Lo
			}
			out = append(out, r)
		}
	}
	return out, nil
}

// symbolsOf names the function at an address of k's vmlinux, for hunks
// whose diff names none; "" when its symbols cannot be read (the name
// only loses the function).
func symbolsOf(k *kernel.Artifacts) func(uint64) string {
	syms, err := profile.LoadKernelSymbols(k.Vmlinux)
	if err != nil {
		return func(uint64) string { return "" }
	}
	return syms.Lookup
}

// runs records in each variant's exact counts how often its window ran
// every hunk (of patch patchNo, or allPatches) on side, from the boot's
// blocks; variants without blocks are left alone.
func (c *coverage) runs(k *kernel.Artifacts, side string, patchNo int, vs []results.VariantResult, ex []boot.VariantExact) error {
	code, err := c.codeFor(k, side, patchNo)
	if err != nil {
		return err
	}
	for _, e := range ex {
		if e.Blocks == nil {
			continue
		}
		for i := range vs {
			if vs[i].Variant != e.Variant || vs[i].Exact == nil {
				continue
			}
			c.record(vs[i].Exact, code, e)
		}
	}
	return nil
}

// record puts into ex how often e's blocks ran each hunk with code, and
// in which contexts (boot.VariantExact.Runs).
func (c *coverage) record(ex *results.Exact, code []kernel.LineCode, e boot.VariantExact) {
	if ex.HunkRuns == nil {
		ex.HunkRuns = map[string]uint64{}
	}
	for j, h := range c.hunks {
		if len(code[j].Ranges) == 0 {
			continue // no code on this side: nothing to run
		}
		n, in := e.Runs(code[j].Ranges)
		ex.HunkRuns[h.key] = n
		if in != nil {
			if ex.HunkIn == nil {
				ex.HunkIn = map[string]map[string]uint64{}
			}
			ex.HunkIn[h.key] = in
		}
	}
}
