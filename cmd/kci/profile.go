package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/profile"
	"github.com/kci-dev/kci/wire"
)

func init() { commands = append(commands, newProfileCmd) }

// profileCmd is kci profile's flags.
type profileCmd struct {
	trees          []string
	variants       []string
	window, warmup time.Duration
	out            string
	force          bool
	topN           int
	vmo            vmFlags
}

const profileLong = `Boot the tree's kernel (and, with patches, the patched one) once, run the
benchmark variants without the survival matrix, and sample kernel stacks on the
traffic CPUs during each variant's measurement window (99 Hz, cpu-clock, a BPF
sampler in the guest). Writes under profiles/ in the run directory, per variant:
<tree>-<role>-rep1-<variant>.folded, .svg (flame graph) and .pb.gz (go tool
pprof), and with patches <tree>-<variant>-diff.{txt,md,svg}; prints the top
symbols. Without patches the tree defaults to stock.

kci profile RUNDIR re-renders the profiles of a saved run (kci test --profile
or kci profile) from their .folded files.`

func newProfileCmd() *cobra.Command {
	c := &profileCmd{}
	cmd := &cobra.Command{
		Use:   "profile [PATCH... | RUNDIR]",
		Short: "CPU profiles of the benchmark variants: flame graphs, pprof files, top symbols, patched minus base",
		Long:  profileLong,
		RunE:  c.run,
	}
	f := cmd.Flags()
	f.StringSliceVar(&c.trees, "tree", nil, "tree(s) from kci.yaml (default: every tree the patches apply to; stock without patches)")
	f.StringSliceVar(&c.variants, "variants", nil, "benchmark variants (default: kci.yaml bench.variants)")
	f.DurationVar(&c.window, "window", 0, "measurement (and sampling) window per variant (default: kci.yaml; emulated_window under TCG)")
	f.DurationVar(&c.warmup, "warmup", 0, "warm-up before the window, 0 or more (default: kci.yaml)")
	f.StringVar(&c.out, "out", "", "run directory (default ./kci-results/<time>-<id>); one holding a run is refused unless --force")
	f.BoolVar(&c.force, "force", false, forceHelp)
	f.IntVar(&c.topN, "top", job.ProfileTopN, "symbols in the printed tables")
	c.vmo.register(f)
	return cmd
}

func (c *profileCmd) run(cmd *cobra.Command, args []string) error {
	if len(args) == 1 && isRunDir(args[0]) {
		if c.topN < 1 {
			return job.Usagef("--top %d: want 1 or more", c.topN)
		}
		set, err := profile.Render(args[0], c.topN)
		if errors.Is(err, profile.ErrNoProfiles) {
			return job.Usage(err) // a run made without --profile: the wrong directory
		}
		if set != nil {
			err = errors.Join(err, c.summary(cmd.OutOrStdout(), args[0], set))
		}
		return err
	}
	if c.topN < 1 {
		return job.Usagef("--top %d: want 1 or more", c.topN)
	}
	if err := checkBenchFlags(cmd, c.window, c.warmup, c.variants); err != nil {
		return err
	}
	if err := checkOut(c.out, c.force); err != nil {
		return err
	}
	in, err := verbPatches(cmd, args)
	if err != nil {
		return err
	}
	defer in.Close()
	args = in.paths
	// The patches are there, the trees in kci.yaml, the VM flags sane.
	b, booter, err := jobSetup(args, c.trees, &c.vmo)
	if err != nil {
		return err
	}
	if err := setAsideOut(os.Stderr, c.out, c.force); err != nil {
		return err
	}
	res, err := (&job.Tester{Builder: b, Booter: booter}).Test(cmd.Context(), c.options(cmd, args, b))
	in.keepIn(res.Dir, os.Stderr)
	dir := res.Dir
	if dir == "" {
		return err
	}
	if set, lerr := profile.LoadSet(dir); lerr == nil {
		fmt.Fprintln(cmd.OutOrStdout())
		if werr := c.summary(cmd.OutOrStdout(), dir, set); err == nil {
			err = werr
		}
	} else if err == nil {
		err = fmt.Errorf("profile: no profiles written: %w", lerr)
	}
	fmt.Fprintf(os.Stderr, "kci: run directory %s\n", dir)
	return err
}

// options: one boot per kernel, profiled, no survival matrix.
func (c *profileCmd) options(cmd *cobra.Command, args []string, b *job.Builder) job.TestOptions {
	p := b.Project
	o := job.TestOptions{
		Patches: args, Trees: c.trees, Reps: 1, Variants: c.variants,
		Profile: true, Out: c.out, FailOnRegression: -1,
		Args: os.Args, Log: os.Stderr, Progress: progress.New(os.Stderr), Host: job.DefaultHost(),
	}
	if len(args) == 0 && len(o.Trees) == 0 {
		o.Trees = []string{"stock"}
	}
	if len(o.Variants) == 0 {
		o.Variants = p.Bench.Variants
	}
	window, warmup := c.window, warmupFlag(cmd, c.warmup)
	o.BenchFor = func(accel string) wire.BenchParams { return benchParams(p, accel, window, warmup) }
	o.Bench = o.BenchFor("kvm")
	return o
}

func (c *profileCmd) summary(w io.Writer, dir string, set *profile.Set) error {
	if err := profile.WriteSummary(w, filepath.Join(dir, profile.Dir), set, profile.SummaryOptions{TopN: c.topN}); err != nil {
		return fmt.Errorf("profile: summary: %w", err)
	}
	return nil
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
