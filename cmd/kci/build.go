package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
)

func init() { commands = append(commands, newBuildCmd) }

func newBuildCmd() *cobra.Command {
	var tree string
	var jobs int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "build [--tree NAME] [PATCH|DIR|SERIES|MBOX]...",
		Short: "Build (or fetch from the cache) a tree's kernel, plus patches",
		Long: `Build the kernel of a tree from kci.yaml (default: stock, the bare base),
with kci's verified lockdep-free config, and optionally the given patches on top.
Prints where the artifacts are; phase timings are in build.json next to them.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			b, t, err := newBuilder(tree, jobs)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			prog := newBuildProgress(cmd.ErrOrStderr())
			b.Opts.Progress = prog
			defer prog.Close()
			a, err := b.Tree(ctx, t)
			if err == nil && len(args) > 0 {
				var ps []kernel.Patch
				if ps, err = kernel.LoadSeries(args...); err == nil {
					a, err = b.Patched(ctx, t, a, ps)
				}
			}
			prog.Close()
			if err != nil {
				return err
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
	cmd.Flags().StringVar(&tree, "tree", "stock", "tree from kci.yaml")
	cmd.Flags().IntVarP(&jobs, "jobs", "j", 0, "make -j (default: number of CPUs)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the artifacts record as JSON")
	return cmd
}

func newBuilder(tree string, jobs int) (*job.Builder, *project.Tree, error) {
	cache, err := kernel.DefaultCache()
	if err != nil {
		return nil, nil, err
	}
	p, err := project.Load(cache.Root)
	if err != nil {
		return nil, nil, err
	}
	t, err := p.Tree(tree)
	if err != nil {
		return nil, nil, err
	}
	return &job.Builder{Cache: cache, Project: p, Opts: kernel.Options{Jobs: jobs}}, t, nil
}

func printArtifacts(w io.Writer, a *kernel.Artifacts) {
	state := "built"
	if a.CacheHit {
		state = "cache hit"
	}
	fmt.Fprintf(w, "kernel %s (%s)\n", a.Release, state)
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
		ph = append(ph, fmt.Sprintf("%s %.1fs", p.Name, p.Duration.Seconds()))
	}
	if len(ph) > 0 {
		fmt.Fprintf(w, "  phases   %s\n", strings.Join(ph, ", "))
	}
}

// buildProgress turns make's output into a spinner with the object count on
// a TTY, and into nothing elsewhere (the full log is in the cache).
type buildProgress struct {
	bar     *progressbar.ProgressBar
	buf     []byte
	objects int
	closed  bool
}

func newBuildProgress(w io.Writer) *buildProgress {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &buildProgress{}
	}
	return &buildProgress{bar: progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("building"),
		progressbar.OptionSpinnerType(14), progressbar.OptionShowElapsedTimeOnFinish())}
}

func (p *buildProgress) Write(b []byte) (int, error) {
	if p.bar == nil || p.closed {
		return len(b), nil
	}
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSpace(string(p.buf[:i]))
		p.buf = p.buf[i+1:]
		if f := strings.Fields(line); len(f) == 2 && (f[0] == "CC" || f[0] == "LD" || f[0] == "AR" || f[0] == "BTF") {
			p.objects++
			p.bar.Describe(fmt.Sprintf("building: %d objects, %s %s", p.objects, f[0], f[1]))
			p.bar.Add(1)
		}
	}
	return len(b), nil
}

func (p *buildProgress) Close() {
	if p.bar != nil && !p.closed {
		p.bar.Finish()
		fmt.Fprintln(os.Stderr)
	}
	p.closed = true
}
