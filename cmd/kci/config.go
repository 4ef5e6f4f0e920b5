package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/internal/kconfig"
	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/results"
)

func init() { commands = append(commands, newConfigCmd) }

func newConfigCmd() *cobra.Command {
	var tree string
	cmd := &cobra.Command{
		Use:   "config [--tree NAME]",
		Short: "Show a tree's effective config fragments, the policy verdict and the drift from production",
		Long: `Show a tree's effective config fragments, the policy verdict and the drift
from production. No kernel is built: a tree built already gives its kernel's
config; otherwise the config is resolved as a build would (make tinyconfig or
the base config, the fragments merged in, make olddefconfig) in a scratch
worktree, where only kconfig's own host programs are compiled, and kept for
the next call. The first time on a tree that takes about 25 s on 2 cores.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			b, t, err := newBuilder(tree, 0)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			// The kconfig tools only: a tree never built costs seconds, not a build.
			meter := progress.New(cmd.ErrOrStderr())
			meter.Begin("[%s] resolving the config (kconfig's tools only, no kernel build)", t.Name)
			a, err := b.Config(cmd.Context(), t)
			if err != nil {
				meter.End("%s", job.EndWord(cmd.Context(), err))
				return job.Classify("tree "+t.Name, err) // kci test's exit codes
			}
			meter.End("done")
			return writeConfig(w, t.Name, orDefault(b.Project.Config.Base, "tinyconfig"), a, b.Production())
		},
	}
	cmd.Flags().StringVar(&tree, "tree", "stock", "tree from kci.yaml")
	return cmd
}

// writeConfig prints kci config's answer for a tree's artifacts, every
// line within lines.Width: long paths and drift entries fold onto
// continuation lines.
func writeConfig(w io.Writer, tree, base string, a *kernel.Artifacts, production string) error {
	var b strings.Builder
	line := func(s, indent string) { b.WriteString(lines.Wrap(s, lines.Width, indent) + "\n") }
	line(fmt.Sprintf("tree %s: base config %s, fragments in order:", tree, base), "  ")
	for _, f := range a.Fragments {
		line("  "+f, "    ")
	}
	line("policy: PASS — every requested option has its value; forbidden debug options all off:", "  ")
	line("  "+strings.Join(kconfig.Forbidden, ", "), "  ")
	from := "resolved by kconfig alone, no kernel built"
	if a.BzImage != "" {
		from = "the built kernel's"
	}
	line(fmt.Sprintf("final config: %s (sha256 %s; %s)", a.Config, a.ConfigHash[:min(16, len(a.ConfigHash))], from), "  ")
	line(fmt.Sprintf("production drift vs %s (%d performance-relevant options differ):", production, len(a.Drift)), "  ")
	for _, d := range a.Drift {
		line("  "+results.DriftOf(d).String(), "      ")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
