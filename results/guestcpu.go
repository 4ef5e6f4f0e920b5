package results

// guestCPU names, for the host line of every report, why the run got its
// accelerator (unless requested) and QEMU's -cpu model with why it is not
// the accelerator's default: on a runner whose KVM refuses
// IA32_ARCH_CAPABILITIES the numbers come from -cpu host,-arch-capabilities.
func guestCPU(h Host) []string {
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
	return out
}
