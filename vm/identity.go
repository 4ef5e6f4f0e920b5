package vm

import (
	"fmt"
	"sort"
	"strings"
)

// An Identity is what a TCG guest's CPU says it is, and the kernel command
// line that makes the kernel choose, under TCG, the mitigations it chooses
// on that CPU with current microcode. TCG cannot show the kernel a real
// CPU's capability MSRs (no IA32_ARCH_CAPABILITIES, no eIBRS, no BHI_CTRL),
// so left to itself a kernel on an Intel identity picks software
// mitigations the real part does not need (retpolines, return thunks,
// ITS's aligned thunks, measured on the stock kernel); the command line
// turns off exactly those the real part does in hardware, and keeps those
// it does in software.
type Identity struct {
	Name    string
	CPU     string   // QEMU's -cpu under TCG
	Cmdline []string // kernel arguments
	About   string   // what the kernel does on it, for the record
}

// IdentityQEMU is QEMU's own TCG CPU (AMD "QEMU TCG CPU version 2.5+"):
// the kernel picks retpolines for Spectre v2 and nothing else.
const IdentityQEMU = "qemu"

// IdentityI713800H is the user's CPU class (../shared/USER-WORKFLOW.md).
const IdentityI713800H = "i7-13800h"

var identities = map[string]Identity{
	IdentityQEMU: {
		Name: IdentityQEMU, CPU: "max",
		About: "AMD QEMU TCG CPU (family 0xf): Spectre v2 retpolines, no other mitigation",
	},
	IdentityI713800H: {
		Name: IdentityI713800H,
		CPU:  "max,vendor=GenuineIntel,family=6,model=186,stepping=2,model-id=Intel(R) Core(TM) i7-13800H",
		// eIBRS (Spectre v2, BHI in hardware: BHI_DIS_S), not affected by
		// Retbleed or ITS; VERW on return to user stays (RFDS, its
		// E-cores), as the kernel does on the real part.
		// idle=halt: TCG's MWAIT does not wait once there are several
		// vCPUs, and an idle loop on it would spin through icount's
		// time; HLT lets the clock skip idle time, as it does today.
		Cmdline: []string{"spectre_v2=off", "spectre_bhi=off", "retbleed=off", "indirect_target_selection=off", "idle=halt"},
		About: "Intel i7-13800H (family 6 model 0xba): eIBRS and BHI_DIS_S in hardware (no retpolines, " +
			"no BHB clearing), no return thunks (not affected by Retbleed or ITS), VERW on return to user (RFDS)",
	},
}

// TCG returns the identity's -cpu model and its record for a TCG guest of
// cpus vCPUs. Several vCPUs go without CMPXCHG16B: QEMU 7.2 computes that
// instruction's flags from a stale lazy-flags state (its translator does
// not store the pending flags operation before the helper), leaving an
// operand of an earlier instruction in EFLAGS, a bug no one sees until
// cpu_exec returns or an interrupt is taken before the next instruction
// that sets flags; kci's turns return from cpu_exec every 1000
// instructions, and kernels crashed on it (docs/internals.md). Without it
// the kernel calls its emulation (pushf; cli; popf), as on a CPU without
// the feature.
func (id Identity) TCG(cpus int) (cpu, about string) {
	if cpus <= 1 {
		return id.CPU, id.About
	}
	return id.CPU + ",-cx16", id.About + "; without CMPXCHG16B, which QEMU 7.2 gets wrong with several vCPUs (docs/internals.md)"
}

// DefaultIdentity is a TCG guest's identity unless asked otherwise: the
// user's CPU class, whose mitigations change instruction-time (whole-path
// 0.8 % lower than on IdentityQEMU, measured on the gtp tree: no
// retpolines, a VERW per return to user), so the guest's kernel runs the
// code it runs in production.
const DefaultIdentity = IdentityI713800H

// LookupIdentity returns the identity called name ("" = DefaultIdentity).
func LookupIdentity(name string) (Identity, error) {
	if name == "" {
		name = DefaultIdentity
	}
	if id, ok := identities[strings.ToLower(name)]; ok {
		return id, nil
	}
	var names []string
	for n := range identities {
		names = append(names, n)
	}
	sort.Strings(names)
	return Identity{}, fmt.Errorf("guest CPU %q: want one of %s", name, strings.Join(names, ", "))
}
