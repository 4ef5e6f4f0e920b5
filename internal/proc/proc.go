// Package proc is how kci runs a subprocess: under a deadline, as the
// leader of its own process group that is killed whole on cancel or
// timeout (make's and sh's children included), killed with its group when
// kci dies (even by SIGKILL: the kernel kills the child, a reaper its
// group), with an environment that holds none of kci's secrets, and with
// the tail of its output inside the error when it fails.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kci-dev/kci/internal/childenv"
	"github.com/kci-dev/kci/internal/lines"
)

const (
	// DefaultWaitDelay bounds the wait for a killed group to die, and for
	// pipes a leftover grandchild holds open after the child exits.
	DefaultWaitDelay = 5 * time.Second
	// TailLines is how much of a failed command's output its error carries.
	TailLines = 20
)

// Cmd is one subprocess. Only Name is required.
type Cmd struct {
	Name string
	Args []string
	Dir  string
	// Env is added to the child's environment, after (so over) the
	// inherited entries.
	Env []string
	// FullEnv gives the child kci's whole environment, secrets included.
	// By default it gets childenv.Environ: a child can be the pull
	// request's own code, which must not see kci's tokens.
	FullEnv bool
	Stdin   io.Reader
	// Timeout is the child's deadline on top of ctx's; 0 leaves ctx's alone.
	Timeout time.Duration
	// WaitDelay replaces DefaultWaitDelay when set.
	WaitDelay time.Duration
	// Tee also receives the output as it comes (a build log, a console).
	// With StdoutOnly, stdout and stderr may write to it at once.
	Tee io.Writer
	// StdoutOnly makes the returned output stdout alone (a decompressed
	// file, a query's answer); stderr then goes to Tee and the error.
	StdoutOnly bool
	// Nice is the least niceness the child starts with (0: kci's own),
	// for work that should take the CPU only where a boot leaves it: the
	// child is forked from a thread that has it, so make's compilers
	// inherit it with no window at full priority.
	Nice int
	// NoReaper starts no reaper for the child's group: for the guest
	// agent, whose VM ends with it, where the reaper would be one more
	// process (and /bin/sh may be u-root's gosh). The child still has
	// Pdeathsig.
	NoReaper bool
	// CPU, when set, has the CPU time (user and system) the child and the
	// descendants it reaped used added to it when it ends: what a build's
	// make and its compilers cost, beside the wall time it took.
	CPU *time.Duration
}

// Error is a command that failed: it could not start, exited non-zero,
// was killed, or outlived its deadline or its context.
type Error struct {
	Command string // name and arguments
	// Err is a *TimeoutError when the command's own Timeout ended it,
	// ctx.Err() when the caller's context did, else exec's error: an
	// *exec.ExitError for an exit status.
	Err error
	// Tail is the end of the output (of stderr with StdoutOnly); empty on
	// timeout and cancel, whose output explains nothing.
	Tail string
}

func (e *Error) Error() string {
	if e.Tail == "" {
		return fmt.Sprintf("%s: %v", e.Command, e.Err)
	}
	return fmt.Sprintf("%s: %v\n%s", e.Command, e.Err, e.Tail)
}

func (e *Error) Unwrap() error { return e.Err }

// TimeoutError is a command's own deadline (Cmd.Timeout) passing: it was
// killed then. It is context.DeadlineExceeded to errors.Is, and says in
// plain words how long the command had, which a bare "context deadline
// exceeded" does not.
type TimeoutError struct{ After time.Duration }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("did not finish within %v, killed", e.After)
}

func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// ExitCode is the status a command exited with on its own: (0, true) for
// err == nil, (status, true) for an exit status, and ok false when it was
// killed, timed out, was canceled or never started. Callers that give an
// exit status a meaning (git apply's 1: "does not apply") test it here so
// a timeout is never mistaken for a verdict.
func ExitCode(err error) (code int, ok bool) {
	if err == nil {
		return 0, true
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Exited() {
		return ee.ExitCode(), true
	}
	return -1, false
}

// Run runs c to completion and returns its output (stdout and stderr
// interleaved, or stdout alone with StdoutOnly), also when it fails.
func (c Cmd) Run(ctx context.Context) ([]byte, error) {
	p, err := c.Start(ctx)
	if err != nil {
		return nil, err
	}
	return p.Wait()
}

// Process is a started Cmd. Wait must be called to reap it and release
// its deadline.
type Process struct {
	c      Cmd
	cmd    *exec.Cmd
	ctx    context.Context
	parent context.Context // the caller's: its end is not the command's timeout
	cancel context.CancelFunc
	out    bytes.Buffer // what Wait returns
	errOut bytes.Buffer // stderr with StdoutOnly, for the error's tail
}

// Start starts c for a caller that does other work while it runs.
func (c Cmd) Start(ctx context.Context) (*Process, error) {
	p := &Process{c: c, parent: ctx}
	if c.Timeout > 0 {
		p.ctx, p.cancel = context.WithTimeout(ctx, c.Timeout)
	} else {
		p.ctx, p.cancel = context.WithCancel(ctx)
	}
	cmd := exec.CommandContext(p.ctx, c.Name, c.Args...)
	cmd.Dir = c.Dir
	cmd.Env = c.environ()
	cmd.Stdin = c.Stdin
	// Pdeathsig: a kci killed by SIGKILL (no cancel runs) takes the child
	// with it. The child's own children are not covered by it: the reaper
	// kills the child's group when kci is gone (reaper.go).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// The negative pid is the group: make's compilers, sh's background
	// jobs die with their leader instead of holding the pipes open.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = DefaultWaitDelay
	if c.WaitDelay > 0 {
		cmd.WaitDelay = c.WaitDelay
	}
	cmd.Stdout = p.writer(&p.out)
	cmd.Stderr = cmd.Stdout
	if c.StdoutOnly {
		cmd.Stderr = p.writer(&p.errOut)
	}
	p.cmd = cmd
	if !c.NoReaper {
		if err := startReaper(); err != nil {
			p.cancel()
			return nil, &Error{Command: c.String(), Err: err}
		}
	}
	if err := onSpawnThread(c.Nice, cmd.Start); err != nil {
		p.cancel()
		return nil, &Error{Command: c.String(), Err: err}
	}
	if !c.NoReaper {
		reaperTell('+', cmd.Process.Pid)
	}
	return p, nil
}

// spawners are the threads children are forked from, one per niceness.
var spawners struct {
	sync.Mutex
	by map[int]chan func()
}

// onSpawnThread runs start on an OS thread that never exits and has at
// least niceness nice. Pdeathsig fires when the forking *thread* exits,
// not the process, and Go ends a thread whenever a goroutine returns while
// locked to it (suite's netns code does): a child forked there would be
// killed with kci alive. Niceness is a thread's own on Linux and a child
// takes its forking thread's, so a thread per niceness sets it once.
func onSpawnThread(nice int, start func() error) error {
	ch, err := spawner(nice)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	ch <- func() { done <- start() }
	return <-done
}

func spawner(nice int) (chan func(), error) {
	spawners.Lock()
	defer spawners.Unlock()
	if ch, ok := spawners.by[nice]; ok {
		return ch, nil
	}
	ch, ready := make(chan func()), make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as kci
		err := raiseNice(nice)
		ready <- err
		if err != nil {
			return // nothing was forked from this thread: it may end
		}
		for f := range ch {
			f()
		}
	}()
	if err := <-ready; err != nil {
		return nil, err
	}
	if spawners.by == nil {
		spawners.by = map[int]chan func(){}
	}
	spawners.by[nice] = ch
	return ch, nil
}

// raiseNice lowers the calling thread's priority to niceness nice unless
// it is already lower. Raising one's niceness needs no privilege.
func raiseNice(nice int) error {
	if nice <= 0 {
		return nil
	}
	tid := syscall.Gettid()
	// getpriority(2)'s raw value is 20 - nice: the libc wrapper's sign
	// games are not Go's.
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return fmt.Errorf("niceness: %w", err)
	}
	if 20-prio >= nice {
		return nil
	}
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
		return fmt.Errorf("niceness %d: %w", nice, err)
	}
	return nil
}

// Pid is the child's process id, which is also its process group's.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Wait waits for the process to end and returns what Run returns.
func (p *Process) Wait() ([]byte, error) {
	defer p.cancel()
	err := p.cmd.Wait()
	endGroup(p.cmd.Process.Pid)
	if st := p.cmd.ProcessState; st != nil && p.c.CPU != nil {
		// wait4's rusage: the child's own time and its reaped children's.
		*p.c.CPU += st.UserTime() + st.SystemTime()
	}
	out := p.out.Bytes()
	if err == nil {
		return out, nil
	}
	if p.ctx.Err() != nil {
		cause := p.ctx.Err()
		if p.parent.Err() == nil && errors.Is(cause, context.DeadlineExceeded) {
			cause = &TimeoutError{After: p.c.Timeout}
		}
		return out, &Error{Command: p.c.String(), Err: cause}
	}
	evidence := out
	if p.c.StdoutOnly {
		evidence = p.errOut.Bytes()
	}
	return out, &Error{Command: p.c.String(), Err: err, Tail: lines.Last(string(evidence), TailLines)}
}

func (p *Process) writer(buf *bytes.Buffer) io.Writer {
	if p.c.Tee == nil {
		return buf
	}
	return io.MultiWriter(buf, p.c.Tee)
}

func (c Cmd) environ() []string {
	if c.FullEnv {
		return append(os.Environ(), c.Env...)
	}
	return childenv.Environ(c.Env...)
}

// String is the command line as errors name it.
func (c Cmd) String() string {
	return strings.Join(append([]string{c.Name}, c.Args...), " ")
}
