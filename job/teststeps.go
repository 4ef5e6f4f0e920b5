package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/internal/lines"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// KernelBuilder is what kci test needs from the builder. *Builder is the
// real one; the job's unit tests script a fake.
type KernelBuilder interface {
	// Tree is tree t's kernel: the base plus its series.
	Tree(ctx context.Context, t *project.Tree) (*kernel.Artifacts, error)
	// Patched is tree t's kernel plus patches, seeded from tree.
	Patched(ctx context.Context, t *project.Tree, tree *kernel.Artifacts, patches []kernel.Patch) (*kernel.Artifacts, error)
	// AppliesTo reports whether patches apply on top of t's series.
	AppliesTo(ctx context.Context, t *project.Tree, patches []kernel.Patch) (bool, error)
}

// The real implementations, checked at compile time: a signature drifting
// would otherwise silently skip the accelerator step.
var (
	_ KernelBuilder = (*Builder)(nil)
	_ applyChecker  = (*Builder)(nil)
)

// testRun is one kci test on its way: what the steps of Tester.Test share.
type testRun struct {
	engine
	t       *Tester
	o       TestOptions
	patches []kernel.Patch
	cov     *coverage // the patches' hunks; nil without patches
	rec     *results.Recorder
	profs   *profiles
	early   []results.Phase // phases timed before the record existed
	names   []string        // the trees considered
	jobs    []*treeJob      // the trees tested
	chosen  []string        // their names
	plan    wire.Plan
	roles   []string
	reps    int
	// autoReps: the user gave no --reps (nor kci.yaml), so the number of
	// seeds is the adaptive rule's to choose under icount.
	autoReps bool
	// mu orders what concurrent boots share: the count, the profiles, the
	// log. The recorder locks itself.
	mu sync.Mutex
	// Boots so far, of total, and the time they took one by one: for
	// the ETA.
	done, total int
	bootTime    time.Duration
	// skipsSaid are the (tree, variant, reason) skips logged so far: every
	// boot of a kernel lacking a capability reports the same skip.
	skipsSaid map[[3]string]bool
	// analysis is the verdict on the finished record, computed once
	// (finish): the reports, the exit code and kci test's output read it.
	analysis *verdict.Analysis
}

// judge loads the series and picks the trees it applies to, before any
// run directory: a patch that does not apply (or a tree that is not there)
// is refused with nothing created, its one line and git's own.
func (r *testRun) judge() error {
	var err error
	if r.patches, err = kernel.LoadSeries(r.o.Patches...); err != nil {
		return PatchFile(err)
	}
	// git reads the patch text before the base is imported (minutes the
	// first time): a corrupt patch is refused in milliseconds.
	if err := kernel.CheckSyntax(r.ctx, r.patches); err != nil {
		return Classify("patch", err)
	}
	if r.cov, err = newCoverage(r.patches); err != nil {
		return &ExitError{Code: ExitApply, Cause: err.Error()}
	}
	if err := r.chooseTrees(); err != nil {
		if r.ctx.Err() != nil {
			err = errInterrupted
		}
		return Classify("patch", err)
	}
	return nil
}

// start opens the run record. Its failures come before there is a
// record to finish.
func (r *testRun) start() error {
	var err error
	id := results.NewID()
	dir := runDir(r.o.Out, time.Now(), id)
	if r.rec, err = results.NewRecorder(dir, id); err != nil {
		return Classify("results", err)
	}
	r.dir = dir
	for _, ph := range r.early {
		_ = r.rec.AddPhase(ph) // in rec.Err, checked by finish
	}
	// Saving the record can fail (a full disk): the recorder keeps the first
	// error and finish fails the job with it, so the rec.* calls leave their
	// errors to it and the boots carry on meanwhile.
	_ = r.rec.SetArgs(r.o.Args)
	_ = r.rec.SetHost(r.o.Host)
	_ = r.rec.Update(func(run *results.Run) { run.MinEffectPct = r.o.MinEffectPct })
	if r.o.Profile {
		if r.profs, err = newProfiles(dir, r.logf); err != nil {
			return Classify("results", err)
		}
	}
	return nil
}

// steps are the job, top to bottom; the first failure ends it.
func (r *testRun) steps() error {
	r.autoReps = r.o.Reps <= 0
	defer r.prepare()()
	if err := r.buildKernels(); err != nil {
		return err
	}
	if err := r.resolveAccel(); err != nil {
		return err
	}
	return r.bootAll()
}

// finish closes the record, analyses it once and writes the reports from
// that analysis whatever err is; without an error of the steps, the
// analysis decides the exit (exitOf). err becomes the job's ExitError.
func (r *testRun) finish(err error) error {
	pset, perr := r.profs.finish()
	if perr != nil {
		r.logf("kci: %v", perr)
	}
	reason, err := r.stopped(err)
	_ = r.rec.Finish(reason) // in rec.Err, checked below
	run, rerr := r.rec.Snapshot()
	var a *verdict.Analysis
	if rerr == nil {
		a = verdict.AnalyzeRun(run)
		sec, perr := r.profs.section(r.dir, pset)
		if perr != nil {
			r.logf("kci: %v", perr) // the run's own reports are still written
		}
		rerr = render.WriteReports(r.dir, a, sec)
		if err == nil {
			err = r.exitOf(a)
		}
	}
	if rerr = errors.Join(r.rec.Err(), rerr); rerr != nil {
		if err == nil {
			// A verdict without its record on disk is not a result:
			// the machine's fault, never the patch's.
			err = &ExitError{Code: ExitInternal, Cause: "results: run record not saved in " + r.dir + ": " + lines.First(rerr.Error()), Err: rerr}
		} else {
			// The job's own failure says more; the lost record is noted.
			r.logf("kci: results: run record not saved: %v", rerr)
		}
	} else {
		r.analysis = a // the verdict on the record as saved
	}
	return Classify("test", err)
}

// phase runs f and records how long it took.
func (r *testRun) phase(name, tree, role string, f func() error) error {
	s := time.Now()
	err := f()
	ph := results.Phase{Name: name, Tree: tree, Kernel: role, Start: s, Duration: time.Since(s)}
	if r.rec == nil {
		r.early = append(r.early, ph) // judged before the record: added by start
		return err
	}
	_ = r.rec.AddPhase(ph)
	return err
}

// chooseTrees picks the trees: the ones named, or every tree the series
// applies to. Either way each tree is checked before any build: a patch
// that does not apply to a tree named with --tree is refused there, with
// the patch, the file, the hunk and git's message.
func (r *testRun) chooseTrees() error {
	proj, err := r.t.project()
	if err != nil {
		return err
	}
	picks, err := pickApplying(proj, r.o.Trees, true, func(tr *project.Tree) (ae *kernel.ApplyError, err error) {
		if len(r.patches) > 0 {
			err = r.phase("applies", tr.Name, "", func() (err error) { ae, err = r.applies(tr); return })
		}
		return ae, err
	})
	if err != nil {
		return err
	}
	var why, skipped []string
	for _, pk := range picks {
		r.names = append(r.names, pk.tree.Name)
		switch ae := pk.skip; {
		case ae == nil:
			r.jobs = append(r.jobs, &treeJob{tree: pk.tree})
		case len(r.o.Trees) > 0:
			return &ExitError{Code: ExitApply, Cause: ae.Error(), Err: fmt.Errorf("%s", ae.Output)}
		default:
			// Trees a patch is not for are said in one quiet line below;
			// --tree NAME asks why.
			why = append(why, ae.Error())
			skipped = append(skipped, pk.tree.Name)
		}
	}
	if len(r.jobs) == 0 {
		return &ExitError{Code: ExitApply, Cause: fmt.Sprintf("%s applies to none of the trees %v", strings.Join(r.o.Patches, " "), r.names),
			Err: errors.New(strings.Join(why, "\n"))}
	}
	for _, j := range r.jobs {
		r.chosen = append(r.chosen, j.tree.Name)
	}
	if len(skipped) > 0 {
		r.logf("kci: %s applies to %s; not to %s", strings.Join(r.o.Patches, " "), strings.Join(r.chosen, ", "), strings.Join(skipped, ", "))
		return nil
	}
	r.logf("kci: testing on tree(s) %s", strings.Join(r.chosen, ", "))
	return nil
}

// applyChecker is a KernelBuilder that also says why patches do not
// apply (*Builder does).
type applyChecker interface {
	Applies(ctx context.Context, t *project.Tree, patches []kernel.Patch) (*kernel.ApplyError, error)
}

// applies is nil when the patches apply to tree, else why not.
func (r *testRun) applies(tr *project.Tree) (*kernel.ApplyError, error) {
	if c, ok := r.t.kernels().(applyChecker); ok {
		return c.Applies(r.ctx, tr, r.patches)
	}
	ok, err := r.t.kernels().AppliesTo(r.ctx, tr, r.patches)
	if err != nil || ok {
		return nil, err
	}
	return &kernel.ApplyError{Patch: strings.Join(r.o.Patches, " "), Tree: tr.Name}, nil
}

// buildKernels builds each tree's base (cached) then its patched kernel
// (incremental from it).
func (r *testRun) buildKernels() error {
	if r.t.Builder != nil && r.meter != nil {
		r.t.Builder.Opts.Progress = r.meter // make's output drives the object count
	}
	for _, j := range r.jobs {
		n := j.tree.Name
		r.meter.Begin("[%s] building base kernel", n)
		if err := r.phase("build", n, results.RoleBase, func() (err error) { j.base, err = r.t.kernels().Tree(r.ctx, j.tree); return }); err != nil {
			r.meter.End("%s", EndWord(r.ctx, err))
			return classifyBuild("base kernel of tree "+n, err)
		}
		r.meter.End("%s, %s", j.base.Release, hitOrBuilt(j.base))
		_ = r.rec.SetTree(treeRecord(n, j.base, nil))
		if len(r.patches) == 0 {
			continue // nothing to compare: base only (kci profile)
		}
		r.meter.Begin("[%s] building patched kernel", n)
		if err := r.phase("build", n, results.RolePatched, func() (err error) { j.patched, err = r.t.kernels().Patched(r.ctx, j.tree, j.base, r.patches); return }); err != nil {
			r.meter.End("%s", EndWord(r.ctx, err))
			return classifyBuild("patched kernel of tree "+n, err)
		}
		r.meter.End("%s, %s", j.patched.Release, hitOrBuilt(j.patched))
		t := treeRecord(n, j.base, j.patched)
		t.Hunks = r.hunkRecords(j)
		_ = r.rec.SetTree(t)
	}
	return nil
}

// hunkRecords maps the patches' hunks to tree j's kernels for coverage;
// a kernel whose line table cannot be read leaves the tree without them,
// said in the log (its reports then say coverage is unknown).
func (r *testRun) hunkRecords(j *treeJob) []results.Hunk {
	if r.cov == nil || j.base.Vmlinux == "" || j.patched.Vmlinux == "" {
		return nil
	}
	var hs []results.Hunk
	err := r.phase("coverage", j.tree.Name, "", func() (err error) { hs, err = r.cov.records(j.base, j.patched, allPatches); return })
	if err != nil {
		r.logf("kci: [%s] warning: the patch's hunks not mapped to the kernels' code, so no coverage: %v", j.tree.Name, err)
		return nil
	}
	return hs
}

// resolveAccel settles the accelerator before booting: it decides the
// plan's size (the engine's bench, the reps, how many boots at once).
func (r *testRun) resolveAccel() error {
	if !r.resolves() {
		return r.sizeParallel("", r.o.Clock, r.o.Parallel)
	}
	var accel, why string
	if err := r.phase("accel", "", "", func() (err error) { accel, why, err = r.size(r.jobs[0].base); return }); err != nil {
		return err
	}
	_ = r.rec.Update(func(run *results.Run) { run.Host.Accel, run.Host.AccelReason = accel, why })
	if c, ok := r.booter.(boot.ClockReporter); ok && r.o.Clock == "" {
		r.o.Clock = c.GuestClock()
	}
	switch {
	case accel == results.AccelTCG && r.o.Clock == results.ClockICount:
		r.logf("kci: emulated (TCG, icount): numbers are %s", results.InstructionTimeLabel)
	case accel == results.AccelTCG:
		r.logf("kci: emulated (TCG): numbers are %s", results.EmulatedLabel)
	}
	if r.o.Reps <= 0 && r.o.RepsFor != nil {
		r.o.Reps = r.o.RepsFor(accel)
	}
	return r.sizeParallel(accel, r.o.Clock, r.o.Parallel)
}

// bootAll boots base and patched alternately, a fresh boot each, so drift
// over time hits both alike. Survival runs once per kernel (it is
// deterministic), the benchmark every repetition. With one seed for every
// boot (--seed: the determinism check) survival runs on every boot: the
// plan and what ran before the benchmark are the guest's history, and a
// boot that alone ran the matrix would count its own.
func (r *testRun) bootAll() error {
	r.reps = r.o.Reps
	if r.reps <= 0 {
		r.reps = 1
	}
	r.plan = wire.Plan{Sanity: true, Variants: r.o.Variants, Bench: r.bench, Profile: r.o.Profile, StepTimeout: stepTimeout(r.bench)}
	_ = r.rec.SetPlan(results.PlanOf(r.plan))
	r.roles = []string{results.RoleBase, results.RolePatched}
	if len(r.patches) == 0 {
		r.roles = r.roles[:1]
	}
	r.total = len(r.jobs) * r.reps * len(r.roles)
	var queue []bootSlot
	for rep := 1; rep <= r.reps; rep++ {
		if r.o.Shards > 1 && (rep-1)%r.o.Shards != r.o.Shard-1 {
			continue
		}
		for _, j := range r.jobs {
			for _, role := range bootOrder(rep, r.roles) { // ABBA: order.go
				queue = append(queue, bootSlot{j: j, role: role, rep: rep})
			}
		}
	}
	if err := r.bootQueue(queue); err != nil {
		return err
	}
	return r.adaptiveSeeds()
}

// bootSlot is one boot of the plan: a tree's kernel in a role, one
// repetition; variants, when set, narrows the plan's variants (the
// adaptive rule's later looks boot only the undecided ones).
type bootSlot struct {
	j        *treeJob
	role     string
	rep      int
	variants []string
}

// boot is one fresh boot of one kernel, recorded whatever happens; a
// failed boot ends the job, blamed by its kind.
func (r *testRun) boot(ctx context.Context, s bootSlot) error {
	j, role, rep := s.j, s.role, s.rep
	k := j.base
	if role == results.RolePatched {
		k = j.patched
	}
	p := r.plan
	p.Survival = r.o.Survival && (rep == 1 || r.o.Seed != 0 || (r.o.Shards > 1 && rep == r.o.Shard))
	if s.variants != nil {
		p.Variants = s.variants
	}
	spec := bootSpec{Kernel: k, Plan: p, Tree: j.tree.Name, Name: fmt.Sprintf("%s-%d", role, rep),
		Label: fmt.Sprintf("%s %s rep %d/%d", j.tree.Name, role, rep, r.reps), Role: role, Rep: rep}
	label := spec.Label
	end := r.beginBoot(label)
	var res *boot.BootResult
	var kind string
	err := r.phase("boot+suite", j.tree.Name, role, func() (err error) {
		res, kind, err = r.engine.boot(ctx, spec)
		return err
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	end(err)
	b := r.record(spec, res, kind, err)
	cancelled := err != nil && r.ctx.Err() == nil && errors.Is(context.Cause(ctx), errCancelledBeside)
	if cancelled {
		// Not the machine's fault nor this kernel's: it was stopped.
		b.Error, b.ErrorKind = context.Cause(ctx).Error(), failure.Cancelled
		err = context.Cause(ctx)
	}
	if res != nil && r.cov != nil && len(res.Exact) > 0 && k.Vmlinux != "" {
		if err := r.cov.runs(k, role, allPatches, b.Variants, res.Exact); err != nil {
			r.logf("kci: [%s] warning: coverage not counted: %v", label, err)
		}
	}
	_, _ = r.rec.AddBoot(b)
	if res != nil {
		accel := res.Accel
		if len(res.Exact) > 0 {
			accel += " icount · exact instruction counts (QEMU plugin)"
		}
		r.profs.add(j.tree.Name, role, rep, k.Release, accel, exactProfiles(res.Profiles, res.Exact))
		r.noteHost(res)
	}
	for _, v := range b.Variants {
		if v.Skipped != "" {
			r.logSkip(j.tree.Name, role, v.Variant, v.Skipped)
		} else if !v.Valid {
			r.logf("kci: [%s] %s INVALID: %s", label, v.Variant, v.Invalid)
		}
	}
	if err == nil || cancelled {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return bootBlame(label, fmt.Sprintf("%s kernel of tree %s", role, j.tree.Name), b.ErrorKind, b.Error, err)
}

// logSkip says once per tree and run that a variant was skipped, naming
// the kernel it was first seen on; the report counts the boots. Callers
// hold r.mu.
func (r *testRun) logSkip(tree, role, variant, reason string) {
	key := [3]string{tree, variant, reason}
	if r.skipsSaid[key] {
		return
	}
	if r.skipsSaid == nil {
		r.skipsSaid = map[[3]string]bool{}
	}
	r.skipsSaid[key] = true
	r.logf("kci: [%s %s] %s skipped: %s", tree, role, variant, reason)
}

// noteHost records what the first boot to report says of the host: the
// accelerator (scripted booters settle none beforehand) and QEMU's -cpu
// model, saying why when it is not the default.
func (r *testRun) noteHost(res *boot.BootResult) {
	firstCPU := false
	_ = r.rec.Update(func(run *results.Run) {
		if run.Host.Accel == "" {
			run.Host.Accel = res.Accel
		}
		if run.Host.GuestCPU == "" && res.CPU != "" {
			run.Host.GuestCPU, run.Host.GuestCPUReason, firstCPU = res.CPU, res.CPUReason, true
		}
		if res.VCPUs > 1 && run.Host.GuestVCPUs == 0 {
			run.Host.GuestVCPUs = res.VCPUs
		}
	})
	if firstCPU && res.CPUReason != "" {
		r.logf("kci: guests boot with -cpu %s: %s", res.CPU, res.CPUReason)
	}
}

// beginBoot announces a boot with its place and the ETA, and returns
// what closes it (called with r.mu held). One boot at a time is the
// progress meter's live line; boots side by side get a line each, start
// and end, as the meter's one line cannot show two.
func (r *testRun) beginBoot(label string) func(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	eta := ""
	if r.done > 0 {
		// Boots side by side finish r.parallel at a time.
		per := r.bootTime / time.Duration(r.done)
		left := (r.total - r.done + r.parallel - 1) / max(r.parallel, 1)
		eta = fmt.Sprintf(", ETA %s", (per * time.Duration(left)).Round(time.Second))
	}
	what := fmt.Sprintf("boot [%s]%s", label, eta)
	began := time.Now()
	if r.parallel <= 1 {
		r.meter.Begin("boot %d/%d [%s]%s", r.done+1, r.total, label, eta)
		return func(err error) {
			r.bootTime += time.Since(began)
			if err != nil {
				r.meter.End("failed: %s", lines.First(err.Error()))
			} else {
				r.meter.End("done")
			}
		}
	}
	r.logf("kci: %s ...", what)
	return func(err error) {
		r.bootTime += time.Since(began)
		took := time.Since(began).Round(time.Second)
		if err != nil {
			r.logf("kci: %s: failed (%s): %s", what, took, lines.First(err.Error()))
		} else {
			r.logf("kci: %s: done (%s), %d/%d", what, took, r.done, r.total)
		}
	}
}

// seed is repetition rep's guest seed: --seed, or the rep-th from
// --first-seed (1, 2, 3... by default).
func (r *testRun) seed(rep int) uint64 { return r.seeds.guest(rep) }

// exitOf is the exit status the run's analysis gives: a survival
// regression, a variant invalid on the patched kernel only, then a
// performance regression beyond --fail-on-regression.
func (r *testRun) exitOf(a *verdict.Analysis) error {
	for _, n := range r.chosen {
		tr, _ := a.Tree(n)
		for _, c := range tr.Changes {
			if c.Kind == verdict.Regression {
				return &ExitError{Code: ExitSurvival, Cause: fmt.Sprintf("survival regression on tree %s: %s over %s %s on base, %s patched", n, c.Base.Carrier, c.Base.Path, c.Base.Observed, c.Patched.Observed)}
			}
		}
	}
	for _, n := range r.chosen {
		tr, _ := a.Tree(n)
		if inv := tr.PatchedOnlyInvalid(); len(inv) > 0 {
			return &ExitError{Code: ExitSurvival, Cause: fmt.Sprintf("behaviour regression on tree %s: %s on the patched kernel only", n, inv[0])}
		}
	}
	if r.o.FailOnRegression >= 0 {
		if err := a.FailOnRegression(r.o.FailOnRegression); err != nil {
			return &ExitError{Code: ExitPerformance, Cause: err.Error()}
		}
	}
	return nil
}
