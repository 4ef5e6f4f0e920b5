package wire

import "time"

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
	// Cost is the whole-path measurement of the window (suite/bench/cost.go).
	Cost *Cost `json:"cost,omitempty"`
	// Loads are the verifier and JIT facts of each program the variant
	// loaded; LoadError is why the collection would not load.
	Loads     []ProgLoad `json:"loads,omitempty"`
	LoadError string     `json:"load_error,omitempty"`
	// ExactWindow is the QEMU plugin's window (suite/bench/mark.go) this
	// variant's measurement ran in, nil when no window opened; Observer
	// are the accountant's JIT'd programs, which run inside every window.
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

// CodeRange is one JIT'd function of a BPF program in the guest's kernel
// address space: what the host maps the plugin's counts onto (its
// symbol lookup cannot see JIT'd code).
type CodeRange struct {
	Prog string `json:"prog"` // program name; subprograms are prog/1, prog/2...
	Addr uint64 `json:"addr"`
	Len  uint32 `json:"len"`
}
