package results

// Hunk is one hunk of the patches a run tests, on one side: its added
// lines in the patched kernel (Side RolePatched) or its removed lines in
// the base kernel (RoleBase), and what those lines compiled to there.
type Hunk struct {
	// Key names the hunk within the run: "<patch>.<hunk>", both from 1
	// in the order the patches were given ("1.2": the first patch's
	// second hunk). Base and patched sides of one hunk share it.
	Key   string `json:"key"`
	Name  string `json:"name"`  // "hunk 2 (net/core/dev.c:11 enqueue)"
	Patch string `json:"patch"` // the patch's subject
	Side  string `json:"side"`  // RolePatched or RoleBase
	Lines int    `json:"lines"` // changed lines on that side
	// Ranges and Bytes are the code the lines compiled to (every inline
	// copy a range of its own); NoCode says why there is none.
	Ranges int    `json:"ranges,omitempty"`
	Bytes  uint64 `json:"bytes,omitempty"`
	NoCode string `json:"no_code,omitempty"`
}

// ContextOther is Exact.HunkIn's key for runs in none of the stack
// classes (kernel threads, the idle loop, entry code before its first
// marked call); ContextBPF's are those inside a BPF program's call,
// which are also in a class.
const (
	ContextOther = "other"
	ContextBPF   = "bpf"
)

// Contexts are the stack classes Exact.HunkIn counts, in the order
// reports give them, with what they call them (vm/tcgplugin's README,
// Stack classes: the innermost marked kernel entry on the vCPU's stack).
// They and ContextOther add up to a hunk's runs; ContextBPF is apart.
var Contexts = []struct{ Key, Label string }{
	{"hardirq", "hardirq"},
	{"softirq", "softirq"},
	{"syscall", "syscall"},
	{"deferred", "deferred work"},
	{ContextOther, "other"},
}
