package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/suite"
)

// Booter boots one kernel with a plan and returns what the guest reported.
// The real one drives QEMU (vmBooter); tests use a scripted fake.
type Booter interface {
	Boot(ctx context.Context, req BootRequest) (*BootResult, error)
}

// BootRequest is one fresh boot.
type BootRequest struct {
	Kernel  *kernel.Artifacts
	Plan    suite.Plan
	Console string // where the console log goes
	Label   string // e.g. "gtp patched rep 2/6", for progress
}

// BootResult is what one boot produced. Partial results come back with an
// error too: what was measured before a crash is kept.
type BootResult struct {
	Accel       string
	BootToReady time.Duration
	Sanity      *suite.Sanity
	Caps        *suite.Caps
	Cells       []suite.Cell
	Variants    []suite.VariantResult
	Profiles    []suite.Profile // with TestOptions.Profile: one per variant
	ErrorKind   string          // with an error: boot, crash, timeout, guest, infra
	// Clock is what the guest's ns count (results.ClockICount, ...);
	// TSCkHz and Clocksource are the guest kernel's calibration.
	Clock       string
	TSCkHz      int64
	Clocksource string
}

// TestOptions is what `kci test` was asked.
type TestOptions struct {
	Patches  []string // files, dirs, mboxes, series files
	Trees    []string // empty: every tree the patches apply to
	Reps     int
	Variants []string
	Bench    suite.BenchParams
	// BenchFor sizes the traffic for the accelerator once it is known
	// (emulated runs use a shorter window); nil keeps Bench.
	BenchFor func(accel string) suite.BenchParams
	// RepsFor picks the boots per kernel once the accelerator is known,
	// when Reps is 0 (deterministic runs need fewer); nil means 1.
	RepsFor          func(accel string) int
	Survival         bool
	Profile          bool    // sample each variant's window into profiles/; without patches, base only
	Out              string  // run directory; default ./kci-results/<time>-<id>
	FailOnRegression float64 // percent; negative: off
	Shard, Shards    int     // run repetitions i of N (1-based); 0: all
	Args             []string
	Log              io.Writer // progress lines
	// Progress shows the long phases (builds, boots) live on a terminal,
	// as one line each in a log; nil is silent.
	Progress *progress.Meter
	Host     results.Host
	// MinEffectPct is the smallest effect of interest, recorded in the
	// run (percent; 0: results.DefaultMinEffectPct).
	MinEffectPct float64
}

// Tester runs kci test.
type Tester struct {
	Builder *Builder
	Booter  Booter
}

type treeJob struct {
	tree          *project.Tree
	base, patched *kernel.Artifacts
}

// Test builds, boots and compares. It returns the run directory even on
// failure: what was measured stays on disk.
func (t *Tester) Test(ctx context.Context, o TestOptions) (string, error) {
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", a...)
		}
	}
	patches, err := kernel.LoadSeries(o.Patches...)
	if err != nil {
		return "", &ExitError{Code: ExitApply, Cause: err.Error()}
	}
	start := time.Now()
	id := results.NewID()
	dir := o.Out
	if dir == "" {
		dir = results.DefaultDir(start, id)
	}
	rec, err := results.NewRecorder(dir, id)
	if err != nil {
		return "", Classify("results", err)
	}
	// Saving the record can fail (a full disk): the recorder keeps the first
	// error and finish fails the job with it, so the rec.* calls below leave
	// their errors to it and the boots carry on meanwhile.
	_ = rec.SetArgs(o.Args)
	_ = rec.SetHost(o.Host)
	_ = rec.Update(func(r *results.Run) { r.MinEffectPct = o.MinEffectPct })
	var profs *profiles
	if o.Profile {
		if profs, err = newProfiles(dir, logf); err != nil {
			return dir, Classify("results", err)
		}
	}
	finish := func(err error) (string, error) {
		pset, perr := profs.finish()
		if perr != nil {
			logf("kci: %v", perr)
		}
		reason := ""
		if err != nil {
			reason = firstLine(err.Error())
			if ctx.Err() != nil {
				reason = "interrupted"
				err = errInterrupted
			}
		}
		_ = rec.Finish(reason) // in rec.Err, checked below
		run, rerr := rec.Snapshot()
		if rerr == nil {
			rerr = results.WriteReports(dir, run)
			if perr := profs.appendReport(dir, pset); perr != nil {
				logf("kci: %v", perr)
			}
		}
		if rerr = errors.Join(rec.Err(), rerr); rerr != nil {
			if err == nil {
				// A verdict without its record on disk is not a result:
				// the machine's fault, never the patch's.
				err = &ExitError{Code: ExitInternal, Cause: "results: run record not saved in " + dir + ": " + firstLine(rerr.Error()), Err: rerr}
			} else {
				// The job's own failure says more; the lost record is noted.
				logf("kci: results: run record not saved: %v", rerr)
			}
		}
		return dir, Classify("test", err)
	}
	phase := func(name, tree, role string, f func() error) error {
		s := time.Now()
		err := f()
		_ = rec.AddPhase(results.Phase{Name: name, Tree: tree, Kernel: role, Start: s, Duration: time.Since(s)})
		return err
	}

	// Which trees: the ones named, or every tree the series applies to.
	var jobs []*treeJob
	names := o.Trees
	if len(names) == 0 {
		for _, tr := range t.Builder.Project.Trees {
			names = append(names, tr.Name)
		}
	}
	for _, n := range names {
		tr, err := t.Builder.Project.Tree(n)
		if err != nil {
			return finish(&ExitError{Code: ExitInternal, Cause: err.Error()})
		}
		ok := true
		if len(o.Trees) == 0 {
			if err := phase("applies", n, "", func() (err error) { ok, err = t.Builder.AppliesTo(ctx, tr, patches); return }); err != nil {
				return finish(err)
			}
		}
		if ok {
			jobs = append(jobs, &treeJob{tree: tr})
		} else {
			logf("kci: %s does not apply to tree %s: skipping that tree", strings.Join(o.Patches, " "), n)
		}
	}
	if len(jobs) == 0 {
		return finish(&ExitError{Code: ExitApply, Cause: fmt.Sprintf("%s applies to none of the trees %v", strings.Join(o.Patches, " "), names)})
	}
	var chosen []string
	for _, j := range jobs {
		chosen = append(chosen, j.tree.Name)
	}
	logf("kci: testing on tree(s) %s", strings.Join(chosen, ", "))

	// Kernels: tree base (cached) then patched (incremental from it).
	meter := o.Progress
	if meter != nil {
		t.Builder.Opts.Progress = meter // make's output drives the object count
	}
	for _, j := range jobs {
		n := j.tree.Name
		meter.Begin("[%s] building base kernel", n)
		if err := phase("build", n, results.RoleBase, func() (err error) { j.base, err = t.Builder.Tree(ctx, j.tree); return }); err != nil {
			meter.End("failed")
			return finish(classifyBuild("base kernel of tree "+n, err))
		}
		meter.End("%s, %s", j.base.Release, hitOrBuilt(j.base))
		_ = rec.SetTree(treeRecord(n, j.base, nil))
		if len(patches) == 0 {
			continue // nothing to compare: base only (kci profile)
		}
		meter.Begin("[%s] building patched kernel", n)
		if err := phase("build", n, results.RolePatched, func() (err error) { j.patched, err = t.Builder.Patched(ctx, j.tree, j.base, patches); return }); err != nil {
			meter.End("failed")
			return finish(classifyBuild("patched kernel of tree "+n, err))
		}
		meter.End("%s, %s", j.patched.Release, hitOrBuilt(j.patched))
		_ = rec.SetTree(treeRecord(n, j.base, j.patched))
	}

	// The accelerator decides the plan's size: settle it before booting.
	if r, ok := t.Booter.(interface {
		ResolveAccel(context.Context, *kernel.Artifacts) (string, string, error)
	}); ok {
		var accel, why string
		if err := phase("accel", "", "", func() (err error) { accel, why, err = r.ResolveAccel(ctx, jobs[0].base); return }); err != nil {
			return finish(err)
		}
		logf("kci: accelerator %s: %s", accel, why)
		_ = rec.Update(func(r *results.Run) { r.Host.Accel = accel })
		if accel == "tcg" {
			logf("kci: emulated (TCG): numbers are %s", results.EmulatedLabel)
		}
		if o.BenchFor != nil {
			o.Bench = o.BenchFor(accel)
		}
		if o.Reps <= 0 && o.RepsFor != nil {
			o.Reps = o.RepsFor(accel)
		}
	}

	// Boots: base and patched alternate, a fresh boot each, so drift over
	// time hits both alike. Survival runs once per kernel (it is
	// deterministic), the benchmark every repetition.
	reps := o.Reps
	if reps <= 0 {
		reps = 1
	}
	plan := suite.Plan{Sanity: true, Variants: o.Variants, Bench: o.Bench, Profile: o.Profile, StepTimeout: stepTimeout(o.Bench)}
	_ = rec.SetPlan(plan)
	roles := []string{results.RoleBase, results.RolePatched}
	if len(patches) == 0 {
		roles = roles[:1]
	}
	total := len(jobs) * reps * len(roles)
	done := 0
	began := time.Now()
	for rep := 1; rep <= reps; rep++ {
		if o.Shards > 1 && (rep-1)%o.Shards != o.Shard-1 {
			continue
		}
		for _, j := range jobs {
			for _, role := range bootOrder(rep, roles) { // ABBA: order.go
				if ctx.Err() != nil {
					return finish(ctx.Err())
				}
				k := j.base
				if role == results.RolePatched {
					k = j.patched
				}
				p := plan
				p.Survival = o.Survival && (rep == 1 || (o.Shards > 1 && rep == o.Shard))
				label := fmt.Sprintf("%s %s rep %d/%d", j.tree.Name, role, rep, reps)
				eta := ""
				if done > 0 {
					per := time.Since(began) / time.Duration(done)
					eta = fmt.Sprintf(", ETA %s", (per * time.Duration(total-done)).Round(time.Second))
				}
				meter.Begin("boot %d/%d [%s]%s", done+1, total, label, eta)
				console := filepath.Join("console", fmt.Sprintf("%s-%s-%d.log", j.tree.Name, role, rep))
				var res *BootResult
				err := phase("boot+suite", j.tree.Name, role, func() (err error) {
					res, err = t.Booter.Boot(ctx, BootRequest{Kernel: k, Plan: p, Console: filepath.Join(dir, console), Label: label})
					return err
				})
				done++
				if err != nil {
					meter.End("failed: %s", firstLine(err.Error()))
				} else {
					meter.End("done")
				}
				b := results.Boot{Tree: j.tree.Name, Role: role, Rep: rep, ConsoleLog: console}
				if res != nil {
					b.Accel, b.BootToReady = res.Accel, res.BootToReady
					b.Sanity, b.Caps, b.Cells, b.Variants = res.Sanity, res.Caps, res.Cells, res.Variants
					b.ErrorKind = res.ErrorKind
					b.Clock, b.TSCkHz, b.Clocksource = res.Clock, res.TSCkHz, res.Clocksource
				}
				if err != nil {
					b.Error = firstLine(err.Error())
					if b.ErrorKind == "" {
						b.ErrorKind = KindInfra
					}
				}
				_, _ = rec.AddBoot(b)
				if res != nil {
					profs.add(j.tree.Name, role, rep, k.Release, res.Accel, res.Profiles)
				}
				if res != nil {
					_ = rec.Update(func(r *results.Run) {
						if r.Host.Accel == "" {
							r.Host.Accel = res.Accel
						}
					})
				}
				for _, v := range b.Variants {
					if v.Skipped != "" {
						logf("kci: [%s] %s skipped: %s", label, v.Variant, v.Skipped)
					} else if !v.Valid {
						logf("kci: [%s] %s INVALID: %s", label, v.Variant, v.Invalid)
					}
				}
				if err != nil {
					if ctx.Err() != nil {
						return finish(ctx.Err())
					}
					if BootExitCode(b.ErrorKind) == ExitInternal {
						return finish(&ExitError{Code: ExitInternal, Cause: fmt.Sprintf("%s: %s (machine fault, not the patch's)", label, b.Error), Err: err})
					}
					return finish(&ExitError{Code: ExitBoot, Cause: fmt.Sprintf("%s kernel of tree %s: %s", role, j.tree.Name, b.Error), Err: err})
				}
			}
		}
	}

	run, err := rec.Snapshot()
	if err != nil {
		return finish(err)
	}
	for _, n := range chosen {
		tr := results.Analyze(run, n)
		for _, c := range tr.Changes {
			if c.Kind == results.Regression {
				return finish(&ExitError{Code: ExitSurvival, Cause: fmt.Sprintf("survival regression on tree %s: %s over %s %s on base, %s patched", n, c.Base.Carrier, c.Base.Path, c.Base.Observed, c.Patched.Observed)})
			}
		}
	}
	if o.FailOnRegression >= 0 {
		if err := results.FailOnRegression(run, o.FailOnRegression); err != nil {
			return finish(&ExitError{Code: ExitPerformance, Cause: err.Error()})
		}
	}
	return finish(nil)
}

func classifyBuild(what string, err error) error {
	var ae *kernel.ApplyError
	if errors.As(err, &ae) {
		return &ExitError{Code: ExitApply, Cause: ae.Error(), Err: fmt.Errorf("%s", ae.Output)}
	}
	return Classify(what, err)
}

func hitOrBuilt(a *kernel.Artifacts) string {
	if a.CacheHit {
		return "cache hit"
	}
	var d time.Duration
	for _, p := range a.Phases {
		d += p.Duration
	}
	return "built in " + d.Round(time.Second).String()
}

func treeRecord(name string, base, patched *kernel.Artifacts) results.Tree {
	t := results.Tree{Name: name, Base: base, Patched: patched,
		ConfigVerdict: "lockdep-free: every requested option verified, forbidden debug options off (" + strings.Join(kernel.Forbidden[:6], ", ") + ", …)"}
	a := base
	if patched != nil {
		a = patched
		if base.ConfigHash != patched.ConfigHash {
			t.ConfigVerdict += "; the series changes the config (base " + base.ConfigHash[:12] + ", patched " + patched.ConfigHash[:12] + ")"
		}
	}
	for _, d := range a.Drift {
		t.Drift = append(t.Drift, d.String())
	}
	return t
}

// stepTimeout bounds one suite step: the traffic phases plus slack for
// emulation.
func stepTimeout(b suite.BenchParams) time.Duration {
	return 3*(b.ServerLead+b.Warmup+b.Window) + 2*time.Minute
}

// DefaultHost describes this machine for the run record.
func DefaultHost() results.Host {
	h := results.Host{NProc: runtime.NumCPU()}
	h.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				if i := strings.Index(l, ":"); i >= 0 {
					h.CPUModel = strings.TrimSpace(l[i+1:])
				}
				break
			}
		}
	}
	return h
}
