package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Several vCPUs under icount take turns on one host thread, and QEMU's
// main loop may read or move their shared clock whenever it wakes: a warp
// of the clock while one vCPU has just halted and its last instructions
// are not yet counted moves every later switch point. Fenced, every QEMU
// thread is SCHED_FIFO at one priority on one host CPU, so the main loop
// runs only when the vCPU thread blocks (its vCPUs all idle, or waiting
// for the lock the main loop holds): at points the instruction count
// decides. docs/internals.md has the measurements.

// MainLoop is how a boot's QEMU main loop was kept from moving the
// guest's counts.
type MainLoop struct {
	// Fenced: every QEMU thread ran SCHED_FIFO on HostCPU alone.
	Fenced  bool `json:"fenced"`
	HostCPU int  `json:"host_cpu"`
	// Why says why not, when not.
	Why string `json:"why,omitempty"`
}

// String is the boot's record of it ("fenced on host CPU 1").
func (f *MainLoop) String() string {
	if f == nil {
		return ""
	}
	if f.Fenced {
		return "fenced on host CPU " + strconv.Itoa(f.HostCPU)
	}
	return "not fenced: " + f.Why
}

// needsFence: batch icount boots of several vCPUs (one vCPU records a
// replay log, which already orders the main loop's events).
func needsFence(c Config, clock Clock) bool {
	return Repeatable(c, clock) && c.withDefaults().CPUs > 1
}

// fenceLockDir holds one lock file per host CPU, shared by every kci on
// the machine: two fenced QEMUs on one CPU would starve each other.
var fenceLockDir = filepath.Join(os.TempDir(), "kci-hostcpu")

// hostCPU is a host CPU held for one fenced QEMU until release.
type hostCPU struct {
	cpu  int
	lock *os.File
}

func (h *hostCPU) release() {
	if h != nil {
		_ = h.lock.Close() // closing drops the flock
	}
}

// fencePool is the host CPUs a fenced QEMU may take: the configured pin
// list, else the CPUs kci may run on less the first. A fenced QEMU leaves
// everything else on its CPU the scheduler's few percent, so the rest of
// the machine (kci itself, builds, unfenced boots) keeps the first CPU; on
// a host of two, fenced boots take turns on the second.
func fencePool(pin []int) ([]int, error) {
	if len(pin) > 0 {
		return pin, nil
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	if len(cpus) < 2 {
		return nil, fmt.Errorf("kci may run on %d host CPU: a fenced QEMU needs one of its own", len(cpus))
	}
	return cpus[1:], nil
}

// takeHostCPU locks the first free CPU of pool, waiting for one while ctx
// lasts; busy, if set, is called once when every CPU of pool is held.
// Locks are files under dir, so kci processes share them.
func takeHostCPU(ctx context.Context, dir string, pool []int, busy func()) (*hostCPU, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return nil, err
	}
	_ = os.Chmod(dir, os.ModePerm|os.ModeSticky) // like /tmp: every user's kci locks here
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, c := range pool {
			h, err := tryHostCPU(dir, c)
			if h != nil || err != nil {
				return h, err
			}
		}
		if busy != nil {
			busy()
			busy = nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("every host CPU of %v is held by another fenced QEMU: %w", pool, ctx.Err())
		case <-tick.C:
		}
	}
}

func tryHostCPU(dir string, c int) (*hostCPU, error) {
	// Read-only: another user's lock file is readable, and flock needs
	// no write access.
	f, err := os.OpenFile(filepath.Join(dir, "cpu"+strconv.Itoa(c)+".lock"), os.O_CREATE|os.O_RDONLY, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, fmt.Errorf("lock host CPU %d: %w", c, err)
	}
	return &hostCPU{cpu: c, lock: f}, nil
}

// fenceThreads puts every thread of pid on cpu alone at SCHED_FIFO 1.
// Threads QEMU starts later inherit both. It passes over the threads
// until a pass finds none it had not set.
func fenceThreads(pid, cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}
	return eachThread(pid, func(tid int) error {
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return fmt.Errorf("sched_setaffinity: %w", err)
		}
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
			return fmt.Errorf("sched_setattr SCHED_FIFO: %w", err)
		}
		return nil
	})
}

// unfenceThreads returns pid's threads to SCHED_OTHER, so QEMU answers
// its monitor even while a vCPU never idles (a hang).
func unfenceThreads(pid int) error {
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
	return eachThread(pid, func(tid int) error {
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
			return fmt.Errorf("sched_setattr SCHED_OTHER: %w", err)
		}
		return nil
	})
}

func eachThread(pid int, f func(tid int) error) error {
	done := map[int]bool{}
	for {
		tids, err := threadIDs(pid)
		if err != nil {
			return err
		}
		fresh := 0
		for _, t := range tids {
			if done[t] {
				continue
			}
			if err := f(t); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("thread %d: %w", t, err)
			}
			done[t], fresh = true, fresh+1
		}
		if fresh == 0 {
			return nil
		}
	}
}

func threadIDs(pid int) ([]int, error) {
	ents, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if t, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, t)
		}
	}
	return tids, nil
}

func (f *MainLoop) fenced() bool { return f != nil && f.Fenced }

// holdFence takes a host CPU for a boot that needs the fence (nil for
// one that does not, or when none can be spared: res.MainLoop says why).
// It runs first in a boot: the time it waits for another fenced QEMU to
// let go of a CPU is the boot's fence phase.
func holdFence(ctx context.Context, cfg Config, res *Result, pc *phaseClock) (*hostCPU, error) {
	if !needsFence(cfg, res.Clock) {
		return nil, nil
	}
	pool, err := fencePool(cfg.Pin)
	if err == nil {
		err = fifoAllowed()
	}
	if err != nil {
		res.MainLoop = &MainLoop{Why: err.Error()}
		return nil, nil
	}
	pc.rename(PhaseQEMU, PhaseFence)
	start, waited := time.Now(), false
	h, err := takeHostCPU(ctx, fenceLockDir, pool, func() {
		waited = true
		note(cfg, "waiting for a host CPU to fence QEMU on: %s held by another fenced QEMU (of this kci or another)", cpuList(pool))
	})
	pc.mark(PhaseQEMU, time.Now())
	if err != nil {
		return nil, infra("fence", err)
	}
	if waited {
		note(cfg, "fenced on host CPU %d after waiting %.1f s", h.cpu, time.Since(start).Seconds())
	}
	res.MainLoop = &MainLoop{HostCPU: h.cpu}
	return h, nil
}

func note(cfg Config, format string, a ...any) {
	if cfg.Note != nil {
		cfg.Note(fmt.Sprintf(format, a...))
	}
}

// cpuList names host CPUs as a reader counts them: "CPU 1", "CPUs 1, 2".
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	if len(s) == 1 {
		return "CPU " + s[0] + " is"
	}
	return "CPUs " + strings.Join(s, ", ") + " are"
}

// fence applies hc to QEMU (paused, before its start). Without the
// privilege to raise a priority the boot goes on unfenced and says so.
func fence(pid int, hc *hostCPU, ml *MainLoop) error {
	err := fenceThreads(pid, hc.cpu)
	if errors.Is(err, unix.EPERM) {
		ml.Why = err.Error() + " (SCHED_FIFO needs root or CAP_SYS_NICE)"
		return unfenceThreads(pid)
	}
	if err != nil {
		return err
	}
	ml.Fenced = true
	return nil
}

// unfenceOnce is the monitor's hook after the start: QEMU's main loop
// must answer the command even if a vCPU never idles again.
func unfenceOnce(pid int, ml *MainLoop) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			if err := unfenceThreads(pid); err != nil && ml.Why == "" {
				ml.Why = "unfence: " + err.Error()
			}
		})
	}
}

// stressMainLoop asks QEMU for its status every d while the guest runs,
// around the fence (a test's knob, 0 = off): each query wakes QEMU's main
// loop at a moment the guest did not choose, which without the fence
// moves two vCPUs' counts.
func stressMainLoop(d time.Duration, mon *monitor, stop <-chan struct{}) {
	if d <= 0 {
		return
	}
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(d):
			}
			if _, err := mon.raw.QueryStatus(); err != nil {
				return // QEMU has gone: the run says why
			}
		}
	}()
}

// FenceCheck says, before any boot, why kci could not fence a QEMU of
// several vCPUs here (nil: it can): no spare host CPU in pin (or kci's
// own CPUs), or no privilege for SCHED_FIFO, tried on a thread of kci's.
func FenceCheck(pin []int) error {
	if _, err := fencePool(pin); err != nil {
		return err
	}
	return fifoAllowed()
}

// fifoAllowed tries SCHED_FIFO on a thread of kci's and takes it back.
func fifoAllowed() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	fifo := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}
	if err := unix.SchedSetAttr(0, &fifo, 0); err != nil {
		return fmt.Errorf("SCHED_FIFO needs root or CAP_SYS_NICE: %w", err)
	}
	normal := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
	return unix.SchedSetAttr(0, &normal, 0)
}
