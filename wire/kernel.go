package wire

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
	// XDPHelpers are the helpers an XDP program may call, by loading one
	// that calls it: a kernel can refuse one its BTF names (a sandbox
	// host's refused bpf_xdp_adjust_meta).
	XDPHelpers map[string]bool `json:"xdp_helpers,omitempty"`
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
