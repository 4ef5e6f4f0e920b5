package job

import (
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
