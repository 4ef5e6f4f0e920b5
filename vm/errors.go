package vm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kci-dev/kci/internal/failure"
)

// The error types say whose fault a failed run is. CrashError, BootError
// and TimeoutError blame the kernel under test; AgentError is the guest
// suite giving up (the kernel or the suite); InfraError is the host's.

// CrashError is a kernel crash report found on the console.
type CrashError struct {
	Title   string // normalised: equal crashes on base and patched compare equal
	Frame   string // the guilty frame, if one was found
	Excerpt string // the report's first lines
	Console string // console log path
	// CPUs is where each vCPU was once the report had been printed, for
	// a guest still running then (a stall or lockup report names only
	// the CPUs it saw stuck); nil otherwise, with CPUsErr saying why
	// when QEMU could not tell.
	CPUs    []CPUState
	CPUsErr error
}

func (e *CrashError) Error() string {
	where := ""
	if len(e.CPUs) > 0 || e.CPUsErr != nil {
		where = "\nafter the report: " + whereCPUs(e.CPUs, e.CPUsErr)
	}
	return fmt.Sprintf("vm: guest crashed: %s%s\n%s", e.Title, where, e.Excerpt)
}

// BootError is a guest that never got its agent to say ready.
type BootError struct {
	Reason  string // e.g. "no ready within 30s", "qemu exited"
	Tail    string // last console lines
	Console string
}

func (e *BootError) Error() string {
	return fmt.Sprintf("vm: boot failed: %s\n%s", e.Reason, e.Tail)
}

// TimeoutError is a step (or the whole run) that overran its deadline.
// Timeout counts the time QEMU could run; Waited is the time on top that
// it waited for a CPU other processes held.
type TimeoutError struct {
	Step    string
	Timeout time.Duration
	Waited  time.Duration
	Tail    string
	Console string
	// CPUs is where each vCPU was when it timed out; CPUsErr why QEMU's
	// monitor could not say, if it could not.
	CPUs    []CPUState
	CPUsErr error
}

func (e *TimeoutError) Error() string {
	where := ""
	if len(e.CPUs) > 0 || e.CPUsErr != nil {
		where = "; " + whereCPUs(e.CPUs, e.CPUsErr)
	}
	return fmt.Sprintf("vm: step %q timed out after %v%s%s\n%s", e.Step, e.Timeout, waitedNote(e.Waited), where, e.Tail)
}

// waitedNote says how long a timed-out machine also waited for a CPU.
func waitedNote(waited time.Duration) string {
	if waited < time.Second {
		return ""
	}
	return fmt.Sprintf(" of run time (and %v more waiting for a CPU the host's other processes held)", waited.Round(time.Second))
}

// AgentError is the guest agent reporting that the plan failed.
type AgentError struct {
	Step    string
	Message string
}

func (e *AgentError) Error() string {
	if e.Step == "" {
		return fmt.Sprintf("vm: guest agent failed: %s", e.Message)
	}
	return fmt.Sprintf("vm: guest agent failed in step %q: %s", e.Step, e.Message)
}

// InfraError is a host-side failure: qemu missing or dying, sockets, files.
type InfraError struct {
	Op  string
	Err error
}

func (e *InfraError) Error() string { return fmt.Sprintf("vm: %s: %v", e.Op, e.Err) }
func (e *InfraError) Unwrap() error { return e.Err }

func infra(op string, err error) error { return &InfraError{Op: op, Err: err} }

// Kind classifies err by the types above; unknown errors are infra.
func Kind(err error) string {
	var (
		c *CrashError
		b *BootError
		t *TimeoutError
		a *AgentError
	)
	switch {
	case err == nil:
		return failure.None
	case errors.As(err, &c):
		return failure.Crash
	case errors.As(err, &b):
		return failure.Boot
	case errors.As(err, &t):
		return failure.Timeout
	case errors.As(err, &a):
		return failure.Agent
	case errors.Is(err, context.Canceled):
		return failure.Interrupted
	default:
		return failure.Infra
	}
}
