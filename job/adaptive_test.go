package job

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/rcache"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// seedBoot is a deterministic boot of two variants: "read" costs the
// same on every seed, "write" a different, exactly repeatable cost per
// seed and kernel build (σ ~0.8 %), as under icount. It runs only the
// variants the plan asks for.
func seedBoot(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
	return shiftedSeedBoot(0)(ctx, req)
}

// shiftedSeedBoot is seedBoot whose patched kernel's write variant is
// slower by pct percent.
func shiftedSeedBoot(pct float64) scriptedBoot {
	return func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
		return seedBootShift(ctx, req, pct)
	}
}

func seedBootShift(_ context.Context, req boot.BootRequest, shiftPct float64) (*boot.BootResult, error) {
	res := &boot.BootResult{Accel: results.AccelTCG, Clock: results.ClockICount}
	const pkts = 1_000_000
	draw := func(salt uint64) float64 { // a fixed pseudo-random draw per seed and build
		x := (req.Seed*0x9e3779b97f4a7c15 ^ salt) * 0xbf58476d1ce4e5b9
		return float64(x>>11)/float64(1<<53)*2 - 1
	}
	salt, shift := uint64(1), 1.0
	if strings.HasPrefix(req.Kernel.Key, "patched-") {
		salt, shift = 2, 1+shiftPct/100
	}
	costs := map[string]float64{"read": 204, "write": 500 * shift * (1 + 0.014*draw(salt))}
	for _, v := range req.Plan.Variants {
		res.Variants = append(res.Variants, wire.VariantResult{Variant: v, Valid: true,
			Programs: []wire.ProgStat{{Name: v + "_prog", Type: "sched_cls", RunCnt: pkts, RunTimeNs: uint64(math.Round(costs[v] * pkts))}}})
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
	return runAdaptiveWith(t, icountBooter{boots}, o)
}

// runAdaptiveWith is runAdaptive through any booter (e.g. one behind the
// result cache).
func runAdaptiveWith(t *testing.T, booter boot.Booter, o TestOptions) *results.Run {
	t.Helper()
	proj := &project.File{Path: "kci.yaml", Trees: []project.Tree{{Name: "stock"}}}
	o.Patches, o.Out, o.Clock, o.FailOnRegression = []string{testPatch}, filepath.Join(t.TempDir(), "run"), results.ClockICount, -1
	o.RepsFor = func(string) int { return verdict.DeterministicReps }
	res, err := (&Tester{Kernels: &fakeBuilder{}, Booter: booter, Project: proj}).Test(context.Background(), o)
	dir := res.Dir
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
	boots := &fakeBooter{base: []scriptedBoot{seedBoot}, patched: []scriptedBoot{seedBoot}}
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
	ab := compareOf(run, "stock")
	for _, v := range ab.Variants {
		seeds := map[string]int{"read": 3, "write": 6}[v.Variant]
		if v.Total.Seeds != seeds || v.Total.Verdict != verdict.NoChange {
			t.Errorf("%s: %s over %d seeds, want no change over %d", v.Variant, v.Total.Verdict, v.Total.Seeds, seeds)
		}
	}
	if c := concludeOf(run, "stock"); !strings.Contains(c.Summary, "adaptive seeds: 2 of 4 planned looks, 12 boots (--max-boots 14): "+results.StopFutile) {
		t.Errorf("summary does not state why it stopped: %q", c.Summary)
	}

	// A budget too small to test the write row at all: it stays untested,
	// which more seeds would fix, so the budget is what stops the run.
	boots = &fakeBooter{base: []scriptedBoot{seedBoot}, patched: []scriptedBoot{seedBoot}}
	o.MaxBoots = 8
	run = runAdaptive(t, boots, o)
	if sq := run.Sequential; len(run.Boots) != 8 || sq == nil || sq.Stop != results.StopBudget {
		t.Errorf("--max-boots 8: %d boots, sequential %+v, want 8, stopped by the budget", len(run.Boots), sq)
	}

	boots = &fakeBooter{base: []scriptedBoot{seedBoot}, patched: []scriptedBoot{seedBoot}}
	o.Reps, o.MaxBoots = 3, 14
	run = runAdaptive(t, boots, o)
	if len(run.Boots) != 6 || run.Sequential != nil {
		t.Errorf("--reps 3: %d boots, sequential %+v, want 6 and none", len(run.Boots), run.Sequential)
	}
}

// icountKeyed is the scripted icount booter with a result-cache key.
type icountKeyed struct{ *keyedBooter }

func (icountKeyed) ResolveAccel(context.Context, *kernel.Artifacts) (string, string, error) {
	return "tcg", "scripted", nil
}

// cachedAdaptive runs an adaptive kci test of read and write through the
// result cache in store, with a fresh scripted booter (returned: what it
// was asked to boot) whose patch slows write by shiftPct. log gets the
// run's progress lines.
func cachedAdaptive(t *testing.T, store *rcache.Store, shiftPct float64, maxBoots int, log *syncBuffer) (*results.Run, *fakeBooter) {
	t.Helper()
	b := shiftedSeedBoot(shiftPct)
	boots := &fakeBooter{base: []scriptedBoot{b}, patched: []scriptedBoot{b}}
	booter := boot.WithResultCache(icountKeyed{&keyedBooter{fakeBooter: boots}}, store, log)
	o := TestOptions{Variants: []string{"read", "write"}, MaxBoots: maxBoots, Parallel: 2, Log: log}
	return runAdaptiveWith(t, booter, o), boots
}

// adaptivePath is what the adaptive rule did: each look's plan as logged
// ("[stock] seeds 4-6 for write"), the looks taken and why it stopped,
// and every boot's kernel, seed and variants, in seed order.
func adaptivePath(run *results.Run, log string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if _, plan, ok := strings.Cut(l, "kci: adaptive seeds: "); ok {
			out = append(out, "look: "+plan)
		}
	}
	if sq := run.Sequential; sq != nil {
		out = append(out, fmt.Sprintf("looks %d of %d: %s", sq.Done, sq.Looks, sq.Stop))
	}
	var boots []string
	for _, b := range run.Boots {
		var vs []string
		for _, v := range b.Variants {
			vs = append(vs, v.Variant)
		}
		boots = append(boots, fmt.Sprintf("%s seed %02d %v", b.Role, b.Seed, vs))
	}
	slices.Sort(boots)
	return append(out, boots...)
}

// A rerun is a replay: the same adaptive test run twice against one
// result cache takes the same looks, seeds and variants the second time,
// boots only the re-check (every other boot is a cache hit), and its
// report says it replayed. Before, the cache hits did not count against
// the budget, so the rerun had more of it and bought seeds the first run
// had not.
func TestAdaptiveRerunReplays(t *testing.T) {
	store, err := rcache.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	run1, boots1 := cachedAdaptive(t, store, 1.5, 0, &log)
	path1 := adaptivePath(run1, log.String())
	if len(boots1.reqs) != len(run1.Boots) || run1.Replayed("") {
		t.Fatalf("first run: %d boots asked for, %d recorded, replayed %v: want every boot booted",
			len(boots1.reqs), len(run1.Boots), run1.Replayed(""))
	}
	if sq := run1.Sequential; sq == nil || sq.Done < 2 {
		t.Fatalf("first run took no adaptive look (%+v): the test needs one", sq)
	}

	log = syncBuffer{}
	run2, boots2 := cachedAdaptive(t, store, 1.5, 0, &log)
	if path2 := adaptivePath(run2, log.String()); !slices.Equal(path1, path2) {
		t.Errorf("the rerun took another path:\nfirst:\n  %s\nrerun:\n  %s", strings.Join(path1, "\n  "), strings.Join(path2, "\n  "))
	}
	n, cached := run2.BootCount("")
	if len(boots2.reqs) != 1 || cached != n-1 {
		t.Fatalf("rerun booted %d times, %d of %d boots from the cache: want only the re-check booted", len(boots2.reqs), cached, n)
	}
	// The re-check ran to the end of its first window only, and every
	// boot, the re-checked one too, carries the first run's numbers.
	if got := boots2.reqs[0].StopAfter; got != 1 {
		t.Errorf("the re-check boot ran with StopAfter %d, want 1 (its first window)", got)
	}
	first := map[string][]results.VariantResult{}
	for _, b := range run1.Boots {
		first[fmt.Sprint(b.Role, b.Seed)] = b.Variants
	}
	for _, b := range run2.Boots {
		if a := first[fmt.Sprint(b.Role, b.Seed)]; len(a) == 0 || !reflect.DeepEqual(a, b.Variants) {
			t.Errorf("rerun %s seed %d (cache %s): variants %+v, the first run's %+v", b.Role, b.Seed, b.Cache, b.Variants, a)
		}
		if b.Cache == results.CacheChecked && len(b.Variants) != 2 {
			t.Errorf("the re-checked boot has %d variants, want the entry's 2", len(b.Variants))
		}
	}
	if !run2.Replayed("") {
		t.Errorf("rerun not recorded as replayed")
	}
	want := fmt.Sprintf("boots: %d boots (replayed: %d from the result cache, 1 re-check)", n, n-1)
	var txt bytes.Buffer
	if err := render.Text(&txt, verdict.AnalyzeRun(run2), render.TextOptions{}); err != nil || !strings.Contains(txt.String(), want) {
		t.Errorf("text report lacks %q (%v):\n%s", want, err, txt.String())
	}
	if r := render.BuildReport(verdict.AnalyzeRun(run2)); !r.Replayed {
		t.Errorf("report.json: replayed false")
	}
	if sq1, sq2 := run1.Sequential, run2.Sequential; sq2.Counted() != sq1.Counted() || sq2.BudgetLine() != sq1.BudgetLine() {
		t.Errorf("rerun's budget line %q, first run's %q", sq2.BudgetLine(), sq1.BudgetLine())
	}
}

// Cached boots count against the default budget: a run whose rows were
// left undecided at the budget buys no more seeds because the cache
// served some of its boots. Only an explicit --max-boots makes cache hits
// free, and then the same budget buys seeds beyond the cold run's. The
// patch slows write by 1.5 % (σ 0.8 %): 20 boots reach 10 seeds, not
// enough to call it, 16 seeds are.
func TestAdaptiveCacheHitsFreeOnlyWithExplicitBudget(t *testing.T) {
	store, err := rcache.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	cold, _ := cachedAdaptive(t, store, 1.5, 0, &log)
	coldSeeds := maxSeed(cold)
	if sq := cold.Sequential; sq == nil || sq.Counted() != len(cold.Boots) || sq.Boots != len(cold.Boots) {
		t.Fatalf("cold run: sequential %+v, %d boots", sq, len(cold.Boots))
	}

	log = syncBuffer{}
	warm, _ := cachedAdaptive(t, store, 1.5, 0, &log)
	if got := maxSeed(warm); got != coldSeeds || len(warm.Boots) != len(cold.Boots) {
		t.Errorf("default budget with a warm cache: %d boots up to seed %d, want the cold run's %d up to seed %d",
			len(warm.Boots), got, len(cold.Boots), coldSeeds)
	}
	if sq := warm.Sequential; sq.Cached == 0 || sq.NewBootsOnly || sq.Counted() != len(warm.Boots) {
		t.Errorf("default budget with a warm cache: sequential %+v, want every one of %d boots counted", sq, len(warm.Boots))
	}

	log = syncBuffer{}
	explicit, _ := cachedAdaptive(t, store, 1.5, verdict.DefaultMaxBoots, &log)
	sq := explicit.Sequential
	if got := maxSeed(explicit); got <= coldSeeds || !sq.NewBootsOnly || sq.Counted() != sq.Boots {
		t.Errorf("--max-boots %d with a warm cache: up to seed %d (cold run: %d), sequential %+v: want more seeds, cache hits free",
			verdict.DefaultMaxBoots, got, coldSeeds, sq)
	}
	if c := concludeOf(explicit, "stock"); !strings.Contains(c.Summary, fmt.Sprintf("from cache (--max-boots %d counts booted ones)", verdict.DefaultMaxBoots)) {
		t.Errorf("summary does not say the budget counted booted boots only: %q", c.Summary)
	}
}

func maxSeed(run *results.Run) uint64 {
	var n uint64
	for _, b := range run.Boots {
		n = max(n, b.Seed)
	}
	return n
}
