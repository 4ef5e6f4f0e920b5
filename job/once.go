package job

import (
	"context"
	"io"
	"path/filepath"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/wire"
)

// OnceOptions is what kci run asks of its one boot.
type OnceOptions struct {
	Dir  string // the console goes under it, as a run's does
	Tree string // names the console file: <Tree>-run.log
	Log  io.Writer
	// Watch sees every agent event as it arrives; Tee gets the console
	// as it is written (nil: not shown).
	Watch func(event.Event)
	Tee   io.Writer
	// Append and BootTimeout are the boot's own (BootRequest's).
	Append      []string
	BootTimeout time.Duration
}

// Once is one boot kci run made: its result and where its console is.
type Once struct {
	Result  *boot.BootResult
	Console string
}

// BootOnce is kci run: one boot of kernel k with plan p through the
// engine kci test and kci series boot through: it settles the
// accelerator as they do, keeps the console under o.Dir and blames a
// failure by its kind with kci test's exit codes.
func BootOnce(ctx context.Context, b boot.Booter, k *kernel.Artifacts, p wire.Plan, o OnceOptions) (Once, error) {
	e := &engine{ctx: ctx, dir: o.Dir, log: o.Log, booter: b, parallel: 1}
	if _, _, err := e.size(k); err != nil {
		return Once{}, Classify("accelerator", err)
	}
	spec := bootSpec{Kernel: k, Plan: p, Tree: o.Tree, Name: "run", Label: o.Tree + " run", Role: results.RoleBase, Rep: 1,
		Watch: o.Watch, Tee: o.Tee, Append: o.Append, BootTimeout: o.BootTimeout}
	res, kind, err := e.boot(ctx, spec)
	once := Once{Result: res, Console: filepath.Join(e.dir, spec.consoleFile())}
	if err != nil {
		return once, &ExitError{Code: BootExitCode(kind), Cause: kind + ": " + lines.First(err.Error()), Err: err}
	}
	return once, nil
}
