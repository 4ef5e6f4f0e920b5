package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/profile"
	"github.com/kci-dev/kci/suite"
)

func init() { commands = append(commands, newProfileCmd) }

func newProfileCmd() *cobra.Command {
	var (
		trees          []string
		variants       []string
		window, warmup time.Duration
		out            string
		force          bool
		topN           int
		vmo            vmFlags
	)
	cmd := &cobra.Command{
		Use:   "profile [PATCH... | RUNDIR]",
		Short: "CPU profiles of the benchmark variants: flame graphs, pprof files, top symbols, patched minus base",
		Long: `Boot the tree's kernel (and, with patches, the patched one) once, run the
benchmark variants without the survival matrix, and sample kernel stacks on the
traffic CPUs during each variant's measurement window (99 Hz, cpu-clock, a BPF
sampler in the guest). Writes under profiles/ in the run directory, per variant:
<tree>-<role>-rep1-<variant>.folded, .svg (flame graph) and .pb.gz (go tool
pprof), and with patches <tree>-<variant>-diff.{txt,md,svg}; prints the top
symbols. Without patches the tree defaults to stock.

kci profile RUNDIR re-renders the profiles of a saved run (kci test --profile
or kci profile) from their .folded files.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && isRunDir(args[0]) {
				set, err := profile.Render(args[0], topN)
				if set != nil {
					if werr := profile.WriteSummary(cmd.OutOrStdout(), filepath.Join(args[0], profile.Dir), set, profile.SummaryOptions{TopN: topN}); werr != nil && err == nil {
						err = fmt.Errorf("profile: summary: %w", werr)
					}
				}
				return err
			}
			if err := vmo.validate(); err != nil {
				return err
			}
			if err := checkBenchFlags(cmd, window, warmup, variants); err != nil {
				return err
			}
			if err := checkOut(out, force); err != nil {
				return err
			}
			b, _, err := newBuilder("stock", 0)
			if err != nil {
				return err
			}
			p := b.Project
			if err := setAsideOut(os.Stderr, out, force); err != nil {
				return err
			}
			booter, err := vmo.booter(b.Cache.Root, p)
			if err != nil {
				return err
			}
			o := job.TestOptions{
				Patches: args, Trees: trees, Reps: 1, Variants: variants,
				Profile: true, Out: out, FailOnRegression: -1,
				Args: os.Args, Log: os.Stderr, Progress: progress.New(os.Stderr), Host: job.DefaultHost(),
			}
			if len(args) == 0 && len(o.Trees) == 0 {
				o.Trees = []string{"stock"}
			}
			if len(o.Variants) == 0 {
				o.Variants = p.Bench.Variants
			}
			o.BenchFor = func(accel string) suite.BenchParams { return benchParams(p, accel, window, warmupFlag(cmd, warmup)) }
			o.Bench = o.BenchFor("kvm")
			dir, err := (&job.Tester{Builder: b, Booter: booter}).Test(cmd.Context(), o)
			if dir != "" {
				if set, lerr := profile.LoadSet(dir); lerr == nil {
					fmt.Fprintln(cmd.OutOrStdout())
					if werr := profile.WriteSummary(cmd.OutOrStdout(), filepath.Join(dir, profile.Dir), set, profile.SummaryOptions{TopN: topN}); werr != nil && err == nil {
						err = fmt.Errorf("profile: summary: %w", werr)
					}
				} else if err == nil {
					err = fmt.Errorf("profile: no profiles written: %w", lerr)
				}
				fmt.Fprintf(os.Stderr, "kci: run directory %s\n", dir)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&trees, "tree", nil, "tree(s) from kci.yaml (default: every tree the patches apply to; stock without patches)")
	f.StringSliceVar(&variants, "variants", nil, "benchmark variants (default: kci.yaml bench.variants)")
	f.DurationVar(&window, "window", 0, "measurement (and sampling) window per variant (default: kci.yaml; emulated_window under TCG)")
	f.DurationVar(&warmup, "warmup", 0, "warm-up before the window, 0 or more (default: kci.yaml)")
	f.StringVar(&out, "out", "", "run directory (default ./kci-results/<time>-<id>); one holding a run is refused unless --force")
	f.BoolVar(&force, "force", false, forceHelp)
	f.IntVar(&topN, "top", job.ProfileTopN, "symbols in the printed tables")
	vmo.register(f)
	return cmd
}

// isRunDir tells a saved run directory from a patch directory.
func isRunDir(path string) bool {
	for _, f := range []string{"run.json", profile.Dir} {
		if _, err := os.Stat(filepath.Join(path, f)); err == nil {
			return true
		} else if !errors.Is(err, os.ErrNotExist) {
			return false
		}
	}
	return false
}
