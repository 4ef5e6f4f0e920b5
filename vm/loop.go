package vm

import (
	"context"
	"fmt"
	"time"

	"github.com/kci-dev/kci/vm/event"
)

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
	pc         *phaseClock
	kernelSeen bool // the kernel's first console line has been seen
	// vcpuTIDs, when QEMU is fenced, are the threads whose waits for a
	// CPU stall the guest: the others wait behind them by design.
	vcpuTIDs []int

	wd       Watchdog
	tail     consoleTail
	ready    bool
	step     string
	stepDur  time.Duration
	agentErr *event.ErrorData
	exited   bool
	t        deadlines
	bootRun  *runClock // the boot deadline, in the time QEMU could run
	stepRun  *runClock // the step's, likewise
}

// deadlines are the loop's timers; a nil channel never fires.
type deadlines struct {
	boot, step, quiet, grace, drain *time.Timer
	bootC, stepC, quietC, graceC    <-chan time.Time
	drainC                          <-chan time.Time
}

func (d *deadlines) stop() {
	for _, t := range []*time.Timer{d.boot, d.step, d.quiet, d.grace, d.drain} {
		if t != nil {
			t.Stop()
		}
	}
}

// after (re)arms *t to fire in d and returns its channel.
func after(t **time.Timer, d time.Duration) <-chan time.Time {
	if *t == nil {
		*t = time.NewTimer(d)
	} else {
		(*t).Reset(d)
	}
	return (*t).C
}

func (l *loop) run(ctx context.Context, lines <-chan string, events <-chan agentMsg) error {
	defer l.t.stop()
	exited := l.m.exited
	if !l.cfg.Interactive {
		l.t.bootC = after(&l.t.boot, l.cfg.BootTimeout)
		l.bootRun = newRunClock(l.waits, l.cfg.BootTimeout)
	}
	for {
		if l.exited && lines == nil && events == nil {
			return l.finish()
		}
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
			} else if l.line(line) {
				return l.crashRunning(ctx)
			}
		case msg, ok := <-events:
			if !ok {
				events = nil
			} else if stop, err := l.event(msg); stop {
				return err
			}
		case <-exited:
			exited, l.exited = nil, true
			l.t.drainC = after(&l.t.drain, drainTimeout)
		case <-l.t.drainC:
			return l.finish()
		case <-l.t.quietC:
			return l.crashRunning(ctx)
		case <-l.t.graceC:
			return l.stopAfterDone(ctx)
		case now := <-l.t.bootC:
			left, waited := l.bootRun.remaining(now)
			if left > 0 {
				l.t.bootC = after(&l.t.boot, left)
				continue
			}
			cpus := whereCPUs(l.hangCPUs(ctx))
			return &BootError{
				Reason:  fmt.Sprintf("the agent was not ready within %v%s%s\nwhen it ran out of time: %s", l.cfg.BootTimeout, waitedNote(waited), l.qemuStatus(ctx), cpus),
				Tail:    l.tail.String(),
				Console: l.res.Console,
			}
		case now := <-l.t.stepC:
			left, waited := l.stepRun.remaining(now)
			if left > 0 {
				l.t.stepC = after(&l.t.step, left)
				continue
			}
			cpus, cpusErr := l.hangCPUs(ctx)
			return &TimeoutError{Step: l.step, Timeout: l.stepDur, Waited: waited, Tail: l.tail.String(), Console: l.res.Console,
				CPUs: cpus, CPUsErr: cpusErr}
		case <-ctx.Done():
			return ctxError(ctx, l.stepName())
		}
	}
}

// line follows one console line; true when it shows a crash. A line that
// starts an oops arms the quiet timer: the crash is called when the
// console has been quiet that long, with the whole report in the tail.
func (l *loop) line(line string) (crashed bool) {
	l.tail.add(line)
	if !l.ready && !l.kernelSeen && kernelLine.MatchString(line) {
		l.kernelSeen = true
		l.pc.mark(PhaseKernel, time.Now())
	}
	if l.wd.Feed(line) {
		return true
	}
	if l.wd.Pending() {
		l.t.quietC = after(&l.t.quiet, crashQuiet)
	}
	return false
}

// event follows one agent event; stop says the run is decided, with err.
func (l *loop) event(msg agentMsg) (stop bool, err error) {
	if msg.err != nil {
		return true, infra("event channel", msg.err)
	}
	ev := msg.ev
	l.res.Events = append(l.res.Events, ev)
	if l.onEvent != nil {
		l.onEvent(ev)
	}
	switch ev.Type {
	case event.Ready:
		return l.agentReady(ev), nil
	case event.StepBeg:
		var sd event.StepData
		if err := ev.Decode(&sd); err != nil {
			return true, infra("event channel", err)
		}
		d := sd.Timeout
		if d == 0 {
			d = l.cfg.StepTimeout
		}
		l.setStep(sd.Name, d)
		l.pc.mark(sd.Name, time.Now())
	case event.Error:
		var ed event.ErrorData
		if ev.Decode(&ed) == nil {
			l.agentErr = &ed
		}
	case event.Done:
		var dd event.DoneData
		if err := ev.Decode(&dd); err != nil {
			return true, infra("event channel", err)
		}
		l.res.Done, l.res.OK = true, dd.OK
		l.setStep("", 0)
		l.pc.mark(PhaseTeardown, time.Now())
		l.t.graceC = after(&l.t.grace, doneGrace)
	}
	return false, nil
}

// agentReady ends the boot deadline; true when the run stops there (the
// KVM probe).
func (l *loop) agentReady(ev event.Event) (stop bool) {
	if l.ready {
		return false
	}
	l.ready, l.t.bootC = true, nil
	now := time.Now()
	l.res.BootToReady = now.Sub(l.started)
	if !l.kernelSeen {
		l.pc.rename(PhaseFirmware, PhaseEarly)
	}
	var h event.Hello
	if ev.Decode(&h) == nil {
		l.res.Hello = &h
	}
	if l.untilReady {
		l.pc.mark(PhaseTeardown, now)
		return true
	}
	l.pc.mark(PhaseAgent, now)
	l.setStep("agent", l.cfg.StepTimeout)
	return false
}

// setStep starts the named step's deadline (none for d 0 or interactive).
func (l *loop) setStep(name string, d time.Duration) {
	if l.t.step != nil {
		l.t.step.Stop()
	}
	l.t.stepC = nil
	l.step, l.stepDur = name, d
	if d > 0 && !l.cfg.Interactive {
		l.t.stepC = after(&l.t.step, d)
		l.stepRun = newRunClock(l.waits, d)
	}
}

// waits reads how long each of QEMU's threads has waited for a CPU.
func (l *loop) waits() map[int]time.Duration {
	w := threadWaits(l.m.pid())
	if len(l.vcpuTIDs) == 0 {
		return w
	}
	only := make(map[int]time.Duration, len(l.vcpuTIDs))
	for _, t := range l.vcpuTIDs {
		only[t] = w[t]
	}
	return only
}

// stopAfterDone: the agent said done but the guest did not power off;
// the results are complete, so stop it.
func (l *loop) stopAfterDone(ctx context.Context) error {
	_ = l.mon.quit(ctx)
	select {
	case <-l.m.exited:
	case <-time.After(2 * time.Second):
	}
	return l.finish()
}
