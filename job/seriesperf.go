package job

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// spreadLine is the spreads for the log, by key.
func spreadLine(spread map[string]float64) string {
	keys := make([]string, 0, len(spread))
	for k := range spread {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.2f %%", k, spread[k])
	}
	return strings.Join(parts, ", ")
}

// seriesSeeds are the guest seeds every measured prefix of a
// deterministic series is booted with: each program's step is then a
// test over per-seed values (verdict.LocateSeries). Six, as a code change
// moves a program with seed spread (gtp_write's rhash map, σ ~0.6 %) like
// a fresh seed draw: a 4 % step of a σ 0.8 % program is found in ~95 % of
// simulated series at 6 seeds, 7 % at 3 (TestLocateSeriesThroughTheTest).
// Exact programs (the others, on the clients' grid) need only 3.
const seriesSeeds = 6

// measureAll boots, through the engine's queue, every prefix of
// prefixes at every logical seed of reps that its record does not hold a
// measurement of yet, in prefix then seed order, with plan(k, rep). The
// numbers are then in the record (r.out.Costs).
func (r *seriesRun) measureAll(prefixes, reps []int, plan func(k, rep int) wire.Plan) error {
	var queue []queued
	for _, k := range prefixes {
		for _, rep := range reps {
			if _, ok := r.out.Measurement(k, rep); ok {
				continue
			}
			queue = append(queue, queued{kernel: fmt.Sprint(k), what: fmt.Sprintf("%s prefix %d seed %d", r.tr.Name, k, rep),
				boot: func(context.Context) error { _, err := r.benchBoot(k, plan(k, rep), rep); return err }})
		}
	}
	return r.runQueue(queue)
}

// benchPlan is a bench boot's plan: the variants alone.
func (r *seriesRun) benchPlan(int, int) wire.Plan { return wire.Plan{Variants: r.o.Variants} }

// locateSeeded measures every measured prefix at logical seeds
// 1..r.nSeeds() (seed 1 and the tree's spread seeds are there already)
// and locates each program's changes from the record through the test
// (verdict.SeriesCulprits).
func (r *seriesRun) locateSeeded(prefixes []int, minPct float64) (int, error) {
	reps := make([]int, r.nSeeds())
	for i := range reps {
		reps[i] = i + 1
	}
	if err := r.measureAll(prefixes, reps, r.benchPlan); err != nil {
		return 0, err
	}
	r.out.Seeds, r.out.MinEffectPct = r.nSeeds(), minPct
	var family int
	r.out.Culprits, family = verdict.SeriesCulprits(r.out)
	return family, nil
}

// seededNote is a deterministic series' perf note: how its changes were
// tested, and that none was found when none was.
func seededNote(first uint64, seeds, family, boots int, minPct float64, culprits int) string {
	s := fmt.Sprintf("every prefix measured over seeds %d–%d; each step and the whole series tested (Welch t over per-seed values, Holm over %d tests at %.0f %% family-wise, >= %.1f %% and %g instruction-time ns), %d bench boot(s)",
		first, first+uint64(seeds)-1, family, verdict.DetAlpha*100, minPct, verdict.ResolutionNs, boots)
	if culprits == 0 {
		s = "no program changed at the family's level: " + s
	}
	return s
}

// locatePerf measures the prefixes that built and names the patches
// behind each program's change: under icount every prefix over
// seriesSeeds seeds through the test (locateSeeded); otherwise each
// program's step against its spread over seeds on the tree's kernel,
// bisecting or (--each) every prefix.
func (r *seriesRun) locatePerf() error {
	prefixes := []int{0} // measurable: the tree, then every prefix that built
	for k := 1; k <= len(r.patches); k++ {
		if r.built[k] != nil {
			prefixes = append(prefixes, k)
		}
	}
	if len(prefixes) < 2 {
		r.out.PerfNote = "no prefix built: nothing to measure"
		return nil
	}
	minPct := r.o.MinEffectPct
	if minPct <= 0 {
		minPct = results.DefaultMinEffectPct
	}
	spread, err := r.treeSpread()
	thr := func(key string) float64 { return math.Max(minPct, spread[key]) }
	var steps []verdict.PerfStep
	seeded, family := err == nil && r.rep.Clock == results.ClockICount, 0
	switch {
	case seeded:
		family, err = r.locateSeeded(prefixes, minPct)
	case err == nil && r.o.Each:
		r.out.Locate, r.out.MinEffectPct = results.LocateEach, minPct
		if err = r.measureAll(prefixes, []int{1}, r.benchPlan); err == nil {
			steps = verdict.AdjacentSteps(prefixes, r.out.CostsAt(1), thr)
		}
	case err == nil:
		r.out.Locate, r.out.MinEffectPct = results.LocateBisect, minPct
		steps, err = verdict.LocatePerf(prefixes, r.measure, thr)
	}
	if err != nil {
		r.out.PerfNote = "stopped: " + lines.First(err.Error())
		var ee *ExitError
		if errors.As(err, &ee) || r.ctx.Err() != nil {
			return err
		}
	}
	r.noteSteps(steps, seeded, family, minPct)
	return nil
}

// nSeeds is how many guest seeds every measured prefix gets under icount.
func (r *seriesRun) nSeeds() int {
	if r.o.Seeds > 0 {
		return r.o.Seeds
	}
	return seriesSeeds
}

// treeSpread measures the tree's kernel over verdict.SpreadSeeds: a program
// moves only beyond what a seed change alone does to it there, as any
// code change perturbs the guest like a seed change. Seed 1's run is
// prefix 0, paired with the others.
func (r *seriesRun) treeSpread() (map[string]float64, error) {
	// The extra seeds run the plan seed 1 had: with --each and
	// validation boots, survival ran before the bench.
	seedPlan := wire.Plan{Variants: r.o.Variants}
	if _, ok := r.out.Measurement(0, 1); ok {
		seedPlan = r.survival
	}
	err := r.measureAll([]int{0}, verdict.SpreadSeeds, func(_, rep int) wire.Plan {
		if rep == 1 {
			return r.benchPlan(0, rep)
		}
		return seedPlan
	})
	var runs []map[string]float64
	for _, rep := range verdict.SpreadSeeds {
		if m, ok := r.out.Costs(0, rep); ok {
			runs = append(runs, m)
		}
	}
	spread := verdict.SpreadOverSeeds(runs)
	if err == nil {
		r.logf("kci: [%s] spread of the tree kernel over seeds %d–%d: %s", r.tr.Name, r.seeds.guest(1), r.seeds.guest(len(verdict.SpreadSeeds)), spreadLine(spread))
	}
	return spread, err
}

// benchBoot boots prefix k (0: the tree's kernel) with plan p at logical
// seed rep, and returns its per-program costs.
func (r *seriesRun) benchBoot(k int, p wire.Plan, rep int) (map[string]float64, error) {
	label := "base bench"
	if k > 0 {
		label = fmt.Sprintf("patch %d of %d bench", k, len(r.patches))
	}
	if rep != 1 {
		label += fmt.Sprintf(" seed %d", rep)
	}
	pb, res, err := r.boot(k, label, p, rep)
	r.benchRuns++
	if err != nil {
		return nil, err
	}
	if pb.Result != results.StepOK || res == nil {
		return nil, fmt.Errorf("%s: %s", label, pb.Error)
	}
	return results.ProgCosts(results.VariantsOf(res.Variants)), nil
}

// measure is prefix k's seed-1 costs: its record's, or booted once.
func (r *seriesRun) measure(k int) (map[string]float64, error) {
	if m, ok := r.out.Costs(k, 1); ok {
		return m, nil
	}
	return r.benchBoot(k, wire.Plan{Variants: r.o.Variants}, 1)
}

// noteSteps turns the noisy rule's steps into culprits, puts each
// measured prefix's costs in its row (against the previous measured
// prefix, 0: the tree's kernel) and says how perf was located.
func (r *seriesRun) noteSteps(steps []verdict.PerfStep, seeded bool, family int, minPct float64) {
	out, unit := r.out, verdict.NoisyUnit(r.rep.Clock)
	out.Culprits = append(out.Culprits, verdict.StepCulprits(out, steps, unit)...)
	perf, prev := out.CostsAt(1), 0
	for i := range out.Patches {
		k := out.Patches[i].Index
		if m, ok := perf[k]; ok {
			out.Patches[i].Perf = verdict.PrefixDeltas(perf[prev], m, prev)
			prev = k
		}
	}
	out.PerfBoots = r.benchRuns
	if out.PerfNote == "" && seeded {
		out.PerfNote = seededNote(r.seeds.guest(1), r.nSeeds(), family, r.benchRuns, minPct, len(out.Culprits))
	}
	if out.PerfNote != "" {
		return
	}
	how := "binary search over prefixes"
	if r.o.Each {
		how = "every prefix measured"
	}
	out.PerfNote = fmt.Sprintf("%s, threshold max(%.1f %%, each program's spread over seeds 1–%d of the tree kernel), %d bench boot(s) (%s)",
		how, minPct, len(verdict.SpreadSeeds), len(perf)+len(verdict.SpreadSeeds)-1, unit)
	if len(steps) == 0 {
		out.PerfNote = "the series moves no program beyond the threshold: " + out.PerfNote
	}
}
