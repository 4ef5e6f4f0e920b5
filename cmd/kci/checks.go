package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/kci-dev/kci/results/verdict"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// testFlags are kci test's numeric flags, checked together.
type testFlags struct {
	reps, parallel       int
	maxBoots             int
	seed, firstSeed      uint64
	minEffect, failOnReg float64
	clock                string
}

// checkTestFlags refuses nonsense before anything is built or created. A
// value given explicitly is never taken to mean "the default": --seed 0
// and --parallel 0 are refused, not silently read as unset.
// maxReps bounds --reps: a run is meant to end the same day (an icount
// boot takes 20-45 s, two side by side; base and patched each get reps).
const maxReps = 100

func checkTestFlags(cmd *cobra.Command, f testFlags) error {
	set := cmd.Flags().Changed
	switch {
	case f.reps < 0:
		return job.Usagef("--reps %d: want 1 or more (leave it out for the default)", f.reps)
	case f.reps > maxReps:
		return job.Usagef("--reps %d: at most %d (%d boots of each kernel take about %d-%d minutes under TCG, 2 at a time); "+
			"for a longer study run several with --first-seed and join them with kci report --merge", f.reps, maxReps, maxReps, maxReps*20/60, maxReps*45/60)
	case set("reps") && f.reps == 0:
		return job.Usagef("--reps 0: want 1 or more (leave it out for kci.yaml's reps, or 3 under icount, 6 otherwise)")
	case f.parallel < 0 || (set("parallel") && f.parallel == 0):
		return job.Usagef("--parallel %d: want 1 or more (leave it out to pick by the clock)", f.parallel)
	case f.parallel > 1 && f.clock == "host":
		return job.Usagef("--parallel %d with --clock host: wall-clock boots side by side would measure each other", f.parallel)
	case set("seed") && f.seed == 0:
		return job.Usagef("--seed 0: seeds start at 1 (leave it out for seed k at repetition k)")
	case f.firstSeed == 0:
		return job.Usagef("--first-seed 0: seeds start at 1")
	case f.seed != 0 && set("first-seed"):
		return job.Usagef("--seed and --first-seed: pick one (--seed pins every boot, --first-seed starts the per-repetition seeds)")
	case f.maxBoots < -1:
		return job.Usagef("--max-boots %d: want a number of boots that ran (cache hits free), 0 for the default (%d, cached or not) or -1 for no adaptive seeds", f.maxBoots, verdict.DefaultMaxBoots)
	case f.minEffect < 0:
		return job.Usagef("--min-effect %g: want a percentage >= 0", f.minEffect)
	case f.failOnReg < 0 && (f.failOnReg != -1 || set("fail-on-regression")):
		return job.Usagef("--fail-on-regression %g: want a percentage >= 0", f.failOnReg)
	}
	return nil
}

// checkBenchFlags checks the traffic flags kci test, series and profile
// share: the window, the warm-up, and the variant names against the
// guest's list (wire.VariantNames).
func checkBenchFlags(cmd *cobra.Command, window, warmup time.Duration, variants []string) error {
	if window < 0 || (cmd.Flags().Changed("window") && window == 0) {
		return job.Usagef("--window %s: want a positive duration (leave it out for kci.yaml's)", window)
	}
	if warmup < 0 {
		return job.Usagef("--warmup %s: want 0 or more (leave it out for kci.yaml's)", warmup)
	}
	if err := wire.CheckVariants(variants); err != nil {
		return job.Usagef("--variants: %v", err)
	}
	return nil
}

// warmupFlag is --warmup when given, else -1: benchParams keeps kci.yaml's.
func warmupFlag(cmd *cobra.Command, warmup time.Duration) time.Duration {
	if !cmd.Flags().Changed("warmup") {
		return -1
	}
	return warmup
}

// forceHelp is --force's promise, said where it is asked for.
const forceHelp = "let --out name a directory holding a run: the old run is renamed to DIR.replaced-<time> (nothing is deleted, and kci says where it went)"

// checkOut refuses an --out that holds a run unless force; it creates
// nothing. The message offers --force only to the verbs that have it.
func checkOut(out string, force bool) error { return checkOutFor(out, force, true) }

func checkOutFor(out string, force, hasForce bool) error {
	if out == "" {
		return nil
	}
	err := results.HoldsRun(out)
	var hr *results.HoldsRunError
	if errors.As(err, &hr) {
		if force {
			return nil
		}
		if !hasForce {
			return job.Usagef("--out %s: %v: pick another directory", out, hr)
		}
		return job.Usagef("--out %s: %v: pick another directory, or --force to move the old run to %s.replaced-<time>", out, hr, out)
	}
	return job.Usage(err)
}

// setAsideOut, with --force, moves the run in out aside (after every
// other check, just before the job starts) and says where it went.
func setAsideOut(log io.Writer, out string, force bool) error {
	if out == "" || !force {
		return nil
	}
	var hr *results.HoldsRunError
	if !errors.As(results.HoldsRun(out), &hr) {
		return nil
	}
	to, err := results.SetAside(out, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "kci: --force: the earlier run in %s was moved to %s (nothing deleted)\n", out, to)
	return nil
}
