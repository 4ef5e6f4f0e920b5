package vm

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// ParseCPUList parses a CPU list like "2-5,8" (the kernel's cpulist
// format) into CPU numbers in the order given.
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	seen := map[int]bool{}
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %q: bad cpu %q", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			if seen[c] {
				return nil, fmt.Errorf("cpu list %q: cpu %d twice", s, c)
			}
			seen[c] = true
			cpus = append(cpus, c)
		}
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("cpu list %q is empty", s)
	}
	return cpus, nil
}

// Pinning is one vCPU thread's host CPU.
type Pinning struct {
	VCPU   int
	Thread int
	CPU    int
}

// PinPlan assigns vCPU i (thread tids[i]) to cpus[i % len(cpus)].
func PinPlan(tids, cpus []int) []Pinning {
	if len(cpus) == 0 {
		return nil
	}
	plan := make([]Pinning, len(tids))
	for i, t := range tids {
		plan[i] = Pinning{VCPU: i, Thread: t, CPU: cpus[i%len(cpus)]}
	}
	return plan
}

// applyPins sets each vCPU thread's affinity. Threads that carry several
// vCPUs (single-threaded TCG runs them all on one) get the union of their
// CPUs.
func applyPins(plan []Pinning) error {
	sets := map[int]*unix.CPUSet{}
	var order []int
	for _, p := range plan {
		if sets[p.Thread] == nil {
			sets[p.Thread] = &unix.CPUSet{}
			order = append(order, p.Thread)
		}
		sets[p.Thread].Set(p.CPU)
	}
	for _, t := range order {
		if err := unix.SchedSetaffinity(t, sets[t]); err != nil {
			return fmt.Errorf("pin vCPU thread %d: %w", t, err)
		}
	}
	return nil
}
