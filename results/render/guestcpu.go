package render

import (
	"fmt"
	"strings"

	"github.com/kci-dev/kci/results"
)

// guestCPU names, for the host line of every report, why the run got its
// accelerator (unless requested) and QEMU's -cpu model with why it is not
// the accelerator's default: on a runner whose KVM refuses
// IA32_ARCH_CAPABILITIES the numbers come from -cpu host,-arch-capabilities.
func guestCPU(h results.Host) []string {
	var out []string
	if h.AccelReason != "" && h.AccelReason != "requested" {
		out = append(out, "accelerator: "+h.AccelReason)
	}
	if h.GuestCPU != "" {
		s := "-cpu " + h.GuestCPU
		if h.GuestCPUReason != "" {
			s += " (" + h.GuestCPUReason + ")"
		}
		out = append(out, s)
	}
	if h.GuestVCPUs > 1 {
		out = append(out, fmt.Sprintf("%d vCPUs", h.GuestVCPUs))
	}
	return out
}

// seriesMachine is the series reports' line naming the accelerator and
// QEMU's -cpu model, with why ("" when the record has neither).
func seriesMachine(s *results.Series, md bool) string {
	var parts []string
	if s.Accel != "" {
		parts = append(parts, "accel "+s.Accel)
	}
	parts = append(parts, guestCPU(results.Host{AccelReason: s.AccelReason, GuestCPU: s.GuestCPU, GuestCPUReason: s.GuestCPUReason})...)
	if len(parts) == 0 {
		return ""
	}
	line := "machine: " + strings.Join(parts, " · ")
	if md {
		return mdText(line) + "\n\n"
	}
	return line + "\n\n"
}
