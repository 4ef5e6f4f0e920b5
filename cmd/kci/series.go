package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

func init() { commands = append(commands, newSeriesCmd) }

// seriesCmd is kci series' flags; its methods check them, build the
// job's options and show the result.
type seriesCmd struct {
	trees          []string
	variants       []string
	each           bool
	noBoot         bool
	noSurvival     bool
	noResultCache  bool
	failOnWarnings bool
	minEffect      float64
	seeds          int
	firstSeed      uint64
	window, warmup time.Duration
	out            string
	force          bool
	format         string
	own            bool
	vmo            vmFlags
}

const seriesLong = `Validates a series patch by patch, as netdev and bpf reviewers expect: for
every prefix 1..N on each tree the whole series applies to (or --tree), apply it,
build it incrementally in the tree's kept build directory (only what the patch
touches recompiles), report compiler and linker warnings the previous prefix did
not have (file:line; line shifts do not count), run the tree's own
scripts/checkpatch.pl on the patch, then boot the kernel with sanity and
survival tests. A patch that breaks the build and a later one that repairs it
is reported as a bisectability failure; later patches are still checked.

With --variants the benchmark runs too. Under TCG's instruction clock every
prefix and the tree's kernel are booted with guest seeds 1..--seeds (6), and
each program's step from prefix to prefix is tested as kci test tests a row
(Welch t over per-seed values; Holm's correction for testing many steps at
once keeps the chance of any false alarm in the run at 1 %): a patch is named
only when its own step passes. Otherwise (KVM, --clock host) the patch behind
each moved program is found by binary search over prefixes, or every prefix
is measured with --each.

--own --tree gtp checks the gtp tree's own series (then the SERIES given, e.g.
patches/rht-no-shrink.patch) on the stock kernel with the tree's fragments; a
prefix that precedes the patch defining an option the fragments ask for is
reported as not checked, not as a failure.

Writes series.json (every boot recorded, with its prefix and guest seed),
series.txt and series.md into the run directory; "kci series RUNDIR"
renders a saved one again (--format text|markdown|json), its culprits
decided again from its boot records.
A patch that adds a compiler warning or a checkpatch error is reported: the
run exits 0 and kci post's check is neutral. With --fail-on-warnings it exits
3 as a build failure does, and the check fails; series.json records the
choice, so kci post of a saved run agrees with its exit.`

func newSeriesCmd() *cobra.Command {
	c := &seriesCmd{}
	cmd := &cobra.Command{
		Use:   "series SERIES... | series --own --tree NAME [SERIES...] | series RUNDIR",
		Short: "Check every patch of a series on its own: apply, build, new warnings, checkpatch, boot, survival; find the patch behind a perf change",
		Long:  seriesLong,
		Args:  cobra.ArbitraryArgs,
		RunE:  c.run,
	}
	c.register(cmd.Flags())
	return cmd
}

func (c *seriesCmd) register(f *pflag.FlagSet) {
	f.StringSliceVar(&c.trees, "tree", nil, "tree(s) from kci.yaml (default: every tree the whole series applies to)")
	f.StringSliceVar(&c.variants, "variants", nil, "benchmark variants: measure performance and find the patch behind each change (default: none)")
	f.BoolVar(&c.each, "each", false, "with --variants: measure every prefix (one boot each, with survival) instead of a binary search")
	f.BoolVar(&c.own, "own", false, "check the --tree's own series patch by patch (stock kernel + the tree's fragments + each prefix), then the SERIES given, if any")
	f.BoolVar(&c.noBoot, "no-boot", false, "build and check only: no boots")
	f.BoolVar(&c.noSurvival, "no-survival", false, "boot with sanity checks only")
	f.BoolVar(&c.noResultCache, "no-result-cache", false, "boot every prefix even when an exact boot of it is cached (also $KCI_RESULT_CACHE=off)")
	f.BoolVar(&c.failOnWarnings, "fail-on-warnings", false, "exit 3 when a patch adds a compiler/linker warning or a checkpatch error")
	f.Float64Var(&c.minEffect, "min-effect", 0, "smallest change of a program's cost, in percent, that is located (default 0.5)")
	f.IntVar(&c.seeds, "seeds", 0, "with --variants under icount: guest seeds per measured prefix, 3 or more (default 6; rows with seed spread are tested from 6 seeds, or when they move 10 %)")
	f.Uint64Var(&c.firstSeed, "first-seed", 1, "with --variants under icount: logical seed k boots with guest seed first-seed+k-1, another sample of the guest's randomness than 1, 2, 3...")
	f.DurationVar(&c.window, "window", 0, "measurement window per variant (default: kci.yaml; emulated_window under TCG)")
	f.DurationVar(&c.warmup, "warmup", 0, "warm-up before the window, 0 or more (default: kci.yaml)")
	f.StringVar(&c.format, "format", "text", "report format on stdout: text, markdown (the PR comment) or json")
	f.StringVar(&c.out, "out", "", "run directory (default ./kci-results/<time>-<id>); one holding a run is refused unless --force")
	f.BoolVar(&c.force, "force", false, forceHelp)
	c.vmo.register(f)
}

// check refuses nonsense before anything is built or created.
func (c *seriesCmd) check(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0 && !c.own:
		return job.Usagef("give a series (files, directories, mboxes, series files), or --own --tree NAME")
	case c.own && len(c.trees) != 1:
		return job.Usagef("--own checks one tree's own series: give exactly one --tree")
	case c.format != "text" && c.format != "markdown" && c.format != "json":
		return job.Usagef("--format %q: want text, markdown or json", c.format)
	case c.minEffect < 0:
		return job.Usagef("--min-effect %g: want a percentage >= 0", c.minEffect)
	case c.firstSeed == 0:
		return job.Usagef("--first-seed 0: seeds start at 1")
	case cmd.Flags().Changed("seeds") && c.seeds < 3:
		return job.Usagef("--seeds %d: want 3 or more (a step is tested over per-seed values)", c.seeds)
	case c.each && len(c.variants) == 0:
		return job.Usagef("--each measures every prefix: give --variants too")
	case c.noBoot && (len(c.variants) > 0 || c.noSurvival):
		return job.Usagef("--no-boot: nothing is booted, so --variants and --no-survival have nothing to do")
	}
	if err := checkBenchFlags(cmd, c.window, c.warmup, c.variants); err != nil {
		return err
	}
	if err := c.vmo.validate(); err != nil {
		return err
	}
	if err := checkResultCacheEnv(); err != nil {
		return err
	}
	return checkOut(c.out, c.force)
}

func (c *seriesCmd) run(cmd *cobra.Command, args []string) error {
	// A run directory of kci series: render it again.
	if len(args) == 1 {
		if rep, err := loadSeries(args[0]); err == nil {
			return renderSeries(os.Stdout, rep, c.format)
		}
	}
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
	st := &job.SeriesTester{Project: b.Project, Builder: b}
	var own []kernel.Patch
	if c.own {
		if st.Builder, own, err = c.ownSeries(b, args); err != nil {
			return err
		}
	}
	if err := setAsideOut(os.Stderr, c.out, c.force); err != nil {
		return err
	}
	o := c.options(cmd, args, b)
	o.Loaded = own
	if st.Booter, err = withResultCache(booter, b.Cache.Root, c.noResultCache); err != nil {
		return err
	}
	dir, rep, err := st.Series(cmd.Context(), o)
	if rep != nil {
		fmt.Println()
		if rerr := renderSeries(os.Stdout, rep, c.format); rerr != nil && err == nil {
			err = rerr
		}
	}
	if dir != "" {
		in.keepIn(dir, os.Stderr)
		fmt.Fprintf(os.Stderr, "kci: run directory %s\n", dir)
	}
	return err
}

// options are the job's, the flags over kci.yaml's defaults.
func (c *seriesCmd) options(cmd *cobra.Command, args []string, b *job.Builder) job.SeriesOptions {
	o := job.SeriesOptions{
		Patches: args, Trees: c.trees, Boot: !c.noBoot, Survival: !c.noSurvival,
		Variants: c.variants, Each: c.each, MinEffectPct: c.minEffect, Seeds: c.seeds, FirstSeed: c.firstSeed, FailOnWarnings: c.failOnWarnings,
		Out: c.out, Args: os.Args, Log: os.Stderr, Progress: progress.New(os.Stderr),
	}
	p, window, warmup := b.Project, c.window, warmupFlag(cmd, c.warmup)
	o.BenchFor = func(accel string) wire.BenchParams { return benchParams(p, accel, window, warmup) }
	o.Bench = o.BenchFor("kvm")
	b.Opts.Progress = o.Progress
	return o
}

// ownSeries is --own: the tree's own series on the stock kernel, then
// the series given, if any.
func (c *seriesCmd) ownSeries(b *job.Builder, args []string) (job.SeriesBuilder, []kernel.Patch, error) {
	var extra []kernel.Patch
	if len(args) > 0 {
		var err error
		if extra, err = kernel.LoadSeries(args...); err != nil {
			return nil, nil, job.PatchFile(err) // as kci series without --own
		}
	}
	trees, err := job.PickTrees(b.Project, c.trees)
	if err != nil {
		return nil, nil, err
	}
	return b.OwnSeries(trees[0], extra)
}

// loadSeries reads a saved series run and decides its culprits again
// from its boot records (verdict.RedecideSeries), as kci report decides
// a test's rows again from run.json: a saved series says what this kci
// decides of its boots.
func loadSeries(dir string) (*results.Series, error) {
	s, err := results.LoadSeries(dir)
	if err != nil {
		return nil, err
	}
	verdict.RedecideSeries(s)
	return s, nil
}

func renderSeries(w io.Writer, rep *results.Series, format string) error {
	switch format {
	case "markdown", "md":
		_, err := io.WriteString(w, render.SeriesMarkdown(rep))
		return err
	case "json":
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(rep)
	case "text", "":
		return render.SeriesText(w, rep)
	}
	return fmt.Errorf("--format %q: want text, markdown or json", format)
}
