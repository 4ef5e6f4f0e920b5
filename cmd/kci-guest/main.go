// Command kci-guest is the agent kci runs as u-root's uinit inside the test
// VM: it mounts what the suite needs, says hello on the kci virtio-serial
// port, runs the plan the host put in the initramfs and always ends with a
// done event before ending the guest. Without a plan (kci shell) it
// becomes u-root's shell.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kci-dev/kci/suite"
	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/wire"
)

// version is stamped by vmimage (-X main.version=<source hash>).
var version = "dev"

func main() {
	log.SetPrefix("kci-guest: ")
	log.SetFlags(0)
	if env, again := withGODEBUG(os.Environ(), asyncPreemptOff); again {
		// Go's asynchronous preemption signals would interrupt the
		// benchmark's real-time traffic threads in their syscalls
		// (suite/bench/rawsys.go); the runtime reads GODEBUG only at start.
		exe, err := os.Executable()
		if err == nil {
			err = unix.Exec(exe, os.Args, env)
		}
		log.Printf("async preemption stays on: %v", err)
	}
	err := run(context.Background(), os.Args[1:], os.Stdout)
	if err != nil {
		log.Print(err)
	}
	if errors.Is(err, errNoPlan) {
		shell()
		return // let init try the shell itself
	}
	poweroff()
}

var errNoPlan = errors.New("no plan")

const asyncPreemptOff = "asyncpreemptoff=1"

// withGODEBUG is env with setting added to GODEBUG; again is false when
// it is there already (the agent has been executed again).
func withGODEBUG(env []string, setting string) (out []string, again bool) {
	cur, have := "", false
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			cur, have = v, true
			continue
		}
		out = append(out, kv)
	}
	for _, s := range strings.Split(cur, ",") {
		if s == setting {
			return env, false
		}
	}
	if have && cur != "" {
		setting = cur + "," + setting
	}
	return append(out, "GODEBUG="+setting), true
}

func run(ctx context.Context, args []string, out io.Writer) error {
	for _, m := range mounts {
		if err := m.mount(); err != nil {
			fmt.Fprintf(out, "kci-guest: %v\n", err)
		}
	}
	_, planErr := os.Stat(wire.PlanPath)
	port, err := openPort(event.Port)
	if err != nil {
		if errors.Is(planErr, os.ErrNotExist) {
			return fmt.Errorf("%w: %w", errNoPlan, err)
		}
		return err
	}
	defer func() { _ = port.Close() }()
	em := &emitter{w: port}

	if err := em.emit(event.Ready, hello()); err != nil {
		return err
	}
	if errors.Is(planErr, os.ErrNotExist) {
		fmt.Fprintln(out, "kci-guest: no plan, starting a shell")
		return errNoPlan
	}
	plan, err := readPlan(wire.PlanPath)
	runErr := err
	if err == nil {
		runErr = suite.Run(ctx, plan, em.emit)
	}
	if runErr != nil {
		_ = em.emit(event.Error, event.ErrorData{Step: em.lastStep(), Message: runErr.Error()})
	}
	return errors.Join(runErr, em.emit(event.Done, event.DoneData{OK: runErr == nil}))
}

// emitter writes one JSON line per event; the suite may emit from several
// goroutines.
type emitter struct {
	mu   sync.Mutex
	w    io.Writer
	step string
}

func (e *emitter) emit(typ string, v any) error {
	ev, err := event.New(typ, v)
	if err != nil {
		return err
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("event %s: %w", typ, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if sd, ok := v.(event.StepData); ok && typ == event.StepBeg {
		e.step = sd.Name
	}
	if _, err := e.w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("event %s: write: %w", typ, err)
	}
	return nil
}

func (e *emitter) lastStep() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.step
}

func hello() event.Hello {
	h := event.Hello{Agent: "kci-guest/" + version}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		h.Release = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/uptime"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			h.Uptime, _ = strconv.ParseFloat(f[0], 64)
		}
	}
	if b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); err == nil {
		h.Clocksource = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.TSCkHz = cpuKHz(string(b))
	}
	return h
}

func readPlan(path string) (wire.Plan, error) {
	var p wire.Plan
	b, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("read plan: %w", err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("plan %s: %w", path, err)
	}
	return p, nil
}

// openPort finds the virtio-serial port by name in sysfs: without udev
// there is no /dev/virtio-ports/<name> symlink, only /dev/vportNpM. The
// device can lag behind init by a few milliseconds, so it polls briefly.
func openPort(name string) (*os.File, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		if dev, err := findPort(name); err == nil {
			f, err := os.OpenFile(dev, os.O_RDWR, 0)
			if err != nil {
				return nil, fmt.Errorf("open port %s: %w", dev, err)
			}
			return f, nil
		} else if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func findPort(name string) (string, error) {
	if _, err := os.Stat("/dev/virtio-ports/" + name); err == nil {
		return "/dev/virtio-ports/" + name, nil
	}
	names, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err == nil && strings.TrimSpace(string(b)) == name {
			dev := "/dev/" + filepath.Base(filepath.Dir(n))
			if _, err := os.Stat(dev); err == nil {
				return dev, nil
			}
		}
	}
	return "", fmt.Errorf("virtio-serial port %q not found (is CONFIG_VIRTIO_CONSOLE on?)", name)
}

type mount struct {
	source, target, fstype string
}

// mounts are what the suite relies on; u-root's init already mounts
// devtmpfs and proc, which mount() then leaves alone.
var mounts = []mount{
	{"devtmpfs", "/dev", "devtmpfs"},
	{"proc", "/proc", "proc"},
	{"sysfs", "/sys", "sysfs"},
	{"debugfs", "/sys/kernel/debug", "debugfs"},
	{"tracefs", "/sys/kernel/tracing", "tracefs"},
	{"bpf", "/sys/fs/bpf", "bpf"},
}

func (m mount) mount() error {
	if mounted(m.target) {
		return nil
	}
	if err := os.MkdirAll(m.target, 0o755); err != nil {
		return fmt.Errorf("mount %s: %w", m.target, err)
	}
	err := unix.Mount(m.source, m.target, m.fstype, 0, "")
	if err != nil && !errors.Is(err, unix.EBUSY) {
		return fmt.Errorf("mount %s on %s: %w", m.fstype, m.target, err)
	}
	return nil
}

// mounted reports whether target is a mount point, from /proc/self/mounts
// when proc is there, otherwise by comparing device numbers with the parent.
func mounted(target string) bool {
	if b, err := os.ReadFile("/proc/self/mounts"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) > 1 && f[1] == target {
				return true
			}
		}
		return false
	}
	var a, p unix.Stat_t
	if unix.Stat(target, &a) != nil || unix.Stat(filepath.Dir(target), &p) != nil {
		return false
	}
	return a.Dev != p.Dev
}

// shell replaces the agent with u-root's shell, keeping the session and
// controlling terminal init gave the agent: a shell that init starts after
// the agent exits is killed as it takes the terminal over.
func shell() {
	sh := "/bin/defaultsh"
	if err := unix.Exec(sh, []string{sh}, os.Environ()); err != nil {
		log.Printf("exec %s: %v", sh, err)
	}
}

// poweroff ends the guest. kci's kernels have no ACPI, so a power-off
// request only halts; a restart resets the machine, which QEMU's
// -no-reboot turns into QEMU exiting.
func poweroff() {
	unix.Sync()
	if err := unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART); err != nil {
		log.Printf("restart: %v", err)
	}
}

// cpuKHz is the first "cpu MHz" of /proc/cpuinfo in kHz: on x86 the
// kernel's calibrated rate, which scales every TSC-based time it reports.
func cpuKHz(cpuinfo string) int64 {
	for _, l := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if ok && strings.TrimSpace(k) == "cpu MHz" {
			mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0
			}
			return int64(mhz*1000 + 0.5)
		}
	}
	return 0
}
