package job

import (
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
)

func TestBootOrderABBA(t *testing.T) {
	roles := []string{results.RoleBase, results.RolePatched}
	var seq []string
	for rep := 1; rep <= 6; rep++ {
		for _, r := range bootOrder(rep, roles) {
			seq = append(seq, r[:1])
		}
	}
	if got, want := strings.Join(seq, ""), "bppbbppbbppb"; got != want {
		t.Errorf("boot order %s, want %s (ABBA within each pair of repetitions)", got, want)
	}
	// Each kernel boots first as often as second over a pair of
	// repetitions, and the input is never modified.
	if roles[0] != results.RoleBase {
		t.Errorf("bootOrder modified its input: %v", roles)
	}
	if got := bootOrder(2, roles[:1]); len(got) != 1 || got[0] != results.RoleBase {
		t.Errorf("base only (kci profile): %v", got)
	}
}
