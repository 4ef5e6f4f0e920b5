// Package wire holds the types the host and the guest agent exchange: the
// plan the host puts in the guest's initramfs (PlanPath) and the results
// the agent sends back as JSON over the event port (vm/event names the
// events and frames them). It is a leaf, so the host binary does not link
// the agent's BPF loader or netlink; the agent's code (suite) fills these
// types in. The JSON tags are the run record's and the result cache's
// format: renaming one changes what old run.json files and cache entries
// mean.
package wire

import "time"

// PlanPath is where the host puts the plan in the guest (second cpio).
const PlanPath = "/kci/plan.json"

// Plan is what the host asks the guest agent to do. It travels as JSON in
// the per-run initramfs.
type Plan struct {
	Sanity      bool          `json:"sanity"`   // refuse to run on a debug kernel
	Survival    bool          `json:"survival"` // run the carrier × path matrix
	Variants    []string      `json:"variants"` // benchmark variants; empty = none
	Bench       BenchParams   `json:"bench"`
	Profile     bool          `json:"profile"`           // sample CPU stacks during the window
	Command     []string      `json:"command,omitempty"` // kci run -- CMD: run this instead
	StepTimeout time.Duration `json:"step_timeout_ns"`
}

// BenchParams is the traffic and measurement window. Defaults are the
// user's: 3 pairs × 36 B × 14 Mbit/s, 5 s + 5 s warm-up, 60 s window.
type BenchParams struct {
	Pairs       int           `json:"pairs"`
	PayloadSize int           `json:"payload_size"`
	RateMbit    float64       `json:"rate_mbit"`
	ServerLead  time.Duration `json:"server_lead_ns"`
	Warmup      time.Duration `json:"warmup_ns"`
	Window      time.Duration `json:"window_ns"`
	ServerCPUs  []int         `json:"server_cpus,omitempty"`
	ClientCPUs  []int         `json:"client_cpus,omitempty"`
	SamplerCPU  int           `json:"sampler_cpu"`
}

// DefaultBench returns the user's traffic setup.
func DefaultBench() BenchParams {
	return BenchParams{
		Pairs: 3, PayloadSize: 36, RateMbit: 14,
		ServerLead: 5 * time.Second, Warmup: 5 * time.Second, Window: 60 * time.Second,
		ServerCPUs: []int{0, 2, 4}, ClientCPUs: []int{1, 3, 5}, SamplerCPU: 6,
	}
}
