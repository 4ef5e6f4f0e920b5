package job

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// The runner's KVM, played by script: what vm's fake-QEMU hosts settle
// (TestProbeMSRHost: KVM with -cpu host,-arch-capabilities) is what this
// booter resolves to, and every boot reports real time with that model.
const (
	runnerCPU       = "host,-arch-capabilities"
	runnerCPUReason = "-cpu host: QEMU died at start under KVM, failed to set MSR 0x10a (IA32_ARCH_CAPABILITIES); kci boots without arch-capabilities"
	runnerAccelWhy  = "KVM guest reached the agent in 1.1s with -cpu " + runnerCPU
)

// kvmBooter is a GitHub runner whose KVM works once arch-capabilities is
// off. It counts how many boots run at once.
type kvmBooter struct {
	fakeBooter
	mu            sync.Mutex
	running, most int
}

func (k *kvmBooter) ResolveAccel(context.Context, *kernel.Artifacts) (string, string, error) {
	return results.AccelKVM, runnerAccelWhy, nil
}

func (k *kvmBooter) Boot(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
	k.mu.Lock()
	k.running++
	k.most = max(k.most, k.running)
	k.mu.Unlock()
	defer func() {
		k.mu.Lock()
		k.running--
		k.mu.Unlock()
	}()
	time.Sleep(5 * time.Millisecond) // long enough for a second boot to overlap, were one started
	return k.fakeBooter.Boot(ctx, req)
}

// kvmBoot is a wall-clock boot: ns per packet give or take 2 % by seed,
// as boot-to-boot noise.
func kvmBoot(ns float64) scriptedBoot {
	return func(_ context.Context, req boot.BootRequest) (*boot.BootResult, error) {
		jitter := 1 + 0.01*float64(int(req.Seed%5)-2)
		const pkts = 1_000_000
		v := wire.VariantResult{Variant: "x", Valid: true,
			Programs: []wire.ProgStat{{Name: "x_prog", Type: "sched_cls", RunCnt: pkts, RunTimeNs: uint64(ns * jitter * pkts)}}}
		res := &boot.BootResult{Accel: results.AccelKVM, Clock: results.ClockKVM, CPU: runnerCPU, CPUReason: runnerCPUReason,
			BootToReady: 1100 * time.Millisecond, Variants: []wire.VariantResult{v}}
		if req.Plan.Survival {
			res.Cells = []wire.Cell{{Carrier: "skb_ext", Path: "veth", Expected: "survives", Observed: "survives", Pass: true}}
		}
		return res, nil
	}
}

// kci test on a runner, end to end on scripted boots: KVM settles the
// plan as it does there (no --reps: 6+6 boots, RepsByAccel as kci test
// sets it; no --parallel: one boot at a time), ABBA order, a 30 % slower
// patch decided by the noisy rule (Mann-Whitney, Holm) and failing
// --fail-on-regression, reports in real-time units naming the -cpu model
// and why. Nothing here depends on the clock of the machine running it.
func TestTestKVMNoisyPath(t *testing.T) {
	boots := &kvmBooter{fakeBooter: fakeBooter{base: []scriptedBoot{kvmBoot(100)}, patched: []scriptedBoot{kvmBoot(130)}}}
	proj := &project.File{Path: "kci.yaml", Trees: []project.Tree{{Name: "stock"}}}
	var log strings.Builder
	o := TestOptions{Patches: []string{testPatch}, Survival: true, FailOnRegression: 10, Log: &log,
		Clock: results.ClockICount, RepsFor: RepsByAccel(results.ClockICount), Out: filepath.Join(t.TempDir(), "run")}
	res, err := (&Tester{Kernels: &fakeBuilder{}, Booter: boots, Project: proj}).Test(context.Background(), o)
	dir := res.Dir
	t.Logf("log:\n%s", log.String())
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitPerformance {
		t.Fatalf("err %v, want exit %d (performance regression beyond 10 %%)", err, ExitPerformance)
	}
	if got, want := strings.Join(boots.roles(), ","), strings.Repeat("base,patched,patched,base,", 3); got+"," != want {
		t.Errorf("boots %s, want 6+6 in ABBA order", got)
	}
	if boots.most != 1 {
		t.Errorf("%d KVM boots ran at once, want 1: wall-clock boots side by side measure each other", boots.most)
	}
	run, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	assertRunnerRecord(t, run)
	ab := compareOf(run, "stock")
	if ab.Clock != results.ClockKVM || ab.Deterministic() || ab.Emulated || ab.Label != results.WallTimeLabel {
		t.Errorf("comparison clock %q deterministic %v emulated %v label %q, want real time", ab.Clock, ab.Deterministic(), ab.Emulated, ab.Label)
	}
	for _, v := range ab.Variants {
		for _, r := range append([]verdict.Row{v.Total}, v.Programs...) {
			if r.Verdict != verdict.Slower || !(r.PAdj < 0.05) || r.Base.N != 6 || r.Patched.N != 6 {
				t.Errorf("%s/%s: %s p adj %.4f n %d+%d, want slower at p adj < 0.05 on 6+6", v.Variant, r.Name, r.Verdict, r.PAdj, r.Base.N, r.Patched.N)
			}
		}
	}
	txt, err := os.ReadFile(filepath.Join(dir, "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	assertRealTimeReport(t, string(txt))
	for _, w := range []string{"kci: accelerator kvm: " + runnerAccelWhy, "kci: guests boot with -cpu " + runnerCPU + ": " + runnerCPUReason} {
		if !strings.Contains(log.String(), w) {
			t.Errorf("log lacks %q", w)
		}
	}
}

// assertRunnerRecord checks run.json names the accelerator, the -cpu
// model and why, and that no boot is taken for a deterministic one.
func assertRunnerRecord(t *testing.T, run *results.Run) {
	t.Helper()
	h := run.Host
	if h.Accel != results.AccelKVM || h.AccelReason != runnerAccelWhy || h.GuestCPU != runnerCPU || h.GuestCPUReason != runnerCPUReason {
		t.Errorf("run.json host: accel %q (%q), guest cpu %q (%q)", h.Accel, h.AccelReason, h.GuestCPU, h.GuestCPUReason)
	}
	if len(run.Boots) != 12 {
		t.Fatalf("%d boots recorded, want 12", len(run.Boots))
	}
	for _, b := range run.Boots {
		if b.Clock != results.ClockKVM || b.CPU != runnerCPU || b.Seed != 0 {
			t.Errorf("boot %d: clock %q cpu %q seed %d, want kvm, %s, no seed (only icount boots repeat from one)", b.Seq, b.Clock, b.CPU, b.Seed, runnerCPU)
		}
	}
}

// assertRealTimeReport checks the text report speaks real time: the
// noisy heading with intervals and p-values, no instruction-time or
// emulated label, and the host line naming -cpu and why.
func assertRealTimeReport(t *testing.T, txt string) {
	t.Helper()
	// The text report wraps at 100 columns: compare words.
	flat := strings.Join(strings.Fields(txt), " ")
	for _, w := range []string{"accel kvm", "95% CI", "Mann–Whitney", "-cpu " + runnerCPU + " (" + runnerCPUReason + ")", "accelerator: " + runnerAccelWhy, results.WallTimeLabel} {
		if !strings.Contains(flat, w) {
			t.Errorf("report lacks %q", w)
		}
	}
	for _, w := range []string{results.InstructionTimeLabel, results.EmulatedLabel, "insn-ns"} {
		if strings.Contains(txt, w) {
			t.Errorf("KVM report says %q", w)
		}
	}
	if t.Failed() {
		t.Logf("report.txt:\n%s", txt)
	}
}
