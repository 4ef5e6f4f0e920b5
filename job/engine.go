package job

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/suite"
)

// The boot both verbs run their plans through: kci test's ABBA
// repetitions and kci series' prefixes each name a kernel, a plan and a
// seed; bootOnce names the console file, calls the Booter and fills in
// the failure kind, and bootBlame says whose fault a failure is. One
// place, so that both verbs classify and blame a boot alike.

// bootSpec is one boot a verb asks for.
type bootSpec struct {
	Kernel *kernel.Artifacts
	Plan   suite.Plan
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

// bootOnce runs s on b with its console under dir. kind is the failure's
// kind: the Booter's, or failure.Infra (the machine) for a failure it did
// not classify; "" when the boot succeeded.
func bootOnce(ctx context.Context, b Booter, dir string, s bootSpec) (res *BootResult, kind string, err error) {
	if err := os.MkdirAll(filepath.Join(dir, "console"), 0o755); err != nil {
		return nil, failure.Infra, classify("results", err)
	}
	res, err = b.Boot(ctx, BootRequest{Kernel: s.Kernel, Plan: s.Plan, Console: filepath.Join(dir, s.consoleFile()), Label: s.Label, Seed: s.Seed})
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
