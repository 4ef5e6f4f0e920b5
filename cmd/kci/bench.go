package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/suite"
	"github.com/kci-dev/kci/vm"
)

func init() { commands = append(commands, newBenchCmd) }

func newBenchCmd() *cobra.Command {
	var (
		trees          []string
		reps           int
		variants       []string
		window, warmup time.Duration
		out            string
		firstSeed      uint64
		parallel       int
		vmo            vmFlags
	)
	cmd := &cobra.Command{
		Use:   "bench [RUNDIR]...",
		Short: "Measure the trees' kernels, no patch: the designs side by side, whole-path and marginal cost per packet",
		Long: `Boot each tree's kernel (cached, no patch) --reps times with guest seeds
first-seed, first-seed+1, ..., run every benchmark variant plus the baseline
(none: the same traffic, no program attached), and print the mail's table:
one column per seed, each variant's programs and BPF total (mean ± spread),
under them the whole-path cost (every non-idle guest ns in the window per
packet), the marginal cost (whole-path minus the same boot's baseline: what
the design adds, its teardown and deferred work included), the part outside
the programs and the softirq share; then every design against every design
of another tree as ratios with 95 % intervals (delta method over the seeds).

With RUNDIR arguments nothing is booted: the table is made from those runs.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return benchFromDirs(os.Stdout, args)
			}
			if reps < 0 || parallel < 0 || window < 0 {
				return errors.New("--reps, --parallel and --window must not be negative")
			}
			if firstSeed == 0 {
				return errors.New("--first-seed 0: seeds start at 1")
			}
			b, booter, err := jobSetup(nil, trees, &vmo)
			if err != nil {
				return err
			}
			p := b.Project
			if len(trees) == 0 {
				for _, t := range p.Trees {
					trees = append(trees, t.Name)
				}
			}
			o := job.TestOptions{
				Trees: trees, Reps: reps, Variants: withBaseline(variants, p.Bench.Variants), Out: out,
				FirstSeed: firstSeed, Parallel: parallel, FailOnRegression: -1, Args: os.Args,
				Log: os.Stderr, Progress: progress.New(os.Stderr), Host: job.DefaultHost(),
			}
			o.BenchFor = func(accel string) suite.BenchParams { return benchParams(p, accel, window, warmup) }
			o.Bench = o.BenchFor("kvm")
			o.Clock = string(booter.VM.Clock)
			o.RepsFor = func(accel string) int {
				if accel == string(vm.AccelTCG) && booter.VM.Clock == vm.ClockICount {
					return verdict.DeterministicReps
				}
				return verdict.NoisyReps
			}
			start := time.Now()
			dir, err := (&job.Tester{Builder: b, Booter: booter}).Test(cmd.Context(), o)
			if dir != "" {
				if rerr := benchFromDirs(os.Stdout, []string{dir}); rerr != nil && err == nil {
					err = rerr
				}
				fmt.Fprintf(os.Stderr, "kci: bench wall time %s; run directory %s\n", time.Since(start).Round(time.Second), dir)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&trees, "tree", nil, "tree(s) from kci.yaml (default: every tree)")
	f.IntVar(&reps, "reps", 0, "boots (seeds) per tree (default: 3 under icount, 6 otherwise)")
	f.StringSliceVar(&variants, "variants", nil, "benchmark variants (default: kci.yaml bench.variants); the baseline none is always added")
	f.DurationVar(&window, "window", 0, "measurement window per variant (default: kci.yaml; emulated_window under TCG)")
	f.DurationVar(&warmup, "warmup", -1, "warm-up before the window (default: kci.yaml)")
	f.StringVar(&out, "out", "", "run directory (default ./kci-results/<time>-<id>)")
	f.Uint64Var(&firstSeed, "first-seed", 1, "guest seed of the first boot of each tree; boot k gets first-seed+k-1")
	f.IntVar(&parallel, "parallel", 0, "boots at a time (default: by the clock, as kci test)")
	vmo.register(f)
	return cmd
}

// withBaseline is the variants asked for (or the project's) with the
// baseline first: the marginal cost needs it in every boot.
func withBaseline(asked, project []string) []string {
	vs := asked
	if len(vs) == 0 {
		vs = project
	}
	if slices.Contains(vs, verdict.BaselineVariant) {
		return vs
	}
	return append([]string{verdict.BaselineVariant}, vs...)
}

// benchFromDirs prints the bench table of run directories (each
// variant's numbers come from run.json: the table can always be made
// again from the record).
func benchFromDirs(w io.Writer, dirs []string) error {
	var runs []*results.Run
	for _, d := range dirs {
		r, err := results.Load(d)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	return render.BenchText(w, verdict.BuildBench(runs...))
}
