package suite

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

// Sanity is the guest's own check that the numbers it is about to produce
// are from a production-like kernel.
type Sanity struct {
	Release string `json:"release"`
	BuildID string `json:"build_id"`
	Version string `json:"version"` // /proc/version
	Lockdep bool   `json:"lockdep"` // any lockdep evidence found
	JIT     bool   `json:"jit"`
	NumCPU  int    `json:"num_cpu"`
	// ClockSource is the timekeeping clocksource; a TCG guest often falls
	// back to refined-jiffies. BPF stats use sched_clock, which is checked
	// per variant (coarse run times invalidate the repetition).
	ClockSource string   `json:"clocksource,omitempty"`
	Problems    []string `json:"problems,omitempty"` // non-empty = run refused
}

// Caps is what the running kernel offers, probed from BTF and by trying.
type Caps struct {
	Kfuncs      map[string]bool `json:"kfuncs"`
	Tracepoints map[string]bool `json:"tracepoints"`
	MapTypes    map[string]bool `json:"map_types"`
	TCX         bool            `json:"tcx"`
	Links       map[string]bool `json:"links,omitempty"` // device kinds the kernel can create (veth, ipip, gre)
}

// Cell is one survival matrix cell.
type Cell struct {
	Carrier  string `json:"carrier"`
	Path     string `json:"path"`
	Expected string `json:"expected"`         // survives | lost | skip
	Observed string `json:"observed"`         // survives | lost | skip | error
	Reason   string `json:"reason,omitempty"` // why expected, or why skipped
	Detail   string `json:"detail,omitempty"`
	Pass     bool   `json:"pass"`
}

// ProgStat is one BPF program's BPF_ENABLE_STATS counters over the window.
type ProgStat struct {
	Name      string `json:"name"`
	Type      string `json:"type"` // sched_cls, tracing, ...
	RunTimeNs uint64 `json:"run_time_ns"`
	RunCnt    uint64 `json:"run_cnt"`
	// NsPerPkt is RunTimeNs over the variant's packet count (the largest
	// sched_cls RunCnt), so per-skb reapers are weighted by packets.
	NsPerPkt float64 `json:"ns_per_pkt"`
}

// CPUStat is one CPU's /proc/stat delta over the window, in percent.
type CPUStat struct {
	CPU  int     `json:"cpu"`
	Busy float64 `json:"busy"`
	Sys  float64 `json:"sys"`
	Soft float64 `json:"soft"`
}

// LoStat is the loopback device counter delta over the window.
type LoStat struct {
	RxPackets uint64 `json:"rx_packets"`
	TxPackets uint64 `json:"tx_packets"`
	RxErrors  uint64 `json:"rx_errors"`
	TxErrors  uint64 `json:"tx_errors"`
	RxDropped uint64 `json:"rx_dropped"`
	TxDropped uint64 `json:"tx_dropped"`
}

// VariantResult is one benchmark variant's measurement in one boot.
type VariantResult struct {
	Variant   string            `json:"variant"`
	Skipped   string            `json:"skipped,omitempty"` // missing capability
	Attach    string            `json:"attach,omitempty"`  // tcx | clsact
	Programs  []ProgStat        `json:"programs,omitempty"`
	Counters  map[string]uint64 `json:"counters,omitempty"` // stats map, summed over CPUs
	Lo        LoStat            `json:"lo"`
	PerSecond []uint64          `json:"per_second,omitempty"` // packets received per second
	CPUs      []CPUStat         `json:"cpus,omitempty"`
	PPS       float64           `json:"pps"`
	Window    time.Duration     `json:"window_ns"`
	Valid     bool              `json:"valid"`
	Invalid   string            `json:"invalid,omitempty"` // why not valid
	// Cost is the whole-path measurement of the window (cost.go).
	Cost *Cost `json:"cost,omitempty"`
	// Loads are the verifier and JIT facts of each program the variant
	// loaded; LoadError is why the collection would not load.
	Loads     []ProgLoad `json:"loads,omitempty"`
	LoadError string     `json:"load_error,omitempty"`
	// ExactWindow is the QEMU plugin's window (mark.go) this variant's
	// measurement ran in, nil when no window opened; Observer are the
	// accountant's JIT'd programs, which run inside every window.
	ExactWindow *int        `json:"exact_window,omitempty"`
	Observer    []CodeRange `json:"observer,omitempty"`
}

// ProgLoad is what loading one program cost the verifier and produced,
// as veristat shows it.
type ProgLoad struct {
	Name          string `json:"name"`
	VerifiedInsns uint32 `json:"verified_insns"` // bpf_prog_info.verified_insns
	XlatedBytes   int    `json:"xlated_bytes"`   // after the verifier's rewrites
	JitedBytes    uint32 `json:"jited_bytes"`
	// VerifyUs is the verifier's own "verification time" (log level
	// stats), µs of guest time.
	VerifyUs uint64 `json:"verify_us"`
	// LoadNs is the whole collection's load (maps, BTF, every program),
	// measured around it: the same for every program of the variant.
	LoadNs int64 `json:"load_ns"`
	// JIT is where the JIT put the program's functions (empty without
	// the JIT or the right to read kernel addresses).
	JIT []CodeRange `json:"jit,omitempty"`
}

// Profile is a CPU profile sampled in the guest during one variant's window.
type Profile struct {
	Variant string        `json:"variant"`
	Folded  string        `json:"folded"` // "a;b;c count" lines, symbolised in the guest
	CPUs    []int         `json:"cpus,omitempty"`
	FreqHz  int           `json:"freq_hz,omitempty"`
	Window  time.Duration `json:"window_ns,omitempty"`
	Samples uint64        `json:"samples,omitempty"`
	Dropped uint64        `json:"dropped,omitempty"` // samples the counts map had no room for
	Error   string        `json:"error,omitempty"`   // the sampler failed; Folded may be empty
}
