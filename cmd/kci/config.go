package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/internal/kconfig"
	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/job"
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
			fmt.Fprintf(w, "tree %s: base config %s, fragments in order:\n", t.Name, orDefault(b.Project.Config.Base, "tinyconfig"))
			for _, f := range a.Fragments {
				fmt.Fprintf(w, "  %s\n", f)
			}
			fmt.Fprintf(w, "policy: PASS — every requested option has its value; forbidden debug options all off:\n  ")
			for i, f := range kconfig.Forbidden {
				if i > 0 {
					fmt.Fprint(w, ", ")
				}
				fmt.Fprint(w, f)
			}
			from := "resolved by kconfig alone, no kernel built"
			if a.BzImage != "" {
				from = "the built kernel's"
			}
			fmt.Fprintf(w, "\nfinal config: %s (sha256 %s; %s)\n", a.Config, a.ConfigHash[:16], from)
			fmt.Fprintf(w, "production drift vs %s (%d performance-relevant options differ):\n", b.Production(), len(a.Drift))
			for _, d := range a.Drift {
				fmt.Fprintf(w, "  %s\n", d)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&tree, "tree", "stock", "tree from kci.yaml")
	return cmd
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
