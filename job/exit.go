package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// Exit codes of kci test: each failure class has its own, so CI and scripts
// can tell the patch's failures from the machine's.
const (
	ExitOK          = 0
	ExitInternal    = 1 // kci or the machine failed: nothing is blamed on the patch
	ExitApply       = 2 // the patch does not apply (or applies to no tree)
	ExitBuild       = 3 // config policy violation or build failure
	ExitBoot        = 4 // the kernel did not boot, crashed, hung or warned
	ExitSurvival    = 5 // behaviour regression: a survival cell, or a benchmark's own checks, pass on base but fail patched
	ExitPerformance = 6 // significant slowdown beyond --fail-on-regression
	// ExitUsage: kci was asked something it cannot do (a bad flag, a
	// kci.yaml value, an unknown variant, a run directory in the way),
	// refused before any build or boot. 64 is sysexits' EX_USAGE; 2, what
	// many tools use, is taken by "the patch does not apply".
	ExitUsage       = 64
	ExitInterrupted = 130
)

// Usagef is a usage error: kci's exit code ExitUsage, the message alone.
func Usagef(format string, a ...any) error {
	return &ExitError{Code: ExitUsage, Cause: fmt.Sprintf(format, a...)}
}

// Usage makes err a usage error (nil stays nil; an ExitError keeps its
// code).
func Usage(err error) error {
	var ee *ExitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	return &ExitError{Code: ExitUsage, Cause: err.Error()}
}

// PatchFile is a patch argument kci could not read as a series (missing,
// unreadable, empty, binary, no diff, a path outside the tree): the
// patch's fault, ExitApply on every verb, as a patch that does not apply.
func PatchFile(err error) error {
	if err == nil {
		return nil
	}
	return &ExitError{Code: ExitApply, Cause: err.Error()}
}

// ExitError is a failed job: Cause is the one-line reason shown first,
// Err the details.
type ExitError struct {
	Code  int
	Cause string
	Err   error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return e.Cause
	}
	return e.Cause + "\n" + e.Err.Error()
}
func (e *ExitError) Unwrap() error { return e.Err }
func (e *ExitError) ExitCode() int { return e.Code }

// Classify turns a stage's error into an ExitError: the one table of whose
// fault a failure is, used by every verb. The patch's faults get their own
// codes; anything not known to be the patch's is the machine's (ExitInternal),
// kernel.VerifyError and kernel.InfraError included.
func Classify(stage string, err error) error {
	if err == nil {
		return nil
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return err
	}
	var ae *kernel.ApplyError
	var ce *kernel.ConfigError
	var be *kernel.BuildError
	var hr *results.HoldsRunError
	var mi *results.MergeInputError
	var ie *kernel.InputError
	switch {
	case errors.As(err, &ie):
		return &ExitError{Code: ExitUsage, Cause: ie.Error()}
	case errors.As(err, &mi):
		return &ExitError{Code: ExitUsage, Cause: mi.Error()}
	case errors.As(err, &hr):
		return &ExitError{Code: ExitUsage, Cause: hr.Error() + ": pick another --out (kci test --force sets the old run aside)"}
	case errors.Is(err, errInterrupted), errors.Is(err, context.Canceled):
		return &ExitError{Code: ExitInterrupted, Cause: "interrupted: results so far are kept, marked incomplete", Err: nil}
	case errors.As(err, &ae):
		return &ExitError{Code: ExitApply, Cause: ae.Error(), Err: fmt.Errorf("%s", ae.Output)}
	case errors.As(err, &ce):
		cause := stage + ": config policy violated"
		if len(ce.Violations) > 0 {
			cause += ": " + ce.Violations[0].String()
			if n := len(ce.Violations) - 1; n > 0 {
				cause += fmt.Sprintf(" (+%d more)", n)
			}
		}
		return &ExitError{Code: ExitBuild, Cause: cause, Err: err}
	case errors.As(err, &be):
		return &ExitError{Code: ExitBuild, Cause: fmt.Sprintf("%s: %s", stage, be.Error()), Err: fmt.Errorf("%s", be.Tail)}
	}
	return &ExitError{Code: ExitInternal, Cause: stage + ": " + lines.First(err.Error()), Err: err}
}

// EndWord is how a progress line of a step that failed with err ends:
// "interrupted" when the run was stopped (not the step's failure), else
// "failed".
func EndWord(ctx context.Context, err error) string {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, errInterrupted) {
		return "interrupted"
	}
	return "failed"
}

// classify is Classify, under the name the job's files use.
func classify(stage string, err error) error { return Classify(stage, err) }

// bootExit is whose fault each kind of failed boot is. A guest agent that
// fails on the kernel under test is blamed on that kernel: the same agent
// runs on base too, so kci test and kci run both exit ExitBoot for it.
var bootExit = map[string]int{
	failure.Boot:    ExitBoot,
	failure.Crash:   ExitBoot,
	failure.Timeout: ExitBoot,
	failure.Agent:   ExitBoot,
	failure.Infra:   ExitInternal,
	// Nobody's fault: the run was stopped.
	failure.Interrupted: ExitInterrupted,
	// Only ever beside a failure, whose code is the job's.
	failure.Cancelled: ExitInternal,
}

// faultExit is the exit code of a series' failing fault.
var faultExit = map[verdict.FaultKind]int{
	verdict.FaultApply:    ExitApply,
	verdict.FaultBuild:    ExitBuild,
	verdict.FaultWarning:  ExitBuild, // only under --fail-on-warnings
	verdict.FaultBoot:     ExitBoot,
	verdict.FaultSurvival: ExitSurvival,
}

// BootExitCode is the exit code of a boot that failed with kind; an unknown
// kind is not blamed on the kernel.
func BootExitCode(kind string) int {
	if c, ok := bootExit[kind]; ok {
		return c
	}
	return ExitInternal
}

var errInterrupted = errors.New("interrupted")
