package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/internal/kconfig"
	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// RepsByAccel is kci test's TestOptions.RepsFor: under TCG with the
// instruction clock (tcgClock) boots only show that they agree
// (verdict.DeterministicReps); KVM and --clock host boots are noisy and
// need verdict.NoisyReps per kernel to reach significance.
func RepsByAccel(tcgClock string) func(accel string) int {
	return func(accel string) int {
		if accel == results.AccelTCG && tcgClock == results.ClockICount {
			return verdict.DeterministicReps
		}
		return verdict.NoisyReps
	}
}

// TestOptions is what `kci test` was asked.
type TestOptions struct {
	Patches  []string // files, dirs, mboxes, series files
	Trees    []string // empty: every tree the patches apply to
	Reps     int
	Variants []string
	Bench    wire.BenchParams
	// BenchFor sizes the traffic for the accelerator once it is known
	// (emulated runs use a shorter window); nil keeps Bench.
	BenchFor func(accel string) wire.BenchParams
	// Clock is the TCG guest clock asked for (results.ClockICount or
	// results.ClockHost): with the accelerator it decides whether boots
	// may share the host (Parallel) and labels the progress log. Empty:
	// the Booter's own clock, when it reports one (VMBooter does).
	Clock string
	// RepsFor picks the boots per kernel once the accelerator is known,
	// when Reps is 0 (deterministic runs need fewer); nil means 1.
	RepsFor func(accel string) int
	// Parallel is how many boots run at once; 0 picks: the host's CPUs
	// (at most 4) when every boot is deterministic (TCG under icount), else
	// 1. Only icount boots may share the host: their numbers count guest
	// instructions, which no neighbour changes; KVM and host-clock boots
	// would measure each other, so more than 1 there is refused.
	Parallel         int
	Survival         bool
	Profile          bool    // sample each variant's window into profiles/; without patches, base only
	Out              string  // run directory; default ./kci-results/<time>-<id>
	FailOnRegression float64 // percent; negative: off
	Shard, Shards    int     // run repetitions i of N (1-based); 0: all
	// Seed, when not 0, is every boot's guest seed; 0 gives repetition k
	// seed k (paired base/patched, sampling the guest's randomness).
	Seed uint64
	// FirstSeed is repetition 1's seed when Seed is 0 (0 = 1): repetition
	// k gets FirstSeed+k-1.
	FirstSeed uint64
	Args      []string
	Log       io.Writer // progress lines
	// Progress shows the long phases (builds, boots) live on a terminal,
	// as one line each in a log; nil is silent.
	Progress *progress.Meter
	Host     results.Host
	// MinEffectPct is the smallest effect of interest, recorded in the
	// run (percent; 0: results.DefaultMinEffectPct).
	MinEffectPct float64
	// MaxBoots caps the adaptive seeds of a deterministic run with a
	// patch and no Reps or Seed. 0 is verdict.DefaultMaxBoots boots,
	// cached or not, so that a rerun replays the run; a positive value is
	// the user's explicit budget and counts only the boots that ran (cache
	// hits free); negative turns the adaptive rule off (a fixed 3 seeds
	// per kernel).
	MaxBoots int
}

// Tester runs kci test.
type Tester struct {
	Builder *Builder
	Booter  boot.Booter
	// Kernels, when set, builds the kernels instead of Builder (the job's
	// unit tests script one) and Project names the trees.
	Kernels KernelBuilder
	Project *project.File
}

type treeJob struct {
	tree          *project.Tree
	base, patched *kernel.Artifacts
}

func (t *Tester) project() (*project.File, error) {
	if t.Project != nil {
		return t.Project, nil
	}
	if t.Builder != nil && t.Builder.Project != nil {
		return t.Builder.Project, nil
	}
	return nil, errors.New("test: no project names the trees")
}

func (t *Tester) kernels() KernelBuilder {
	if t.Kernels != nil {
		return t.Kernels
	}
	return t.Builder
}

// Result is what kci test leaves: the run directory, even on failure
// (what was measured stays on disk), and the verdict on its record, the
// one every report of the run was rendered from; nil when the run did not
// finish (refused, or its record not saved).
type Result struct {
	Dir      string
	Analysis *verdict.Analysis
}

// Test builds, boots and compares; the steps are in teststeps.go.
func (t *Tester) Test(ctx context.Context, o TestOptions) (Result, error) {
	r := &testRun{engine: engine{ctx: ctx, log: o.Log, meter: o.Progress, booter: t.Booter,
		seeds: seedMap{fixed: o.Seed, first: o.FirstSeed}, bench: o.Bench, benchFor: o.BenchFor}, t: t, o: o}
	if err := r.judge(); err != nil {
		return Result{}, err
	}
	if err := r.start(); err != nil {
		return Result{Dir: r.dir}, err
	}
	err := r.finish(r.steps())
	return Result{Dir: r.dir, Analysis: r.analysis}, err
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
	d, cpu := a.Took()
	return "built in " + d.Round(time.Second).String() + " (" + cpu.Round(time.Second).String() + " of CPU)"
}

func treeRecord(name string, base, patched *kernel.Artifacts) results.Tree {
	t := results.Tree{Name: name, Base: results.KernelOf(base), Patched: results.KernelOf(patched),
		ConfigCheck: "lockdep-free: every requested option verified, forbidden debug options off (" + strings.Join(kconfig.Forbidden[:6], ", ") + ", …)"}
	k := t.Base
	if patched != nil {
		k = t.Patched
		if base.ConfigHash != patched.ConfigHash {
			t.ConfigCheck += "; the series changes the config (base " + base.ConfigHash[:12] + ", patched " + patched.ConfigHash[:12] + ")"
		}
	}
	for _, d := range k.Drift {
		t.Drift = append(t.Drift, d.String())
	}
	return t
}

// stepTimeout bounds one suite step: the traffic phases plus slack for
// emulation.
func stepTimeout(b wire.BenchParams) time.Duration {
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
