package wire

// Idle sources of Cost.
const (
	IdleTimerList = "timer_list" // tick-sched idle clock, ns
	IdleProcStat  = "proc_stat"  // /proc/stat idle+iowait, ticks
)

// Packet sources of Cost.
const (
	PacketsRefCnt = "ref_cnt" // largest sched_cls run_cnt (bpf_stats' own count)
	PacketsLoTx   = "lo_tx"   // lo tx packets: a variant without programs
)

// Cost is one variant's whole-path measurement over its window, summed
// over the guest's CPUs. suite/bench/cost.go says how the guest measures it.
type Cost struct {
	IdleSource   string `json:"idle_source"`   // IdleTimerList | IdleProcStat
	ResolutionNs uint64 `json:"resolution_ns"` // granularity of BusyNs per CPU
	CPUWindowNs  uint64 `json:"cpu_window_ns"` // Σ over CPUs of the window's length
	BusyNs       uint64 `json:"busy_ns"`       // Σ not-idle time: user+nice+system+irq+softirq+steal
	SoftirqNs    uint64 `json:"softirq_ns"`    // /proc/stat softirq column (tick resolution)
	BPFNs        uint64 `json:"bpf_ns"`        // Σ run_time_ns of the variant's programs
	Packets      uint64 `json:"packets"`
	PacketSource string `json:"packet_source"` // PacketsRefCnt | PacketsLoTx
	// Contexts is where the window's CPU time went (suite/bench/acct.go), nil
	// when the accountant did not run; AcctNote says why, or which
	// interrupts it could not see.
	Contexts []ContextTime `json:"contexts,omitempty"`
	AcctNote string        `json:"acct_note,omitempty"`
	// AcctPackets are the datagrams the traffic wrote inside the
	// accountant's own window, AcctWindowNs that window summed over the
	// CPUs: its rows divide by these, not by the other counters, whose
	// edges are read a few syscalls away.
	AcctPackets  uint64 `json:"acct_packets,omitempty"`
	AcctWindowNs uint64 `json:"acct_window_ns,omitempty"`
	// MarkPackets are the datagrams the traffic wrote between the
	// plugin's window markers, read next to them: what the plugin's
	// exact counts divide by. The accountant's window is wider by its
	// own reads and the idle clocks', in which the other vCPUs send.
	MarkPackets uint64 `json:"mark_packets,omitempty"`
}

// ContextTime is one accountant category over a window, summed over CPUs.
type ContextTime struct {
	Name    string `json:"name"`
	Ns      uint64 `json:"ns"`
	Entries uint64 `json:"entries"` // times the CPU entered it
}
