package job

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/internal/version"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/vm"
)

// The tests below run Tester.Test end to end through the fake builder and
// booter (fake_test.go): every exit path of kci test without a kernel.

const testPatch = "testdata/nops-hash-update.patch"

// outcome is what one job returned.
type outcome struct {
	code int   // exit code, 0 for success
	err  error // what Test returned
	run  *results.Run
	dir  string
	// analysis is the job's verdict on its run (Result.Analysis).
	analysis *verdict.Analysis
}

// runTest runs one job on a one-tree project ("stock").
func runTest(t *testing.T, ctx context.Context, b *fakeBuilder, boots *fakeBooter, o TestOptions) outcome {
	t.Helper()
	proj := &project.File{Path: "kci.yaml", Trees: []project.Tree{{Name: "stock"}}}
	if o.Patches == nil {
		o.Patches = []string{testPatch}
	}
	if o.Reps == 0 {
		o.Reps = 2
	}
	o.Out = filepath.Join(t.TempDir(), "run")
	res, err := (&Tester{Kernels: b, Booter: boots, Project: proj}).Test(ctx, o)
	dir := res.Dir
	if dir != o.Out {
		t.Fatalf("Test returned dir %q, want %q", dir, o.Out)
	}
	out := outcome{err: err, dir: dir, analysis: res.Analysis}
	if err != nil {
		var ee *ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("Test error %v is not an ExitError", err)
		}
		if strings.Contains(ee.Cause, "\n") {
			t.Errorf("cause is not one line: %q", ee.Cause)
		}
		out.code = ee.Code
	}
	run, lerr := results.Load(dir)
	if lerr != nil && out.code != ExitInternal {
		t.Fatalf("run record: %v", lerr)
	}
	out.run = run
	return out
}

// want fails the test unless the job exited code with an error that
// mentions cause.
func (o outcome) want(t *testing.T, code int, cause string) {
	t.Helper()
	if o.code != code {
		t.Fatalf("exit %d (%v), want %d", o.code, o.err, code)
	}
	if cause != "" && (o.err == nil || !strings.Contains(o.err.Error(), cause)) {
		t.Errorf("error %v, want it to mention %q", o.err, cause)
	}
}

func TestTestExitsOKWhenNothingChanged(t *testing.T) {
	boots := &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(100)}}
	r := runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{Survival: true, FailOnRegression: 10})
	r.want(t, ExitOK, "")
	if r.run.Incomplete {
		t.Errorf("finished run marked incomplete: %q", r.run.IncompleteReason)
	}
	if r.run.KCIVersion == "" || r.run.KCIVersion != version.String() {
		t.Errorf("run.json kci_version %q, want %q", r.run.KCIVersion, version.String())
	}
	// ABBA: base and patched alternate so drift hits both alike.
	if got, want := boots.roles(), []string{"base", "patched", "patched", "base"}; !reflect.DeepEqual(got, want) {
		t.Errorf("boot order %v, want %v", got, want)
	}
	if len(r.run.Boots) != 4 || len(r.run.Trees) != 1 || r.run.Trees[0].Patched == nil {
		t.Fatalf("record: %d boots, trees %+v; want 4 boots of one tree with both kernels", len(r.run.Boots), r.run.Trees)
	}
	for _, req := range boots.reqs {
		// Survival is deterministic: asked of each kernel's first boot only.
		if first := strings.Contains(req.Label, "rep 1/"); req.Plan.Survival != first {
			t.Errorf("%s: survival %v, want %v", req.Label, req.Plan.Survival, first)
		}
		if filepath.Dir(filepath.Dir(req.Console)) != r.dir {
			t.Errorf("%s: console %q not in the run directory's console/", req.Label, req.Console)
		}
	}
	for _, f := range []string{"report.txt", render.HTMLFile} {
		if _, err := os.Stat(filepath.Join(r.dir, f)); err != nil {
			t.Errorf("report not written: %v", err)
		}
	}
}

// A patch that applies to no tree is judged before the run directory:
// exit 2, no boot, nothing created.
func TestTestExitsApplyWhenThePatchAppliesToNoTree(t *testing.T) {
	boots := &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(100)}}
	proj := &project.File{Path: "kci.yaml", Trees: []project.Tree{{Name: "stock"}}}
	out := filepath.Join(t.TempDir(), "run")
	o := TestOptions{Patches: []string{testPatch}, Reps: 2, Out: out}
	b := &fakeBuilder{notApplies: map[string]bool{"stock": true}}
	res, err := (&Tester{Kernels: b, Booter: boots, Project: proj}).Test(context.Background(), o)
	dir := res.Dir
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitApply || !strings.Contains(ee.Cause, "applies to none of the trees") {
		t.Fatalf("Test: %v, want exit %d: applies to none of the trees", err, ExitApply)
	}
	if _, serr := os.Stat(out); dir != "" || serr == nil || len(boots.reqs) != 0 {
		t.Errorf("dir %q (%v), %d boots: want no run directory and no boot", dir, serr, len(boots.reqs))
	}
}

func TestTestExitsBuildOnABuildFailure(t *testing.T) {
	b := &fakeBuilder{patchedErr: &kernel.BuildError{First: "net/core/skbuff.c:12: error: expected ';'", Log: "/l"}}
	boots := &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(100)}}
	r := runTest(t, context.Background(), b, boots, TestOptions{})
	r.want(t, ExitBuild, "patched kernel of tree stock: kernel build failed: net/core/skbuff.c:12")
	if len(boots.reqs) != 0 || !r.run.Incomplete || !strings.Contains(r.run.IncompleteReason, "skbuff.c:12") {
		t.Errorf("%d boots, incomplete %v (%q): want no boot and the cause in the record", len(boots.reqs), r.run.Incomplete, r.run.IncompleteReason)
	}
	// A patch that turns out not to apply while building is the apply code.
	b = &fakeBuilder{patchedErr: &kernel.ApplyError{Patch: "p.patch", File: "net/core/skbuff.c"}}
	r = runTest(t, context.Background(), b, boots, TestOptions{})
	r.want(t, ExitApply, "patch p.patch does not apply")
}

func TestTestExitsBootWhenThePatchedKernelFails(t *testing.T) {
	for _, kind := range []string{failure.Crash, failure.Timeout, failure.Boot, failure.Agent} {
		t.Run(kind, func(t *testing.T) {
			boots := &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootFails(kind, "Kernel panic - not syncing: skb_ext_add")}}
			r := runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{})
			r.want(t, ExitBoot, "patched kernel of tree stock: Kernel panic")
			last := r.run.Boots[len(r.run.Boots)-1]
			if last.Role != "patched" || last.ErrorKind != kind || last.Error == "" {
				t.Errorf("failed boot recorded as %+v, want patched with kind %s", last, kind)
			}
			if len(boots.reqs) != 2 {
				t.Errorf("%d boots, want the job to stop at the failed one (2)", len(boots.reqs))
			}
		})
	}
}

func TestTestExitsInternalOnTheMachinesFault(t *testing.T) {
	// qemu failing is the machine's fault, never the patch's.
	boots := &fakeBooter{base: []scriptedBoot{bootFails(failure.Infra, "qemu: could not open /dev/kvm")}, patched: []scriptedBoot{bootOK(100)}}
	r := runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{})
	r.want(t, ExitInternal, "machine fault, not the patch's")
	if len(r.run.Boots) != 1 || r.run.Boots[0].ErrorKind != failure.Infra {
		t.Errorf("boots %+v, want one infra failure", r.run.Boots)
	}
	// So is a cache that fails while building.
	b := &fakeBuilder{treeErr: &kernel.InfraError{Op: "cache lock", Err: errors.New("no space left on device")}}
	r = runTest(t, context.Background(), b, &fakeBooter{}, TestOptions{})
	r.want(t, ExitInternal, "no space left on device")
}

func TestTestExitsInternalWhenTheRecordIsLost(t *testing.T) {
	// The run directory vanishes under the first boot (a failing disk) and
	// is back for the last: the saves in between fail, the final ones
	// succeed. Every boot still runs and compares equal, but a verdict
	// whose record lost boots on the way must not pass.
	lose := func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
		if err := os.RemoveAll(filepath.Dir(filepath.Dir(req.Console))); err != nil {
			t.Fatal(err)
		}
		return bootOK(100)(ctx, req)
	}
	restore := func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
		if err := os.MkdirAll(filepath.Dir(filepath.Dir(req.Console)), 0o755); err != nil {
			t.Fatal(err)
		}
		return bootOK(100)(ctx, req)
	}
	boots := &fakeBooter{base: []scriptedBoot{lose, restore}, patched: []scriptedBoot{bootOK(100)}}
	r := runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{})
	r.want(t, ExitInternal, "run record not saved")
	if len(boots.reqs) != 4 {
		t.Errorf("%d boots, want all 4: the record's loss is reported at the end", len(boots.reqs))
	}
}

func TestTestExitsSurvivalOnASurvivalRegression(t *testing.T) {
	boots := &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{measured(100, "", "lost")}}
	r := runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{Survival: true, FailOnRegression: -1})
	r.want(t, ExitSurvival, "survival regression on tree stock: skb_ext over veth survives on base, lost patched")
}

// kci test analyses its finished record once, and everything reads that
// analysis: every report on disk is its rendering, the exit code is its
// reading, and Result hands it to what kci test prints and posts. A
// failed verdict is the run's answer, not a reason it stopped: the record
// is complete.
func TestTestReportsAndExitReadOneAnalysis(t *testing.T) {
	boots := &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{measured(100, "", "lost")}}
	r := runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{Survival: true, FailOnRegression: -1})
	r.want(t, ExitSurvival, "survival regression on tree stock")
	a := r.analysis
	if a == nil {
		t.Fatal("Test returned no analysis of its finished run")
	}
	if tr, ok := a.Tree("stock"); !ok || len(tr.Changes) != 1 || tr.Conclusion.State != verdict.Failure {
		t.Errorf("analysis of stock: %+v, want the survival regression, concluded a failure", tr.Conclusion)
	}
	if r.run.Incomplete || a.Run.Incomplete {
		t.Errorf("run marked incomplete (%q): a failed verdict is the run's answer", r.run.IncompleteReason)
	}
	var txt, html strings.Builder
	if err := render.Text(&txt, a, render.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := render.HTML(&html, a, r.dir); err != nil {
		t.Fatal(err)
	}
	js, err := render.JSON(a)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"report.txt": txt.String(), "report.md": render.MarkdownRun(a), "report.json": string(js), render.HTMLFile: html.String()} {
		if got, err := os.ReadFile(filepath.Join(r.dir, file)); err != nil || string(got) != want {
			t.Errorf("%s (%v) is not the rendering of the job's analysis", file, err)
		}
	}
}

func TestTestExitsPerformanceBeyondTheLimitOnly(t *testing.T) {
	// Deterministic clock: 100 ns/pkt on base, 150 patched, no spread.
	slower := func() *fakeBooter {
		return &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(150)}}
	}
	r := runTest(t, context.Background(), &fakeBuilder{}, slower(), TestOptions{FailOnRegression: 10})
	r.want(t, ExitPerformance, "")
	r = runTest(t, context.Background(), &fakeBuilder{}, slower(), TestOptions{FailOnRegression: 60})
	r.want(t, ExitOK, "")
	r = runTest(t, context.Background(), &fakeBuilder{}, slower(), TestOptions{FailOnRegression: -1})
	r.want(t, ExitOK, "")
}

func TestTestInvalidVariants(t *testing.T) {
	// Invalid on both kernels: excluded from the numbers, nothing to blame.
	boots := &fakeBooter{base: []scriptedBoot{measured(100, "packet count below the floor", "survives")}, patched: []scriptedBoot{measured(150, "packet count below the floor", "survives")}}
	r := runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{FailOnRegression: 10})
	r.want(t, ExitOK, "")
	if c := concludeOf(r.run, "stock"); c.State == verdict.Failure {
		t.Errorf("invalid on both kernels concluded %s: %s", c.State, c.Title)
	}

	// Invalid on the patched kernel only: the patch broke the benchmark's
	// own checks; the conclusion and the exit code both say so.
	boots = &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{measured(100, "bpf_stats run_cnt is 0", "survives")}}
	r = runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{FailOnRegression: 10})
	r.want(t, ExitSurvival, "invalid")
	if c := concludeOf(r.run, "stock"); c.State != verdict.Failure || !strings.Contains(c.Title, "invalid on the patched kernel only") {
		t.Errorf("one-sided invalid concluded %s: %q, want a failure naming it", c.State, c.Title)
	}
}

func TestTestExitsInterruptedAndKeepsTheRecord(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The user presses ^C during the second boot.
	interrupt := func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
		cancel()
		return &boot.BootResult{ErrorKind: failure.Infra}, ctx.Err()
	}
	boots := &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{interrupt}}
	r := runTest(t, ctx, &fakeBuilder{}, boots, TestOptions{})
	r.want(t, ExitInterrupted, "interrupted")
	if !r.run.Incomplete || r.run.IncompleteReason != "interrupted" {
		t.Errorf("record: incomplete %v reason %q, want marked interrupted", r.run.Incomplete, r.run.IncompleteReason)
	}
	if len(r.run.Boots) != 2 || r.run.Boots[0].Error != "" {
		t.Errorf("boots %+v: the measured boot must be kept, the interrupted one recorded", r.run.Boots)
	}
	if len(boots.reqs) != 2 {
		t.Errorf("%d boots asked for, want none after the interrupt", len(boots.reqs))
	}
}

// Repetition k boots both kernels with seed k (paired); --seed pins every
// boot to one seed, the determinism check.
func TestTestSeeds(t *testing.T) {
	for _, tc := range []struct {
		seed, first uint64
		want        []uint64
	}{
		{0, 0, []uint64{1, 1, 2, 2, 3, 3}},
		{7, 0, []uint64{7, 7, 7, 7, 7, 7}},
		{0, 11, []uint64{11, 11, 12, 12, 13, 13}},
	} {
		boots := &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(100)}}
		r := runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{Reps: 3, Seed: tc.seed, FirstSeed: tc.first})
		r.want(t, ExitOK, "")
		var got []uint64
		for _, req := range boots.reqs {
			got = append(got, req.Seed)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("--seed %d: boot seeds %v, want %v", tc.seed, got, tc.want)
		}
		var recorded []uint64 // run.json keeps each icount boot's seed
		for _, b := range r.run.Boots {
			recorded = append(recorded, b.Seed)
		}
		if !reflect.DeepEqual(recorded, tc.want) {
			t.Errorf("--seed %d: run.json seeds %v, want %v", tc.seed, recorded, tc.want)
		}
	}
}

// More than one vCPU under TCG's instruction clock is warned about before
// the first boot; one vCPU, the host clock and KVM are not.
func TestWarnSMPICount(t *testing.T) {
	cases := []struct {
		cfg  vm.Config
		warn bool
	}{
		{vm.Config{Accel: vm.AccelTCG, CPUs: 2}, true},
		{vm.Config{Accel: vm.AccelTCG, CPUs: 2, Clock: vm.ClockICount}, true},
		{vm.Config{Accel: vm.AccelTCG, CPUs: 1}, false},
		{vm.Config{Accel: vm.AccelTCG, CPUs: 2, Clock: vm.ClockHost}, false},
		{vm.Config{Accel: vm.AccelKVM, CPUs: 4}, false},
	}
	for _, c := range cases {
		var log strings.Builder
		b := &boot.VMBooter{VM: c.cfg, Log: &log}
		if _, _, err := b.ResolveAccel(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(log.String(), "vCPUs under TCG with the instruction clock"); got != c.warn {
			t.Errorf("%+v: warned %v (%q), want %v", c.cfg, got, log.String(), c.warn)
		}
	}
}
