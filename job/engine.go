package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// engine is what a verb's run stands on: its directory, its log and
// progress meter, the Booter, and the accelerator the Booter settled once.
// kci test (testRun) and kci series (seriesRun) are two plans over one:
// each names a kernel, a plan and a seed per boot; engine.boot names the
// console file, calls the Booter and fills in the failure kind, and
// bootBlame says whose fault a failure is, so both verbs classify and
// blame a boot alike.
type engine struct {
	ctx    context.Context
	dir    string          // the run directory
	log    io.Writer       // nil: quiet
	meter  *progress.Meter // nil-safe
	booter Booter

	settled    bool
	accel, why string
}

// runDir is where a run started at start with id goes: out, or
// ./kci-results/<time>-<id>.
func runDir(out string, start time.Time, id string) string {
	if out != "" {
		return out
	}
	return results.DefaultDir(start, id)
}

func (e *engine) logf(format string, a ...any) {
	if e.log != nil {
		fmt.Fprintf(e.log, format+"\n", a...)
	}
}

// resolves says whether the Booter settles an accelerator before the
// first boot (VMBooter does; a scripted one need not).
func (e *engine) resolves() bool {
	_, ok := e.booter.(AccelResolver)
	return ok
}

// settleAccel is the Booter's accelerator for kernel k, asked once per
// run and logged; "" when the Booter settles none.
func (e *engine) settleAccel(k *kernel.Artifacts) (accel, why string, err error) {
	ar, ok := e.booter.(AccelResolver)
	if !ok || e.settled {
		return e.accel, e.why, nil
	}
	if e.accel, e.why, err = ar.ResolveAccel(e.ctx, k); err != nil {
		return "", "", err
	}
	e.settled = true
	e.logf("kci: accelerator %s: %s", e.accel, e.why)
	return e.accel, e.why, nil
}

// bootSpec is one boot a verb asks for.
type bootSpec struct {
	Kernel *kernel.Artifacts
	Plan   wire.Plan
	Tree   string // the console file's name starts with it
	Name   string // the boot within the tree: "base-2", "patch 1 of 3"
	Label  string // what logs and the progress meter call it
	Seed   uint64
}

// consoleFile is where the boot's console goes, inside the run
// directory.
func (s bootSpec) consoleFile() string {
	return filepath.Join("console", fmt.Sprintf("%s-%s.log", s.Tree, strings.ReplaceAll(s.Name, " ", "-")))
}

// boot runs s with its console under the run directory. kind is the
// failure's kind: the Booter's, or failure.Infra (the machine) for a
// failure it did not classify; "" when the boot succeeded.
func (e *engine) boot(ctx context.Context, s bootSpec) (res *BootResult, kind string, err error) {
	if err := os.MkdirAll(filepath.Join(e.dir, "console"), 0o755); err != nil {
		return nil, failure.Infra, classify("results", err)
	}
	res, err = e.booter.Boot(ctx, BootRequest{Kernel: s.Kernel, Plan: s.Plan, Console: filepath.Join(e.dir, s.consoleFile()), Label: s.Label, Seed: s.Seed})
	if res != nil {
		kind = res.ErrorKind
	}
	if err != nil && kind == "" {
		kind = failure.Infra
	}
	return res, kind, err
}

// bootBlame is the job's error for a boot that failed with kind: the
// machine's (ExitInternal, and said not to be the patch's) or the
// kernel's, named by whose (ExitBoot).
func bootBlame(label, whose, kind, msg string, err error) *ExitError {
	if BootExitCode(kind) == ExitInternal {
		return &ExitError{Code: ExitInternal, Cause: fmt.Sprintf("%s: %s (machine fault, not the patch's)", label, msg), Err: err}
	}
	return &ExitError{Code: ExitBoot, Cause: fmt.Sprintf("%s: %s", whose, msg), Err: err}
}
