package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kci-dev/kci/results/render"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/suite"
)

func init() { commands = append(commands, newSeriesCmd) }

func newSeriesCmd() *cobra.Command {
	var (
		trees          []string
		variants       []string
		each           bool
		noBoot         bool
		noSurvival     bool
		noResultCache  bool
		failOnWarnings bool
		minEffect      float64
		seeds          int
		window, warmup time.Duration
		out            string
		force          bool
		format         string
		own            bool
		vmo            vmFlags
	)
	cmd := &cobra.Command{
		Use:   "series SERIES... | series --own --tree NAME [SERIES...] | series RUNDIR",
		Short: "Check every patch of a series on its own: apply, build, new warnings, checkpatch, boot, survival; find the patch behind a perf change",
		Long: `Validates a series patch by patch, as netdev and bpf reviewers expect: for
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
(Welch t over per-seed values, Holm over all steps at 1 %): a patch is named
only when its own step passes. Otherwise (KVM, --clock host) the patch behind
each moved program is found by binary search over prefixes, or every prefix
is measured with --each.

--own --tree gtp checks the gtp tree's own series (then the SERIES given, e.g.
patches/rht-no-shrink.patch) on the stock kernel with the tree's fragments; a
prefix that precedes the patch defining an option the fragments ask for is
reported as not checked, not as a failure.

Writes series.json, series.txt and series.md into the run directory;
"kci series RUNDIR" renders a saved one again (--format text|markdown|json).
Exit codes: 0 ok; 1 machine error; 2 a patch does not apply; 3 a patch does not
build (or, with --fail-on-warnings, adds a warning or a checkpatch error);
4 boot failure; 5 survival cell lost.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// A run directory of kci series: render it again.
			if len(args) == 1 {
				if rep, err := results.LoadSeries(args[0]); err == nil {
					return renderSeries(os.Stdout, rep, format)
				}
			}
			if len(args) == 0 && !own {
				return job.Usagef("give a series (files, directories, mboxes, series files), or --own --tree NAME")
			}
			if own && len(trees) != 1 {
				return job.Usagef("--own checks one tree's own series: give exactly one --tree")
			}
			if format != "text" && format != "markdown" && format != "json" {
				return job.Usagef("--format %q: want text, markdown or json", format)
			}
			if minEffect < 0 {
				return job.Usagef("--min-effect %g: want a percentage >= 0", minEffect)
			}
			if cmd.Flags().Changed("seeds") && seeds < 3 {
				return job.Usagef("--seeds %d: want 3 or more (a step is tested over per-seed values)", seeds)
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
			o := job.SeriesOptions{
				Patches: args, Trees: trees, Boot: !noBoot, Survival: !noSurvival,
				Variants: variants, Each: each, MinEffectPct: minEffect, Seeds: seeds, FailOnWarnings: failOnWarnings,
				Out: out, Args: os.Args, Log: os.Stderr, Progress: progress.New(os.Stderr),
			}
			o.BenchFor = func(accel string) suite.BenchParams { return benchParams(p, accel, window, warmupFlag(cmd, warmup)) }
			o.Bench = o.BenchFor("kvm")
			b.Opts.Progress = o.Progress
			cached, err := withResultCache(booter, b.Cache.Root, noResultCache)
			if err != nil {
				return err
			}
			st := &job.SeriesTester{Project: p, Builder: b, Booter: cached}
			if own {
				extra, err := kernel.LoadSeries(args...)
				if len(args) == 0 {
					extra, err = nil, nil
				}
				if err != nil {
					return err
				}
				tr, _ := p.Tree(trees[0])
				if st.Builder, o.Loaded, err = b.OwnSeries(tr, extra); err != nil {
					return err
				}
			}
			dir, rep, err := st.Series(cmd.Context(), o)
			if rep != nil {
				fmt.Println()
				if rerr := renderSeries(os.Stdout, rep, format); rerr != nil && err == nil {
					err = rerr
				}
			}
			if dir != "" {
				fmt.Fprintf(os.Stderr, "kci: run directory %s\n", dir)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&trees, "tree", nil, "tree(s) from kci.yaml (default: every tree the whole series applies to)")
	f.StringSliceVar(&variants, "variants", nil, "benchmark variants: measure performance and find the patch behind each change (default: none)")
	f.BoolVar(&each, "each", false, "with --variants: measure every prefix (one boot each, with survival) instead of a binary search")
	f.BoolVar(&own, "own", false, "check the --tree's own series patch by patch (stock kernel + the tree's fragments + each prefix), then the SERIES given, if any")
	f.BoolVar(&noBoot, "no-boot", false, "build and check only: no boots")
	f.BoolVar(&noSurvival, "no-survival", false, "boot with sanity checks only")
	f.BoolVar(&noResultCache, "no-result-cache", false, "boot every prefix even when an exact boot of it is cached (also $KCI_RESULT_CACHE=off)")
	f.BoolVar(&failOnWarnings, "fail-on-warnings", false, "exit 3 when a patch adds a compiler/linker warning or a checkpatch error")
	f.Float64Var(&minEffect, "min-effect", 0, "smallest change of a program's cost, in percent, that is located (default 0.5)")
	f.IntVar(&seeds, "seeds", 0, "with --variants under icount: guest seeds per measured prefix, 3 or more (default 6; rows with seed spread are tested from 6 seeds, or when they move 10 %)")
	f.DurationVar(&window, "window", 0, "measurement window per variant (default: kci.yaml; emulated_window under TCG)")
	f.DurationVar(&warmup, "warmup", 0, "warm-up before the window, 0 or more (default: kci.yaml)")
	f.StringVar(&format, "format", "text", "report format on stdout: text, markdown (the PR comment) or json")
	f.StringVar(&out, "out", "", "run directory (default ./kci-results/<time>-<id>); one holding a run is refused unless --force")
	f.BoolVar(&force, "force", false, forceHelp)
	vmo.register(f)
	return cmd
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
