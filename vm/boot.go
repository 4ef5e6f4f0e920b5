package vm

import (
	"context"
	"fmt"
	"io"
	"net"
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
	paths, cleanup, err := prepare(&cfg, res)
	if err != nil {
		return err
	}
	defer cleanup()
	con, err := openConsole(cfg, res.Console)
	if err != nil {
		return err
	}
	defer con.close()
	m, err := startMachine(cfg.QEMU, res.Args[1:], con.stdin, con.stdout, cfg.Interactive)
	con.handedOver()
	if err != nil {
		return err
	}
	res.PID = m.pid()
	// Readers stop handing over once the run is decided (stop), but the
	// console reader keeps copying to console.log until QEMU is gone.
	stop := make(chan struct{})
	lines := con.follow(cfg, stop)
	defer func() {
		close(stop)
		_ = m.kill()
		con.drain()
	}()
	mon, conn, err := connect(ctx, cfg, res, m, paths)
	if err != nil {
		return err
	}
	defer mon.close()
	defer func() { _ = conn.Close() }()
	events := make(chan agentMsg, 64)
	go readEvents(conn, events, stop)
	if err := mon.cont(ctx); err != nil {
		return startError(ctx, m, "qmp", err)
	}
	cont := time.Now()
	pc.mark(PhaseFirmware, cont)
	l := &loop{cfg: cfg, res: res, m: m, mon: mon, onEvent: onEvent, untilReady: untilReady,
		started: cont, tail: consoleTail{max: 40}, pc: pc}
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
		QMP:    filepath.Join(sockDir, "qmp"),
		Events: filepath.Join(sockDir, "ev"),
	}
	if RecordsReplay(*cfg, res.Clock) {
		// Removed with the sockets: the numbers, not the log, are kept.
		paths.Replay = filepath.Join(sockDir, "replay.rr")
	}
	if cfg.Plugin != "" && GuestClock(*cfg) == ClockICount && cfg.Accel == AccelTCG {
		paths.Counts = filepath.Join(cfg.Dir, "counts.txt")
		res.Counts = paths.Counts
	}
	if cfg.Interactive {
		paths.ConsoleLog = res.Console
	}
	args, err := QemuArgs(*cfg, paths)
	if err != nil {
		cleanup()
		return Paths{}, nil, infra("qemu args", err)
	}
	res.Args = append([]string{cfg.QEMU}, args...)
	return paths, cleanup, nil
}

// console is where QEMU's serial console goes: the terminal when
// interactive, else a pipe that one reader copies to console.log and
// hands over line by line.
type console struct {
	stdin    io.Reader
	stdout   io.Writer
	log      *os.File
	pr, pw   *os.File
	lines    chan string
	finished chan struct{}
}

func openConsole(cfg Config, path string) (*console, error) {
	c := &console{}
	if cfg.Interactive {
		c.stdin, c.stdout = os.Stdin, os.Stdout
		return c, nil
	}
	var err error
	if c.log, err = os.Create(path); err != nil {
		return nil, infra("console log", err)
	}
	if c.pr, c.pw, err = os.Pipe(); err != nil {
		_ = c.log.Close() // the pipe's error is the news
		return nil, infra("console pipe", err)
	}
	c.stdout = c.pw
	return c, nil
}

// handedOver closes kci's copy of the write end: QEMU holds its own, and
// EOF follows its exit.
func (c *console) handedOver() {
	if c.pw != nil {
		_ = c.pw.Close()
	}
}

// follow starts the reader; nil when interactive (no lines to watch).
func (c *console) follow(cfg Config, stop <-chan struct{}) <-chan string {
	if cfg.Interactive {
		return nil
	}
	c.lines, c.finished = make(chan string, 256), make(chan struct{})
	go func() {
		defer close(c.finished)
		readConsole(c.pr, c.log, cfg.Console, c.lines, stop)
	}()
	return c.lines
}

// drain gives the reader a moment to copy QEMU's last words.
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
	if c.pr != nil {
		_ = c.pr.Close()
	}
	if c.log != nil {
		_ = c.log.Close()
	}
}

// connect dials QEMU's monitor and the agent's event channel, checks the
// guest is still paused, and pins the vCPU threads.
func connect(ctx context.Context, cfg Config, res *Result, m *machine, paths Paths) (*monitor, net.Conn, error) {
	mon, err := dialQMP(ctx, paths.QMP, m.exited)
	if err != nil {
		return nil, nil, startError(ctx, m, "qmp", err)
	}
	conn, err := dialEvents(ctx, paths.Events, m.exited)
	if err != nil {
		mon.close()
		return nil, nil, startError(ctx, m, "event channel", err)
	}
	fail := func(err error) (*monitor, net.Conn, error) {
		_ = conn.Close() // the setup's error is the news
		mon.close()
		return nil, nil, err
	}
	if st, err := mon.status(ctx); err != nil {
		return fail(startError(ctx, m, "qmp", err))
	} else if st != "prelaunch" && st != "paused" {
		return fail(infra("qmp", fmt.Errorf("qemu is %q before start, want paused", st)))
	}
	actx, cancel := context.WithTimeout(ctx, socketTimeout)
	defer cancel()
	if err := mon.awaitAccepted(actx, eventChardev); err != nil {
		return fail(startError(ctx, m, "event channel", err))
	}
	if len(cfg.Pin) > 0 {
		tids, err := mon.vcpuThreads(ctx)
		if err != nil {
			return fail(startError(ctx, m, "pin", err))
		}
		res.Pins = PinPlan(tids, cfg.Pin)
		if err := applyPins(res.Pins); err != nil {
			return fail(infra("pin", err))
		}
	}
	return mon, conn, nil
}
