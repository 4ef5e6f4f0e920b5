package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
)

func init() { commands = append(commands, newBuildCmd) }

func newBuildCmd() *cobra.Command {
	tree := treeFlag{name: "stock"}
	var jobs int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "build [--tree NAME] [PATCH|DIR|SERIES|MBOX|-|CHECKOUT:BASE..TIP]...",
		Short: "Build (or fetch from the cache) a tree's kernel, plus patches",
		Long: `Build the kernel of a tree from kci.yaml (default: stock, the bare base),
with kci's verified lockdep-free config, and optionally the given patches on top.
Prints where the artifacts are; phase timings are in build.json next to them.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if jobs < 0 {
				return job.Usagef("-j/--jobs %d: want 1 or more, or 0 for the host's CPUs", jobs)
			}
			in, err := verbPatches(cmd, args)
			if err != nil {
				return err
			}
			defer in.Close()
			args = in.paths
			for _, a := range args {
				if err := statInput("patch", a); err != nil {
					return err
				}
			}
			b, t, err := newBuilder(tree.name, jobs)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			var ps []kernel.Patch
			if len(args) > 0 {
				if ps, err = kernel.LoadSeries(args...); err != nil {
					return job.PatchFile(err)
				}
				// Before the tree's kernel is built (minutes cold).
				if err := checkApplies(ctx, b, t, ps); err != nil {
					return err
				}
			}
			meter := progress.New(cmd.ErrOrStderr())
			b.Opts.Progress = meter
			b.Opts.Foreground = true // no boots here to yield the CPU to
			meter.Begin("[%s] building kernel", t.Name)
			a, err := b.Tree(ctx, t)
			if err != nil {
				meter.End("%s", job.EndWord(ctx, err))
				return job.Classify("tree "+t.Name, err) // kci test's exit codes
			}
			meter.End("%s (%s)", a.Release, buildState(a))
			if len(ps) > 0 {
				meter.Begin("[%s] building kernel + %d patches", t.Name, len(ps))
				if a, err = b.Patched(ctx, t, a, ps); err != nil {
					meter.End("%s", job.EndWord(ctx, err))
					return job.Classify("patched kernel of tree "+t.Name, err)
				}
				meter.End("%s (%s)", a.Release, buildState(a))
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(a)
			}
			printArtifacts(cmd.OutOrStdout(), a)
			return nil
		},
	}
	cmd.Flags().Var(&tree, "tree", "tree from kci.yaml")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", 0, "make -j N (0: the host's CPUs)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the artifacts record as JSON")
	return cmd
}

// newBuilder is the builder of tree, after kci.yaml and its base are
// checked: a missing tarball is refused here, with its line, not minutes
// into a run.
func newBuilder(tree string, jobs int) (*job.Builder, *project.Tree, error) {
	b, err := baseBuilder()
	if err != nil {
		return nil, nil, err
	}
	ts, err := job.PickTrees(b.Project, []string{tree})
	if err != nil {
		return nil, nil, err
	}
	b.Opts.Jobs = jobs
	return b, ts[0], nil
}

// treeFlag is the --tree of a verb that builds one tree: given twice, it
// refuses (a string flag would silently build the last one only).
type treeFlag struct {
	name string
	set  bool
}

func (f *treeFlag) String() string { return f.name }
func (f *treeFlag) Type() string   { return "string" }
func (f *treeFlag) Set(v string) error {
	if f.set {
		return fmt.Errorf("given twice (%s, then %s): kci build builds one tree; run it once per tree", f.name, v)
	}
	f.name, f.set = v, true
	return nil
}

// baseBuilder is loadProject with kci.yaml's base checked.
func baseBuilder() (*job.Builder, error) {
	b, err := loadProject()
	if err != nil {
		return nil, err
	}
	if err := b.Project.CheckBase(); err != nil {
		return nil, job.Usage(err)
	}
	return b, nil
}

// loadProject is the cache and kci.yaml, the base not needed (kci run
// --kernel boots a kernel of its own).
func loadProject() (*job.Builder, error) {
	cache, err := kernel.DefaultCache()
	if err != nil {
		return nil, err
	}
	cache.Meter = progress.New(os.Stderr) // the one-time base import
	p, err := project.Load(cache.Root)
	if err != nil {
		return nil, job.Usage(err) // kci.yaml is the user's
	}
	return &job.Builder{Cache: cache, Project: p}, nil
}

func printArtifacts(w io.Writer, a *kernel.Artifacts) {
	fmt.Fprintf(w, "kernel %s (%s)\n", a.Release, buildState(a))
	fmt.Fprintf(w, "  key      %s\n  base     %s (%s)\n", a.Key, a.BaseOrigin, a.BaseID[:12])
	for _, p := range a.Patches {
		fmt.Fprintf(w, "  patch    %s\n", p)
	}
	for _, v := range a.Verified {
		fmt.Fprintf(w, "  verified %s in vmlinux BTF\n", v)
	}
	fmt.Fprintf(w, "  build id %s\n  bzImage  %s\n  vmlinux  %s\n  config   %s\n", a.BuildID, a.BzImage, a.Vmlinux, a.Config)
	var ph []string
	for _, p := range a.Phases {
		s := fmt.Sprintf("%s %.1fs", p.Name, p.Duration.Seconds())
		if p.CPU > 0 { // make's phases: the CPU its compilers used
			s += fmt.Sprintf(" (%.1fs of CPU)", p.CPU.Seconds())
		}
		ph = append(ph, s)
	}
	if len(ph) > 0 {
		fmt.Fprintf(w, "  phases   %s\n", strings.Join(ph, ", "))
	}
}

func buildState(a *kernel.Artifacts) string {
	if a.CacheHit && a.Regrown != nil {
		return "cache hit; its kept build tree, lost, built again"
	}
	if a.CacheHit {
		return "cache hit"
	}
	return "built"
}
