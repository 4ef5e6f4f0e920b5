package doctor

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kci-dev/kci/vm"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, s := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestHaltPoll(t *testing.T) {
	root := t.TempDir()
	o := Options{Root: root}
	if c := checkHaltPoll(o, false); c.Status != OK || !strings.Contains(c.Detail, "not applicable") {
		t.Errorf("no kvm module, no KVM: %+v", c)
	}
	if c := checkHaltPoll(o, true); c.Status != Warn {
		t.Errorf("KVM in use but parameter unreadable: %+v", c)
	}
	writeFiles(t, root, map[string]string{"sys/module/kvm/parameters/halt_poll_ns": "200000\n"})
	c := checkHaltPoll(o, true)
	if c.Status != Warn || !strings.Contains(c.Detail, "200000") || !strings.Contains(c.Fix, "halt_poll_ns") {
		t.Errorf("halt polling on: %+v", c)
	}
	if c := checkHaltPoll(o, false); c.Status != OK {
		t.Errorf("halt polling on but TCG: %+v", c)
	}
	writeFiles(t, root, map[string]string{"sys/module/kvm/parameters/halt_poll_ns": "0\n"})
	if c := checkHaltPoll(o, true); c.Status != OK {
		t.Errorf("halt polling off: %+v", c)
	}
}

func TestCPUFreq(t *testing.T) {
	root := t.TempDir()
	o := Options{Root: root}
	writeFiles(t, root, map[string]string{"sys/devices/system/cpu/online": "0-3\n"})
	if c := checkCPUFreq(o); c.Status != OK || !strings.Contains(c.Detail, "no cpufreq") {
		t.Errorf("no cpufreq: %+v", c)
	}
	f := func(cpu, lo, hi string) map[string]string {
		d := "sys/devices/system/cpu/cpu" + cpu + "/cpufreq/"
		return map[string]string{d + "scaling_min_freq": lo + "\n", d + "scaling_max_freq": hi + "\n"}
	}
	for _, cpu := range []string{"0", "1", "2", "3"} {
		writeFiles(t, root, f(cpu, "3000000", "3000000"))
	}
	if c := checkCPUFreq(o); c.Status != OK || !strings.Contains(c.Detail, "clamped on all 4 online") {
		t.Errorf("all clamped: %+v", c)
	}
	writeFiles(t, root, f("3", "800000", "4700000"))
	c := checkCPUFreq(o)
	if c.Status != Warn || !strings.Contains(c.Detail, "cpu3 800000-4700000") || c.Fix == "" {
		t.Errorf("cpu3 loose: %+v", c)
	}
	o.Pin = []int{0, 1}
	if c := checkCPUFreq(o); c.Status != OK || !strings.Contains(c.Detail, "2 pinned") {
		t.Errorf("only pinned CPUs count: %+v", c)
	}
}

func TestMemory(t *testing.T) {
	root := t.TempDir()
	o := Options{Root: root}
	for _, tc := range []struct {
		avail string
		want  Status
		fix   string
	}{
		{"1048576", Fail, "a kernel build plus a 1 GiB guest needs 2.0 GiB: stop other work"},
		{"3145728", Warn, "parallel compile jobs and the guest want 4.0 GiB"},
		{"16777216", OK, ""},
	} {
		writeFiles(t, root, map[string]string{"proc/meminfo": "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   " + tc.avail + " kB\n"})
		if c := checkMemory(o); c.Status != tc.want || c.Fix != tc.fix {
			t.Errorf("MemAvailable %s kB: %+v, want %s with fix %q", tc.avail, c, tc.want, tc.fix)
		}
	}
}

// TestFloors grades each side of both floors' thresholds: a value equal
// to a threshold is already above it.
func TestFloors(t *testing.T) {
	const (
		diskFix  = "a kernel build needs about 5.0 GiB: free space or set KCI_CACHE elsewhere"
		diskMore = "base + patched builds of several trees want 15.0 GiB"
		memFix   = "a kernel build plus a 1 GiB guest needs 2.0 GiB: stop other work"
		memMore  = "parallel compile jobs and the guest want 4.0 GiB"
	)
	for _, tc := range []struct {
		name string
		f    floor
		v    uint64
		want Status
		fix  string
	}{
		{"disk empty", diskFloor, 0, Fail, diskFix},
		{"disk just under fail", diskFloor, 5<<30 - 1, Fail, diskFix},
		{"disk at fail", diskFloor, 5 << 30, Warn, diskMore},
		{"disk just under warn", diskFloor, 15<<30 - 1, Warn, diskMore},
		{"disk at warn", diskFloor, 15 << 30, OK, ""},
		{"disk plenty", diskFloor, 500 << 30, OK, ""},
		{"memory just under fail", memFloor, 2<<30 - 1, Fail, memFix},
		{"memory at fail", memFloor, 2 << 30, Warn, memMore},
		{"memory just under warn", memFloor, 4<<30 - 1, Warn, memMore},
		{"memory at warn", memFloor, 4 << 30, OK, ""},
	} {
		if st, fix := tc.f.grade(tc.v); st != tc.want || fix != tc.fix {
			t.Errorf("%s (%d bytes): %s %q, want %s %q", tc.name, tc.v, st, fix, tc.want, tc.fix)
		}
	}
}

func TestDisk(t *testing.T) {
	// The cache need not exist: the nearest existing parent is measured.
	c := checkDisk(Options{CacheDir: filepath.Join(t.TempDir(), "not", "yet")})
	if c.Status == "" || !strings.Contains(c.Detail, "GiB free") {
		t.Errorf("disk: %+v", c)
	}
}

func TestTools(t *testing.T) {
	bin := t.TempDir()
	writeFiles(t, bin, map[string]string{
		"gcc":    "#!/bin/sh\necho 'gcc (Debian 12.2.0-14) 12.2.0'\necho second line\n",
		"make":   "#!/bin/sh\necho 'GNU Make 4.3'\n",
		"bison":  "#!/bin/sh\necho 'bison (GNU Bison) 3.8.2'\n",
		"flex":   "#!/bin/sh\necho 'usage: flex' >&2\necho 'flex: bad option' >&2\nexit 2\n",
		"bc":     "#!/bin/sh\necho 'bc 1.07.1'\n",
		"pahole": "#!/bin/sh\nexit 3\n",
	})
	t.Setenv("PATH", bin)
	cs := checkTools(context.Background(), Options{QEMU: "qemu-system-x86_64", NeedClang: true})
	got := map[string]Check{}
	for _, c := range cs {
		got[c.Name] = c
	}
	if c := got["tool gcc"]; c.Status != OK || c.Detail != "gcc (Debian 12.2.0-14) 12.2.0" {
		t.Errorf("gcc: %+v", c)
	}
	if c := got["tool pahole"]; c.Status != Fail || !strings.Contains(c.Detail, "exit status 3") {
		t.Errorf("broken pahole: %+v", c)
	}
	// A row is one line: the tool's last word, not its whole output.
	if c := got["tool flex"]; c.Status != Fail || !strings.HasSuffix(c.Detail, "flex --version: exit status 2: flex: bad option") || strings.Contains(c.Detail, "\n") {
		t.Errorf("failing flex: %+v", c)
	}
	for _, name := range []string{"tool qemu-system-x86_64", "tool clang", "tool go"} {
		if c := got[name]; c.Status != Fail || !strings.Contains(c.Detail, "not found") || c.Fix == "" {
			t.Errorf("%s missing: %+v", name, c)
		}
	}
	if !Failed(cs) {
		t.Error("missing tools should fail the doctor")
	}
}

func TestBaseSource(t *testing.T) {
	p := filepath.Join(t.TempDir(), "linux-source-6.12.tar.xz")
	if c := checkBaseSource(Options{BaseSource: p}); c.Status != Fail || c.Fix == "" {
		t.Errorf("missing source: %+v", c)
	}
	os.WriteFile(p, make([]byte, 3<<20), 0o644)
	if c := checkBaseSource(Options{BaseSource: p}); c.Status != OK || !strings.Contains(c.Detail, "3 MiB") {
		t.Errorf("present source: %+v", c)
	}
}

func TestFailed(t *testing.T) {
	if Failed([]Check{{Status: OK}, {Status: Warn}}) {
		t.Error("warnings are not failures")
	}
	if !Failed([]Check{{Status: OK}, {Status: Fail}}) {
		t.Error("a failure is a failure")
	}
}

// Each way KVM can be missing or broken gets its own diagnosis and fix;
// the nested-virtualisation advice only where it applies (a VM whose CPU
// shows no VMX/SVM).
func TestKVMDiagnosis(t *testing.T) {
	notExist := fmt.Errorf("no usable /dev/kvm: %w", &fs.PathError{Op: "open", Path: "/dev/kvm", Err: syscall.ENOENT})
	denied := fmt.Errorf("no usable /dev/kvm: %w", &fs.PathError{Op: "open", Path: "/dev/kvm", Err: syscall.EACCES})
	vmx := map[string]bool{"vmx": true}
	guest := map[string]bool{"hypervisor": true}
	for _, tc := range []struct {
		name       string
		c          Check
		status     Status
		detail     string
		fix        string
		noNestedOK bool // the fix must not tell to enable nested virtualisation
	}{
		{"no access", noKVM(denied, vmx), Warn, "cannot open it", `KERNEL=="kvm", GROUP="kvm", MODE="0666"`, true},
		{"no module", noKVM(notExist, vmx), Warn, "no KVM module is loaded", "modprobe kvm_intel", true},
		{"vm without vmx", noKVM(notExist, guest), Warn, "virtual machine", "nested virtualisation", false},
		{"bare metal, virt off", noKVM(notExist, nil), Warn, "no VMX/SVM", "firmware", true},
		{"msr", choiceCheck(vm.AccelChoice{Accel: vm.AccelKVM, Case: vm.CaseMSR, CPU: "host,-arch-capabilities",
			CPUReason: "-cpu host: QEMU died at start under KVM, failed to set MSR 0x10a (IA32_ARCH_CAPABILITIES)", Reason: "reached the agent"}, true, "/c/v.json"),
			OK, "usable with -cpu host,-arch-capabilities", "", true},
		{"pvm", choiceCheck(vm.AccelChoice{Accel: vm.AccelTCG, Case: vm.CasePVM, Reason: vm.PVMReason}, true, "/c/v.json"),
			Warn, "PVM: runs only PVM guest kernels", "kvm_intel or kvm_amd", true},
		{"no agent", choiceCheck(vm.AccelChoice{Accel: vm.AccelTCG, Case: vm.CaseNoAgent, Reason: "a KVM guest (-cpu host) did not reach the agent within 20s; its console printed nothing"}, true, "/c/v.json"),
			Warn, "printed nothing", "kci shell --accel kvm", true},
		{"qemu fails", choiceCheck(vm.AccelChoice{Accel: vm.AccelTCG, Case: vm.CaseQEMUFails, Reason: "QEMU fails under KVM (-cpu host): error: failed to set MSR 0x48"}, true, "/c/v.json"),
			Warn, "MSR 0x48", "rm /c/v.json", true},
		{"kvm", choiceCheck(vm.AccelChoice{Accel: vm.AccelKVM, Case: vm.CaseKVM, CPU: "host", Reason: "KVM guest reached the agent in 1.2s with -cpu host"}, true, ""),
			OK, "usable: KVM guest reached the agent", "", true},
		{"not probed", choiceCheck(vm.AccelChoice{}, false, ""), Warn, "no guest has been probed", "kci doctor --kernel", true},
	} {
		c := tc.c
		if c.Status != tc.status || !strings.Contains(c.Detail, tc.detail) || !strings.Contains(c.Fix, tc.fix) {
			t.Errorf("%s: %+v\nwant %s, detail with %q, fix with %q", tc.name, c, tc.status, tc.detail, tc.fix)
		}
		if tc.noNestedOK && strings.Contains(c.Fix, "enable nested") {
			t.Errorf("%s: fix %q tells to enable nested virtualisation, which is not what is wrong", tc.name, c.Fix)
		}
		if tc.status == Warn && c.Fix == "" {
			t.Errorf("%s: a warning without a fix", tc.name)
		}
	}
}

// A kvm_pvm host is named by the check itself, before any verdict: no
// probe, no nested-virtualisation advice, KVM not in use.
func TestKVMCheckPVMHost(t *testing.T) {
	if vm.KVMDevice() != nil {
		t.Skip("needs an openable /dev/kvm: the PVM check comes after it")
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"sys/module/kvm_pvm/parameters/force": "N\n"})
	c, mayUse := checkKVM(context.Background(), Options{Root: root, QEMU: "qemu-system-x86_64"})
	if mayUse || c.Status != Warn || !strings.Contains(c.Detail, "PVM: runs only PVM guest kernels") || strings.Contains(c.Fix, "nested=1") {
		t.Errorf("PVM host: %+v (may use KVM %v)", c, mayUse)
	}
}

// Joining the node's group is suggested only when that gives read-write:
// a group-rw node of a group other than root.
func TestDevOwnerGroup(t *testing.T) {
	p := filepath.Join(t.TempDir(), "kvm")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, g := devOwner(p); g != "" {
		t.Errorf("0600: group %q suggested", g)
	}
	if err := os.Chmod(p, 0o660); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() != 0 {
		return // chown to another group needs root; the rest is checked
	}
	if _, g := devOwner(p); g != "" {
		t.Errorf("0660 root group: group %q suggested", g)
	}
	if err := os.Chown(p, -1, 65534); err != nil {
		t.Fatal(err)
	}
	if d, g := devOwner(p); g == "" || !strings.Contains(d, "mode -rw-rw----") {
		t.Errorf("0660 gid 65534: %q, group %q; want the group named", d, g)
	}
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, g := devOwner(p); g != "" {
		t.Errorf("0640: group %q suggested, but it gives no write access", g)
	}
}

// The fence check agrees with vm.FenceCheck and says why not with a fix.
func TestCheckFence(t *testing.T) {
	if c := checkFence(Options{}, true); c.Status != OK || !strings.Contains(c.Detail, "KVM") {
		t.Errorf("under KVM: %+v", c)
	}
	c := checkFence(Options{}, false)
	err := vm.FenceCheck(nil)
	switch {
	case err == nil && c.Status != OK:
		t.Errorf("fence possible, check %+v", c)
	case err != nil && (c.Status != Warn || c.Fix == "" || !strings.Contains(c.Detail, err.Error())):
		t.Errorf("fence impossible (%v), check %+v", err, c)
	}
}
