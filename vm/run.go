package vm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
		cfg.Append = append(append([]string(nil), cfg.Append...), icountCmdline...)
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

// boot runs one QEMU. With untilReady it stops at the agent's ready
// event (the KVM probe).
func boot(ctx context.Context, cfg Config, res *Result, onEvent func(event.Event), untilReady bool) error {
	start := time.Now()
	defer func() { res.Duration = time.Since(start) }()
	for _, f := range []string{cfg.Kernel, cfg.Initrd} {
		if _, err := os.Stat(f); err != nil {
			return infra("boot", err)
		}
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "kci-vm-")
		if err != nil {
			return infra("run dir", err)
		}
		cfg.Dir = d
	}
	res.Console = filepath.Join(cfg.Dir, "console.log")
	// Unix socket paths are limited to 108 bytes: keep them short, and
	// private to this boot.
	sockDir, err := os.MkdirTemp("", "kci-q")
	if err != nil {
		return infra("socket dir", err)
	}
	defer func() { _ = os.RemoveAll(sockDir) }()
	paths := Paths{
		QMP:    filepath.Join(sockDir, "qmp"),
		Events: filepath.Join(sockDir, "ev"),
	}
	if RecordsReplay(cfg, res.Clock) {
		// Removed with the sockets: the numbers, not the log, are kept.
		paths.Replay = filepath.Join(sockDir, "replay.rr")
	}
	if cfg.Interactive {
		paths.ConsoleLog = res.Console
	}
	args, err := QemuArgs(cfg, paths)
	if err != nil {
		return infra("qemu args", err)
	}
	res.Args = append([]string{cfg.QEMU}, args...)

	var (
		stdin   io.Reader
		stdout  io.Writer
		lines   chan string
		logFile *os.File
		pr, pw  *os.File
	)
	if cfg.Interactive {
		stdin, stdout = os.Stdin, os.Stdout
	} else {
		if logFile, err = os.Create(res.Console); err != nil {
			return infra("console log", err)
		}
		defer func() { _ = logFile.Close() }()
		if pr, pw, err = os.Pipe(); err != nil {
			return infra("console pipe", err)
		}
		defer func() { _ = pr.Close() }()
		stdout = pw
	}
	m, err := startMachine(cfg.QEMU, args, stdin, stdout, cfg.Interactive)
	if pw != nil {
		_ = pw.Close() // QEMU holds the write end; EOF follows its exit
	}
	if err != nil {
		return err
	}
	res.PID = m.pid()
	// Readers stop handing over once the run is decided (stop), but the
	// console reader keeps copying to console.log until QEMU is gone.
	stop := make(chan struct{})
	consoleDone := make(chan struct{})
	defer func() {
		close(stop)
		_ = m.kill()
		if lines != nil {
			select {
			case <-consoleDone:
			case <-time.After(drainTimeout):
			}
		}
	}()
	if !cfg.Interactive {
		lines = make(chan string, 256)
		go func() {
			defer close(consoleDone)
			readConsole(pr, logFile, cfg.Console, lines, stop)
		}()
	}

	mon, err := dialQMP(ctx, paths.QMP, m.exited)
	if err != nil {
		return startError(ctx, m, "qmp", err)
	}
	defer mon.close()
	conn, err := dialEvents(ctx, paths.Events, m.exited)
	if err != nil {
		return startError(ctx, m, "event channel", err)
	}
	defer func() { _ = conn.Close() }()
	if st, err := mon.status(ctx); err != nil {
		return startError(ctx, m, "qmp", err)
	} else if st != "prelaunch" && st != "paused" {
		return infra("qmp", fmt.Errorf("qemu is %q before start, want paused", st))
	}
	if len(cfg.Pin) > 0 {
		tids, err := mon.vcpuThreads(ctx)
		if err != nil {
			return startError(ctx, m, "pin", err)
		}
		res.Pins = PinPlan(tids, cfg.Pin)
		if err := applyPins(res.Pins); err != nil {
			return infra("pin", err)
		}
	}
	events := make(chan agentMsg, 64)
	go readEvents(conn, events, stop)
	if err := mon.cont(ctx); err != nil {
		return startError(ctx, m, "qmp", err)
	}
	started := time.Now()

	l := &loop{cfg: cfg, res: res, m: m, mon: mon, onEvent: onEvent, untilReady: untilReady,
		started: started, tail: consoleTail{max: 40}}
	return l.run(ctx, lines, events)
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

// loop is the state of a booted machine: it follows the console, the
// agent's events, QEMU's exit and the deadlines until the run is decided.
type loop struct {
	cfg        Config
	res        *Result
	m          *machine
	mon        *monitor
	onEvent    func(event.Event)
	untilReady bool
	started    time.Time

	wd       Watchdog
	tail     consoleTail
	ready    bool
	step     string
	stepDur  time.Duration
	agentErr *event.ErrorData
	exited   bool
}

func (l *loop) run(ctx context.Context, lines <-chan string, events <-chan agentMsg) error {
	var (
		bootC, stepC, quietC, graceC, drainC <-chan time.Time
		quiet                                *time.Timer
		stepT                                *time.Timer
	)
	exited := l.m.exited
	if !l.cfg.Interactive {
		boot := time.NewTimer(l.cfg.BootTimeout)
		defer boot.Stop()
		bootC = boot.C
	}
	setStep := func(name string, d time.Duration) {
		if stepT != nil {
			stepT.Stop()
			stepC = nil
		}
		l.step, l.stepDur = name, d
		if d > 0 && !l.cfg.Interactive {
			stepT = time.NewTimer(d)
			stepC = stepT.C
		}
	}
	defer func() {
		if stepT != nil {
			stepT.Stop()
		}
	}()

	for {
		if l.exited && lines == nil && events == nil {
			return l.finish()
		}
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			l.tail.add(line)
			if l.wd.Feed(line) {
				return l.crash()
			}
			if l.wd.Pending() {
				if quiet == nil {
					quiet = time.NewTimer(crashQuiet)
					defer quiet.Stop()
				} else {
					quiet.Reset(crashQuiet)
				}
				quietC = quiet.C
			}

		case msg, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if msg.err != nil {
				return infra("event channel", msg.err)
			}
			ev := msg.ev
			l.res.Events = append(l.res.Events, ev)
			if l.onEvent != nil {
				l.onEvent(ev)
			}
			switch ev.Type {
			case event.Ready:
				if l.ready {
					continue
				}
				l.ready, bootC = true, nil
				l.res.BootToReady = time.Since(l.started)
				var h event.Hello
				if ev.Decode(&h) == nil {
					l.res.Hello = &h
				}
				if l.untilReady {
					return nil
				}
				setStep("agent", l.cfg.StepTimeout)
			case event.StepBeg:
				var sd event.StepData
				if err := ev.Decode(&sd); err != nil {
					return infra("event channel", err)
				}
				d := sd.Timeout
				if d == 0 {
					d = l.cfg.StepTimeout
				}
				setStep(sd.Name, d)
			case event.Error:
				var ed event.ErrorData
				if ev.Decode(&ed) == nil {
					l.agentErr = &ed
				}
			case event.Done:
				var dd event.DoneData
				if err := ev.Decode(&dd); err != nil {
					return infra("event channel", err)
				}
				l.res.Done, l.res.OK = true, dd.OK
				setStep("", 0)
				grace := time.NewTimer(doneGrace)
				defer grace.Stop()
				graceC = grace.C
			}

		case <-exited:
			exited, l.exited = nil, true
			drain := time.NewTimer(drainTimeout)
			defer drain.Stop()
			drainC = drain.C

		case <-drainC:
			return l.finish()

		case <-quietC:
			return l.crash()

		case <-graceC:
			// The agent said done but the guest did not power off; the
			// results are complete, so stop it.
			_ = l.mon.quit(ctx)
			select {
			case <-l.m.exited:
			case <-time.After(2 * time.Second):
			}
			return l.finish()

		case <-bootC:
			return &BootError{
				Reason:  fmt.Sprintf("the agent was not ready within %v%s", l.cfg.BootTimeout, l.qemuStatus(ctx)),
				Tail:    l.tail.String(),
				Console: l.res.Console,
			}

		case <-stepC:
			return &TimeoutError{Step: l.step, Timeout: l.stepDur, Tail: l.tail.String(), Console: l.res.Console}

		case <-ctx.Done():
			return ctxError(ctx, l.stepName())
		}
	}
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
