package vm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kci-dev/kci/vm/event"
)

// Result is what one boot produced. Run returns it with its error too, as
// far as the run got.
type Result struct {
	Accel       Accel         `json:"accel"`
	Clock       Clock         `json:"clock"`
	AccelReason string        `json:"accel_reason"`
	CPU         string        `json:"cpu"`                  // QEMU's -cpu model
	CPUReason   string        `json:"cpu_reason,omitempty"` // why not the accelerator's default
	Args        []string      `json:"qemu_args"`
	PID         int           `json:"pid"`
	Console     string        `json:"console"`       // console log path
	BootToReady time.Duration `json:"boot_to_ready"` // cont to the agent's ready event
	Hello       *event.Hello  `json:"hello,omitempty"`
	Pins        []Pinning     `json:"pins,omitempty"`
	Events      []event.Event `json:"events"`
	Done        bool          `json:"done"` // the agent's final event arrived
	OK          bool          `json:"ok"`   // and said the plan succeeded
	Duration    time.Duration `json:"duration"`
	// Phases cut Duration by where the host's wall time went (see Phase):
	// they sum to it exactly.
	Phases []Phase `json:"phases,omitempty"`
	// Counts is the exact-count plugin's output ("" = no plugin loaded).
	Counts string `json:"counts,omitempty"`
	// MainLoop is the fence of a boot of several vCPUs under icount.
	MainLoop *MainLoop `json:"main_loop,omitempty"`
}

const (
	// crashQuiet finalises a crash report that has no end marker once
	// the console has been quiet this long.
	crashQuiet = 2 * time.Second
	// doneGrace is how long the guest gets to power off after done (the
	// agent does so at once; a crash on the way down is still caught).
	doneGrace = 3 * time.Second
	// drainTimeout bounds reading what QEMU wrote before it exited.
	drainTimeout = 2 * time.Second
)

// Run boots cfg.Kernel with cfg.Initrd, passes every agent event to
// onEvent (which may be nil) as it arrives, and returns once the agent's
// done event has arrived and QEMU is gone. Anything else is an error:
// *CrashError, *BootError, *TimeoutError, *AgentError or *InfraError
// (see Kind). QEMU is killed and reaped, and its sockets removed, on
// every path.
func Run(ctx context.Context, cfg Config, onEvent func(event.Event)) (*Result, error) {
	cfg = cfg.withDefaults()
	res := &Result{}
	v, err := resolveAccel(ctx, cfg)
	if err != nil {
		return res, err
	}
	cfg.Accel, res.Accel, res.AccelReason = v.Accel, v.Accel, v.Reason
	cfg.CPUModel, res.CPU, res.CPUReason = v.CPU, v.CPU, v.CPUReason
	res.Clock = GuestClock(cfg)
	switch res.Clock {
	case ClockHost:
		cfg.Append = append(append([]string(nil), cfg.Append...), TCGClockArgs()...)
	case ClockICount:
		// The TSC counts instructions too: the kernel calibrates it
		// against the (equally virtual) PIT, no host rate applies.
		cfg.Append = append(append([]string(nil), cfg.Append...), icountCmdline(cfg.withDefaults())...)
	}
	if cfg.Accel != AccelKVM || v.CPUReason == "configured" {
		return res, boot(ctx, cfg, res, onEvent, false)
	}
	// kci picked the model: one KVM refuses at start is retried without
	// the feature (--accel kvm on a host the probe never saw).
	model, why, err := bootKVM(ctx, cfg, res, onEvent, false)
	if why != "" {
		res.CPU, res.CPUReason = model, why
	}
	return res, err
}

// errQEMUExited marks QEMU dying on its own before the guest started:
// a bad option, or an accelerator that does not work on this host.
var errQEMUExited = errors.New("qemu exited")

// startError reports a failure while setting QEMU up: usually QEMU itself
// refused to start (bad option, no KVM), which its stderr says. A socket
// error is often the first sign of that, so QEMU gets a moment to exit.
func startError(ctx context.Context, m *machine, op string, err error) error {
	if ctx.Err() != nil {
		return ctxError(ctx, "start")
	}
	select {
	case <-m.exited:
		return infra(op, fmt.Errorf("%w (%s):\n%s", errQEMUExited, m.exitStatus(), m.stderr.String()))
	case <-time.After(2 * time.Second):
	}
	return infra(op, err)
}

func ctxError(ctx context.Context, step string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &TimeoutError{Step: step + " (run deadline)"}
	}
	return fmt.Errorf("vm: %s: %w", step, ctx.Err())
}

func (l *loop) stepName() string {
	if !l.ready {
		return "boot"
	}
	if l.step == "" {
		return "agent"
	}
	return l.step
}

func (l *loop) qemuStatus(ctx context.Context) string {
	st, err := l.mon.status(ctx)
	if err != nil {
		return ""
	}
	return " (qemu: " + st + ")"
}

func (l *loop) crash() error {
	r := l.wd.Report()
	return &CrashError{Title: r.Title, Frame: r.Frame, Excerpt: r.Excerpt, Console: l.res.Console}
}

// crashRunning is crash for a guest whose QEMU still runs: it also says
// where each vCPU was.
func (l *loop) crashRunning(ctx context.Context) error {
	err := l.crash().(*CrashError)
	err.CPUs, err.CPUsErr = l.hangCPUs(ctx)
	return err
}

// finish decides a run whose QEMU has exited.
func (l *loop) finish() error {
	switch {
	case l.wd.Pending():
		return l.crash()
	case l.res.Done && l.agentErr != nil:
		return &AgentError{Step: l.agentErr.Step, Message: l.agentErr.Message}
	case l.res.Done && !l.res.OK:
		return &AgentError{Message: "the agent reported failure without saying why"}
	case l.res.Done, l.cfg.Interactive:
		return nil
	case l.m.waitErr != nil:
		return infra("qemu", fmt.Errorf("%w (%s):\n%s", errQEMUExited, l.m.exitStatus(), l.m.stderr.String()))
	case !l.ready:
		return &BootError{Reason: "the guest stopped before the agent was ready", Tail: l.tail.String(), Console: l.res.Console}
	default:
		return &CrashError{Title: "guest stopped before done", Excerpt: l.tail.String(), Console: l.res.Console}
	}
}
