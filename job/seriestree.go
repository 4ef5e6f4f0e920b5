package job

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// seriesRun is kci series on one tree, on its way: what its steps
// share. It stands on the series' engine (engine.go), whose boot and
// accelerator it shares with kci test.
type seriesRun struct {
	*engine // the series': one accelerator for every tree
	st      *SeriesTester
	tr      *project.Tree
	patches []kernel.Patch
	o       SeriesOptions
	rep     *results.Series
	save    func(*results.SeriesTree) error // the report so far, after every prefix

	// out is the tree's record: its rows, and every boot (out.Boots),
	// from which the perf numbers are read (out.Costs).
	out       *results.SeriesTree
	base      *kernel.Artifacts
	accelDone bool
	survival  wire.Plan                 // a validation boot's plan
	baseCells []wire.Cell               // the tree kernel's survival: the reference
	built     map[int]*kernel.Artifacts // prefixes that built
	benchRuns int                       // bench boots
	cov       *coverage                 // the series' hunks; nil without any

	// Bisectability: a break in the middle, repaired later.
	prevBuilt bool
	brokenAt  int
	brokenErr string
}

// tree validates the series on one tree: the tree's kernel, every prefix
// (apply, build, new warnings, checkpatch, boot), then the performance
// changes and the patches behind them. save stores the report so far
// after every prefix.
func (st *SeriesTester) tree(e *engine, tr *project.Tree, patches []kernel.Patch, cov *coverage, o SeriesOptions, rep *results.Series, save func(*results.SeriesTree) error) (*results.SeriesTree, error) {
	r := &seriesRun{engine: e, st: st, tr: tr, patches: patches, o: o, rep: rep, save: save,
		out: &results.SeriesTree{Tree: tr.Name}, built: map[int]*kernel.Artifacts{}, prevBuilt: true, cov: cov}
	began := time.Now()
	defer func() { r.out.Time = time.Since(began) }()
	err := r.run()
	return r.out, err
}

func (r *seriesRun) run() error {
	warnings, err := r.buildTree()
	if err != nil {
		return err
	}
	r.survival = wire.Plan{Survival: r.o.Survival}
	if r.o.Each && len(r.o.Variants) > 0 {
		r.survival.Variants = r.o.Variants // one boot per prefix does both
	}
	if err := r.bootTree(); err != nil {
		return err
	}
	n := len(r.patches)
	for k := 1; k <= n; k++ {
		if r.ctx.Err() != nil {
			return r.ctx.Err()
		}
		row, err := r.prefix(k, warnings)
		if row != nil {
			r.out.Patches = append(r.out.Patches, *row)
		}
		if err != nil {
			return err
		}
		if err := r.save(r.out); err != nil {
			return err
		}
	}
	if r.brokenAt > 0 {
		r.out.Bisect = append(r.out.Bisect, results.Bisectability{Broken: r.brokenAt, BrokenTitle: r.patches[r.brokenAt-1].Subject, Error: r.brokenErr})
	}
	if len(r.o.Variants) > 0 {
		return r.locatePerf()
	}
	return nil
}

// buildTree gets the tree's kernel, and what its build warns about.
func (r *seriesRun) buildTree() (kernel.WarningSet, error) {
	meter := r.meter
	meter.Begin("[%s] building the tree's kernel", r.tr.Name)
	began := time.Now()
	base, err := r.st.Builder.Tree(r.ctx, r.tr)
	r.out.BaseBuildTime = time.Since(began)
	if err != nil {
		meter.End("%s", EndWord(r.ctx, err))
		return kernel.WarningSet{}, classifyBuild("kernel of tree "+r.tr.Name, err)
	}
	meter.End("%s", base.Release)
	r.base, r.out.Base = base, base.Release
	return r.st.Builder.Warnings(base), nil
}

// bootTree boots the tree's kernel for the survival reference (and, with
// --each, its seed-1 bench).
func (r *seriesRun) bootTree() error {
	if !r.o.Boot {
		return nil
	}
	pb, res, err := r.boot(0, "base", r.survival, 1)
	r.out.BaseBoot = pb
	if err != nil {
		return err
	}
	if res != nil {
		r.baseCells = res.Cells
	}
	return nil
}

// resolve settles the accelerator once, before the first boot, and
// sizes the bench for it (the engine's size, as kci test's).
func (r *seriesRun) resolve() error {
	if r.accelDone {
		return nil
	}
	r.accelDone = true
	if !r.resolves() {
		return nil
	}
	accel, why, err := r.size(r.base)
	if err != nil {
		return err
	}
	r.rep.Accel, r.rep.AccelReason = accel, why
	return nil
}

// boot runs prefix's kernel (0: the tree's) with plan p at logical seed
// rep (1 for every boot but the extra seeds of perf location, so that
// all prefixes stay paired) and records it in the tree's boots. A
// failure the kernel caused is the returned boot's; one of the machine's
// is the error.
func (r *seriesRun) boot(prefix int, label string, p wire.Plan, rep int) (*results.PatchBoot, *boot.BootResult, error) {
	if err := r.resolve(); err != nil {
		return nil, nil, err
	}
	k, role := r.base, results.RoleBase
	if prefix > 0 {
		k, role = r.built[prefix], results.RolePatched
	}
	p.Sanity = true
	if len(p.Variants) > 0 {
		p.Bench = r.bench
	}
	p.StepTimeout = stepTimeout(r.bench) // as kci test: survival steps get the same bound
	spec := bootSpec{Kernel: k, Plan: p, Tree: r.tr.Name, Name: label, Label: r.tr.Name + " " + label, Role: role, Rep: rep}
	meter := r.meter
	meter.Begin("[%s] boot %s", r.tr.Name, label)
	s := time.Now()
	res, kind, err := r.engine.boot(r.ctx, spec)
	pb := &results.PatchBoot{Result: results.StepOK, Time: time.Since(s), ConsoleLog: spec.consoleFile()}
	if res != nil {
		r.noteBoot(res, pb)
	}
	if r.ctx.Err() == nil { // an interrupted boot has no result, and is nobody's fault
		b := r.record(spec, res, kind, err)
		r.countHunks(prefix, b.Variants, res)
		r.addBoot(b, prefix, len(p.Variants) > 0)
	}
	if err == nil {
		meter.End("done")
		return pb, res, nil
	}
	meter.End("failed: %s", lines.First(err.Error()))
	if r.ctx.Err() != nil {
		return pb, res, r.ctx.Err()
	}
	pb.Result, pb.Error, pb.ErrorKind = results.StepFail, lines.First(err.Error()), kind
	if blame := bootBlame(spec.Label, label, kind, pb.Error, err); blame.Code == ExitInternal {
		return pb, res, blame
	}
	return pb, res, nil // the prefix's own failure: its row says so
}

// addBoot records b, a boot of prefix, numbered within the whole series.
func (r *seriesRun) addBoot(b results.Boot, prefix int, bench bool) {
	b.Seq = len(r.out.Boots) + 1
	for _, t := range r.rep.Trees {
		b.Seq += len(t.Boots)
	}
	r.out.Boots = append(r.out.Boots, results.SeriesBoot{Boot: b, Prefix: prefix, Bench: bench})
}

// noteBoot takes what a boot says of the host into the report, and its
// survival tally into pb.
func (r *seriesRun) noteBoot(res *boot.BootResult, pb *results.PatchBoot) {
	if res.Clock != "" && r.rep.Clock == "" {
		r.rep.Clock = res.Clock
	}
	if res.CPU != "" && r.rep.GuestCPU == "" {
		r.rep.GuestCPU, r.rep.GuestCPUReason = res.CPU, res.CPUReason
	}
	pb.Cache = res.Cache
	for _, c := range res.Cells {
		pb.Cells++
		if c.Pass {
			pb.Passed++
		}
	}
}

// prefix checks patches 1..k: checkpatch, apply and build, new warnings,
// bisectability, and the boot. A nil row means none is to be added.
func (r *seriesRun) prefix(k int, warnings kernel.WarningSet) (*results.PatchResult, error) {
	n := len(r.patches)
	p := r.patches[k-1]
	row := &results.PatchResult{Index: k, Of: n, Subject: p.Subject, File: p.Name()}
	// checkpatch needs nothing built: it answers even for a patch that
	// cannot be applied.
	if cp, err := r.st.Builder.Checkpatch(r.ctx, r.base, p); err != nil {
		row.CheckpatchError = lines.First(err.Error())
	} else {
		row.Checkpatch = results.CheckpatchOf(cp)
	}
	if r.applyFailed() {
		row.Apply, row.Build = results.StepBlocked, results.StepBlocked
		return row, nil
	}
	logFile, err := r.build(k, row)
	if err != nil && r.ctx.Err() != nil {
		return nil, err // interrupted: the prefix has no result
	}
	if err != nil {
		return row, err
	}
	if logFile != "" {
		r.newWarnings(k, row, warnings, logFile)
	}
	r.bisectability(k, row)
	if row.Build != results.StepOK || !r.o.Boot {
		return row, nil
	}
	pb, res, err := r.boot(k, fmt.Sprintf("patch %d of %d", k, n), r.survival, 1)
	row.Boot = pb
	if r.ctx.Err() != nil {
		row.Boot = nil // interrupted: no result, and nobody's fault
	}
	if res != nil && row.Boot != nil {
		pb.Lost = lostCells(r.baseCells, res.Cells)
	}
	return row, err
}

// applyFailed says an earlier patch did not apply: the rest is blocked.
func (r *seriesRun) applyFailed() bool {
	for _, p := range r.out.Patches {
		if p.Apply == results.StepFail {
			return true
		}
	}
	return false
}

// build applies and builds prefix k into row: a patch that does not
// apply, a build or config failure, or a prefix not yet verifiable is
// the row's result; the error is only for what is not the series'
// doing. It returns the build log; the kernel, when built, is
// r.built[k].
func (r *seriesRun) build(k int, row *results.PatchResult) (string, error) {
	n := len(r.patches)
	meter := r.meter
	meter.Begin("[%s] building patch %d/%d", r.tr.Name, k, n)
	s := time.Now()
	a, err := r.st.Builder.Patched(r.ctx, r.tr, r.base, r.patches[:k])
	row.BuildTime = time.Since(s)
	row.Apply, row.Build = results.StepOK, results.StepOK
	var ae *kernel.ApplyError
	var be *kernel.BuildError
	var ce *kernel.ConfigError
	var ve *kernel.VerifyError
	switch {
	case err == nil:
		meter.End("%s", hitOrBuilt(a))
		row.Release, row.BuildKey, row.CacheHit = a.Release, a.Key, a.CacheHit
		r.built[k] = a
		row.Hunks = r.hunkRecords(k)
		return a.Log, nil
	case r.ctx.Err() != nil:
		meter.End("interrupted")
		return "", r.ctx.Err()
	case errors.As(err, &ae):
		meter.End("does not apply")
		row.Apply, row.Build = results.StepFail, results.StepSkipped
		row.ApplyError = ae.Error()
	case errors.As(err, &be):
		meter.End("build failed")
		row.Build, row.BuildError = results.StepFail, lines.First(be.Error())
		if be.First != "" {
			row.BuildError = strings.TrimPrefix(be.First, "../") // make runs in O=.kci-o
		}
		return be.Log, nil
	case errors.As(err, &ve):
		// Built, but what the series adds so far is not all in BTF: in
		// the middle of a series that can be legitimate (a kfunc declared
		// now, compiled in by a later patch). Reported, not blamed;
		// nothing published, so nothing to boot.
		meter.End("unverified")
		row.Build, row.BuildError = results.StepUnverified, ve.Error()
	case errors.As(err, &ce) && notYetDefined(ce, definedLater(r.patches[k:], k)) != "":
		// The fragments ask for what a later patch defines: not this
		// prefix's fault, and nothing to boot.
		meter.End("config not yet complete")
		row.Build, row.BuildError = results.StepUnverified, notYetDefined(ce, definedLater(r.patches[k:], k))
	case errors.As(err, &ce):
		meter.End("config policy violated")
		row.Build, row.BuildError = results.StepFail, lines.First(ce.Error())
		if len(ce.Violations) > 0 {
			row.BuildError = "config policy: " + ce.Violations[0].String()
		}
	default:
		meter.End("%s", EndWord(r.ctx, err))
		return "", classify(fmt.Sprintf("tree %s: patch %d/%d", r.tr.Name, k, n), err)
	}
	return "", nil
}

// newWarnings are the warnings of prefix k's build log that the previous
// prefix's build did not have.
func (r *seriesRun) newWarnings(k int, row *results.PatchResult, warnings kernel.WarningSet, logFile string) {
	bo, err := kernel.ParseMakeLog(logFile)
	if err != nil {
		r.logf("kci: [%s] patch %d/%d: build log: %v", r.tr.Name, k, len(r.patches), err)
		return
	}
	if row.Build == results.StepFail {
		// make stopped early: a file it started may not have got as far
		// as its old warnings, which must not come back as new once the
		// build works again.
		bo.Compiled = nil
	}
	if ws := warnings.Apply(bo); len(ws) > 0 {
		row.NewWarnings = results.WarningsOf(ws)
	}
}

// bisectability notes a break in the middle of the series and the patch
// that repairs it.
func (r *seriesRun) bisectability(k int, row *results.PatchResult) {
	if row.Build == results.StepFail && r.prevBuilt {
		r.brokenAt, r.brokenErr = k, row.BuildError
	}
	if row.Build == results.StepOK && !r.prevBuilt && r.brokenAt > 0 {
		r.out.Bisect = append(r.out.Bisect, results.Bisectability{Broken: r.brokenAt, BrokenTitle: r.patches[r.brokenAt-1].Subject,
			Fixed: k, FixedTitle: r.patches[k-1].Subject, Error: r.brokenErr})
		r.brokenAt = 0
	}
	if row.Build == results.StepOK || row.Build == results.StepFail {
		r.prevBuilt = row.Build == results.StepOK
	}
}

// kernelAt is prefix k's kernel (0: the tree's), nil when it did not build.
func (r *seriesRun) kernelAt(k int) *kernel.Artifacts {
	if k == 0 {
		return r.base
	}
	return r.built[k]
}

// hunkRecords maps patch k's hunks to the code of prefix k (its added
// lines) and of prefix k-1 (its removed ones), for coverage; a line table
// that cannot be read is said in the log and leaves the patch without.
func (r *seriesRun) hunkRecords(k int) []results.Hunk {
	if r.cov == nil {
		return nil
	}
	hs, err := r.cov.records(r.kernelAt(k-1), r.kernelAt(k), k)
	if err != nil {
		r.logf("kci: [%s] warning: patch %d's hunks not mapped to the kernels' code, so no coverage: %v", r.tr.Name, k, err)
		return nil
	}
	return hs
}

// countHunks records how often a boot of prefix k ran patch k's added
// lines and patch k+1's removed ones (the code the next patch changes).
func (r *seriesRun) countHunks(k int, vs []results.VariantResult, res *boot.BootResult) {
	kern := r.kernelAt(k)
	if r.cov == nil || res == nil || len(res.Exact) == 0 || kern == nil || kern.Vmlinux == "" {
		return
	}
	if k > 0 {
		if err := r.cov.runs(kern, results.RolePatched, k, vs, res.Exact); err != nil {
			r.logf("kci: [%s] warning: patch %d's coverage not counted: %v", r.tr.Name, k, err)
		}
	}
	if k < len(r.patches) {
		if err := r.cov.runs(kern, results.RoleBase, k+1, vs, res.Exact); err != nil {
			r.logf("kci: [%s] warning: patch %d's coverage not counted: %v", r.tr.Name, k+1, err)
		}
	}
}
