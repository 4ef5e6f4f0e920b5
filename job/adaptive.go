package job

import (
	"strings"

	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/results"
)

// adaptiveSeeds is the adaptive rule of a deterministic run (docs/
// decision.md): after the first look, while some rows are undecided (a
// "no change" whose 90 %-power bound is above the smallest effect), boot
// more seeds of both kernels for the variants holding them, look by
// look (verdict.LookSeeds), within --max-boots. The new seeds go through
// the normal boot path, so the result cache serves the seeds it knows.
// The run records the looks planned before any decision reads them: the
// false-alarm rate is split over all of them.
//
// The default budget counts every boot, cached or not: the plan is then
// a function of the boots' results alone, and a rerun on the same kernels
// takes the same path from the cache (a replay) instead of spending
// what the cache saved on more seeds. An explicit --max-boots (MaxBoots
// > 0) counts only the boots that ran: cache hits are free.
func (r *testRun) adaptiveSeeds() error {
	if !r.autoReps || r.o.Seed != 0 || len(r.patches) == 0 || r.o.Shards > 1 || r.o.MaxBoots < 0 {
		return nil
	}
	run, err := r.rec.Snapshot()
	if err != nil {
		return err
	}
	for _, n := range r.chosen {
		if run.ClockMode(n) != results.ClockICount {
			return nil // noisy boots: a fixed number, noisy mode's test
		}
	}
	sq := results.Sequential{Looks: len(verdict.LookSeeds), Done: 1, MaxBoots: r.o.MaxBoots, NewBootsOnly: r.o.MaxBoots > 0}
	if sq.MaxBoots == 0 {
		sq.MaxBoots = verdict.DefaultMaxBoots
	}
	count := func(run *results.Run) {
		n, cached := run.BootCount("")
		sq.Boots, sq.Cached = n-cached, cached
	}
	save := func(run *results.Run) {
		count(run)
		c := sq
		_ = r.rec.Update(func(run *results.Run) { run.Sequential = &c })
	}
	save(run)
	for look := 2; ; look++ {
		if run, err = r.rec.Snapshot(); err != nil {
			return err
		}
		count(run)
		plan, stop := verdict.PlanLook(run, look, sq.MaxBoots-sq.Counted())
		if len(plan) == 0 {
			sq.Stop = stop
			r.logf("kci: adaptive seeds: %s after %d look(s)", stop, sq.Done)
			break
		}
		sq.Done = look
		queue := r.lookQueue(plan)
		r.mu.Lock()
		r.total += len(queue)
		r.mu.Unlock()
		err := r.bootQueue(queue)
		if run, _ = r.rec.Snapshot(); run != nil {
			save(run)
		}
		if err != nil {
			return err
		}
	}
	save(run)
	return nil
}

// lookQueue turns a look's plan into boots, ABBA within each repetition
// like the first look.
func (r *testRun) lookQueue(plan []verdict.LookPlan) []bootSlot {
	var queue []bootSlot
	for _, lp := range plan {
		r.logf("kci: adaptive seeds: [%s] seeds %d-%d for %s (rows undecided)", lp.Tree, r.seed(lp.From), r.seed(lp.To), strings.Join(lp.Variants, ", "))
		r.reps = max(r.reps, lp.To)
	}
	for rep := 1; rep <= r.reps; rep++ {
		for _, lp := range plan {
			if rep < lp.From || rep > lp.To {
				continue
			}
			for _, j := range r.jobs {
				if j.tree.Name != lp.Tree {
					continue
				}
				for _, role := range bootOrder(rep, r.roles) {
					queue = append(queue, bootSlot{j: j, role: role, rep: rep, variants: lp.Variants})
				}
			}
		}
	}
	return queue
}
