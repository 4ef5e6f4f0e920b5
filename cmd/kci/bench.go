package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/results/benchtab"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

func init() { commands = append(commands, newBenchCmd) }

// benchCmd is kci bench's flags.
type benchCmd struct {
	trees          []string
	reps           int
	variants       []string
	window, warmup time.Duration
	out            string
	firstSeed      uint64
	parallel       int
	noResultCache  bool
	vmo            vmFlags
	hw             hardwareFlags
}

const benchLong = `Boot each tree's kernel (cached, no patch) --reps times with guest seeds
first-seed, first-seed+1, ..., run every benchmark variant plus the baseline
(none: the same traffic, no program attached), and print a table of the
designs' costs, the kind a patch's cover letter quotes: one column per seed,
each variant's programs and BPF total (mean ± spread), under them the
whole-path cost (every non-idle guest ns in the window per packet), the
marginal cost (whole-path minus the same boot's baseline: what the design
adds, its teardown and deferred work included) and the part outside the
programs; then every design against every design of another tree as ratios
with 95 % intervals (delta method over the seeds). Under TCG icount a seed's
boot is exact: it is stored in the result cache and a later bench of the
same kernels reads it instead of booting (one boot a run re-checks the
cache), as kci test does.

With RUNDIR arguments nothing is booted: the table is made from those runs.
A kci test run adds its patched kernel as tree <tree>+patched: "kci bench
BENCHRUN TESTRUN" sets gtp with patches/rht-no-shrink.patch (the mail's
configuration) beside the ext tree.

With --hardware the user's own bpf_stats sets (directories of
<tree>-<variant>.bpfstats bpftool dumps, as bpfstats.py --agg reads) are
set beside the table: for each BPF row both have, the hardware's mean ±
spread over the sets beside kci's in each of its units, and for the
ratios of variants, the hardware's beside kci's on the BPF total, the
marginal cost and the cache model's cycles, with each one's model error
(kci / hardware − 1). "kci bench --hardware results-1 results-2 results-3
EXTRUN DEMORUN --hardware-tree gtp=gtp+patched" compares the mail's sets
with the ext tree and the demo patch's kernel.`

func newBenchCmd() *cobra.Command {
	c := &benchCmd{}
	cmd := &cobra.Command{
		Use:   "bench [RUNDIR]... [--hardware SET...]",
		Short: "Measure the trees' kernels, no patch: the designs side by side, whole-path and marginal cost per packet",
		Long:  benchLong,
		RunE:  c.run,
	}
	f := cmd.Flags()
	f.StringSliceVar(&c.trees, "tree", nil, "tree(s) from kci.yaml (default: every tree)")
	f.IntVar(&c.reps, "reps", 0, "boots (seeds) per tree (default: 3 under icount, 6 otherwise)")
	f.StringSliceVar(&c.variants, "variants", nil, "benchmark variants (default: kci.yaml bench.variants); the baseline none is always added")
	f.DurationVar(&c.window, "window", 0, "measurement window per variant (default: kci.yaml; emulated_window under TCG)")
	f.DurationVar(&c.warmup, "warmup", -1, "warm-up before the window (default: kci.yaml)")
	f.StringVar(&c.out, "out", "", "run directory (default ./kci-results/<time>-<id>)")
	f.Uint64Var(&c.firstSeed, "first-seed", 1, "guest seed of the first boot of each tree; boot k gets first-seed+k-1")
	f.IntVar(&c.parallel, "parallel", 0, "boots at a time (default: by the clock, as kci test)")
	f.BoolVar(&c.noResultCache, "no-result-cache", false, "boot every seed even when an exact boot of it is cached (also $KCI_RESULT_CACHE=off); the cache is only used under TCG icount")
	c.vmo.register(f)
	c.hw.register(f)
	return cmd
}

func (c *benchCmd) run(cmd *cobra.Command, args []string) error {
	runDirs, sets := splitBenchArgs(args, len(c.hw.dirs) > 0)
	hw, err := c.hw.read(sets)
	if err != nil {
		return err
	}
	if len(runDirs) > 0 {
		return benchFromDirs(cmd.OutOrStdout(), runDirs, hw)
	}
	if err := c.check(cmd); err != nil {
		return err
	}
	b, booter, err := jobSetup(nil, c.trees, &c.vmo)
	if err != nil {
		return err
	}
	if hw != nil {
		if err := hw.check(plannedRows(b.Project, c.trees, c.variants)); err != nil {
			return err
		}
	}
	cached, err := withResultCache(booter, b.Cache.Root, c.noResultCache)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := (&job.Tester{Builder: b, Booter: cached}).Test(cmd.Context(), c.options(b, booter))
	if dir := res.Dir; dir != "" {
		bt, rerr := benchTableOf([]string{dir})
		if rerr == nil {
			rerr = writeBench(cmd.OutOrStdout(), bt, hw)
		}
		if rerr != nil && err == nil {
			err = rerr
		}
		fmt.Fprintf(os.Stderr, "kci: bench wall time %s; run directory %s\n", time.Since(start).Round(time.Second), dir)
	}
	return err
}

// check refuses nonsense before anything is built or created, as kci
// test does (its rules: --reps 0 and --parallel 0 given are refused).
func (c *benchCmd) check(cmd *cobra.Command) error {
	if err := checkTestFlags(cmd, testFlags{reps: c.reps, parallel: c.parallel, firstSeed: c.firstSeed, failOnReg: -1, clock: c.vmo.clock}); err != nil {
		return err
	}
	warmup := c.warmup // kci.yaml's unless given
	if !cmd.Flags().Changed("warmup") {
		warmup = 0
	}
	if err := checkBenchFlags(cmd, c.window, warmup, c.variants); err != nil {
		return err
	}
	if err := c.vmo.validate(); err != nil {
		return err
	}
	if err := checkResultCacheEnv(); err != nil {
		return err
	}
	return checkOutFor(c.out, false, false) // bench has no --force
}

// options: every tree (or those named), no patch, every variant with the
// baseline, seeds first-seed... by the clock's reps rule.
func (c *benchCmd) options(b *job.Builder, booter *boot.VMBooter) job.TestOptions {
	p := b.Project
	trees := c.trees
	if len(trees) == 0 {
		for _, t := range p.Trees {
			trees = append(trees, t.Name)
		}
	}
	o := job.TestOptions{
		Trees: trees, Reps: c.reps, Variants: withBaseline(c.variants, p.Bench.Variants), Out: c.out,
		FirstSeed: c.firstSeed, Parallel: c.parallel, FailOnRegression: -1, Args: os.Args,
		Log: os.Stderr, Progress: progress.New(os.Stderr), Host: job.DefaultHost(),
	}
	window, warmup := c.window, c.warmup
	o.BenchFor = func(accel string) wire.BenchParams { return benchParams(p, accel, window, warmup) }
	o.Bench = o.BenchFor("kvm")
	o.Clock = string(booter.VM.Clock)
	o.RepsFor = job.RepsByAccel(string(booter.VM.Clock))
	return o
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
// again from the record), and the hardware sets beside it, if any: a
// directory that is no run, or sets none of whose variants is a row of
// the table, are refused first.
func benchFromDirs(w io.Writer, dirs []string, hw *hardwareInput) error {
	for _, d := range dirs {
		if _, err := results.Load(d); err != nil {
			return notRunDir("bench", d, err)
		}
	}
	bt, err := benchTableOf(dirs)
	if err != nil {
		return err
	}
	if hw != nil {
		if err := hw.check(benchtab.VariantNames(bt.Agg), tableTrees(bt)); err != nil {
			return err
		}
	}
	return writeBench(w, bt, hw)
}

// benchTableOf is the bench table of run directories.
func benchTableOf(dirs []string) (benchtab.BenchTable, error) {
	var runs []*results.Run
	for _, d := range dirs {
		r, err := results.Load(d)
		if err != nil {
			return benchtab.BenchTable{}, err
		}
		runs = append(runs, r)
	}
	return benchtab.BuildBench(runs...), nil
}
