package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/vm/event"
)

// The tests in this file run Run against a fake QEMU: this test binary,
// re-executed with KCI_FAKE_QEMU=<scenario>. It speaks enough QMP for
// go-qemu and plays a scripted guest on the console's and the agent's
// files, which it opens as QEMU's file chardevs do.

func TestMain(m *testing.M) {
	if sc := os.Getenv("KCI_FAKE_QEMU"); sc != "" {
		os.Exit(fakeQEMU(sc, os.Args[1:]))
	}
	os.Exit(m.Run())
}

func socketArg(args []string, flag, prefix string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && strings.HasPrefix(args[i+1], prefix) {
			p, _, _ := strings.Cut(strings.TrimPrefix(args[i+1], prefix), ",")
			return p
		}
	}
	return ""
}

// chardevFile opens the file of the file chardev id for writing, as QEMU
// does (truncated), its path unescaped; nil if there is none.
func chardevFile(args []string, id string) *os.File {
	for i := 0; i+1 < len(args); i++ {
		v, ok := strings.CutPrefix(args[i+1], "file,id="+id+",path=")
		if args[i] != "-chardev" || !ok {
			continue
		}
		f, err := os.OpenFile(strings.ReplaceAll(v, ",,", ","), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil
		}
		return f
	}
	return nil
}

func fakeQEMU(scenario string, args []string) int {
	if len(args) == 1 && args[0] == "--version" {
		fmt.Println("QEMU emulator version 7.2.0 (kci fake)")
		return 0
	}
	scenario, code, exited := fakeHost(scenario, args)
	if exited {
		return code
	}
	qmpPath := socketArg(args, "-qmp", "unix:")
	ev, console := chardevFile(args, "kci"), chardevFile(args, "con")
	if qmpPath == "" || ev == nil || console == nil {
		fmt.Fprintln(os.Stderr, "fake qemu: no QMP socket or chardev files in", args)
		return 1
	}
	if scenario == "bad-args" {
		fmt.Fprintln(os.Stderr, "qemu-system-x86_64: -accel kvm: Could not access KVM kernel module")
		return 1
	}
	ql, err := net.Listen("unix", qmpPath)
	if err != nil {
		return 1
	}
	started := make(chan struct{})
	go serveQMP(ql, started, scenario)
	<-started
	emit := func(typ string, v any) {
		e, _ := event.New(typ, v)
		b, _ := json.Marshal(e)
		ev.Write(append(b, '\n'))
	}
	con := func(lines ...string) {
		for _, l := range lines {
			fmt.Fprintln(console, l)
		}
	}
	forever := func() int {
		time.Sleep(time.Hour)
		return 0
	}
	switch scenario {
	case "silent":
		return forever() // a guest that prints nothing at all
	case "firmware-only":
		con("SeaBIOS (version 1.16.2-debian-1.16.2-1)", "Booting from ROM...")
		return forever() // the kernel never says a word (kvm_pvm)
	case "phases":
		return fakePhases(con, emit)
	}
	con("[    0.000000] Linux version 6.12.0-fake", "[    0.300000] Run /init as init process")
	switch scenario {
	case "fenced":
		con(fakeSched())
		emit(event.Ready, event.Hello{})
		emit(event.Done, event.DoneData{OK: true})
		return 0
	case "ok":
		emit(event.Ready, event.Hello{Agent: "fake", Release: "6.12.0-fake", Uptime: 0.3})
		emit(event.StepBeg, event.StepData{Name: "sanity", Timeout: 5 * time.Second})
		emit(event.Log, "sane")
		emit(event.Done, event.DoneData{OK: true})
		return 0 // the agent powers off
	case "done-no-poweroff":
		emit(event.Ready, event.Hello{})
		emit(event.Done, event.DoneData{OK: true})
		return forever() // only QMP quit ends it
	case "panic":
		b, _ := os.ReadFile("testdata/report/panic.console")
		console.Write(b)
		return 0 // panic=-1 and -no-reboot: QEMU exits
	case "warn":
		emit(event.Ready, event.Hello{})
		b, _ := os.ReadFile("testdata/report/warning.console")
		console.Write(b)
		return forever()
	case "call-trace-no-end":
		emit(event.Ready, event.Hello{})
		con("[    4.000003] Call Trace:", "[    4.000004]  <TASK>", "[    4.000005]  kci_debug_init+0x15/0x20")
		return forever()
	case "hang":
		return forever()
	case "ready-idle":
		emit(event.Ready, event.Hello{})
		return forever()
	case "hang-children":
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			return 1
		}
		os.WriteFile(os.Getenv("KCI_FAKE_CHILD_PIDFILE"), []byte(strconv.Itoa(child.Process.Pid)), 0o644)
		return forever()
	case "step-hang":
		emit(event.Ready, event.Hello{})
		emit(event.StepBeg, event.StepData{Name: "bench/hash", Timeout: 300 * time.Millisecond})
		return forever()
	case "step-stuck":
		emit(event.Ready, event.Hello{})
		emit(event.StepBeg, event.StepData{Name: "bench/cnt", Timeout: 300 * time.Millisecond})
		return forever()
	case "step-starved":
		emit(event.Ready, event.Hello{})
		emit(event.StepBeg, event.StepData{Name: "bench/hash", Timeout: 300 * time.Millisecond})
		starve()
		return forever()
	case "no-done":
		emit(event.Ready, event.Hello{})
		return 0
	case "agent-error":
		emit(event.Ready, event.Hello{})
		emit(event.StepBeg, event.StepData{Name: "survival"})
		emit(event.Error, event.ErrorData{Step: "survival", Message: "load ext_write: permission denied"})
		emit(event.Done, event.DoneData{OK: false})
		return 0
	case "qemu-dies":
		emit(event.Ready, event.Hello{})
		fmt.Fprintln(os.Stderr, "qemu: fatal: lost the plot")
		return 1
	}
	fmt.Fprintln(os.Stderr, "fake qemu: unknown scenario", scenario)
	return 2
}

// starve makes this process a starved machine: two threads spin on one
// CPU, so each waits for it half the time, as a vCPU thread does on a
// loaded host. The CPU is the first this process may use, which no
// fenced QEMU takes: one at SCHED_FIFO there would keep both spinners
// off it, and a thread that never gets the CPU shows no wait in
// schedstat until it does.
func starve() {
	cpu := -1
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) == nil {
		cpu = firstCPU(set)
	}
	for range 2 {
		go func() {
			runtime.LockOSThread()
			if cpu >= 0 {
				var one unix.CPUSet
				one.Set(cpu)
				_ = unix.SchedSetaffinity(0, &one)
			}
			for n := uint64(1); n != 0; n++ { // spins for 2^64 rounds
			}
		}()
	}
}

// serveQMP answers the QMP commands kci sends. In scenario step-stuck
// the guest has two vCPUs and only vCPU 0's registers move between reads.
func serveQMP(l net.Listener, started chan<- struct{}, scenario string) {
	var reads atomic.Int64
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			enc, dec := json.NewEncoder(c), json.NewDecoder(c)
			enc.Encode(map[string]any{"QMP": map[string]any{
				"version":      map[string]any{"qemu": map[string]int{"major": 7, "minor": 2, "micro": 0}, "package": "fake"},
				"capabilities": []string{}}})
			status := "prelaunch"
			for {
				var cmd struct {
					Execute string `json:"execute"`
				}
				if err := dec.Decode(&cmd); err != nil {
					return
				}
				switch cmd.Execute {
				case "query-status":
					enc.Encode(map[string]any{"return": map[string]any{"status": status, "running": status == "running", "singlestep": false}})
				case "human-monitor-command": // info registers -a, as QEMU 7.2 prints it (abridged)
					if scenario == "step-stuck" {
						enc.Encode(map[string]any{"return": fmt.Sprintf("CPU#0\r\nRAX=%016x\r\nRIP=0000000000454852 CPL=3 HLT=0\r\n"+
							"CPU#1\r\nRAX=0000000000000001\r\nRIP=ffffffff818014b0 CPL=0 HLT=0\r\n", reads.Add(1))})
						continue
					}
					enc.Encode(map[string]any{"return": "\r\nCPU#0\r\nRAX=0000000000000000 RBX=ffffffff82a0c940\r\n" +
						"RIP=ffffffff81c5f2a6 RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=1\r\nEFER=0000000000000d01\r\n"})
				case "query-cpus-fast":
					enc.Encode(map[string]any{"return": []map[string]any{{"cpu-index": 0, "thread-id": syscall.Gettid(), "target": "x86_64"}}})
				case "cont":
					enc.Encode(map[string]any{"return": map[string]any{}})
					if status != "running" {
						status = "running"
						close(started)
					}
				case "quit":
					enc.Encode(map[string]any{"return": map[string]any{}})
					os.Exit(0)
				default:
					enc.Encode(map[string]any{"return": map[string]any{}})
				}
			}
		}()
	}
}

// fakeRun runs a scenario and checks that QEMU and its sockets are gone
// afterwards, whatever happened.
func fakeRun(t *testing.T, ctx context.Context, scenario string, mod func(*Config)) (*Result, error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KCI_FAKE_QEMU", scenario)
	dir := t.TempDir()
	kernel, initrd := filepath.Join(dir, "bzImage"), filepath.Join(dir, "initrd")
	os.WriteFile(kernel, []byte("k"), 0o644)
	os.WriteFile(initrd, []byte("i"), 0o644)
	// One vCPU unless the scenario says otherwise: a guest of several is
	// fenced, which TestFakeFenced covers.
	cfg := Config{QEMU: self, Kernel: kernel, Initrd: initrd, Accel: AccelTCG, Dir: dir, BootTimeout: 5 * time.Second, CPUs: 1}
	if mod != nil {
		mod(&cfg)
	}
	before := runtime.NumGoroutine()
	start := time.Now()
	res, err := Run(ctx, cfg, nil)
	t.Logf("%s: %v after %v", scenario, Kind(err), time.Since(start).Round(time.Millisecond))
	// Every reader and timer goroutine of the run ends with it.
	for deadline := time.Now().Add(2 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Errorf("%d goroutines before the run, %d after", before, runtime.NumGoroutine())
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if res.PID == 0 && scenario != "bad-args" {
		t.Fatalf("no pid recorded (err %v)", err)
	}
	assertGone(t, res.PID)
	if len(res.Args) == 0 {
		t.Fatal("no qemu args recorded")
	}
	qmp := ""
	for _, a := range res.Args {
		if p, ok := strings.CutPrefix(a, "unix:"); ok {
			qmp, _, _ = strings.Cut(p, ",")
		}
	}
	if _, err := os.Stat(filepath.Dir(qmp)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket dir %s left behind (%v)", filepath.Dir(qmp), err)
	}
	return res, err
}

// assertGone checks that pid has been reaped (no zombie, no process).
func assertGone(t *testing.T, pid int) {
	t.Helper()
	if pid == 0 {
		return
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("qemu pid %d still exists after Run returned (kill 0: %v)", pid, err)
	}
}

func TestFakeOK(t *testing.T) {
	var got []string
	self, _ := os.Executable()
	t.Setenv("KCI_FAKE_QEMU", "ok")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "k"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, "i"), nil, 0o644)
	res, err := Run(context.Background(), Config{QEMU: self, Kernel: filepath.Join(dir, "k"), Initrd: filepath.Join(dir, "i"),
		Accel: AccelTCG, Dir: dir, Pin: []int{0}, CPUs: 1}, func(e event.Event) { got = append(got, e.Type) })
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	assertGone(t, res.PID)
	if want := []string{event.Ready, event.StepBeg, event.Log, event.Done}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("events %v, want %v", got, want)
	}
	if !res.Done || !res.OK || res.Accel != AccelTCG || res.BootToReady <= 0 || res.Hello == nil || res.Hello.Release != "6.12.0-fake" {
		t.Errorf("result %+v", res)
	}
	if len(res.Pins) != 1 || res.Pins[0].CPU != 0 || res.Pins[0].Thread <= 0 {
		t.Errorf("pins %+v", res.Pins)
	}
	b, err := os.ReadFile(res.Console)
	if err != nil || !strings.Contains(string(b), "Run /init as init process") {
		t.Errorf("console log %s: %q %v", res.Console, b, err)
	}
}

func TestFakeDoneWithoutPoweroff(t *testing.T) {
	res, err := fakeRun(t, context.Background(), "done-no-poweroff", nil)
	if err != nil || !res.Done {
		t.Errorf("err %v, done %v", err, res.Done)
	}
}

func TestFakePanic(t *testing.T) {
	start := time.Now()
	_, err := fakeRun(t, context.Background(), "panic", nil)
	var ce *CrashError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a CrashError", err)
	}
	if ce.Title != "kernel panic: kci fault injection: panic at boot (NUM)" || !strings.Contains(ce.Excerpt, "Kernel panic") {
		t.Errorf("crash %+v", ce)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("panic reported after %v, boot timeout is 5s", d)
	}
}

func TestFakeWarnKillsRunningGuest(t *testing.T) {
	_, err := fakeRun(t, context.Background(), "warn", func(c *Config) { c.BootTimeout = time.Minute })
	var ce *CrashError
	if !errors.As(err, &ce) || ce.Title != "WARNING in kci_fault_write" {
		t.Fatalf("err = %v, want the WARNING crash", err)
	}
	// QEMU still ran when the report was complete: it says where the
	// vCPUs were then.
	if !strings.Contains(ce.Error(), "after the report: vCPU 0 at 0xffffffff81c5f2a6, halted") {
		t.Errorf("crash %q lacks where the vCPUs were", ce.Error())
	}
}

func TestFakeReportWithoutEndMarker(t *testing.T) {
	_, err := fakeRun(t, context.Background(), "call-trace-no-end", func(c *Config) { c.BootTimeout = time.Minute })
	var ce *CrashError
	if !errors.As(err, &ce) || ce.Title != "call trace in kci_debug_init" {
		t.Fatalf("err = %v, want the call trace crash after the console went quiet", err)
	}
}

func TestFakeBootTimeout(t *testing.T) {
	_, err := fakeRun(t, context.Background(), "hang", func(c *Config) { c.BootTimeout = 500 * time.Millisecond })
	var be *BootError
	if !errors.As(err, &be) || !strings.Contains(be.Tail, "Run /init") || !strings.Contains(be.Reason, "running") {
		t.Fatalf("err = %v, want a BootError with the console tail and QEMU's status", err)
	}
	if want := "when it ran out of time: vCPU 0 at 0xffffffff81c5f2a6, halted"; !strings.Contains(be.Reason, want) {
		t.Errorf("reason %q lacks %q: where the vCPUs were", be.Reason, want)
	}
}

// A step that runs out of time says where each vCPU was, the kernel
// function named by Config.Symbolize.
func TestFakeStepTimeout(t *testing.T) {
	_, err := fakeRun(t, context.Background(), "step-hang", func(c *Config) {
		c.Symbolize = func(pc uint64) string {
			if pc == 0xffffffff81c5f2a6 {
				return "native_safe_halt"
			}
			return ""
		}
	})
	var te *TimeoutError
	if !errors.As(err, &te) || te.Step != "bench/hash" || te.Timeout != 300*time.Millisecond {
		t.Fatalf("err = %v, want the step's TimeoutError", err)
	}
	want := []CPUState{{Index: 0, PC: 0xffffffff81c5f2a6, Halted: true, Func: "native_safe_halt"}}
	if len(te.CPUs) != 1 || withoutRegs(te.CPUs[0]) != want[0] || !strings.Contains(te.Error(), "vCPU 0 at native_safe_halt (0xffffffff81c5f2a6), halted") {
		t.Errorf("CPUs %+v, error %q: want %+v and the line", te.CPUs, te.Error(), want)
	}
}

// A two-vCPU guest whose vCPU 1 runs nothing while vCPU 0 runs (QEMU
// 7.2's round-robin starving it) times out saying so.
func TestFakeStepStuck(t *testing.T) {
	_, err := fakeRun(t, context.Background(), "step-stuck", func(c *Config) { c.CPUs = 2 })
	var te *TimeoutError
	if !errors.As(err, &te) || len(te.CPUs) != 2 {
		t.Fatalf("err = %v, want a TimeoutError with both vCPUs", err)
	}
	if te.CPUs[0].Stuck || !te.CPUs[1].Stuck {
		t.Errorf("stuck %v %v: want vCPU 1 alone", te.CPUs[0].Stuck, te.CPUs[1].Stuck)
	}
	if !strings.Contains(te.Error(), "vCPU 1 at 0xffffffff818014b0, no register changed in 1s while another vCPU ran") {
		t.Errorf("error %q: want vCPU 1 named as stuck", te.Error())
	}
}

// TestFakeStarvedStepStretches: a machine whose threads wait for a CPU
// is not hung; its step's deadline counts only the time it could run.
func TestFakeStarvedStepStretches(t *testing.T) {
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		t.Skip("needs schedstat (CONFIG_SCHED_INFO) to see a thread wait for a CPU")
	}
	start := time.Now()
	_, err := fakeRun(t, context.Background(), "step-starved", nil)
	wall := time.Since(start)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Step != "bench/hash" || te.Timeout != 300*time.Millisecond {
		t.Fatalf("err = %v, want the step's TimeoutError", err)
	}
	// Each spinning thread waits about half the time: the 300 ms of run
	// time take about 600 ms of wall time, of which about 300 waiting.
	t.Logf("timed out after %v of wall time, %v of it waiting for a CPU", wall, te.Waited)
	if te.Waited < 100*time.Millisecond || wall < 300*time.Millisecond+te.Waited {
		t.Errorf("waited %v over %v: the deadline did not give the wait back", te.Waited, wall)
	}
	if wall > maxStretch*te.Timeout+5*time.Second {
		t.Errorf("timed out after %v, past %d times its bound", wall, maxStretch)
	}
}

func TestFakeDefaultStepTimeout(t *testing.T) {
	// Ready but no step announced: the default step timeout applies.
	_, err := fakeRun(t, context.Background(), "ready-idle", func(c *Config) {
		c.StepTimeout = 200 * time.Millisecond
	})
	var te *TimeoutError
	if !errors.As(err, &te) || te.Step != "agent" || te.Timeout != 200*time.Millisecond {
		t.Fatalf("err = %v, want the default step timeout", err)
	}
}

func TestFakeNoDone(t *testing.T) {
	_, err := fakeRun(t, context.Background(), "no-done", nil)
	var ce *CrashError
	if !errors.As(err, &ce) || ce.Title != "guest stopped before done" {
		t.Fatalf("err = %v, want 'guest stopped before done'", err)
	}
}

func TestFakeAgentError(t *testing.T) {
	res, err := fakeRun(t, context.Background(), "agent-error", nil)
	var ae *AgentError
	if !errors.As(err, &ae) || ae.Step != "survival" || !strings.Contains(ae.Message, "permission denied") {
		t.Fatalf("err = %v, want the agent's error", err)
	}
	if !res.Done || res.OK {
		t.Errorf("done %v ok %v", res.Done, res.OK)
	}
}

func TestFakeQEMUFailures(t *testing.T) {
	_, err := fakeRun(t, context.Background(), "bad-args", nil)
	if Kind(err) != failure.Infra || !strings.Contains(err.Error(), "Could not access KVM") {
		t.Errorf("bad args: %v, want an infra error with QEMU's message", err)
	}
	_, err = fakeRun(t, context.Background(), "qemu-dies", nil)
	if Kind(err) != failure.Infra || !strings.Contains(err.Error(), "lost the plot") {
		t.Errorf("qemu dies: %v, want an infra error with QEMU's stderr", err)
	}
	_, err = Run(context.Background(), Config{QEMU: "/nonexistent/qemu", Kernel: "/etc/hostname", Initrd: "/etc/hostname", Accel: AccelTCG, Dir: t.TempDir()}, nil)
	if Kind(err) != failure.Infra {
		t.Errorf("missing qemu: %v", err)
	}
}

// Cancelling mid-boot (what SIGINT does through signal.NotifyContext)
// kills QEMU's whole process group and reaps it.
func TestFakeCancelKillsGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "child.pid")
	t.Setenv("KCI_FAKE_CHILD_PIDFILE", pidfile)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	_, err := fakeRun(t, ctx, "hang-children", func(c *Config) { c.BootTimeout = time.Minute })
	if Kind(err) != failure.Interrupted {
		t.Fatalf("err = %v, want canceled", err)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("fake qemu did not start its child: %v", err)
	}
	child, _ := strconv.Atoi(string(b))
	// The child is not ours to reap (init adopts it), so poll briefly.
	deadline := time.Now().Add(2 * time.Second)
	for syscall.Kill(child, 0) == nil {
		if status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child)); strings.Contains(string(status), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("qemu's child %d survived the kill", child)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFakeSIGINT(t *testing.T) {
	ctx, stop := signalContext()
	defer stop()
	time.AfterFunc(500*time.Millisecond, func() { syscall.Kill(os.Getpid(), syscall.SIGINT) })
	_, err := fakeRun(t, ctx, "hang", func(c *Config) { c.BootTimeout = time.Minute })
	if Kind(err) != failure.Interrupted {
		t.Fatalf("err = %v, want canceled by SIGINT", err)
	}
}

func TestFakeDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	_, err := fakeRun(t, ctx, "hang", func(c *Config) { c.BootTimeout = time.Minute })
	if Kind(err) != failure.Timeout {
		t.Fatalf("err = %v, want a timeout", err)
	}
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

// fakeSched waits up to 5 s for kci to fence this process, then says how
// its thread is scheduled: "kci-fake: policy 1 cpus [3]".
func fakeSched() string {
	var pol uint32
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if a, err := unix.SchedGetAttr(0, 0); err == nil {
			if pol = a.Policy; pol == unix.SCHED_FIFO {
				break
			}
		}
	}
	var set unix.CPUSet
	_ = unix.SchedGetaffinity(0, &set)
	var cpus []int
	for c := 0; c < 1024; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return fmt.Sprintf("kci-fake: policy %d cpus %v", pol, cpus)
}
