package vm

import "time"

// Phase is one stretch of a boot's host wall time. A boot's phases are
// consecutive and sum to its Duration: each one ends where the next begins.
type Phase struct {
	Name     string        `json:"name"`
	Duration time.Duration `json:"duration_ns"`
}

// Phase names besides the agent's own steps (sanity, caps, survival,
// bench/<variant>), which are named as the agent announces them.
const (
	PhaseFence    = "fence"    // waiting for a host CPU no other fenced QEMU holds (vm/fence.go)
	PhaseQEMU     = "qemu"     // kci's start of the boot (or the fence's CPU) to QMP cont: QEMU's exec, sockets, pinning
	PhaseFirmware = "firmware" // cont to the kernel's first console line
	PhaseKernel   = "kernel"   // that line to the agent's ready event
	PhaseAgent    = "agent"    // ready to the agent's first step
	PhaseTeardown = "teardown" // the done event (or the run's decision) to QEMU gone and reaped
	// PhaseEarly replaces firmware and kernel when no kernel line was
	// recognised before ready (no printk timestamps, a quiet console):
	// the split is unknown, so it is not guessed.
	PhaseEarly = "firmware+kernel"
)

// The kernel's first console line is the first that kernelLine (probe.go)
// matches: "Linux version" is the first line printk replays, and under
// SeaBIOS it shares a line with "Booting from ROM.." and the escapes that
// clear the screen; a printk timestamp marks any later one.

// phaseClock cuts a boot's wall time into phases on the host's clock, as
// the loop sees each edge. The guest's event times are not used: under
// icount the guest clock is instruction time, unrelated to the host's.
type phaseClock struct {
	name  string
	since time.Time
	done  []Phase
}

func newPhaseClock(start time.Time) *phaseClock {
	return &phaseClock{name: PhaseQEMU, since: start}
}

// mark ends the open phase at now and opens next.
func (p *phaseClock) mark(next string, now time.Time) {
	if p == nil {
		return
	}
	p.done = append(p.done, Phase{Name: p.name, Duration: now.Sub(p.since)})
	p.name, p.since = next, now
}

// rename renames the open phase (the early phase whose split is unknown).
func (p *phaseClock) rename(from, to string) {
	if p != nil && p.name == from {
		p.name = to
	}
}

// close ends the open phase at end, the boot's end, and returns them all.
func (p *phaseClock) close(end time.Time) []Phase {
	if p == nil {
		return nil
	}
	p.mark("", end)
	return p.done
}
