package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, classify("results", err)
	}
	rep := &results.Series{Schema: 1, ID: id, Start: start, Args: o.Args}
	finish := func(err error) (string, *results.Series, error) {
		rep.End = time.Now()
		if err != nil {
			rep.Incomplete = true
			rep.IncompleteReason = firstLine(err.Error())
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
		t, err := st.tree(ctx, tr, patches, o, rep, logf, dir)
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
func (st *SeriesTester) tree(ctx context.Context, tr *project.Tree, patches []kernel.Patch, o SeriesOptions, rep *results.Series, logf func(string, ...any), dir string) (*results.SeriesTree, error) {
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
		if r, ok := st.Booter.(interface {
			ResolveAccel(context.Context, *kernel.Artifacts) (string, string, error)
		}); ok {
			accel, why, err := r.ResolveAccel(ctx, base)
			if err != nil {
				return err
			}
			logf("kci: accelerator %s: %s", accel, why)
			rep.Accel = accel
			if o.BenchFor != nil {
				o.Bench = o.BenchFor(accel)
			}
		}
		return nil
	}
	boot := func(k *kernel.Artifacts, label string, p suite.Plan) (*results.PatchBoot, *BootResult, error) {
		if err := resolve(); err != nil {
			return nil, nil, err
		}
		p.Sanity = true
		if len(p.Variants) > 0 {
			p.Bench = o.Bench
		}
		p.StepTimeout = stepTimeout(o.Bench) // as kci test: survival steps get the same bound
		console := filepath.Join("console", fmt.Sprintf("%s-%s.log", tr.Name, strings.ReplaceAll(label, " ", "-")))
		_ = os.MkdirAll(filepath.Join(dir, "console"), 0o755) // the booter's console copy creates it too
		meter.Begin("[%s] boot %s", tr.Name, label)
		s := time.Now()
		res, err := st.Booter.Boot(ctx, BootRequest{Kernel: k, Plan: p, Console: filepath.Join(dir, console), Label: tr.Name + " " + label})
		pb := &results.PatchBoot{Result: results.StepOK, Time: time.Since(s), ConsoleLog: console}
		if res != nil {
			if res.Clock != "" && rep.Clock == "" {
				rep.Clock = res.Clock
			}
			for _, c := range res.Cells {
				pb.Cells++
				if c.Pass {
					pb.Passed++
				}
			}
		}
		if err != nil {
			meter.End("failed: %s", firstLine(err.Error()))
			if ctx.Err() != nil {
				return pb, res, ctx.Err()
			}
			pb.Result, pb.Error = results.StepFail, firstLine(err.Error())
			if res != nil {
				pb.ErrorKind = res.ErrorKind
			}
			if pb.ErrorKind == "" || pb.ErrorKind == "infra" {
				return pb, res, &ExitError{Code: ExitInternal, Cause: fmt.Sprintf("%s %s: %s (machine fault, not the patch's)", tr.Name, label, pb.Error), Err: err}
			}
			return pb, res, nil
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
		pb, res, err := boot(base, "base", survivalPlan)
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
			row.CheckpatchError = firstLine(err.Error())
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
			row.Build, row.BuildError, logFile = results.StepFail, firstLine(be.Error()), be.Log
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
			row.Build, row.BuildError = results.StepFail, firstLine(ce.Error())
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
			pb, res, err := boot(a, fmt.Sprintf("patch %d of %d", k, n), survivalPlan)
			row.Boot = pb
			if res != nil {
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
		boots := 0
		measure := func(k int) (map[string]float64, error) {
			if m, ok := perf[k]; ok {
				return m, nil
			}
			label := "base bench"
			if k > 0 {
				label = fmt.Sprintf("patch %d of %d bench", k, n)
			}
			pb, res, err := boot(kernelOf(k), label, suite.Plan{Variants: o.Variants})
			boots++
			if err != nil {
				return nil, err
			}
			if pb.Result != results.StepOK || res == nil {
				return nil, fmt.Errorf("%s: %s", label, pb.Error)
			}
			perf[k] = progCosts(res.Variants)
			return perf[k], nil
		}
		if len(prefixes) < 2 {
			out.PerfNote = "no prefix built: nothing to measure"
		} else {
			thr := o.MinEffectPct
			if thr <= 0 {
				thr = results.DefaultMinEffectPct
			}
			var steps []PerfStep
			var err error
			if o.Each {
				for _, k := range prefixes {
					if _, err = measure(k); err != nil {
						break
					}
				}
			}
			if err == nil && o.Each {
				steps = AdjacentSteps(prefixes, perf, thr)
			} else if err == nil {
				steps, err = LocatePerf(prefixes, measure, thr)
			}
			if err != nil {
				out.PerfNote = "stopped: " + firstLine(err.Error())
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
					Key: s.Key, Before: s.Before, After: s.After, Pct: s.Pct, Share: s.Share, Unit: unit})
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
			if out.PerfNote == "" {
				out.PerfNote = fmt.Sprintf("%s, threshold %.1f %%, %d bench boot(s) (%s)", how, thr, len(perf), unit)
				if len(steps) == 0 {
					out.PerfNote = "the series moves no program beyond the threshold: " + out.PerfNote
				}
			}
		}
	}
	return out, nil
}

// progCosts is each valid variant's per-program cost, keyed variant/prog,
// plus the variant total keyed variant.
func progCosts(vs []suite.VariantResult) map[string]float64 {
	m := map[string]float64{}
	for _, v := range vs {
		if v.Skipped != "" || !v.Valid {
			continue
		}
		costs, _ := results.PerPacket(results.ProgStatsOf(v.Programs))
		for _, c := range costs {
			m[v.Variant+"/"+c.Name] = c.NsPerPkt
		}
	}
	return m
}

func deltas(before, after map[string]float64, against int) []results.ProgDelta {
	var out []results.ProgDelta
	for k, v := range after {
		d := results.ProgDelta{Key: k, Value: v, Against: against}
		if b, ok := before[k]; ok && b > 0 {
			d.Before, d.Pct = b, (v-b)/b*100
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
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

// AdjacentSteps are the changes between consecutive measured prefixes
// (every prefix measured): a series that moves a program and moves it back
// shows both patches. Share is against the whole series' change, 0 when
// the series as a whole does not move the program.
func AdjacentSteps(prefixes []int, m map[int]map[string]float64, thrPct float64) []PerfStep {
	var steps []PerfStep
	first, last := m[prefixes[0]], m[prefixes[len(prefixes)-1]]
	for i := 1; i < len(prefixes); i++ {
		a, b := m[prefixes[i-1]], m[prefixes[i]]
		var keys []string
		for k := range b {
			if _, ok := a[k]; ok {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !movedBy(a[k], b[k], thrPct) {
				continue
			}
			s := PerfStep{Patch: prefixes[i], Key: k, Before: a[k], After: b[k]}
			if s.Before != 0 {
				s.Pct = (s.After - s.Before) / s.Before * 100
			}
			if total := last[k] - first[k]; total != 0 && movedBy(first[k], last[k], thrPct) {
				s.Share = (s.After - s.Before) / total * 100
			}
			steps = append(steps, s)
		}
	}
	return steps
}

func movedBy(a, b, thrPct float64) bool {
	if a == 0 {
		return b != 0
	}
	return math.Abs(b-a)/math.Abs(a)*100 > thrPct
}

// PerfStep is one patch that moved one program's cost.
type PerfStep struct {
	Patch         int
	Key           string
	Before, After float64
	Pct           float64 // change at this patch, percent of Before
	Share         float64 // percent of the whole series' change of Key
}

// LocatePerf finds, for every program whose cost differs between the
// first and last prefix by more than thrPct, the patches that moved it,
// by binary search: an interval whose ends agree (within thrPct of the
// left end) holds no change; one of width 1 is a step. Several steps per
// program are found, each with its share. measure is called at most once
// per prefix (results are memoised) and only where needed: for a single
// culprit among N prefixes, about log2(N) calls beyond the two ends.
// prefixes lists the measurable prefixes in order (0 = the tree's kernel).
func LocatePerf(prefixes []int, measure func(k int) (map[string]float64, error), thrPct float64) ([]PerfStep, error) {
	if len(prefixes) < 2 {
		return nil, nil
	}
	memo := map[int]map[string]float64{}
	get := func(i int) (map[string]float64, error) {
		k := prefixes[i]
		if m, ok := memo[k]; ok {
			return m, nil
		}
		m, err := measure(k)
		if err != nil {
			return nil, err
		}
		memo[k] = m
		return m, nil
	}
	first, err := get(0)
	if err != nil {
		return nil, err
	}
	last, err := get(len(prefixes) - 1)
	if err != nil {
		return nil, err
	}
	moved := func(a, b float64) bool { return movedBy(a, b, thrPct) }
	var keys []string
	for k, v := range last {
		if b, ok := first[k]; ok && moved(b, v) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var steps []PerfStep
	for _, key := range keys {
		total := last[key] - first[key]
		var walk func(lo, hi int) error
		walk = func(lo, hi int) error {
			ml, err := get(lo)
			if err != nil {
				return err
			}
			mh, err := get(hi)
			if err != nil {
				return err
			}
			if !moved(ml[key], mh[key]) {
				return nil
			}
			if hi-lo == 1 {
				s := PerfStep{Patch: prefixes[hi], Key: key, Before: ml[key], After: mh[key]}
				if s.Before != 0 {
					s.Pct = (s.After - s.Before) / s.Before * 100
				}
				if total != 0 {
					s.Share = (s.After - s.Before) / total * 100
				}
				steps = append(steps, s)
				return nil
			}
			mid := (lo + hi) / 2
			if err := walk(lo, mid); err != nil {
				return err
			}
			return walk(mid, hi)
		}
		if err := walk(0, len(prefixes)-1); err != nil {
			return steps, err
		}
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].Patch < steps[j].Patch })
	return steps, nil
}
