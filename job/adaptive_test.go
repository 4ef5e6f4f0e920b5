package job

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/suite"
)

// seedBoot is a deterministic boot of two variants: "read" costs the
// same on every seed, "write" a different, exactly repeatable cost per
// seed and kernel build (σ ~0.8 %), as under icount. It runs only the
// variants the plan asks for.
func seedBoot(ctx context.Context, req BootRequest) (*BootResult, error) {
	res := &BootResult{Accel: results.AccelTCG, Clock: results.ClockICount}
	const pkts = 1_000_000
	draw := func(salt uint64) float64 { // a fixed pseudo-random draw per seed and build
		x := (req.Seed*0x9e3779b97f4a7c15 ^ salt) * 0xbf58476d1ce4e5b9
		return float64(x>>11)/float64(1<<53)*2 - 1
	}
	salt := uint64(1)
	if strings.HasPrefix(req.Kernel.Key, "patched-") {
		salt = 2
	}
	costs := map[string]float64{"read": 204, "write": 500 * (1 + 0.014*draw(salt))}
	for _, v := range req.Plan.Variants {
		res.Variants = append(res.Variants, suite.VariantResult{Variant: v, Valid: true,
			Programs: []suite.ProgStat{{Name: v + "_prog", Type: "sched_cls", RunCnt: pkts, RunTimeNs: uint64(math.Round(costs[v] * pkts))}}})
	}
	return res, nil
}

// icountBooter is a fakeBooter that settles the accelerator as VMBooter
// does under TCG, so the job picks its reps as kci test does.
type icountBooter struct{ *fakeBooter }

func (icountBooter) ResolveAccel(context.Context, *kernel.Artifacts) (string, string, error) {
	return "tcg", "scripted", nil
}

func runAdaptive(t *testing.T, boots *fakeBooter, o TestOptions) *results.Run {
	t.Helper()
	proj := &project.File{Path: "kci.yaml", Trees: []project.Tree{{Name: "stock"}}}
	o.Patches, o.Out, o.Clock, o.FailOnRegression = []string{testPatch}, filepath.Join(t.TempDir(), "run"), results.ClockICount, -1
	o.RepsFor = func(string) int { return verdict.DeterministicReps }
	dir, err := (&Tester{Kernels: &fakeBuilder{}, Booter: icountBooter{boots}, Project: proj}).Test(context.Background(), o)
	if err != nil {
		t.Fatalf("kci test: %v", err)
	}
	run, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// Adaptive seeds: after 3+3 seeds the exact variant is decided and the
// write variant is not (a row with seed spread is tested from 6 seeds);
// the second look boots seeds 4-6 of both kernels for the write variant
// only. At 6 seeds its 90 % bound (about ±2.5 %) could not reach the
// 0.5 % floor with the one more seed the budget leaves, and the change
// it shows is nowhere near passing, so the run stops there and says why
// instead of spending the budget. With --reps the count is the user's: no
// adaptive looks.
func TestAdaptiveSeedsBootOnlyUndecidedVariants(t *testing.T) {
	boots := &fakeBooter{base: []boot{seedBoot}, patched: []boot{seedBoot}}
	o := TestOptions{Survival: false, Variants: []string{"read", "write"}, MaxBoots: 14, Parallel: 2}
	run := runAdaptive(t, boots, o)
	if n := len(run.Boots); n != 12 {
		t.Fatalf("%d boots, want 12 (6 + 6 at the second look, then futile)", n)
	}
	for _, req := range boots.reqs {
		want := []string{"read", "write"}
		if req.Seed > 3 {
			want = []string{"write"}
		}
		if !slices.Equal(req.Plan.Variants, want) {
			t.Errorf("seed %d (%s): variants %v, want %v", req.Seed, req.Kernel.Key, req.Plan.Variants, want)
		}
	}
	sq := run.Sequential
	if sq == nil || sq.Looks != len(verdict.LookSeeds) || sq.Done != 2 || sq.Boots != 12 || sq.Stop != results.StopFutile {
		t.Fatalf("sequential record %+v, want 2 of %d looks, 12 boots, stopped as futile", sq, len(verdict.LookSeeds))
	}
	ab := verdict.Compare(run, "stock")
	for _, v := range ab.Variants {
		seeds := map[string]int{"read": 3, "write": 6}[v.Variant]
		if v.Total.Seeds != seeds || v.Total.Verdict != verdict.NoChange {
			t.Errorf("%s: %s over %d seeds, want no change over %d", v.Variant, v.Total.Verdict, v.Total.Seeds, seeds)
		}
	}
	if c := verdict.Conclude(run, "stock"); !strings.Contains(c.Summary, "adaptive seeds: 2 of 4 planned looks, 12 boots (--max-boots 14): "+results.StopFutile) {
		t.Errorf("summary does not state why it stopped: %q", c.Summary)
	}

	// A budget too small to test the write row at all: it stays untested,
	// which more seeds would fix, so the budget is what stops the run.
	boots = &fakeBooter{base: []boot{seedBoot}, patched: []boot{seedBoot}}
	o.MaxBoots = 8
	run = runAdaptive(t, boots, o)
	if sq := run.Sequential; len(run.Boots) != 8 || sq == nil || sq.Stop != results.StopBudget {
		t.Errorf("--max-boots 8: %d boots, sequential %+v, want 8, stopped by the budget", len(run.Boots), sq)
	}

	boots = &fakeBooter{base: []boot{seedBoot}, patched: []boot{seedBoot}}
	o.Reps, o.MaxBoots = 3, 14
	run = runAdaptive(t, boots, o)
	if len(run.Boots) != 6 || run.Sequential != nil {
		t.Errorf("--reps 3: %d boots, sequential %+v, want 6 and none", len(run.Boots), run.Sequential)
	}
}
