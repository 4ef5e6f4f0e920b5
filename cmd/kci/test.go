package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/suite"
)

func init() { commands = append(commands, newTestCmd) }

func newTestCmd() *cobra.Command {
	var (
		trees          []string
		reps           int
		variants       []string
		window, warmup time.Duration
		noSurvival     bool
		noResultCache  bool
		profile        bool
		out            string
		failOnReg      float64
		minEffect      float64
		shard          string
		seed           uint64
		firstSeed      uint64
		parallel       int
		maxBoots       int
		force          bool
		post           bool
		postDry        bool
		vmo            vmFlags
	)
	cmd := &cobra.Command{
		Use:   "test [PATCH|DIR|SERIES|MBOX]...",
		Short: "Build base and patched kernels, boot both, run survival tests and benchmarks, compare",
		Long: `The main job. For each tree the patches apply to (or --tree), build the
tree's kernel (cached) and the patched one (incremental), boot them alternately
(ABBA: base, patched, patched, base, ...) a fresh VM each repetition, run the survival matrix
and the benchmark in the guest, and compare patched against base.

Exit codes: 0 ok; 1 internal/machine error; 2 patch does not apply; 3 config or
build error; 4 boot/crash; 5 behaviour regression (survival, or a variant invalid on patched only); 6 performance regression
(with --fail-on-regression); 64 usage error (a flag, a kci.yaml value, a variant,
--out holding a run: refused before any build); 130 interrupted (results kept, marked incomplete).

Without a patch, --tree's kernel alone is booted --reps times and measured;
with --seed every boot gets the same guest seed, so under icount the boots
must agree exactly (kci's determinism check).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Without a patch there is nothing to compare: only a named
			// tree's kernel is measured (e.g. --seed's determinism check).
			if len(args) == 0 && len(trees) == 0 {
				return errors.New("kci test: name a patch (or --tree to measure a tree's kernel alone)")
			}
			// Nonsense is refused before anything is built or created.
			if err := checkTestFlags(cmd, testFlags{reps: reps, parallel: parallel, maxBoots: maxBoots, seed: seed, firstSeed: firstSeed,
				minEffect: minEffect, failOnReg: failOnReg, clock: vmo.clock}); err != nil {
				return err
			}
			if err := checkBenchFlags(cmd, window, warmup, variants); err != nil {
				return err
			}
			if err := checkOut(out, force); err != nil {
				return err
			}
			b, booter, err := jobSetup(args, trees, &vmo)
			if err != nil {
				return err
			}
			p := b.Project
			if err := setAsideOut(os.Stderr, out, force); err != nil {
				return err
			}
			o := job.TestOptions{
				Patches: args, Trees: trees, Reps: reps, Variants: variants,
				Survival: !noSurvival, Profile: profile, Out: out, FailOnRegression: failOnReg, MinEffectPct: minEffect,
				Seed: seed, FirstSeed: firstSeed, Parallel: parallel, MaxBoots: maxBoots, Args: os.Args, Log: os.Stderr, Progress: progress.New(os.Stderr), Host: job.DefaultHost(),
			}
			o.Host.Checks = doctorChecks(cmd.Context(), b.Cache.Root)
			if o.Reps == 0 {
				o.Reps = p.Reps
			}
			if len(o.Variants) == 0 {
				o.Variants = p.Bench.Variants
			}
			o.BenchFor = func(accel string) suite.BenchParams { return benchParams(p, accel, window, warmupFlag(cmd, warmup)) }
			o.Clock = string(booter.VM.Clock)
			o.RepsFor = job.RepsByAccel(string(booter.VM.Clock))
			o.Bench = o.BenchFor("kvm")
			if shard != "" {
				if _, err := fmt.Sscanf(shard, "%d/%d", &o.Shard, &o.Shards); err != nil || o.Shard < 1 || o.Shard > o.Shards {
					return fmt.Errorf("--shard %q: want i/N with 1 <= i <= N", shard)
				}
			}
			// --seed N boots one seed again and again to show the boots agree:
			// that check must boot, not read the cache.
			cached, err := withResultCache(booter, b.Cache.Root, noResultCache || seed != 0)
			if err != nil {
				return err
			}
			t := &job.Tester{Builder: b, Booter: cached}
			dir, err := t.Test(cmd.Context(), o)
			if dir != "" {
				run, lerr := results.Load(dir)
				if lerr == nil {
					fmt.Println()
					if terr := render.Text(os.Stdout, run, render.TextOptions{Color: term.IsTerminal(int(os.Stdout.Fd()))}); terr != nil {
						fmt.Fprintf(os.Stderr, "kci: report: %v\n", terr)
					}
				}
				fmt.Fprintf(os.Stderr, "kci: run directory %s (picture: %s)\n", dir, filepath.Join(dir, render.HTMLFile))
				// A failed run is posted too: reviewers should see why.
				if (post || postDry) && lerr == nil && len(run.TreeNames()) > 0 {
					if perr := postRun(cmd.Context(), os.Stdout, os.Stderr, run, postOptions{dryRun: postDry}); perr != nil && err == nil {
						err = perr
					}
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&trees, "tree", nil, "tree(s) from kci.yaml (default: every tree the patches apply to)")
	f.IntVar(&reps, "reps", 0, "boots per kernel, alternating base and patched (default: kci.yaml reps; 0 there: 3 under icount, 6 otherwise)")
	f.StringSliceVar(&variants, "variants", nil, "benchmark variants (default: kci.yaml bench.variants)")
	f.DurationVar(&window, "window", 0, "measurement window per variant (default: kci.yaml; emulated_window under TCG)")
	f.DurationVar(&warmup, "warmup", 0, "warm-up before the window, 0 or more (default: kci.yaml)")
	f.BoolVar(&noSurvival, "no-survival", false, "skip the survival matrix")
	f.BoolVar(&noResultCache, "no-result-cache", false, "boot every seed even when an exact boot of it is cached (also $KCI_RESULT_CACHE=off); the cache is only used under TCG icount")
	f.BoolVar(&profile, "profile", false, "sample CPU stacks in each variant's window: flame graphs, pprof and top symbols under profiles/ in the run directory")
	f.StringVar(&out, "out", "", "run directory (default ./kci-results/<time>-<id>); one holding a run is refused unless --force")
	f.BoolVar(&force, "force", false, forceHelp)
	f.Float64Var(&failOnReg, "fail-on-regression", -1, "exit 6 when a variant is significantly slower by more than this many percent")
	f.Float64Var(&minEffect, "min-effect", 0, "smallest effect of interest in percent (default 0.5): under icount the threshold a change must clear besides the observed spread; otherwise a significant change whose interval stays within it is reported as below it")
	f.Uint64Var(&firstSeed, "first-seed", 1, "under icount, repetition k boots base and patched with guest seed first-seed+k-1: another sample of the guest's randomness than the default 1, 2, 3...")
	f.IntVar(&parallel, "parallel", 0, "boots at a time, 1 or more (default: the host's CPUs, at most 4, under TCG's instruction clock, whose numbers no neighbour changes; 1 otherwise, and more is refused there)")
	f.IntVar(&maxBoots, "max-boots", 0, fmt.Sprintf("under icount without --reps or --seed, add seeds (base and patched) for variants whose rows are undecided until each is decided or the run has booted this many (cache hits not counted; 0: %d, about 5 min warm on 2 cores; -1: off, 3 seeds per kernel)", verdict.DefaultMaxBoots))
	f.Uint64Var(&seed, "seed", 0, "under icount, boot every repetition with this guest seed (1 or more) instead of seed k for repetition k: repeated boots of one kernel must then agree exactly (a determinism check; with a patch it stays one: one seed cannot compare kernels whose write programs move like a seed change, so no row is called)")
	f.StringVar(&shard, "shard", "", "run only repetitions i, i+N, ... of the job (i/N), for fan-out; merge with kci report --merge")
	f.BoolVar(&post, "post", false, "post the report to the pull request (GitHub Actions environment, GITHUB_TOKEN)")
	f.BoolVar(&postDry, "post-dry-run", false, "print what --post would send")
	vmo.register(f)
	return cmd
}

// benchParams is the project's traffic, with the window for the
// accelerator: emulated runs use the shorter emulated window unless told.
func benchParams(p interface {
	BenchParams(string) suite.BenchParams
}, accel string, window, warmup time.Duration) suite.BenchParams {
	b := p.BenchParams(accel)
	if window > 0 {
		b.Window = window
	}
	if warmup >= 0 {
		b.Warmup = warmup
	}
	return b
}
