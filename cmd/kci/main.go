// Command kci builds a base and a patched kernel, boots both in QEMU, runs
// the skb-metadata survival tests and benchmarks inside, and compares them.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/internal/version"
	"github.com/kci-dev/kci/job"
)

// commands holds the constructors of the verbs; each verb file registers
// its own in init so verbs stay one file each.
var commands []func() *cobra.Command

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is kci with args, returning its exit code (job's table): what
// main does, callable from tests.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runStdin(ctx, args, nil, stdout, stderr)
}

// runStdin is run with stdin as standard input (nil: os.Stdin), which a
// patch argument "-" reads.
func runStdin(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	if stdin != nil {
		root.SetIn(stdin)
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Cobra parses flags and checks arguments before a verb's
	// PersistentPreRun; an error before it is the command line's.
	started := false
	root.PersistentPreRun = func(*cobra.Command, []string) { started = true }
	err := root.ExecuteContext(ctx)
	if err == nil {
		return job.ExitOK
	}
	if !started {
		err = job.Usage(err)
	}
	fmt.Fprintln(stderr, "kci:", err)
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return job.ExitInternal
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "kci",
		Short:         "Test what a kernel patch does to a running kernel",
		Version:       version.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("kci {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	setHelp(root)
	for _, c := range commands {
		root.AddCommand(c())
	}
	return root
}
