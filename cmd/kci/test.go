package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

func init() { commands = append(commands, newTestCmd) }

// testCmd is kci test's flags; its methods check them, build the job's
// options and show the result.
type testCmd struct {
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
}

const testLong = `The main job. For each tree the patches apply to (or --tree), build the
tree's kernel (cached) and the patched one (incremental), boot them in turn, a
fresh VM each time, in ABBA order (base, patched, patched, base, ...: a drift
of the host over the run hits both kernels alike), run the survival matrix
and the benchmark in the guest, and compare patched against base.

Under TCG's instruction clock (icount) and without --reps or --seed, kci
starts with 3 seeds per kernel and adds seeds only for variants whose rows
are still undecided, until every row is decided or the boot budget is spent.
By default the budget is 20 boots, cached or not, so a rerun on the same
kernels takes the same seeds from the result cache and says it replayed. An
explicit --max-boots N counts only boots that ran: cache hits are free, and a
rerun may add seeds (-1: no added seeds). An icount boot takes 20-45 s and two
run side by side on 2 cores, so the 20-boot budget is at most about 4-8 minutes
of booting; a run whose rows are decided by the first seeds (6 boots) takes
about 2-4 minutes in all.

A patch argument is a patch or mbox file, a directory of them (its series
file's order, else by name), a quilt series file, - (an mbox on standard
input: b4 am -o - MSGID | kci test -) or CHECKOUT:BASE..TIP, a commit range
of a git checkout, exported with git format-patch without touching the
checkout (kci test ~/linux:net-next/main..HEAD). What kci made of - and of
a range is kept in the run directory's input/.

Without a patch, --tree's kernel alone is booted --reps times and measured;
with --seed every boot gets the same guest seed, so under icount the boots
must agree exactly (kci's determinism check).`

func newTestCmd() *cobra.Command {
	c := &testCmd{}
	cmd := &cobra.Command{
		Use:   "test [PATCH|DIR|SERIES|MBOX|-|CHECKOUT:BASE..TIP]...",
		Short: "Build base and patched kernels, boot both, run survival tests and benchmarks, compare",
		Long:  testLong,
		RunE:  c.run,
	}
	c.register(cmd.Flags())
	return cmd
}

func (c *testCmd) register(f *pflag.FlagSet) {
	f.StringSliceVar(&c.trees, "tree", nil, "tree(s) from kci.yaml (default: every tree the patches apply to)")
	f.IntVar(&c.reps, "reps", 0, "boots per kernel, alternating base and patched (default: kci.yaml reps; 0 there: 3 under icount, 6 otherwise)")
	f.StringSliceVar(&c.variants, "variants", nil, "benchmark variants (default: kci.yaml bench.variants)")
	f.DurationVar(&c.window, "window", 0, "measurement window per variant (default: kci.yaml; emulated_window under TCG)")
	f.DurationVar(&c.warmup, "warmup", 0, "warm-up before the window, 0 or more (default: kci.yaml)")
	f.BoolVar(&c.noSurvival, "no-survival", false, "skip the survival matrix")
	f.BoolVar(&c.noResultCache, "no-result-cache", false, "boot every seed even when an exact boot of it is cached (also $KCI_RESULT_CACHE=off); the cache is only used under TCG icount")
	f.BoolVar(&c.profile, "profile", false, "sample CPU stacks in each variant's window: flame graphs, pprof and top symbols under profiles/ in the run directory")
	f.StringVar(&c.out, "out", "", "run directory (default ./kci-results/<time>-<id>); one holding a run is refused unless --force")
	f.BoolVar(&c.force, "force", false, forceHelp)
	f.Float64Var(&c.failOnReg, "fail-on-regression", -1, "exit 6 when a variant is significantly slower by more than PCT percent (default: off)")
	f.Float64Var(&c.minEffect, "min-effect", 0, "smallest change of interest, in percent (default 0.5): a change must be bigger to be called")
	f.Uint64Var(&c.firstSeed, "first-seed", 1, "under icount, repetition k uses guest seed first-seed+k-1 (another sample of the guest's randomness)")
	f.IntVar(&c.parallel, "parallel", 0, "boots at a time (default: under icount the host's CPUs, at most 4; otherwise 1, the only value allowed)")
	f.IntVar(&c.maxBoots, "max-boots", 0, fmt.Sprintf("boot budget for adaptive seeds under icount (0: %d boots, cached or not; N: N boots that ran, cache hits free; -1: 3 seeds per kernel, no more)", verdict.DefaultMaxBoots))
	f.Uint64Var(&c.seed, "seed", 0, "under icount, boot every repetition with this guest seed (1 or more): a determinism check, the boots must agree exactly (each runs the same plan, survival included); no row is called")
	f.StringVar(&c.shard, "shard", "", "run only repetitions i, i+N, ... of the job (i/N), for fan-out; merge with kci report --merge")
	f.BoolVar(&c.post, "post", false, "post the report to the pull request (GitHub Actions environment, GITHUB_TOKEN)")
	f.BoolVar(&c.postDry, "post-dry-run", false, "print what --post would send")
	c.vmo.register(f)
}

// check refuses nonsense before anything is built or created.
func (c *testCmd) check(cmd *cobra.Command, args []string) error {
	// Without a patch there is nothing to compare: only a named
	// tree's kernel is measured (e.g. --seed's determinism check).
	if len(args) == 0 && len(c.trees) == 0 {
		return job.Usagef("kci test: name a patch (or --tree to measure a tree's kernel alone)")
	}
	if err := checkTestFlags(cmd, testFlags{reps: c.reps, parallel: c.parallel, maxBoots: c.maxBoots, seed: c.seed, firstSeed: c.firstSeed,
		minEffect: c.minEffect, failOnReg: c.failOnReg, clock: c.vmo.clock}); err != nil {
		return err
	}
	if err := checkBenchFlags(cmd, c.window, c.warmup, c.variants); err != nil {
		return err
	}
	if _, _, err := parseShard(c.shard); err != nil {
		return err
	}
	if err := c.vmo.validate(); err != nil {
		return err
	}
	if err := checkResultCacheEnv(); err != nil {
		return err
	}
	// Posting needs a token and a target: known now, not after the run.
	if c.post || c.postDry {
		if err := checkPostEnv(postOptions{dryRun: c.postDry}); err != nil {
			return err
		}
	}
	return checkOut(c.out, c.force)
}

// parseShard reads --shard i/N (0, 0 when not given).
func parseShard(s string) (i, n int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	if _, err := fmt.Sscanf(s, "%d/%d", &i, &n); err != nil || i < 1 || i > n || fmt.Sprintf("%d/%d", i, n) != s {
		return 0, 0, job.Usagef("--shard %q: want i/N with 1 <= i <= N", s)
	}
	return i, n, nil
}

func (c *testCmd) run(cmd *cobra.Command, args []string) error {
	if err := c.check(cmd, args); err != nil {
		return err
	}
	in, err := verbPatches(cmd, args)
	if err != nil {
		return err
	}
	defer in.Close()
	args = in.paths
	b, booter, err := jobSetup(args, c.trees, &c.vmo)
	if err != nil {
		return err
	}
	o, err := c.options(cmd, args, b, booter)
	if err != nil {
		return err
	}
	if err := setAsideOut(os.Stderr, c.out, c.force); err != nil {
		return err
	}
	// --seed N boots one seed again and again to show the boots agree:
	// that check must boot, not read the cache.
	cached, err := withResultCache(booter, b.Cache.Root, c.noResultCache || c.seed != 0)
	if err != nil {
		return err
	}
	t := &job.Tester{Builder: b, Booter: cached}
	res, err := t.Test(cmd.Context(), o)
	in.keepIn(res.Dir, os.Stderr)
	return c.show(cmd.Context(), res, err)
}

// options are the job's, the flags over kci.yaml's defaults.
func (c *testCmd) options(cmd *cobra.Command, args []string, b *job.Builder, booter *boot.VMBooter) (job.TestOptions, error) {
	p := b.Project
	o := job.TestOptions{
		Patches: args, Trees: c.trees, Reps: c.reps, Variants: c.variants,
		Survival: !c.noSurvival, Profile: c.profile, Out: c.out, FailOnRegression: c.failOnReg, MinEffectPct: c.minEffect,
		Seed: c.seed, FirstSeed: c.firstSeed, Parallel: c.parallel, MaxBoots: c.maxBoots, Args: os.Args, Log: os.Stderr, Progress: progress.New(os.Stderr), Host: job.DefaultHost(),
	}
	o.Host.Checks = doctorChecks(cmd.Context(), b.Cache.Root)
	if o.Reps == 0 {
		o.Reps = p.Reps
	}
	if len(o.Variants) == 0 {
		o.Variants = p.Bench.Variants
	}
	window, warmup := c.window, warmupFlag(cmd, c.warmup)
	o.BenchFor = func(accel string) wire.BenchParams { return benchParams(p, accel, window, warmup) }
	o.Clock = string(booter.VM.Clock)
	o.RepsFor = job.RepsByAccel(string(booter.VM.Clock))
	o.Bench = o.BenchFor("kvm")
	var err error
	o.Shard, o.Shards, err = parseShard(c.shard)
	return o, err
}

// show prints the run's report and where it is, and posts it when asked:
// a failed run is posted too, reviewers should see why. Both read the
// job's analysis of the run, or, for a run that stopped before the job's
// verdict, one of its record on disk. err is the run's.
func (c *testCmd) show(ctx context.Context, res job.Result, err error) error {
	dir := res.Dir
	if dir == "" {
		return err
	}
	a := res.Analysis
	if a == nil {
		if run, lerr := results.Load(dir); lerr == nil {
			a = verdict.AnalyzeRun(run)
		}
	}
	if a != nil {
		fmt.Println()
		if terr := render.Text(os.Stdout, a, render.TextOptions{Color: term.IsTerminal(int(os.Stdout.Fd()))}); terr != nil {
			fmt.Fprintf(os.Stderr, "kci: report: %v\n", terr)
		}
	}
	fmt.Fprintf(os.Stderr, "kci: run directory %s (picture: %s)\n", dir, filepath.Join(dir, render.HTMLFile))
	if (c.post || c.postDry) && a != nil && len(a.Trees) > 0 {
		if perr := postRun(ctx, os.Stdout, os.Stderr, a, postOptions{dryRun: c.postDry}); perr != nil && err == nil {
			err = perr
		}
	}
	return err
}

// benchParams is the project's traffic, with the window for the
// accelerator: emulated runs use the shorter emulated window unless told.
func benchParams(p interface {
	BenchParams(string) wire.BenchParams
}, accel string, window, warmup time.Duration) wire.BenchParams {
	b := p.BenchParams(accel)
	if window > 0 {
		b.Window = window
	}
	if warmup >= 0 {
		b.Warmup = warmup
	}
	return b
}
