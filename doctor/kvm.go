package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"strconv"
	"strings"
	"syscall"

	"github.com/kci-dev/kci/vm"
)

// tcgCost is what a host without working KVM costs a run.
const tcgCost = "runs use TCG: instruction-time numbers (exact under icount), 20-45 s boots, no wall-clock numbers"

// udevRule gives every user read-write access to /dev/kvm (GitHub's
// runners create it root-only).
const udevRule = `echo 'KERNEL=="kvm", GROUP="kvm", MODE="0666", OPTIONS+="static_node=kvm"' | ` +
	`sudo tee /etc/udev/rules.d/99-kvm4all.rules && sudo udevadm control --reload-rules && sudo udevadm trigger --name-match=kvm`

// checkKVM also reports whether runs may use KVM (it works, or has not
// been probed yet).
func checkKVM(ctx context.Context, o Options) (Check, bool) {
	if err := vm.KVMDevice(); err != nil {
		return noKVM(err, cpuFlags(o)), false
	}
	if vm.IsPVM(o.Root) {
		return choiceCheck(vm.AccelChoice{Accel: vm.AccelTCG, Case: vm.CasePVM, Reason: vm.PVMReason}, true, ""), false
	}
	host, err := vm.HostID(ctx, o.QEMU)
	if err != nil {
		return Check{Name: "kvm", Status: Warn, Detail: err.Error()}, true
	}
	file, _ := vm.ChoiceFile(o.CacheDir, host)
	v, ok, err := vm.CachedChoice(ctx, o.CacheDir, o.QEMU)
	if err != nil {
		return Check{Name: "kvm", Status: Warn, Detail: err.Error()}, true
	}
	if !ok && o.Kernel != "" && o.Initrd != "" {
		cfg := vm.Config{QEMU: o.QEMU, Kernel: o.Kernel, Initrd: o.Initrd, CacheDir: o.CacheDir, Accel: vm.AccelAuto}
		if v, err = vm.Resolve(ctx, cfg); err != nil {
			return Check{Name: "kvm", Status: Warn, Detail: "KVM probe failed: " + err.Error()}, true
		}
		ok = true
	}
	return choiceCheck(v, ok, file), !ok || v.Accel == vm.AccelKVM
}

// noKVM says why /dev/kvm cannot be used and what gives it, from the open's
// error and the CPU's flags.
func noKVM(err error, flags map[string]bool) Check {
	c := Check{Name: "kvm", Status: Warn, Detail: fmt.Sprintf("%v; %s", err, tcgCost)}
	virt := flags["vmx"] || flags["svm"]
	switch {
	case errors.Is(err, fs.ErrPermission):
		owner, group := devOwner("/dev/kvm")
		c.Detail = fmt.Sprintf("/dev/kvm exists (%s) but this user cannot open it; %s", owner, tcgCost)
		c.Fix = "give every user access with a udev rule (what CI runners need): " + udevRule
		if group != "" {
			c.Fix = "add this user to group " + group + " (sudo usermod -aG " + group + " $USER, then log in again), or " + c.Fix
		}
	case !errors.Is(err, fs.ErrNotExist):
		c.Fix = "/dev/kvm does not answer KVM_GET_API_VERSION: reload the module (sudo modprobe -r kvm_intel && sudo modprobe kvm_intel, or kvm_amd)"
	case virt:
		c.Detail = "no /dev/kvm, though the CPU has " + virtName(flags) + ": no KVM module is loaded (or, in a container, the device was not passed); " + tcgCost
		c.Fix = "sudo modprobe kvm_intel (Intel) or kvm_amd (AMD); in a container add --device /dev/kvm (Docker refuses it where the host has no /dev/kvm)"
	case flags["hypervisor"]:
		c.Detail = "no /dev/kvm: this is a virtual machine whose CPU shows no VMX/SVM; " + tcgCost
		c.Fix = "enable nested virtualisation for this VM on its hypervisor (kvm_intel/kvm_amd nested=1 on a KVM host, a nested-capable instance type in a cloud), or run on bare metal"
	default:
		c.Detail = "no /dev/kvm and the CPU shows no VMX/SVM; " + tcgCost
		c.Fix = "enable VT-x / AMD-V in the firmware, then sudo modprobe kvm_intel or kvm_amd"
	}
	return c
}

// choiceCheck grades the KVM probe's choice; file is where it is kept
// (deleting it makes the next run probe again).
func choiceCheck(v vm.AccelChoice, ok bool, file string) Check {
	c := Check{Name: "kvm", Status: Warn}
	reprobe := ""
	if file != "" {
		reprobe = "; once fixed, rm " + file + " so the next run probes again"
	}
	switch {
	case !ok:
		c.Detail = "/dev/kvm opens, but no guest has been probed on this host yet (the first run probes with a bounded boot)"
		c.Fix = "kci doctor --kernel BZIMAGE probes now"
	case v.Case == vm.CaseMSR:
		// kci works around it by itself: nothing for the user to do.
		c.Status = OK
		c.Detail = fmt.Sprintf("usable with -cpu %s: %s (%s)", v.CPU, v.CPUReason, v.Reason)
	case v.Accel == vm.AccelKVM:
		c.Status, c.Detail = OK, "usable: "+v.Reason
	case v.Case == vm.CasePVM:
		c.Detail = v.Reason + "; " + tcgCost
		c.Fix = "nothing to change here for kci's kernels: wall-clock numbers need a host whose /dev/kvm is kvm_intel or kvm_amd " +
			"(bare metal, a VM with nested virtualisation, GitHub's Linux runners)"
	case v.Case == vm.CaseNoAgent:
		c.Detail = v.Reason + "; " + tcgCost
		c.Fix = "watch the guest's console: kci shell --accel kvm --kernel BZIMAGE (no kernel output at all: this host's KVM does not run stock kernels)" + reprobe
	case v.Case == vm.CaseQEMUFails:
		c.Detail = v.Reason + "; " + tcgCost
		c.Fix = "QEMU's message says why: try another QEMU build, or keep TCG (--accel tcg)" + reprobe
	default:
		c.Detail = fmt.Sprintf("/dev/kvm opens but guests do not run under it (%s); %s", v.Reason, tcgCost)
		c.Fix = "see kci doctor --kernel BZIMAGE" + reprobe
	}
	return c
}

// cpuFlags are the first CPU's flags in /proc/cpuinfo.
func cpuFlags(o Options) map[string]bool {
	b, err := os.ReadFile(o.path("/proc/cpuinfo"))
	if err != nil {
		return nil
	}
	flags := map[string]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "flags" {
			for _, f := range strings.Fields(v) {
				flags[f] = true
			}
			break
		}
	}
	return flags
}

func virtName(flags map[string]bool) string {
	if flags["svm"] {
		return "AMD-V (svm)"
	}
	return "VT-x (vmx)"
}

// devOwner describes a device node's mode and owners, for "cannot open",
// and names its group when joining it would give read-write access.
func devOwner(p string) (desc, group string) {
	fi, err := os.Stat(p)
	if err != nil {
		return err.Error(), ""
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi.Mode().String(), ""
	}
	name := strconv.FormatUint(uint64(st.Gid), 10)
	if g, err := user.LookupGroupId(name); err == nil {
		name = g.Name
	}
	desc = fmt.Sprintf("mode %s, uid %d, group %s", fi.Mode().Perm(), st.Uid, name)
	if st.Gid != 0 && fi.Mode().Perm()&0o060 == 0o060 {
		group = name
	}
	return desc, group
}
