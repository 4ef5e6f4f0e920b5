package vm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kci-dev/kci/vm/event"
)

// boot runs one QEMU. With untilReady it stops at the agent's ready
// event (the KVM probe).
func boot(ctx context.Context, cfg Config, res *Result, onEvent func(event.Event), untilReady bool) error {
	start := time.Now()
	pc := newPhaseClock(start)
	defer func() {
		// One clock reading closes both, so the phases sum to Duration.
		end := time.Now()
		res.Duration, res.Phases = end.Sub(start), pc.close(end)
	}()
	// Released after the deferred kill below: the CPU stays taken while
	// this QEMU lives.
	hc, err := holdFence(ctx, cfg, res, pc)
	if err != nil {
		return err
	}
	defer hc.release()
	paths, cleanup, err := prepare(&cfg, res)
	if err != nil {
		return err
	}
	defer cleanup()
	con, err := openConsole(cfg, paths)
	if err != nil {
		return err
	}
	defer con.close()
	m, err := startMachine(cfg.QEMU, res.Args[1:], cfg.Interactive)
	if err != nil {
		return err
	}
	res.PID = m.pid()
	// Readers stop handing over once the run is decided (stop), but the
	// console reader keeps following console.log (for the tee) until QEMU
	// is gone.
	stop := make(chan struct{})
	lines, events := con.follow(cfg, m.exited, stop)
	defer func() {
		close(stop)
		_ = m.kill()
		con.drain()
	}()
	mon, vcpuTIDs, err := connect(ctx, cfg, res, m, paths, hc)
	if err != nil {
		return err
	}
	defer mon.close()
	wait := qmpTimeout
	if res.MainLoop.fenced() {
		wait = max(wait, cfg.BootTimeout)
	}
	// The guest starts when QEMU takes the command, not when it answers.
	cont := time.Now()
	if err := mon.cont(ctx, wait); err != nil {
		return startError(ctx, m, "qmp", err)
	}
	if res.MainLoop.fenced() {
		mon.onCall = unfenceOnce(m.pid(), res.MainLoop)
	}
	stressMainLoop(cfg.MainLoopStress, mon, stop)
	pc.mark(PhaseFirmware, cont)
	l := &loop{cfg: cfg, res: res, m: m, mon: mon, onEvent: onEvent, untilReady: untilReady,
		started: cont, tail: consoleTail{max: 40}, pc: pc, vcpuTIDs: vcpuTIDs}
	return l.run(ctx, lines, events)
}

// prepare checks the boot's files, makes its directories and QEMU's
// command line (res.Args); cleanup removes the sockets' directory.
func prepare(cfg *Config, res *Result) (Paths, func(), error) {
	for _, f := range []string{cfg.Kernel, cfg.Initrd} {
		if _, err := os.Stat(f); err != nil {
			return Paths{}, nil, infra("boot", err)
		}
	}
	if cfg.Dir == "" {
		d, err := os.MkdirTemp("", "kci-vm-")
		if err != nil {
			return Paths{}, nil, infra("run dir", err)
		}
		cfg.Dir = d
	}
	res.Console = filepath.Join(cfg.Dir, "console.log")
	// Unix socket paths are limited to 108 bytes: keep them short, and
	// private to this boot.
	sockDir, err := os.MkdirTemp("", "kci-q")
	if err != nil {
		return Paths{}, nil, infra("socket dir", err)
	}
	cleanup := func() { _ = os.RemoveAll(sockDir) }
	paths := Paths{
		QMP:     filepath.Join(sockDir, "qmp"),
		Events:  filepath.Join(sockDir, "events"),
		Console: res.Console,
	}
	if RecordsReplay(*cfg, res.Clock) {
		// Removed with the sockets: the numbers, not the log, are kept.
		paths.Replay = filepath.Join(sockDir, "replay.rr")
	}
	if cfg.Plugin != "" && GuestClock(*cfg) == ClockICount && cfg.Accel == AccelTCG {
		paths.Counts = filepath.Join(cfg.Dir, "counts.txt")
		res.Counts = paths.Counts
	}
	args, err := QemuArgs(*cfg, paths)
	if err != nil {
		cleanup()
		return Paths{}, nil, infra("qemu args", err)
	}
	res.Args = append([]string{cfg.QEMU}, args...)
	return paths, cleanup, nil
}

// console holds kci's ends of the guest's two channels: the serial
// console (a file QEMU writes, or the terminal when interactive, logged
// to the file) and the agent's port. Each is followed line by line.
type console struct {
	log, ev  *follower
	finished chan struct{}
}

func openConsole(cfg Config, p Paths) (*console, error) {
	c := &console{}
	var err error
	if c.ev, err = openFollower(p.Events); err != nil {
		return nil, infra("event channel", err)
	}
	if cfg.Interactive {
		return c, nil
	}
	if c.log, err = openFollower(p.Console); err != nil {
		_ = c.ev.Close() // the console's error is the news
		return nil, infra("console log", err)
	}
	return c, nil
}

// follow starts the readers. The console's line channel is nil when
// interactive (no lines to watch); its reader ends when QEMU has exited,
// the events' also when the run is decided (stop).
func (c *console) follow(cfg Config, exited, stop <-chan struct{}) (<-chan string, <-chan agentMsg) {
	c.ev.start(exited, stop)
	events := make(chan agentMsg, 64)
	go readEvents(c.ev, events, stop)
	if cfg.Interactive {
		return nil, events
	}
	c.log.start(exited, nil)
	lines := make(chan string, 256)
	c.finished = make(chan struct{})
	go func() {
		defer close(c.finished)
		readConsole(c.log, cfg.Console, lines, stop)
	}()
	return lines, events
}

// drain gives the reader a moment to copy QEMU's last words to the tee.
func (c *console) drain() {
	if c.finished == nil {
		return
	}
	select {
	case <-c.finished:
	case <-time.After(drainTimeout):
	}
}

func (c *console) close() {
	_ = c.ev.Close()
	if c.log != nil {
		_ = c.log.Close()
	}
}

// connect dials QEMU's monitor, checks the guest is still paused, and
// fences QEMU on hc's CPU or pins the vCPU threads. With a fence it
// returns the vCPU threads, whose waits alone stall the guest.
func connect(ctx context.Context, cfg Config, res *Result, m *machine, paths Paths, hc *hostCPU) (*monitor, []int, error) {
	mon, err := dialQMP(ctx, paths.QMP, m.exited)
	if err != nil {
		return nil, nil, startError(ctx, m, "qmp", err)
	}
	fail := func(err error) (*monitor, []int, error) {
		mon.close()
		return nil, nil, err
	}
	if st, err := mon.status(ctx); err != nil {
		return fail(startError(ctx, m, "qmp", err))
	} else if st != "prelaunch" && st != "paused" {
		return fail(infra("qmp", fmt.Errorf("qemu is %q before start, want paused", st)))
	}
	if hc == nil && len(cfg.Pin) == 0 {
		return mon, nil, nil
	}
	tids, err := mon.vcpuThreads(ctx)
	if err != nil {
		return fail(startError(ctx, m, "pin", err))
	}
	if hc != nil {
		if err := fence(m.pid(), hc, res.MainLoop); err != nil {
			return fail(infra("fence", err))
		}
		if !res.MainLoop.fenced() {
			tids = nil // unfenced, every thread's wait stalls the guest
		}
		return mon, tids, nil
	}
	res.Pins = PinPlan(tids, cfg.Pin)
	if err := applyPins(res.Pins); err != nil {
		return fail(infra("pin", err))
	}
	return mon, nil, nil
}
