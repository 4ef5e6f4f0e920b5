package stats

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLeaf: stats imports nothing of kci, and of the rest only gonum:
// whatever needs a median or a test can import it without a stage.
func TestLeaf(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go tool")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != "github.com/kci-dev/kci/internal/stats" && !strings.HasPrefix(p, "gonum.org/v1/gonum/") {
			t.Errorf("stats imports %s: it is a leaf (standard library and gonum only)", p)
		}
	}
}
