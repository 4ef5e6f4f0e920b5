package vm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/vm/event"
)

// ProbeTimeout bounds the KVM probe: a guest that works under KVM reaches
// the agent in a second or two; one that does not run under this host's
// KVM (a PVM host, broken nested virtualisation) never does.
const ProbeTimeout = 20 * time.Second

// probeTimeout is ProbeTimeout but in the fake-QEMU tests.
var probeTimeout = ProbeTimeout

// What the probe found, in AccelChoice.Case: kci doctor's advice depends on it.
const (
	CaseKVM          = "kvm"          // guests run under KVM with -cpu host
	CaseMSR          = "msr"          // -cpu host died on an MSR write; a model without that feature runs
	CasePVM          = "pvm"          // /dev/kvm is kvm_pvm: runs only PVM guest kernels
	CaseNoAgent      = "no-agent"     // QEMU runs under KVM, the guest never reaches the agent
	CaseQEMUFails    = "qemu-fails"   // QEMU dies under KVM and no model kci knows avoids it
	CaseInconclusive = "inconclusive" // the boot failed for a reason that says nothing about KVM
)

// PVMReason is the choice's reason on a kvm_pvm host.
const PVMReason = "PVM: runs only PVM guest kernels (/dev/kvm is the kvm_pvm module, " +
	"pagetable-based nested virtualisation; a stock kernel prints nothing under it)"

// hostRoot prefixes the /sys and /proc paths the probe reads ("" = the
// real ones): the fake-QEMU tests play a host other than this machine.
var hostRoot = ""

// IsPVM reports whether root's kernel runs the kvm_pvm module, whose
// /dev/kvm runs only guests built as PVM guests (CONFIG_PVM_GUEST).
// /sys/module names loaded modules; /proc/modules too where /sys/module
// is not mounted.
func IsPVM(root string) bool {
	if _, err := os.Stat(filepath.Join(root, "/sys/module/kvm_pvm")); err == nil {
		return true
	}
	b, err := os.ReadFile(filepath.Join(root, "/proc/modules"))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if name, _, _ := strings.Cut(l, " "); name == "kvm_pvm" {
			return true
		}
	}
	return false
}

// msrFeatures are the CPU features whose MSR QEMU writes at vCPU reset
// when the model has them, for the MSRs a host's KVM has been seen to
// refuse. IA32_ARCH_CAPABILITIES (0x10a): GitHub's Linux runners since
// February 2026 and this project's kvm_pvm hosts ("failed to set MSR
// 0x10a to 0x69", then QEMU's kvm_buf_set_msrs assertion).
var msrFeatures = map[string]struct{ name, feature string }{
	"0x10a": {"IA32_ARCH_CAPABILITIES", "arch-capabilities"},
}

var msrFailed = regexp.MustCompile(`failed to set MSR (0x[0-9a-fA-F]+)`)

// msrFailure finds QEMU dying at start on an MSR write KVM refused, in a
// boot error carrying QEMU's stderr: the MSR, and the feature to drop
// ("" when kci knows none).
func msrFailure(err error) (msr, feature string) {
	if err == nil || !errors.Is(err, errQEMUExited) {
		return "", ""
	}
	m := msrFailed.FindStringSubmatch(err.Error())
	if m == nil {
		return "", ""
	}
	msr = strings.ToLower(m[1])
	return msr, msrFeatures[msr].feature
}

// bootKVM boots cfg under KVM. Should QEMU die at start on an MSR write
// that a CPU feature causes, it boots again with that feature off, as
// long as the failures name features kci knows. It returns the -cpu
// model of the last boot and, when that is not cfg's, why.
func bootKVM(ctx context.Context, cfg Config, res *Result, onEvent func(event.Event), untilReady bool) (model, why string, err error) {
	model = cfg.CPUModel
	keep := *res
	for {
		cfg.CPUModel = model
		*res = keep
		err = boot(ctx, cfg, res, onEvent, untilReady)
		msr, feature := msrFailure(err)
		if feature == "" || strings.Contains(model, ",-"+feature) {
			return model, why, err
		}
		why = fmt.Sprintf("-cpu %s: QEMU died at start under KVM, failed to set MSR %s (%s); kci boots without %s",
			model, msr, msrFeatures[msr].name, feature)
		model += ",-" + feature
	}
}

// ProbeKVM boots cfg's kernel and initramfs under KVM, bounded by
// ProbeTimeout, and reports whether the agent got ready and with which
// -cpu model. It boots whatever the host: Resolve names a PVM host
// without calling it, since that KVM runs no kernel kci builds.
// conclusive is false when the boot failed for a reason that says nothing
// about KVM (the kernel crashed, QEMU could not start); the choice is
// TCG then, but not worth remembering.
func ProbeKVM(ctx context.Context, cfg Config) (v AccelChoice, conclusive bool, err error) {
	now := time.Now().UTC()
	cfg = cfg.withDefaults()
	cfg.Accel, cfg.Interactive, cfg.Console, cfg.Pin = AccelKVM, false, nil, nil
	cfg.BootTimeout = probeTimeout
	if cfg.CPUModel == "" {
		cfg.CPUModel = "host"
	}
	dir, err := os.MkdirTemp("", "kci-kvm-probe-")
	if err != nil {
		return v, false, infra("kvm probe", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	cfg.Dir = dir
	res := &Result{}
	model, why, berr := bootKVM(ctx, cfg, res, nil, true)
	v = AccelChoice{Probe: probeVersion, Accel: AccelTCG, CPU: model, CPUReason: why, Time: now}
	var be *BootError
	switch {
	case berr == nil:
		v.Accel, v.Case = AccelKVM, CaseKVM
		if model != cfg.CPUModel {
			v.Case = CaseMSR
		}
		v.Reason = fmt.Sprintf("KVM guest reached the agent in %v with -cpu %s", res.BootToReady.Round(time.Millisecond), model)
		return v, true, nil
	case ctx.Err() != nil:
		return v, false, ctxError(ctx, "kvm probe")
	case errors.As(berr, &be):
		v.Case = CaseNoAgent
		v.Reason = fmt.Sprintf("a KVM guest (-cpu %s) did not reach the agent within %v; %s", model, probeTimeout, consoleSaid(be.Tail))
		return v, true, nil
	case errors.Is(berr, errQEMUExited):
		// The same QEMU runs this machine under TCG; under KVM it died.
		v.Case = CaseQEMUFails
		v.Reason = fmt.Sprintf("QEMU fails under KVM (-cpu %s): %s", model, errorLine(berr.Error()))
		return v, true, nil
	default:
		v.Case = CaseInconclusive
		v.Reason = "KVM probe inconclusive: " + lines.First(berr.Error())
		return v, false, nil
	}
}

// consoleSaid sums up a console tail for a guest that never got ready. A
// PVM host's guest shows the firmware's lines and not one of the kernel's;
// a slow or broken guest shows its last message.
func consoleSaid(tail string) string {
	tail = strings.TrimSpace(tail)
	switch {
	case tail == "":
		return "the kernel printed nothing (the console stayed empty)"
	case !kernelLine.MatchString(tail):
		return fmt.Sprintf("the kernel printed nothing (the console ends with the firmware's %q)", lines.Last(tail, 1))
	}
	return "its console ended with: " + lines.Last(tail, 1)
}

// kernelLine is a line only the kernel prints: a printk timestamp or its
// banner.
var kernelLine = regexp.MustCompile(`(?m)^\[\s*\d+\.\d+\]|Linux version `)

// errorLine picks QEMU's first "error" line from a message carrying its
// stderr, else the last line.
func errorLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range ls[1:] {
		if strings.Contains(strings.ToLower(l), "error") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(ls[len(ls)-1])
}
