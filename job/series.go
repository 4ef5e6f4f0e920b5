package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/internal/version"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// SeriesBuilder is what per-patch validation needs from the builder: kci
// test's KernelBuilder (a prefix is built with Patched in the tree's kept
// build directory, so the previous prefix's objects make it incremental)
// plus checkpatch and the warnings. *Builder is the real one; unit tests
// script a fake.
type SeriesBuilder interface {
	KernelBuilder
	// Checkpatch runs the tree's own scripts/checkpatch.pl on one patch.
	Checkpatch(ctx context.Context, tree *kernel.Artifacts, p kernel.Patch) (*kernel.Checkpatch, error)
	// Warnings is what the tree kernel's build directory warns about: its
	// log and those of the builds it was seeded from.
	Warnings(tree *kernel.Artifacts) kernel.WarningSet
}

// Checkpatch runs the tree's checkpatch.pl on p.
func (b *Builder) Checkpatch(ctx context.Context, tree *kernel.Artifacts, p kernel.Patch) (*kernel.Checkpatch, error) {
	return b.Cache.RunCheckpatch(ctx, b.baseRequest().Base, tree.Commit, p)
}

// Warnings folds the build logs from the stock build up to tree.
func (b *Builder) Warnings(tree *kernel.Artifacts) kernel.WarningSet {
	var chain []*kernel.Artifacts
	for a := tree; a != nil && len(chain) < 16; {
		chain = append(chain, a)
		if a.Parent == "" {
			break
		}
		p, err := b.Cache.Lookup(a.Parent)
		if err != nil {
			break
		}
		a = p
	}
	set := kernel.WarningSet{}
	for i := len(chain) - 1; i >= 0; i-- {
		if o, err := kernel.ParseMakeLog(chain[i].Log); err == nil {
			set.Apply(o)
		}
	}
	return set
}

// SeriesOptions is what `kci series` was asked.
type SeriesOptions struct {
	Patches []string // the series: files, dirs, mboxes, series files
	// Loaded, when set, is the series itself (Patches then only names it):
	// e.g. a tree's own series from Builder.OwnSeries.
	Loaded []kernel.Patch
	Trees  []string // empty: every tree the whole series applies to
	// Boot runs sanity (+ survival) on every prefix that builds.
	Boot     bool
	Survival bool
	// Variants, when set, measure performance: the tree's kernel and the
	// whole series first; if a program moves, the patch behind it is
	// found by bisection over prefixes, or every prefix is measured with
	// Each.
	Variants []string
	Each     bool
	Bench    wire.BenchParams
	BenchFor func(accel string) wire.BenchParams // sizes traffic once the accelerator is known
	// MinEffectPct is the smallest change (percent) a program must show to
	// be located; 0: results.DefaultMinEffectPct.
	MinEffectPct float64
	// Seeds is how many guest seeds each measured prefix is booted with
	// under icount; 0: seriesSeeds. Fewer boots, less power on rows with
	// seed spread (they are tested from 6 seeds, or when they move 10 %).
	Seeds int
	// FirstSeed shifts every guest seed of the series: logical seed k
	// boots with FirstSeed+k-1 (0 = 1), another sample of the guest's
	// randomness than 1, 2, 3..., as kci test --first-seed.
	FirstSeed uint64
	// FailOnWarnings makes new warnings and checkpatch errors fail the run
	// (exit 3, a failing check); otherwise they are reported only (exit 0,
	// a neutral check). series.json records it.
	FailOnWarnings bool
	Out            string // run directory; default ./kci-results/<time>-<id>
	Args           []string
	Log            io.Writer
	Progress       *progress.Meter
}

// SeriesTester validates a series patch by patch.
type SeriesTester struct {
	Project *project.File
	Builder SeriesBuilder
	Booter  boot.Booter
}

// Series checks every prefix 1..N of the series on each tree: apply,
// incremental build, new warnings, checkpatch, boot + sanity + survival,
// and locates performance changes. It returns the run directory (with
// series.json, series.txt, series.md) even on failure.
func (st *SeriesTester) Series(ctx context.Context, o SeriesOptions) (string, *results.Series, error) {
	patches := o.Loaded
	if patches == nil {
		var err error
		if patches, err = kernel.LoadSeries(o.Patches...); err != nil {
			return "", nil, PatchFile(err)
		}
	}
	cov, err := newCoverage(patches)
	if err != nil {
		return "", nil, &ExitError{Code: ExitApply, Cause: err.Error()}
	}
	id := results.NewID()
	start := time.Now()
	dir := runDir(o.Out, start, id)
	// One boot at a time: a series' noisy location decides each boot
	// from the last, and its records keep the order of its boots.
	e := &engine{ctx: ctx, dir: dir, log: o.Log, meter: o.Progress, booter: st.Booter,
		seeds: seedMap{first: o.FirstSeed}, bench: o.Bench, benchFor: o.BenchFor, parallel: 1}
	// The trees are chosen before the run directory exists: a series that
	// applies to no tree, or a tree that is not in kci.yaml, leaves nothing.
	trees, err := st.chooseTrees(ctx, o.Trees, patches, e.logf)
	if err != nil {
		return "", nil, classify("series", err)
	}
	if err := results.HoldsRun(dir); err != nil {
		return "", nil, classify("results", err) // never over an earlier run
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, classify("results", err)
	}
	rep := &results.Series{Schema: results.SeriesSchema, ID: id, Start: start, Args: o.Args, KCIVersion: version.String(), FailOnWarnings: o.FailOnWarnings}
	stopPrepare := e.prepare()
	finish := func(err error) (string, *results.Series, error) {
		stopPrepare()
		rep.End = time.Now()
		rep.IncompleteReason, err = e.stopped(err)
		rep.Incomplete = err != nil
		if werr := render.WriteSeries(dir, rep); werr != nil && err == nil {
			err = werr
		}
		if err == nil {
			err = seriesExit(rep)
		}
		return dir, rep, classify("series", err)
	}

	for _, tr := range trees {
		save := func(cur *results.SeriesTree) error {
			if err := rep.SaveProgress(dir, *cur); err != nil {
				return classify("results", err)
			}
			return nil
		}
		t, err := st.tree(e, tr, patches, cov, o, rep, save)
		if t != nil {
			rep.Trees = append(rep.Trees, *t)
		}
		if err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}

// chooseTrees are the trees named, or every tree the whole series
// applies to. (A tree where only a prefix applies is checked too when
// named.)
func (st *SeriesTester) chooseTrees(ctx context.Context, named []string, patches []kernel.Patch, logf func(string, ...any)) ([]*project.Tree, error) {
	picks, err := pickApplying(st.Project, named, false, func(tr *project.Tree) (*kernel.ApplyError, error) {
		ok, err := st.Builder.AppliesTo(ctx, tr, patches)
		if err != nil || ok {
			return nil, err
		}
		return &kernel.ApplyError{Tree: tr.Name}, nil
	})
	if err != nil {
		return nil, err
	}
	var trees []*project.Tree
	var names []string
	for _, pk := range picks {
		names = append(names, pk.tree.Name)
		if pk.skip != nil {
			logf("kci: the series does not apply to tree %s: skipping that tree", pk.tree.Name)
			continue
		}
		trees = append(trees, pk.tree)
	}
	if len(trees) == 0 {
		return nil, &ExitError{Code: ExitApply, Cause: fmt.Sprintf("the series applies to none of the trees %v", names)}
	}
	return trees, nil
}

// seriesExit is the exit status the series gives: verdict.DecideSeries'
// failing fault, under the policy s records.
func seriesExit(s *results.Series) error {
	f := verdict.DecideSeries(s, "").Fail
	if f == nil {
		return nil
	}
	code, ok := faultExit[f.Kind]
	if !ok {
		code = ExitInternal // a kind without a code: never exit 0 on a failure
	}
	return &ExitError{Code: code, Cause: fmt.Sprintf("tree %s: %s", f.Tree, f.Cause)}
}

// lostCells are the survival cells that passed on the tree's kernel and do
// not pass on the prefix (missing counts as lost).
func lostCells(base, now []wire.Cell) []string {
	pass := map[[2]string]bool{}
	for _, c := range now {
		k := [2]string{c.Carrier, c.Path}
		if _, seen := pass[k]; !seen {
			pass[k] = c.Pass
		} else {
			pass[k] = pass[k] && c.Pass
		}
	}
	var lost []string
	for _, c := range base {
		if !c.Pass {
			continue
		}
		if ok, seen := pass[[2]string{c.Carrier, c.Path}]; !seen || !ok {
			lost = append(lost, c.Carrier+" over "+c.Path)
		}
	}
	return lost
}
