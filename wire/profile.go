package wire

import "time"

// ProfileFreqHz is the sampling rate, the user's `perf record -F 99`: off
// the kernel's tick rates, so samples do not beat with periodic work.
const ProfileFreqHz = 99

// Frames the profiler puts in Profile.Folded where no kernel function is
// known.
const (
	FrameUser    = "[user]"    // sampled in user mode: no kernel stack
	FrameLost    = "[lost]"    // the stack-trace map bucket held another stack
	FrameUnknown = "[unknown]" // an address below every kernel symbol
)

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
