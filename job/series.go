package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/internal/version"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/suite"
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
	Bench    suite.BenchParams
	BenchFor func(accel string) suite.BenchParams // sizes traffic once the accelerator is known
	// MinEffectPct is the smallest change (percent) a program must show to
	// be located; 0: results.DefaultMinEffectPct.
	MinEffectPct float64
	// FailOnWarnings makes new warnings and checkpatch errors fail the run
	// (exit 3); otherwise they are reported only.
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
	Booter  Booter
}

// Series checks every prefix 1..N of the series on each tree: apply,
// incremental build, new warnings, checkpatch, boot + sanity + survival,
// and locates performance changes. It returns the run directory (with
// series.json, series.txt, series.md) even on failure.
func (st *SeriesTester) Series(ctx context.Context, o SeriesOptions) (string, *results.Series, error) {
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", a...)
		}
	}
	patches := o.Loaded
	if patches == nil {
		var err error
		if patches, err = kernel.LoadSeries(o.Patches...); err != nil {
			return "", nil, &ExitError{Code: ExitApply, Cause: err.Error()}
		}
	}
	id := results.NewID()
	start := time.Now()
	dir := o.Out
	if dir == "" {
		dir = results.DefaultDir(start, id)
	}
	if err := results.HoldsRun(dir); err != nil {
		return "", nil, classify("results", err) // never over an earlier run
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, classify("results", err)
	}
	rep := &results.Series{Schema: 1, ID: id, Start: start, Args: o.Args, KCIVersion: version.String()}
	finish := func(err error) (string, *results.Series, error) {
		rep.End = time.Now()
		if err != nil {
			rep.Incomplete = true
			rep.IncompleteReason = lines.First(err.Error())
			if ctx.Err() != nil {
				rep.IncompleteReason, err = "interrupted", errInterrupted
			}
		}
		if werr := results.WriteSeries(dir, rep); werr != nil && err == nil {
			err = werr
		}
		if err == nil {
			err = seriesVerdict(rep, o.FailOnWarnings)
		}
		return dir, rep, classify("series", err)
	}

	// Trees: the ones named, or every tree the whole series applies to.
	// (A tree where only a prefix applies is checked too when named.)
	var trees []*project.Tree
	names := o.Trees
	if len(names) == 0 {
		for _, tr := range st.Project.Trees {
			names = append(names, tr.Name)
		}
	}
	for _, n := range names {
		tr, err := st.Project.Tree(n)
		if err != nil {
			return finish(&ExitError{Code: ExitInternal, Cause: err.Error()})
		}
		if len(o.Trees) == 0 {
			ok, err := st.Builder.AppliesTo(ctx, tr, patches)
			if err != nil {
				return finish(err)
			}
			if !ok {
				logf("kci: the series does not apply to tree %s: skipping that tree", n)
				continue
			}
		}
		trees = append(trees, tr)
	}
	if len(trees) == 0 {
		return finish(&ExitError{Code: ExitApply, Cause: fmt.Sprintf("the series applies to none of the trees %v", names)})
	}

	for _, tr := range trees {
		save := func(cur *results.SeriesTree) error {
			if err := rep.SaveProgress(dir, *cur); err != nil {
				return classify("results", err)
			}
			return nil
		}
		t, err := st.tree(ctx, tr, patches, o, rep, logf, dir, save)
		if t != nil {
			rep.Trees = append(rep.Trees, *t)
		}
		if err != nil {
			return finish(err)
		}
	}
	return finish(nil)
}

// seriesVerdict is the exit status: the worst patch-blamed failure.
func seriesVerdict(s *results.Series, failOnWarnings bool) error {
	code, cause := 0, ""
	worse := func(c int, why string) {
		if code == 0 || c < code {
			code, cause = c, why
		}
	}
	for _, t := range s.Trees {
		for _, bi := range t.Bisect {
			worse(ExitBuild, fmt.Sprintf("tree %s: %s", t.Tree, bi))
		}
		for _, p := range t.Patches {
			id := fmt.Sprintf("tree %s: patch %d/%d ‹%s›", t.Tree, p.Index, p.Of, p.Subject)
			switch {
			case p.Apply == results.StepFail:
				worse(ExitApply, id+" does not apply: "+p.ApplyError)
			case p.Build == results.StepFail:
				worse(ExitBuild, id+" does not build: "+p.BuildError)
			case failOnWarnings && len(p.NewWarnings) > 0:
				worse(ExitBuild, id+" adds warning "+p.NewWarnings[0].String())
			case failOnWarnings && p.Checkpatch != nil && p.Checkpatch.Errors > 0:
				worse(ExitBuild, fmt.Sprintf("%s: checkpatch: %d error(s)", id, p.Checkpatch.Errors))
			case p.Boot != nil && p.Boot.Result == results.StepFail:
				worse(ExitBoot, id+": "+p.Boot.Error)
			case p.Boot != nil && len(p.Boot.Lost) > 0:
				worse(ExitSurvival, id+" loses survival cell "+p.Boot.Lost[0])
			}
		}
	}
	if code == 0 {
		return nil
	}
	return &ExitError{Code: code, Cause: cause}
}

// tree validates the series on one tree.
//
// save stores the report so far after every prefix.
func (st *SeriesTester) tree(ctx context.Context, tr *project.Tree, patches []kernel.Patch, o SeriesOptions, rep *results.Series, logf func(string, ...any), dir string, save func(*results.SeriesTree) error) (*results.SeriesTree, error) {
	meter := o.Progress
	n := len(patches)
	out := &results.SeriesTree{Tree: tr.Name}
	meter.Begin("[%s] building the tree's kernel", tr.Name)
	began := time.Now()
	defer func() { out.Time = time.Since(began) }()
	base, err := st.Builder.Tree(ctx, tr)
	out.BaseBuildTime = time.Since(began)
	if err != nil {
		meter.End("failed")
		return out, classifyBuild("kernel of tree "+tr.Name, err)
	}
	meter.End("%s", base.Release)
	out.Base = base.Release
	warnings := st.Builder.Warnings(base)

	accelDone := false
	resolve := func() error {
		if accelDone {
			return nil
		}
		accelDone = true
		if r, ok := st.Booter.(AccelResolver); ok {
			accel, why, err := r.ResolveAccel(ctx, base)
			if err != nil {
				return err
			}
			logf("kci: accelerator %s: %s", accel, why)
			rep.Accel, rep.AccelReason = accel, why
			if o.BenchFor != nil {
				o.Bench = o.BenchFor(accel)
			}
		}
		return nil
	}
	// boot runs one kernel with guest seed seed: 1 for every boot but the
	// tree kernel's extra seeds, so that all prefixes stay paired.
	boot := func(k *kernel.Artifacts, label string, p suite.Plan, seed uint64) (*results.PatchBoot, *BootResult, error) {
		if err := resolve(); err != nil {
			return nil, nil, err
		}
		p.Sanity = true
		if len(p.Variants) > 0 {
			p.Bench = o.Bench
		}
		p.StepTimeout = stepTimeout(o.Bench) // as kci test: survival steps get the same bound
		spec := bootSpec{Kernel: k, Plan: p, Tree: tr.Name, Name: label, Label: tr.Name + " " + label, Seed: seed}
		meter.Begin("[%s] boot %s", tr.Name, label)
		s := time.Now()
		res, kind, err := bootOnce(ctx, st.Booter, dir, spec)
		pb := &results.PatchBoot{Result: results.StepOK, Time: time.Since(s), ConsoleLog: spec.consoleFile()}
		if res != nil {
			if res.Clock != "" && rep.Clock == "" {
				rep.Clock = res.Clock
			}
			if res.CPU != "" && rep.GuestCPU == "" {
				rep.GuestCPU, rep.GuestCPUReason = res.CPU, res.CPUReason
			}
			pb.Cache = res.Cache
			for _, c := range res.Cells {
				pb.Cells++
				if c.Pass {
					pb.Passed++
				}
			}
		}
		if err != nil {
			meter.End("failed: %s", lines.First(err.Error()))
			if ctx.Err() != nil {
				return pb, res, ctx.Err()
			}
			pb.Result, pb.Error, pb.ErrorKind = results.StepFail, lines.First(err.Error()), kind
			if blame := bootBlame(spec.Label, label, kind, pb.Error, err); blame.Code == ExitInternal {
				return pb, res, blame
			}
			return pb, res, nil // the prefix's own failure: its row says so
		}
		meter.End("done")
		return pb, res, nil
	}

	survivalPlan := suite.Plan{Survival: o.Survival}
	if o.Each && len(o.Variants) > 0 {
		survivalPlan.Variants = o.Variants // one boot per prefix does both
	}
	perf := map[int]map[string]float64{} // prefix (0: the tree) -> variant/prog -> ns/pkt
	var baseCells []suite.Cell
	if o.Boot {
		pb, res, err := boot(base, "base", survivalPlan, 1)
		out.BaseBoot = pb
		if err != nil {
			return out, err
		}
		if res != nil {
			baseCells = res.Cells
			if len(survivalPlan.Variants) > 0 {
				perf[0] = progCosts(res.Variants)
			}
		}
	}

	prevBuilt := true
	applyFailed := 0
	var brokenAt int
	var brokenErr string
	built := map[int]*kernel.Artifacts{}
	for k := 1; k <= n; k++ {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		p := patches[k-1]
		row := results.PatchResult{Index: k, Of: n, Subject: p.Subject, File: p.Name()}
		// checkpatch needs nothing built: it answers even for a patch
		// that cannot be applied.
		if cp, err := st.Builder.Checkpatch(ctx, base, p); err != nil {
			row.CheckpatchError = lines.First(err.Error())
		} else {
			row.Checkpatch = cp
		}
		if applyFailed > 0 {
			row.Apply, row.Build = results.StepBlocked, results.StepBlocked
			out.Patches = append(out.Patches, row)
			continue
		}
		meter.Begin("[%s] building patch %d/%d", tr.Name, k, n)
		s := time.Now()
		a, err := st.Builder.Patched(ctx, tr, base, patches[:k])
		row.BuildTime = time.Since(s)
		row.Apply, row.Build = results.StepOK, results.StepOK
		var logFile string
		var ae *kernel.ApplyError
		var be *kernel.BuildError
		var ce *kernel.ConfigError
		var ve *kernel.VerifyError
		switch {
		case err == nil:
			meter.End("%s", hitOrBuilt(a))
			row.Release, row.BuildKey, row.CacheHit, logFile = a.Release, a.Key, a.CacheHit, a.Log
			built[k] = a
		case ctx.Err() != nil:
			meter.End("interrupted")
			return out, ctx.Err()
		case errors.As(err, &ae):
			meter.End("does not apply")
			row.Apply, row.Build = results.StepFail, results.StepSkipped
			row.ApplyError = ae.Error()
			applyFailed = k
		case errors.As(err, &be):
			meter.End("build failed")
			row.Build, row.BuildError, logFile = results.StepFail, lines.First(be.Error()), be.Log
			if be.First != "" {
				row.BuildError = strings.TrimPrefix(be.First, "../") // make runs in O=.kci-o
			}
		case errors.As(err, &ve):
			// Built, but what the series adds so far is not all in BTF:
			// in the middle of a series that can be legitimate (a kfunc
			// declared now, compiled in by a later patch). Reported, not
			// blamed; nothing published, so nothing to boot.
			meter.End("unverified")
			row.Build, row.BuildError = results.StepUnverified, ve.Error()
		case errors.As(err, &ce) && notYetDefined(ce, definedLater(patches[k:], k)) != "":
			// The fragments ask for what a later patch defines: not this
			// prefix's fault, and nothing to boot.
			meter.End("config not yet complete")
			row.Build, row.BuildError = results.StepUnverified, notYetDefined(ce, definedLater(patches[k:], k))
		case errors.As(err, &ce):
			meter.End("config policy violated")
			row.Build, row.BuildError = results.StepFail, lines.First(ce.Error())
			if len(ce.Violations) > 0 {
				row.BuildError = "config policy: " + ce.Violations[0].String()
			}
		default:
			meter.End("failed")
			out.Patches = append(out.Patches, row)
			return out, classify(fmt.Sprintf("tree %s: patch %d/%d", tr.Name, k, n), err)
		}
		if logFile != "" {
			if bo, err := kernel.ParseMakeLog(logFile); err == nil {
				if row.Build == results.StepFail {
					// make stopped early: a file it started may not have
					// got as far as its old warnings, which must not come
					// back as new once the build works again.
					bo.Compiled = nil
				}
				row.NewWarnings = warnings.Apply(bo)
			} else {
				logf("kci: [%s] patch %d/%d: build log: %v", tr.Name, k, n, err)
			}
		}
		// Bisectability: a break in the middle, repaired later.
		if row.Build == results.StepFail && prevBuilt {
			brokenAt, brokenErr = k, row.BuildError
		}
		if row.Build == results.StepOK && !prevBuilt && brokenAt > 0 {
			out.Bisect = append(out.Bisect, results.Bisectability{Broken: brokenAt, BrokenTitle: patches[brokenAt-1].Subject, Fixed: k, FixedTitle: p.Subject, Error: brokenErr})
			brokenAt = 0
		}
		if row.Build == results.StepOK || row.Build == results.StepFail {
			prevBuilt = row.Build == results.StepOK
		}
		if row.Build == results.StepOK && o.Boot {
			pb, res, err := boot(a, fmt.Sprintf("patch %d of %d", k, n), survivalPlan, 1)
			row.Boot = pb
			if ctx.Err() != nil {
				row.Boot = nil // interrupted: no result, and nobody's fault
			}
			if res != nil && row.Boot != nil {
				pb.Lost = lostCells(baseCells, res.Cells)
				if len(survivalPlan.Variants) > 0 && err == nil && pb.Result == results.StepOK {
					perf[k] = progCosts(res.Variants)
				}
			}
			if err != nil {
				out.Patches = append(out.Patches, row)
				return out, err
			}
		}
		out.Patches = append(out.Patches, row)
		if err := save(out); err != nil {
			return out, err
		}
	}
	if brokenAt > 0 {
		out.Bisect = append(out.Bisect, results.Bisectability{Broken: brokenAt, BrokenTitle: patches[brokenAt-1].Subject, Error: brokenErr})
	}

	// Performance: which patch moved what.
	if len(o.Variants) > 0 {
		var prefixes []int // measurable: the tree, then every prefix that built
		prefixes = append(prefixes, 0)
		for k := 1; k <= n; k++ {
			if built[k] != nil {
				prefixes = append(prefixes, k)
			}
		}
		kernelOf := func(k int) *kernel.Artifacts {
			if k == 0 {
				return base
			}
			return built[k]
		}
		// The tree kernel's extra seeds run the plan its seed-1 run had:
		// with --each and validation boots, survival ran before the bench.
		seedPlan := suite.Plan{Variants: o.Variants}
		if _, ok := perf[0]; ok {
			seedPlan = survivalPlan
		}
		boots := 0
		bench := func(k int, p suite.Plan, seed uint64) (map[string]float64, error) {
			label := "base bench"
			if k > 0 {
				label = fmt.Sprintf("patch %d of %d bench", k, n)
			}
			if seed != 1 {
				label += fmt.Sprintf(" seed %d", seed)
			}
			pb, res, err := boot(kernelOf(k), label, p, seed)
			boots++
			if err != nil {
				return nil, err
			}
			if pb.Result != results.StepOK || res == nil {
				return nil, fmt.Errorf("%s: %s", label, pb.Error)
			}
			return progCosts(res.Variants), nil
		}
		measure := func(k int) (map[string]float64, error) {
			if m, ok := perf[k]; ok {
				return m, nil
			}
			m, err := bench(k, suite.Plan{Variants: o.Variants}, 1)
			if err != nil {
				return nil, err
			}
			perf[k] = m
			return m, nil
		}
		if len(prefixes) < 2 {
			out.PerfNote = "no prefix built: nothing to measure"
		} else {
			minPct := o.MinEffectPct
			if minPct <= 0 {
				minPct = results.DefaultMinEffectPct
			}
			// A program moves only beyond what a seed change alone does to
			// it on the tree's kernel: any code change perturbs the guest
			// like a seed change, so a smaller move cannot be pinned on a
			// patch. Seed 1's run is prefix 0, paired with the others.
			m, err := measure(0)
			runs := []map[string]float64{m}
			for _, seed := range spreadSeeds[1:] {
				if err != nil {
					break
				}
				m, err = bench(0, seedPlan, seed)
				runs = append(runs, m)
			}
			spread := SeedSpread(runs)
			if err == nil {
				logf("kci: [%s] spread of the tree kernel over seeds 1–%d: %s", tr.Name, len(spreadSeeds), spreadLine(spread))
			}
			thr := func(key string) float64 { return math.Max(minPct, spread[key]) }
			var steps []PerfStep
			// Deterministic: every prefix over seriesSeeds seeds, each
			// step through kci test's test (results.LocateSeries).
			seeded, family := err == nil && rep.Clock == results.ClockICount, 0
			if seeded {
				var located []results.Located
				located, family, err = locateSeeded(prefixes, runs, measure, func(k int, seed uint64) (map[string]float64, error) {
					return bench(k, suite.Plan{Variants: o.Variants}, seed)
				}, minPct)
				out.Culprits = culpritsOf(located, n, minPct, func(k int) string { return patches[k-1].Subject })
			}
			if err == nil && o.Each && !seeded {
				for _, k := range prefixes {
					if _, err = measure(k); err != nil {
						break
					}
				}
			}
			if err == nil && o.Each && !seeded {
				steps = AdjacentSteps(prefixes, perf, thr)
			} else if err == nil && !seeded {
				steps, err = LocatePerf(prefixes, measure, thr)
			}
			if err != nil {
				out.PerfNote = "stopped: " + lines.First(err.Error())
				var ee *ExitError
				if errors.As(err, &ee) || ctx.Err() != nil {
					return out, err
				}
			}
			unit := "wall, one boot: noisy"
			if rep.Clock == results.ClockICount {
				unit = "instruction-time"
			}
			for _, s := range steps {
				out.Culprits = append(out.Culprits, results.Culprit{Patch: s.Patch, Of: n, Subject: patches[s.Patch-1].Subject,
					Key: s.Key, Before: s.Before, After: s.After, Pct: s.Pct, Share: s.Share, Unit: unit, ThrPct: s.ThrPct})
			}
			// Per-row perf where measured, against the previous measured
			// prefix (0: the tree's kernel).
			prev := 0
			for i := range out.Patches {
				k := out.Patches[i].Index
				if m, ok := perf[k]; ok {
					out.Patches[i].Perf = deltas(perf[prev], m, prev)
					prev = k
				}
			}
			out.PerfBoots = boots
			how := "binary search over prefixes"
			if o.Each {
				how = "every prefix measured"
			}
			if out.PerfNote == "" && seeded {
				out.PerfNote = seededNote(family, boots, minPct, len(out.Culprits))
			}
			if out.PerfNote == "" {
				out.PerfNote = fmt.Sprintf("%s, threshold max(%.1f %%, each program's spread over seeds 1–%d of the tree kernel), %d bench boot(s) (%s)",
					how, minPct, len(spreadSeeds), len(perf)+len(spreadSeeds)-1, unit)
				if len(steps) == 0 {
					out.PerfNote = "the series moves no program beyond the threshold: " + out.PerfNote
				}
			}
		}
	}
	return out, nil
}

// lostCells are the survival cells that passed on the tree's kernel and do
// not pass on the prefix (missing counts as lost).
func lostCells(base, now []suite.Cell) []string {
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
