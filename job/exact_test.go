package job

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
)

// A window's counts become folded stacks of kind;function.
func TestExactFolded(t *testing.T) {
	e := &results.Exact{Funcs: []results.FuncCount{{Name: "htab_map_update_elem", Insns: 5000}, {Name: results.FuncUser, Insns: 300},
		{Name: "bpf:hash_write", Insns: 20}, {Name: "observer:acct_enter", Insns: 11}}}
	folded := exactFolded(e)
	if !strings.Contains(folded, "kernel;htab_map_update_elem 5000\n") || !strings.Contains(folded, "bpf;hash_write 20\n") ||
		!strings.Contains(folded, "kci accountant;acct_enter 11\n") || !strings.Contains(folded, "user;[user] 300\n") {
		t.Errorf("folded:\n%s", folded)
	}
}

// A program's calls split by function go under the program, taken from
// the function's own stack; a function the window folded into its small
// bucket is taken from the bucket; the accountant's nested calls and the
// program's own code stay where they were.
func TestExactFoldedSplits(t *testing.T) {
	e := &results.Exact{Funcs: []results.FuncCount{{Name: "htab_map_update_elem", Insns: 5000}, {Name: "bpf:hash_write", Insns: 20},
		{Name: results.FuncSmall, Insns: 40}, {Name: "observer:acct_enter", Insns: 11}},
		Calls: []results.CallCount{{Name: "call:bpf:hash_write", Calls: 10, Insns: 1200, Funcs: []results.FuncCount{
			{Name: "htab_map_update_elem", Insns: 1000}, {Name: "bpf:hash_write", Insns: 20}, {Name: "memcpy", Insns: 30},
		}}}}
	folded := exactFolded(e)
	for _, want := range []string{"bpf;hash_write;htab_map_update_elem 1000\n", "kernel;htab_map_update_elem 4000\n",
		"bpf;hash_write;memcpy 30\n", "kernel;" + strings.ReplaceAll(results.FuncSmall, " ", "_") + " 10\n", "bpf;hash_write 20\n",
		"kci accountant;acct_enter 11\n"} {
		if !strings.Contains(folded, want) {
			t.Errorf("no %q in folded:\n%s", want, folded)
		}
	}
	var sum uint64
	for _, l := range strings.Split(strings.TrimSpace(folded), "\n") {
		var n uint64
		_, _ = fmt.Sscanf(l[strings.LastIndexByte(l, ' ')+1:], "%d", &n)
		sum += n
	}
	if sum != 5071 {
		t.Errorf("folded stacks sum to %d, want the window's 5071:\n%s", sum, folded)
	}
}
