package results

import (
	"fmt"
	"time"
)

// The types below are run.json's own: they change only with SchemaVersion,
// not whenever a stage's internal struct (kernel.Artifacts, the guest's
// wire types: wire.Plan, wire.VariantResult) does. convert.go builds them
// from those structs.
// JSON names are those schema 1 used, so older records still load.

// Kernel is one built kernel as the run record keeps it. Paths are
// relative to the kci cache root (kernels/<key>/bzImage), or bare file
// names for files outside it: a record never names a machine's
// directories. Join them with your own cache root to find the files.
type Kernel struct {
	Key        string        `json:"key"`     // cache key: find the build with kci's kernel cache
	Dir        string        `json:"dir"`     // kernels/<key>
	BzImage    string        `json:"bzimage"` // kernels/<key>/bzImage
	Vmlinux    string        `json:"vmlinux"`
	Config     string        `json:"config"` // the final .config
	Log        string        `json:"log"`    // build log
	Release    string        `json:"release"`
	BuildID    string        `json:"build_id"`
	BaseID     string        `json:"base_id"` // identity of the base source (git tree hash)
	BaseOrigin string        `json:"base_origin"`
	Commit     string        `json:"commit"` // the tree's HEAD after the series
	Version    string        `json:"version"`
	Patches    []string      `json:"patches,omitempty"` // subjects of the applied series, in order
	ConfigHash string        `json:"config_hash"`       // sha256 of the final .config
	Fragments  []string      `json:"fragments,omitempty"`
	Drift      []Drift       `json:"drift,omitempty"`    // differences from the production config
	Verified   []string      `json:"verified,omitempty"` // what the series adds, found in vmlinux BTF
	Parent     string        `json:"parent,omitempty"`   // key of the build this one was seeded from
	Phases     []KernelPhase `json:"phases"`
}

// KernelPhase is one timed step of producing a kernel: wall time, and
// the CPU time make and its compilers used (kernel.Phase).
type KernelPhase struct {
	Name     string        `json:"name"`
	Duration time.Duration `json:"duration_ns"`
	CPU      time.Duration `json:"cpu_ns,omitempty"`
}

// Drift is one curated config option that differs from production.
type Drift struct {
	Option     string `json:"option"`
	Here       string `json:"here"`
	Production string `json:"production"`
	Why        string `json:"why,omitempty"` // empty: not deliberate
}

// String is the one reading of a drift, for reports and kci config.
func (d Drift) String() string {
	s := fmt.Sprintf("%s: here %s, production %s", d.Option, d.Here, d.Production)
	if d.Why != "" {
		return s + " — deliberate: " + d.Why
	}
	return s + " — NOT deliberate: numbers may not transfer"
}

// Plan is what the guest was asked to run.
type Plan struct {
	Sanity      bool          `json:"sanity"`
	Survival    bool          `json:"survival"`
	Variants    []string      `json:"variants"`
	Bench       BenchParams   `json:"bench"`
	Profile     bool          `json:"profile"`
	Command     []string      `json:"command,omitempty"` // kci run -- CMD
	StepTimeout time.Duration `json:"step_timeout_ns"`
}

// BenchParams is the traffic and measurement window of the plan.
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

// Sanity is the guest's check that the booted kernel is production-like.
type Sanity struct {
	Release     string   `json:"release"`
	BuildID     string   `json:"build_id"`
	Version     string   `json:"version"` // /proc/version
	Lockdep     bool     `json:"lockdep"`
	JIT         bool     `json:"jit"`
	NumCPU      int      `json:"num_cpu"`
	ClockSource string   `json:"clocksource,omitempty"`
	Problems    []string `json:"problems,omitempty"` // non-empty = run refused
}

// Caps is what the booted kernel offered.
type Caps struct {
	Kfuncs      map[string]bool `json:"kfuncs"`
	Tracepoints map[string]bool `json:"tracepoints"`
	MapTypes    map[string]bool `json:"map_types"`
	TCX         bool            `json:"tcx"`
	Links       map[string]bool `json:"links,omitempty"`
	XDPHelpers  map[string]bool `json:"xdp_helpers,omitempty"`
}

// Cell is one survival matrix cell as one boot observed it.
type Cell struct {
	Carrier  string `json:"carrier"`
	Path     string `json:"path"`
	Expected string `json:"expected"` // survives | lost | skip
	Observed string `json:"observed"` // survives | lost | skip | error
	Reason   string `json:"reason,omitempty"`
	Detail   string `json:"detail,omitempty"`
	Pass     bool   `json:"pass"`
}

// VariantResult is one benchmark variant's measurement in one boot.
type VariantResult struct {
	Variant   string            `json:"variant"`
	Skipped   string            `json:"skipped,omitempty"` // missing capability
	Attach    string            `json:"attach,omitempty"`  // tcx | clsact
	Programs  []ProgStat        `json:"programs,omitempty"`
	Counters  map[string]uint64 `json:"counters,omitempty"`
	Lo        LoStat            `json:"lo"`
	PerSecond []uint64          `json:"per_second,omitempty"` // packets received per second
	CPUs      []CPUStat         `json:"cpus,omitempty"`
	PPS       float64           `json:"pps"`
	Window    time.Duration     `json:"window_ns"`
	Valid     bool              `json:"valid"`
	Invalid   string            `json:"invalid,omitempty"` // why not valid
	// Cost is the whole-path measurement of the window (cost.go).
	Cost *Cost `json:"cost,omitempty"`
	// Loads are the verifier and JIT facts per program; LoadError is why
	// the variant's programs would not load.
	Loads     []ProgLoad `json:"loads,omitempty"`
	LoadError string     `json:"load_error,omitempty"`
	// Exact is the QEMU plugin's count of the window (icount boots with
	// the plugin only).
	Exact *Exact `json:"exact,omitempty"`
}

// Exact is what the QEMU plugin counted in one variant's window: every
// instruction and memory access the guest executed there, whatever the
// context, and where they ran. Cycles are the cache model's (0 without
// it), labelled by Model.
type Exact struct {
	Insns   uint64 `json:"insns"`
	Mem     uint64 `json:"mem"`
	Cycles  uint64 `json:"cycles,omitempty"`
	Model   string `json:"model,omitempty"`
	Packets uint64 `json:"packets"` // what per-packet figures divide by
	// Funcs are the window's code by function, largest first: kernel
	// functions by name, BPF programs as bpf:<prog>, the accountant's as
	// observer:<prog>, and the buckets FuncUser, FuncOutside and
	// FuncSmall, so they sum to the window.
	Funcs []FuncCount `json:"funcs"`
	// Calls are the window's call contexts (vm/tcgplugin's README):
	// what ran inside the calls into JIT'd code, the callee's own code
	// and everything it called until it returned, interrupts included:
	// bpf_stats' scope for a BPF program. Named call:bpf:<prog> (a
	// subprogram call:bpf:<prog>/<n>, the accountant's
	// call:observer:<prog>; a target in no known code, a BPF
	// trampoline's, "call:[kernel, outside vmlinux] <hex address>"),
	// largest first. A call made inside another's counts in both, so
	// they do not sum to the window. Nil when the plugin counted no
	// contexts.
	Calls []CallCount `json:"calls,omitempty"`
	// HunkRuns is how many times the window ran each of the tree's
	// hunks (Hunk.Key) on this boot's side, 0 for never; nil when the
	// boot kept no blocks to look them up in.
	HunkRuns map[string]uint64 `json:"hunk_runs,omitempty"`
	// HunkIn is, per hunk that ran, how many of those runs were in each
	// context (Contexts' keys), adding up to its HunkRuns; nil when the
	// plugin did not count entries by context.
	HunkIn map[string]map[string]uint64 `json:"hunk_in,omitempty"`
	// VCPUs is each vCPU's share of the window, by index, in a guest of
	// several (nil with one); Quantum the instructions a vCPU ran before
	// the plugin ended its turn (0: QEMU's own turns).
	VCPUs   []VCPUCount `json:"vcpus,omitempty"`
	Quantum uint64      `json:"quantum,omitempty"`
}

// VCPUCount is one vCPU's share of a window.
type VCPUCount struct {
	Insns  uint64 `json:"insns"`
	Mem    uint64 `json:"mem"`
	Cycles uint64 `json:"cycles,omitempty"`
}

// FuncCount is one function's share of a window.
type FuncCount struct {
	Name   string `json:"name"`
	Insns  uint64 `json:"insns"`
	Mem    uint64 `json:"mem"`
	Cycles uint64 `json:"cycles,omitempty"`
	// CrossCore is, under the coherent model (several vCPUs), how many
	// lines its accesses brought from another core's cache or upgraded
	// from shared (invalidating the other copies).
	CrossCore uint64 `json:"cross_core,omitempty"`
	// Fetch is, in a call's split under the cache model, the part of
	// Cycles the model charged to the function's instruction fetches
	// (the rest over Insns is its data accesses').
	Fetch uint64 `json:"fetch,omitempty"`
}

// CallCount is one call context's share of a window: Calls is how many
// calls into its target began there.
type CallCount struct {
	Name   string `json:"name"`
	Calls  uint64 `json:"calls"`
	Insns  uint64 `json:"insns"`
	Mem    uint64 `json:"mem"`
	Cycles uint64 `json:"cycles,omitempty"`
	// Funcs split the calls by function: what ran while a call of this
	// target was the innermost one open on its vCPU, named as
	// Exact.Funcs names code (its own code bpf:<prog>), largest first
	// (by cycles under the model, else instructions). They sum to the
	// calls' counts less those of the calls made inside them (Mem is
	// not split). Nil when the plugin did not split them.
	Funcs []FuncCount `json:"funcs,omitempty"`
	// Inside are the calls made directly inside these (a call whose
	// innermost open context, when it began, was one of these), by
	// name, largest first: what these counts hold of other contexts.
	// Nil when none was, or the plugin did not say.
	Inside []CallCount `json:"inside,omitempty"`
}

// CallPrefix starts every Exact.Calls name: call:bpf:<prog> is the calls
// of a BPF program.
const CallPrefix = "call:"

// The buckets of Exact.Funcs that are no one function.
const (
	FuncUser    = "[user]"                    // below the kernel's half of the address space
	FuncOutside = "[kernel, outside vmlinux]" // modules, trampolines, JIT'd code of no program kci knows
	FuncSmall   = "[functions below 0.05 insns/pkt]"
)

// Cost is the guest's whole-path measurement of one window, summed over
// its CPUs: every non-idle ns, and the packets it is divided by.
type Cost struct {
	IdleSource   string `json:"idle_source"`   // timer_list (ns) | proc_stat (ticks)
	ResolutionNs uint64 `json:"resolution_ns"` // granularity of BusyNs per CPU
	CPUWindowNs  uint64 `json:"cpu_window_ns"`
	BusyNs       uint64 `json:"busy_ns"`
	SoftirqNs    uint64 `json:"softirq_ns"` // /proc/stat softirq column: tick-sampled, and the traffic wakes on the tick, so it reads ~0; recorded, not shown
	BPFNs        uint64 `json:"bpf_ns"`
	Packets      uint64 `json:"packets"`
	PacketSource string `json:"packet_source"` // ref_cnt | lo_tx
	// Contexts is the window's CPU time by context (the guest's
	// accountant): optional, absent from older records and when the
	// accountant could not run (AcctNote says why).
	Contexts []ContextTime `json:"contexts,omitempty"`
	AcctNote string        `json:"acct_note,omitempty"`
	// AcctPackets are the datagrams written inside the accountant's own
	// window, AcctWindowNs its length summed over the CPUs.
	AcctPackets  uint64 `json:"acct_packets,omitempty"`
	AcctWindowNs uint64 `json:"acct_window_ns,omitempty"`
}

// ContextTime is one accountant category over a window, summed over CPUs:
// ns of the CPU's clock, and how often the CPU entered it.
type ContextTime struct {
	Name    string `json:"name"`
	Ns      uint64 `json:"ns"`
	Entries uint64 `json:"entries"`
}

// ProgLoad is one program's verifier and JIT facts, as veristat shows.
type ProgLoad struct {
	Name          string `json:"name"`
	VerifiedInsns uint32 `json:"verified_insns"`
	XlatedBytes   int    `json:"xlated_bytes"`
	JitedBytes    uint32 `json:"jited_bytes"`
	VerifyUs      uint64 `json:"verify_us"` // the verifier's own time, guest µs
	LoadNs        int64  `json:"load_ns"`   // the whole collection's load, measured around it
}

// ProgStat is one BPF program's BPF_ENABLE_STATS counters over the window.
type ProgStat struct {
	Name      string  `json:"name"`
	Type      string  `json:"type"` // sched_cls, tracing, ...
	RunTimeNs uint64  `json:"run_time_ns"`
	RunCnt    uint64  `json:"run_cnt"`
	NsPerPkt  float64 `json:"ns_per_pkt"`
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

// KernelID names a built kernel briefly: release and short cache key.
func KernelID(a *Kernel) string {
	if a == nil {
		return ""
	}
	key := a.Key
	if len(key) > 12 {
		key = key[:12]
	}
	switch {
	case a.Release == "":
		return key
	case key == "":
		return a.Release
	}
	return a.Release + " (" + key + ")"
}
