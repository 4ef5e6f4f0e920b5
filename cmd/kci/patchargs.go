package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/kci-dev/kci/internal/fsutil"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/kernel"
)

// inputDir is where a run directory keeps the patches kci made from
// "-" and CHECKOUT:RANGE arguments.
const inputDir = "input"

// patchInputs are a verb's patch arguments as files: paths as given, "-"
// and each CHECKOUT:RANGE made into files in a directory of their own
// (kernel.ParseInput). test, series, build, profile and run --patch all
// read their patch arguments through it.
type patchInputs struct {
	paths []string // for kernel.LoadSeries, in the order given
	dir   string   // the made files, "" when none were made
}

// resolvePatches reads args: "-" is read from stdin once, a range is
// exported with git format-patch; both before any build, a bad one a
// usage error naming it. Close removes what it made.
func resolvePatches(ctx context.Context, args []string, stdin io.Reader, log io.Writer) (*patchInputs, error) {
	in := &patchInputs{}
	stdinSeen := false
	for i, a := range args {
		pi := kernel.ParseInput(a)
		if pi.Kind == kernel.InputPath {
			in.paths = append(in.paths, a)
			continue
		}
		if in.dir == "" {
			d, err := os.MkdirTemp("", "kci-input-*")
			if err != nil {
				return nil, job.Classify("patch "+a, err)
			}
			in.dir = d
		}
		p, err := in.make(ctx, i, pi, stdin, &stdinSeen, log)
		if err != nil {
			in.Close()
			return nil, job.Classify("patch "+a, err)
		}
		in.paths = append(in.paths, p)
	}
	return in, nil
}

// make is one made input: the file or directory LoadSeries reads.
func (in *patchInputs) make(ctx context.Context, i int, pi kernel.Input, stdin io.Reader, seen *bool, log io.Writer) (string, error) {
	if pi.Kind == kernel.InputStdin {
		if *seen {
			return "", job.Usagef("patch -: standard input given twice")
		}
		*seen = true
		if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return "", job.Usagef("patch -: standard input is a terminal: pipe an mbox in (b4 am -o - MSGID | kci test -)")
		}
		p := filepath.Join(in.dir, fmt.Sprintf("%d-stdin.mbox", i+1))
		if err := kernel.SaveStdin(stdin, p); err != nil {
			return "", err
		}
		return p, nil
	}
	d := filepath.Join(in.dir, fmt.Sprintf("%d-%s-%s", i+1, filepath.Base(pi.Checkout), unsafeName.ReplaceAllString(pi.Range, "_")))
	n, err := kernel.ExportRange(ctx, pi, d)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(log, "kci: %s: %d commits (git format-patch, %s untouched)\n", pi.Arg, n, pi.Checkout)
	return d, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// Keep copies the made inputs into runDir/input, so a run says what it
// tested after the temporary copy is gone.
func (in *patchInputs) Keep(runDir string) error {
	if in == nil || in.dir == "" || runDir == "" {
		return nil
	}
	return filepath.WalkDir(in.dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(in.dir, p)
		if err != nil {
			return err
		}
		return fsutil.CopyFile(nil, p, nil, filepath.Join(runDir, inputDir, rel))
	})
}

// keepIn is Keep at the end of a verb with a run directory: a failure
// to keep the copy is said, and the run's own error stands.
func (in *patchInputs) keepIn(runDir string, log io.Writer) {
	if err := in.Keep(runDir); err != nil {
		fmt.Fprintf(log, "kci: keeping the patch input in %s: %v\n", runDir, err)
	}
}

// Close removes the temporary copy.
func (in *patchInputs) Close() {
	if in != nil && in.dir != "" {
		_ = os.RemoveAll(in.dir) // in the temp dir: a leftover is harmless
	}
}

// verbPatches is resolvePatches for a cobra verb: its stdin and stderr.
func verbPatches(cmd *cobra.Command, args []string) (*patchInputs, error) {
	return resolvePatches(cmd.Context(), args, cmd.InOrStdin(), cmd.ErrOrStderr())
}
