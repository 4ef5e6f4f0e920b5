package vm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/job/jobtest"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/profile"
	"github.com/kci-dev/kci/vm"
	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/vmimage"
	"github.com/kci-dev/kci/wire"
)

// These tests boot kernels built by kci (job/jobtest) under TCG
// with the real initramfs and agent. They are skipped with -short.

func needQEMU(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("boots a real kernel in QEMU: skipped in -short mode")
	}
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("needs qemu-system-x86_64 (make deps installs it)")
	}
}

// initrd builds (or finds) the image and appends a plan.
func initrd(t *testing.T, plan *wire.Plan) string {
	t.Helper()
	img, err := vmimage.Build(context.Background(), vmimage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("initramfs %s (cached %v, %v)", img.Path, img.Cached, img.Duration.Round(time.Millisecond))
	p := filepath.Join(t.TempDir(), "initrd.cpio")
	var files []vmimage.File
	if plan != nil {
		b, err := json.Marshal(plan)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, vmimage.File{Path: wire.PlanPath, Data: b})
	}
	if err := img.Compose(p, files...); err != nil {
		t.Fatal(err)
	}
	return p
}

func config(t *testing.T, k *kernel.Artifacts, initrd string) vm.Config {
	return vm.Config{Kernel: k.BzImage, Initrd: initrd, Accel: vm.AccelTCG, CPUs: 2, MemoryMiB: 512,
		Dir: t.TempDir(), BootTimeout: 60 * time.Second, StepTimeout: 2 * time.Minute}
}

// qemuChildren lists QEMU processes whose parent is this test.
func qemuChildren(t *testing.T) []int {
	t.Helper()
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...
		s := string(b)
		rp := strings.LastIndexByte(s, ')')
		comm := s[strings.IndexByte(s, '(')+1 : rp]
		f := strings.Fields(s[rp+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) && strings.HasPrefix(comm, "qemu") {
			pids = append(pids, pid)
		}
	}
	return pids
}

func assertNoQEMU(t *testing.T, res *vm.Result) {
	t.Helper()
	if res != nil && res.PID != 0 {
		if err := syscall.Kill(res.PID, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("qemu pid %d still exists (kill 0: %v)", res.PID, err)
		}
	}
	if pids := qemuChildren(t); len(pids) > 0 {
		t.Errorf("qemu children left: %v", pids)
	}
}

func TestBootReadyDone(t *testing.T) {
	needQEMU(t)
	k := jobtest.Base(t)
	cfg := config(t, k, initrd(t, &wire.Plan{Command: []string{"uname", "-r"}}))
	var types []string
	res, err := vm.Run(context.Background(), cfg, func(e event.Event) { types = append(types, e.Type) })
	assertNoQEMU(t, res)
	if err != nil {
		t.Fatalf("run: %v (console %s)", err, res.Console)
	}
	if !res.Done || !res.OK || len(types) < 2 || types[0] != event.Ready || types[len(types)-1] != event.Done {
		t.Fatalf("events %v, result %+v", types, res)
	}
	if res.Hello == nil || res.Hello.Release != k.Release && k.Release != "" {
		t.Errorf("guest says release %+v, built %q", res.Hello, k.Release)
	}
	console, _ := os.ReadFile(res.Console)
	if !bytes.Contains(console, []byte(k.Release)) {
		t.Errorf("console lacks the uname -r output %q", k.Release)
	}
	t.Logf("TCG boot-to-ready %v (guest uptime at ready %.2fs), whole run %v",
		res.BootToReady.Round(time.Millisecond), res.Hello.Uptime, res.Duration.Round(time.Millisecond))
}

// qemuThreadSched reads every thread of this test's QEMU: its policy
// (field 41 of stat) and its CPUs.
func qemuThreadSched(t *testing.T) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	for _, pid := range qemuChildren(t) {
		dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
		tasks, _ := os.ReadDir(dir)
		for _, task := range tasks {
			stat, _ := os.ReadFile(filepath.Join(dir, task.Name(), "stat"))
			status, _ := os.ReadFile(filepath.Join(dir, task.Name(), "status"))
			var policy, cpus string
			if i := bytes.LastIndexByte(stat, ')'); i > 0 {
				if f := strings.Fields(string(stat[i+1:])); len(f) > 38 {
					policy = f[38] // field 41 of stat, counted from the state (field 3)
				}
			}
			for _, l := range strings.Split(string(status), "\n") {
				if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
					cpus = strings.TrimSpace(v)
				}
			}
			out[task.Name()] = [2]string{policy, cpus}
		}
	}
	return out
}

// checkFenced: a fenced run's QEMU had every thread SCHED_FIFO (policy 1)
// on its host CPU alone; a run kci could not fence says why.
func checkFenced(t *testing.T, res *vm.Result, sched map[string][2]string) {
	t.Helper()
	ml := res.MainLoop
	if ml == nil {
		t.Fatal("no main-loop record for two vCPUs under icount")
	}
	if !ml.Fenced {
		t.Logf("not fenced here: %s", ml.Why)
		if vm.FenceCheck(nil) == nil {
			t.Errorf("this host can fence, yet: %s", ml.Why)
		}
		return
	}
	if len(sched) < 2 {
		t.Fatalf("QEMU threads at ready: %v", sched)
	}
	t.Logf("%d QEMU threads at ready, fenced on host CPU %d", len(sched), ml.HostCPU)
	for tid, s := range sched {
		if s != [2]string{"1", strconv.Itoa(ml.HostCPU)} {
			t.Errorf("thread %s: policy %s on CPUs %s, want SCHED_FIFO (1) on %d", tid, s[0], s[1], ml.HostCPU)
		}
	}
}

// Two vCPUs under icount: at the agent's ready event every QEMU thread is
// fenced, SCHED_FIFO on the one host CPU the run names (vm/fence.go). The
// guest spins, so QEMU is there to be read however late kci hears of
// ready; a guest that sleeps would not do: with icount's sleep=off its
// sleep passes in no host time, and it powers off before a starved test
// reads. The run is then cancelled.
func TestBootFenced(t *testing.T) {
	needQEMU(t)
	k := jobtest.Base(t)
	cfg := config(t, k, initrd(t, &wire.Plan{Command: []string{"gosh", "-c", "while true; do :; done"}}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sched map[string][2]string // thread id -> policy, Cpus_allowed_list at ready
	res, err := vm.Run(ctx, cfg, func(e event.Event) {
		if e.Type == event.Ready {
			sched = qemuThreadSched(t)
			cancel()
		}
	})
	assertNoQEMU(t, res)
	if vm.Kind(err) != failure.Interrupted {
		t.Fatalf("err = %v, want the cancel after ready", err)
	}
	checkFenced(t, res, sched)
}

// Cancelling the context mid-boot (what SIGINT does in kci) leaves no
// QEMU behind.
func TestBootCancelLeavesNoQEMU(t *testing.T) {
	needQEMU(t)
	k := jobtest.Base(t)
	cfg := config(t, k, initrd(t, &wire.Plan{Command: []string{"sleep", "60"}}))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	res, err := vm.Run(ctx, cfg, nil)
	if vm.Kind(err) != failure.Interrupted {
		t.Fatalf("err = %v, want canceled", err)
	}
	if res.PID == 0 {
		t.Fatal("qemu never started")
	}
	assertNoQEMU(t, res)
}

// The KVM probe is bounded: whatever KVM does on this host, it returns
// a choice and leaves no QEMU. On a kvm_pvm host (this project's
// machines) Resolve names PVM at once, and the probe it skips boots for
// real: the stock kernel prints nothing. Which -cpu model that silent
// guest ran depends on the host's kvm_pvm: older ones refused -cpu host's
// MSR 0x10a, so the probe dropped arch-capabilities and booted again;
// newer ones (6.18 hosts) take -cpu host and the guest is silent at once.
// The fake-QEMU tests pin the MSR path itself.
func TestKVMProbe(t *testing.T) {
	needQEMU(t)
	if err := vm.KVMDevice(); err != nil {
		t.Skipf("no KVM device to probe: %v", err)
	}
	k := jobtest.Base(t)
	cfg := config(t, k, initrd(t, nil))
	cfg.CacheDir = t.TempDir()
	if vm.IsPVM("") {
		start := time.Now()
		auto := cfg
		auto.Accel = vm.AccelAuto
		v, err := vm.Resolve(context.Background(), auto)
		if err != nil || v.Case != vm.CasePVM || v.Accel != vm.AccelTCG || time.Since(start) > 2*time.Second {
			t.Errorf("PVM host: Resolve %+v, %v after %v; want tcg naming PVM at once", v, err, time.Since(start))
		}
		assertNoQEMU(t, nil)
	}
	start := time.Now()
	v, conclusive, err := vm.ProbeKVM(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("KVM verdict after %v: %+v, conclusive %v", time.Since(start).Round(time.Millisecond), v, conclusive)
	if v.Accel != vm.AccelKVM && v.Accel != vm.AccelTCG || v.Reason == "" {
		t.Errorf("verdict %+v", v)
	}
	if vm.IsPVM("") {
		msrPath := v.CPU == "host,-arch-capabilities" && strings.Contains(v.CPUReason, "MSR 0x10a")
		direct := v.CPU == "host" && v.CPUReason == ""
		if v.Case != vm.CaseNoAgent || !msrPath && !direct || !strings.Contains(v.Reason, "printed nothing") {
			t.Errorf("PVM host probed by boot: %+v; want a silent guest under -cpu host, "+
				"or -cpu host dead on MSR 0x10a and then a silent host,-arch-capabilities one", v)
		}
	}
	assertNoQEMU(t, nil)
}

// consoleClock notes when a string first appears on the console.
type consoleClock struct {
	mu   sync.Mutex
	buf  []byte
	want string
	at   time.Time
}

func (c *consoleClock) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() {
		c.buf = append(c.buf, p...)
		if bytes.Contains(c.buf, []byte(c.want)) {
			c.at = time.Now()
		}
	}
	return len(p), nil
}

func TestFaultPanicAtBoot(t *testing.T) {
	needQEMU(t)
	k := jobtest.Patched(t, "testdata/patches/panic-at-boot.patch")
	cfg := config(t, k, initrd(t, &wire.Plan{Command: []string{"true"}}))
	clock := &consoleClock{want: "Kernel panic"}
	cfg.Console = clock
	res, err := vm.Run(context.Background(), cfg, nil)
	end := time.Now()
	assertNoQEMU(t, res)
	var ce *vm.CrashError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a CrashError", err)
	}
	if ce.Title != "kernel panic: kci fault injection: panic at boot" || !strings.Contains(ce.Excerpt, "kci_fault_panic_init") {
		t.Errorf("crash title %q, excerpt:\n%s", ce.Title, ce.Excerpt)
	}
	if clock.at.IsZero() {
		t.Fatal("the panic never reached the console copy")
	}
	t.Logf("panic on the console to CrashError: %v; run %v (boot timeout %v)", end.Sub(clock.at).Round(time.Millisecond), res.Duration.Round(time.Millisecond), cfg.BootTimeout)
}

// A boot that hangs ends in a boot timeout with QEMU gone, and says
// where the vCPUs were: one spinning in the fault's initcall (the
// others halted: "vCPU 0 at pv_native_safe_halt (0xffffffff81694f4f),
// halted; vCPU 1 at kci_fault_hang_init (0xffffffff823e250b)").
func TestFaultHangAtBoot(t *testing.T) {
	needQEMU(t)
	k := jobtest.Patched(t, "testdata/patches/hang-at-boot.patch")
	cfg := config(t, k, initrd(t, &wire.Plan{Command: []string{"true"}}))
	cfg.BootTimeout = 15 * time.Second
	syms, err := profile.LoadKernelSymbols(k.Vmlinux)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Symbolize = syms.Lookup
	res, err := vm.Run(context.Background(), cfg, nil)
	assertNoQEMU(t, res)
	var be *vm.BootError
	if !errors.As(err, &be) {
		t.Fatalf("err = %v, want a BootError", err)
	}
	t.Logf("boot error after %v: %s", res.Duration.Round(time.Millisecond), be.Reason)
	if !regexp.MustCompile(`when it ran out of time: (vCPU \d+ at [^;]*; )*vCPU \d+ at kci_fault_hang_init \(0x`).MatchString(be.Reason) {
		t.Errorf("reason lacks where the vCPUs were, one in kci_fault_hang_init")
	}
}

func TestFaultWarnWhenAgentRuns(t *testing.T) {
	needQEMU(t)
	k := jobtest.Patched(t, "testdata/patches/warn.patch")
	cfg := config(t, k, initrd(t, &wire.Plan{Command: []string{"cat", "/proc/kci_fault_warn"}}))
	res, err := vm.Run(context.Background(), cfg, nil)
	assertNoQEMU(t, res)
	var ce *vm.CrashError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a CrashError", err)
	}
	if ce.Title != "WARNING in kci_fault_warn_show" || !strings.Contains(ce.Excerpt, "kci fault injection: WARN on read") {
		t.Errorf("crash title %q, excerpt:\n%s", ce.Title, ce.Excerpt)
	}
	t.Logf("after %v: %s\n%s", res.Duration.Round(time.Millisecond), ce.Title, ce.Excerpt)
}

// With Pin, each vCPU thread runs on its host CPU from the first guest
// instruction on.
func TestBootPinned(t *testing.T) {
	needQEMU(t)
	k := jobtest.Base(t)
	cfg := config(t, k, initrd(t, &wire.Plan{Command: []string{"sleep", "1"}}))
	// The host clock: an icount guest of two vCPUs is fenced instead.
	cfg.Pin, cfg.Clock = []int{1, 0}, vm.ClockHost
	affinity := map[string]string{} // thread id -> Cpus_allowed_list, seen at ready
	res, err := vm.Run(context.Background(), cfg, func(e event.Event) {
		if e.Type != event.Ready {
			return
		}
		for _, pid := range qemuChildren(t) {
			tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
			for _, task := range tasks {
				b, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", task.Name(), "status"))
				for _, l := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
						affinity[task.Name()] = strings.TrimSpace(v)
					}
				}
			}
		}
	})
	assertNoQEMU(t, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Pins) != 2 {
		t.Fatalf("pins %+v", res.Pins)
	}
	// Single-threaded TCG runs both vCPUs on one thread: it gets both CPUs.
	for thread, cpus := range threadCPUs(res.Pins) {
		var want []string
		for _, c := range cpus {
			want = append(want, strconv.Itoa(c))
		}
		if got := affinity[strconv.Itoa(thread)]; got != strings.Join(want, ",") && !(len(cpus) == 2 && cpus[1] == cpus[0]+1 && got == fmt.Sprintf("%d-%d", cpus[0], cpus[1])) {
			t.Errorf("thread %d: affinity %q, want CPUs %v", thread, got, cpus)
		}
	}
}

// threadCPUs is the CPU set each thread of plan ends up pinned to.
func threadCPUs(plan []vm.Pinning) map[int][]int {
	out := map[int][]int{}
	for _, p := range plan {
		if !slices.Contains(out[p.Thread], p.CPU) {
			out[p.Thread] = append(out[p.Thread], p.CPU)
		}
	}
	for _, cpus := range out {
		slices.Sort(cpus)
	}
	return out
}
