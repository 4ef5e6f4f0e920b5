package vm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/internal/failure"
)

// The fake QEMU (fake_test.go) plays a host's KVM with the scenarios
// below: what QEMU does there under -accel kvm, by -cpu model.
//
//	host-kvm   every model boots (bare metal, a working nested host)
//	host-msr   -cpu host dies at start: "failed to set MSR 0x10a" and the
//	           kvm_buf_set_msrs assertion (GitHub's runners since Feb
//	           2026); host,-arch-capabilities boots
//	host-pvm   kvm_pvm: -cpu host dies the same way; without
//	           arch-capabilities QEMU starts, SeaBIOS prints "Booting
//	           from ROM..." and a stock kernel nothing, ever
//	host-msr-other  -cpu host dies on an MSR kci knows no feature for
//	silent     QEMU starts, the guest prints nothing (any accelerator)
//
// Under TCG every host boots. Each start is logged to
// $KCI_FAKE_QEMU_LOG as "accel cpu".
func fakeHost(scenario string, args []string) (next string, code int, exited bool) {
	accel, cpu := argOf(args, "-accel"), argOf(args, "-cpu")
	if p := os.Getenv("KCI_FAKE_QEMU_LOG"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintf(f, "%s %s\n", accel, cpu)
			_ = f.Close()
		}
	}
	if !strings.HasPrefix(scenario, "host-") {
		return scenario, 0, false
	}
	if accel != "kvm" {
		return "ok", 0, false
	}
	archCaps := !strings.Contains(cpu, "-arch-capabilities")
	msrDeath := func(msr string) (string, int, bool) {
		fmt.Fprintf(os.Stderr, "qemu-system-x86_64: error: failed to set MSR %s to 0x69\n", msr)
		fmt.Fprintln(os.Stderr, "qemu-system-x86_64: ../../target/i386/kvm/kvm.c:3183: kvm_buf_set_msrs: Assertion `ret == cpu->kvm_msr_buf->nmsrs' failed.")
		return "", 134, true // abort()
	}
	switch {
	case scenario == "host-kvm":
		return "ok", 0, false
	case scenario == "host-msr-other":
		return msrDeath("0x48")
	case archCaps:
		return msrDeath("0x10a")
	case scenario == "host-pvm":
		return "firmware-only", 0, false
	}
	return "ok", 0, false
}

func argOf(args []string, flag string) string {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag {
			return args[i+1]
		}
	}
	return ""
}

// playHost points the probe at a fake host: scenario for QEMU, root for
// /sys and /proc (pvm: kvm_pvm loaded), a working /dev/kvm, a 1.5 s probe
// budget. It returns the config to probe with and the start log.
func playHost(t *testing.T, scenario string, pvm bool) (Config, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "sys/module/kvm"), 0o755); err != nil {
		t.Fatal(err)
	}
	if pvm {
		if err := os.MkdirAll(filepath.Join(root, "sys/module/kvm_pvm"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	oldRoot, oldDev, oldTimeout := hostRoot, kvmDevice, probeTimeout
	hostRoot, kvmDevice, probeTimeout = root, func() error { return nil }, 1500*time.Millisecond
	t.Cleanup(func() { hostRoot, kvmDevice, probeTimeout = oldRoot, oldDev, oldTimeout })
	log := filepath.Join(dir, "starts.log")
	t.Setenv("KCI_FAKE_QEMU", scenario)
	t.Setenv("KCI_FAKE_QEMU_LOG", log)
	kernel, initrd := filepath.Join(dir, "bzImage"), filepath.Join(dir, "initrd")
	for _, f := range []string{kernel, initrd} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Config{QEMU: self, Kernel: kernel, Initrd: initrd, CacheDir: filepath.Join(dir, "cache"), Accel: AccelAuto}, log
}

// starts is what the fake QEMU was started with, one "accel cpu" each.
func starts(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func probe(t *testing.T, cfg Config) AccelChoice {
	t.Helper()
	start := time.Now()
	v, conclusive, err := ProbeKVM(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verdict after %v: %+v", time.Since(start).Round(time.Millisecond), v)
	if !conclusive {
		t.Errorf("verdict not conclusive: %+v", v)
	}
	return v
}

// A host whose KVM refuses IA32_ARCH_CAPABILITIES: the probe's first boot
// dies on MSR 0x10a, the second, without the feature, reaches the agent,
// and KVM is used with that model.
func TestProbeMSRHost(t *testing.T) {
	cfg, log := playHost(t, "host-msr", false)
	v := probe(t, cfg)
	if v.Accel != AccelKVM || v.Case != CaseMSR || v.CPU != "host,-arch-capabilities" {
		t.Errorf("verdict %+v, want kvm with -cpu host,-arch-capabilities (case msr)", v)
	}
	for _, w := range []string{"-cpu host:", "MSR 0x10a", "IA32_ARCH_CAPABILITIES", "without arch-capabilities"} {
		if !strings.Contains(v.CPUReason, w) {
			t.Errorf("cpu reason %q lacks %q", v.CPUReason, w)
		}
	}
	if got := strings.Join(starts(t, log), "; "); got != "kvm host; kvm host,-arch-capabilities" {
		t.Errorf("QEMU started as %q, want -cpu host then host,-arch-capabilities", got)
	}
}

// A kvm_pvm host is named without a single boot: its KVM runs no kernel
// kci builds, and the probe's budget is not spent finding that out (what
// the probe would find is TestProbePVMUnseen). Both ways of seeing the
// module count.
func TestProbePVMHost(t *testing.T) {
	for _, where := range []string{"sys", "proc"} {
		cfg, log := playHost(t, "host-pvm", where == "sys")
		if where == "proc" {
			p := filepath.Join(hostRoot, "proc/modules")
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte("kvm_pvm 151552 0 - Live 0x0000000000000000\nkvm 1331200 1 kvm_pvm, Live 0x0\n"), 0o644)
		}
		start := time.Now()
		v, err := Resolve(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if v.Accel != AccelTCG || v.Case != CasePVM || !strings.Contains(v.Reason, "PVM: runs only PVM guest kernels") {
			t.Errorf("%s: verdict %+v, want tcg naming PVM", where, v)
		}
		if s := starts(t, log); len(s) != 0 {
			t.Errorf("%s: QEMU started %d times (%q) on a PVM host, want none", where, len(s), s)
		}
		if d := time.Since(start); d > probeTimeout/2 {
			t.Errorf("%s: PVM verdict took %v", where, d)
		}
	}
}

// The same host probed by boot, as when kci cannot see the module
// (another name, a container without /sys/module): the MSR retry starts
// QEMU, the guest prints nothing, and the choice says so within the
// probe's budget.
func TestProbePVMUnseen(t *testing.T) {
	cfg, log := playHost(t, "host-pvm", false)
	v := probe(t, cfg)
	if v.Accel != AccelTCG || v.Case != CaseNoAgent || !strings.Contains(v.Reason, `the kernel printed nothing (the console ends with the firmware's "Booting from ROM...")`) ||
		!strings.Contains(v.Reason, "-cpu host,-arch-capabilities") {
		t.Errorf("verdict %+v, want tcg: the guest (-cpu host,-arch-capabilities) printed nothing", v)
	}
	if got := strings.Join(starts(t, log), "; "); got != "kvm host; kvm host,-arch-capabilities" {
		t.Errorf("QEMU started as %q", got)
	}
}

// QEMU starts under KVM and the guest prints nothing: no-agent, one boot.
func TestProbeSilentGuest(t *testing.T) {
	cfg, log := playHost(t, "silent", false)
	v := probe(t, cfg)
	if v.Accel != AccelTCG || v.Case != CaseNoAgent || !strings.Contains(v.Reason, "the kernel printed nothing (the console stayed empty)") {
		t.Errorf("verdict %+v", v)
	}
	if s := starts(t, log); len(s) != 1 || s[0] != "kvm host" {
		t.Errorf("starts %q, want one -cpu host", s)
	}
}

// An MSR kci knows no feature for is not retried: QEMU fails under KVM.
func TestProbeUnknownMSR(t *testing.T) {
	cfg, log := playHost(t, "host-msr-other", false)
	v := probe(t, cfg)
	if v.Accel != AccelTCG || v.Case != CaseQEMUFails || !strings.Contains(v.Reason, "failed to set MSR 0x48") {
		t.Errorf("verdict %+v", v)
	}
	if s := starts(t, log); len(s) != 1 {
		t.Errorf("starts %q, want one", s)
	}
}

// A working KVM host: -cpu host, one boot.
func TestProbeKVMHost(t *testing.T) {
	cfg, log := playHost(t, "host-kvm", false)
	v := probe(t, cfg)
	if v.Accel != AccelKVM || v.Case != CaseKVM || v.CPU != "host" || v.CPUReason != "" {
		t.Errorf("verdict %+v", v)
	}
	if s := starts(t, log); len(s) != 1 || s[0] != "kvm host" {
		t.Errorf("starts %q", s)
	}
}

// Resolve remembers the model with the choice: the second run boots
// nothing to know it. A choice of the probe before MSR retries (version
// 1: "QEMU fails under KVM") is not trusted.
func TestResolveRemembersModel(t *testing.T) {
	cfg, log := playHost(t, "host-msr", false)
	host, err := HostID(context.Background(), cfg.QEMU)
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := choiceDir(cfg.CacheDir)
	old := AccelChoice{Accel: AccelTCG, Reason: "QEMU fails under KVM: qemu-system-x86_64: error: failed to set MSR 0x10a to 0x69", Host: host}
	os.MkdirAll(dir, 0o755)
	b, _ := json.Marshal(old)
	os.WriteFile(choicePath(dir, host), b, 0o644)
	for i, wantStarts := range []int{2, 2} {
		v, err := Resolve(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if v.Accel != AccelKVM || v.CPU != "host,-arch-capabilities" || !strings.Contains(v.CPUReason, "MSR 0x10a") {
			t.Errorf("resolve %d: %+v", i+1, v)
		}
		if i == 1 && !strings.Contains(v.Reason, "(probed ") {
			t.Errorf("second resolve did not use the remembered verdict: %q", v.Reason)
		}
		if s := starts(t, log); len(s) != wantStarts {
			t.Errorf("resolve %d: %d QEMU starts in all, want %d", i+1, len(s), wantStarts)
		}
	}
}

// --accel kvm on a host the probe never saw: Run retries -cpu host's MSR
// failure itself and says so in the result; on a PVM host it refuses
// before starting QEMU.
func TestRunKVMRequested(t *testing.T) {
	cfg, log := playHost(t, "host-msr", false)
	cfg.Accel, cfg.Dir, cfg.BootTimeout = AccelKVM, t.TempDir(), 5*time.Second
	res, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	assertGone(t, res.PID)
	if res.Accel != AccelKVM || res.Clock != ClockKVM || res.CPU != "host,-arch-capabilities" || !strings.Contains(res.CPUReason, "MSR 0x10a") {
		t.Errorf("result accel %s clock %s cpu %q (%s)", res.Accel, res.Clock, res.CPU, res.CPUReason)
	}
	if c := argOf(res.Args[1:], "-cpu"); c != "host,-arch-capabilities" {
		t.Errorf("recorded args have -cpu %q", c)
	}
	if s := starts(t, log); len(s) != 2 {
		t.Errorf("starts %q", s)
	}

	cfg, log = playHost(t, "host-pvm", true)
	cfg.Accel, cfg.Dir = AccelKVM, t.TempDir()
	_, err = Run(context.Background(), cfg, nil)
	if Kind(err) != failure.Infra || !strings.Contains(err.Error(), "PVM: runs only PVM guest kernels") {
		t.Errorf("--accel kvm on PVM: %v", err)
	}
	if s := starts(t, log); len(s) != 0 {
		t.Errorf("QEMU started on a PVM host: %q", s)
	}
}

// What a guest that never got ready showed: nothing, the firmware only
// (SeaBIOS under kvm_pvm), or the kernel's last word.
func TestConsoleSaid(t *testing.T) {
	for tail, want := range map[string]string{
		"": "the kernel printed nothing (the console stayed empty)",
		"SeaBIOS (version 1.16.2-debian-1.16.2-1)\nBooting from ROM...":                                      `the kernel printed nothing (the console ends with the firmware's "Booting from ROM...")`,
		"Booting from ROM...\n[    0.000000] Linux version 6.12.0\n[    3.100000] Run /init as init process": "its console ended with: [    3.100000] Run /init as init process",
	} {
		if got := consoleSaid(tail); got != want {
			t.Errorf("consoleSaid(%q) = %q, want %q", tail, got, want)
		}
	}
}
