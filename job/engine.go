package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/internal/progress"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/wire"
)

// engine is what a verb's run stands on: its directory, its log and
// progress meter, the Booter, the accelerator the Booter settled once and
// what is sized by it (the bench, how many boots run at once), the guest
// seeds, and the boot queue (queue.go). kci test (testRun), kci series
// (seriesRun) and kci run (BootOnce) are plans over one: each names a
// kernel, a plan and a logical seed per boot; engine.boot names the
// console file, calls the Booter and fills in the failure kind, record
// makes the boot's record, and bootBlame says whose fault a failure is,
// so every verb sizes, seeds, queues, records and blames a boot alike.
type engine struct {
	ctx    context.Context
	dir    string          // the run directory
	log    io.Writer       // nil: quiet
	meter  *progress.Meter // nil-safe
	booter boot.Booter
	seeds  seedMap

	// bench is the traffic every measuring boot runs; benchFor, when
	// set, sizes it for the accelerator once that is settled (size).
	bench    wire.BenchParams
	benchFor func(accel string) wire.BenchParams
	// parallel is how many boots the queue runs at once (sizeParallel).
	parallel int

	settled    bool
	accel, why string
}

// seedMap is a run's guest seeds: logical seed k (kci test's repetition
// k, a series' k-th seed of a prefix) boots with first+k-1 (first 0 is
// 1), or with fixed for every boot when fixed is set (kci test --seed).
// Base and patched, or every prefix, boot the same logical seeds, so
// their values pair by seed.
type seedMap struct{ fixed, first uint64 }

func (m seedMap) guest(k int) uint64 {
	if m.fixed != 0 {
		return m.fixed
	}
	return max(m.first, 1) + uint64(k) - 1
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
	_, ok := e.booter.(boot.AccelResolver)
	return ok
}

// settleAccel is the Booter's accelerator for kernel k, asked once per
// run and logged; "" when the Booter settles none.
func (e *engine) settleAccel(k *kernel.Artifacts) (accel, why string, err error) {
	ar, ok := e.booter.(boot.AccelResolver)
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

// size settles the accelerator with kernel k (once per run) and sizes
// the bench for it; "" when the Booter settles none (a scripted one),
// which leaves the bench as given.
func (e *engine) size(k *kernel.Artifacts) (accel, why string, err error) {
	if accel, why, err = e.settleAccel(k); err != nil {
		return "", "", err
	}
	if accel != "" && e.benchFor != nil {
		e.bench = e.benchFor(accel)
	}
	return accel, why, nil
}

// sizeParallel settles how many boots run at once: asked when set (>0),
// else the host's CPUs (at most 4) when every boot is deterministic (TCG
// under icount), else 1. Only icount boots may share the host: their
// numbers count guest instructions, which no neighbour changes; KVM and
// host-clock boots would measure each other, so more than 1 there is
// refused. Without an accelerator (a scripted booter) asked stands.
func (e *engine) sizeParallel(accel, clock string, asked int) error {
	deterministic := accel == results.AccelTCG && clock == results.ClockICount
	switch {
	case asked > 1 && accel != "" && !deterministic:
		return &ExitError{Code: ExitInternal, Cause: fmt.Sprintf("--parallel %d: only deterministic boots (TCG with the instruction clock) may run together; "+
			"%s boots would measure each other", asked, accel)}
	case asked > 0:
		e.parallel = asked
	case deterministic:
		e.parallel = min(runtime.NumCPU(), 4)
	default:
		e.parallel = 1
	}
	if e.parallel > 1 {
		e.logf("kci: %d boots at a time: under icount a boot's numbers do not depend on what runs beside it", e.parallel)
	}
	return nil
}

// bootSpec is one boot a verb asks for.
type bootSpec struct {
	Kernel *kernel.Artifacts
	Plan   wire.Plan
	Tree   string // the console file's name starts with it
	Name   string // the boot within the tree: "base-2", "patch 1 of 3"
	Label  string // what logs and the progress meter call it
	Role   string // results.RoleBase or RolePatched
	Rep    int    // the logical seed: the guest's is seeds.guest(Rep)
	// Watch, Tee, Append and BootTimeout are BootRequest's (kci run's).
	Watch       func(event.Event)
	Tee         io.Writer
	Append      []string
	BootTimeout time.Duration
}

// consoleFile is where the boot's console goes, inside the run
// directory.
func (s bootSpec) consoleFile() string {
	return filepath.Join("console", fmt.Sprintf("%s-%s.log", s.Tree, strings.ReplaceAll(s.Name, " ", "-")))
}

// boot runs s with its console under the run directory. kind is the
// failure's kind: the Booter's, or failure.Infra (the machine) for a
// failure it did not classify; "" when the boot succeeded.
func (e *engine) boot(ctx context.Context, s bootSpec) (res *boot.BootResult, kind string, err error) {
	if err := os.MkdirAll(filepath.Join(e.dir, "console"), 0o755); err != nil {
		return nil, failure.Infra, classify("results", err)
	}
	res, err = e.booter.Boot(ctx, boot.BootRequest{Kernel: s.Kernel, Plan: s.Plan, Console: filepath.Join(e.dir, s.consoleFile()), Label: s.Label,
		Seed: e.seeds.guest(s.Rep), Watch: s.Watch, Tee: s.Tee, Append: s.Append, BootTimeout: s.BootTimeout})
	if res != nil {
		kind = res.ErrorKind
	}
	if err != nil && kind == "" {
		kind = failure.Infra
	}
	return res, kind, err
}

// record is the boot's record, as run.json and series.json keep it:
// what res measured, its failure (err, of kind) in one line, and its
// guest seed when the boot repeats from it (icount only).
func (e *engine) record(s bootSpec, res *boot.BootResult, kind string, err error) results.Boot {
	b := results.Boot{Tree: s.Tree, Role: s.Role, Rep: s.Rep, ConsoleLog: s.consoleFile(), ErrorKind: kind}
	if res != nil {
		if res.Clock == results.ClockICount {
			b.Seed = e.seeds.guest(s.Rep)
		}
		b.Accel, b.BootToReady = res.Accel, res.BootToReady
		b.Sanity, b.Caps = results.SanityOf(res.Sanity), results.CapsOf(res.Caps)
		b.Cells, b.Variants = results.CellsOf(res.Cells), results.VariantsOf(res.Variants)
		withExact(b.Variants, res.Exact)
		b.Clock, b.TSCkHz, b.Clocksource = res.Clock, res.TSCkHz, res.Clocksource
		b.Cache, b.CPU, b.Phases = res.Cache, res.CPU, res.Phases
		b.MainLoop = res.MainLoop
	}
	if err != nil {
		b.Error = lines.First(err.Error())
	}
	return b
}

// stopped is what a run that ended with err records and returns, in
// kci test's and kci series' finish alike: the reason it is incomplete
// ("" when err is nil), "interrupted" with errInterrupted when the user
// stopped it, else err's first line with err.
func (e *engine) stopped(err error) (string, error) {
	switch {
	case err == nil:
		return "", nil
	case e.ctx.Err() != nil:
		return "interrupted", errInterrupted
	}
	return lines.First(err.Error()), err
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
