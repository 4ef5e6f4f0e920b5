package wire

import (
	"os/exec"
	"strings"
	"testing"
)

// goListDeps is what the go tool says pkg imports, transitively, outside
// the standard library.
func goListDeps(t *testing.T, pkg string) []string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go tool")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}

// TestLeaf: wire imports only the standard library, so whatever imports it
// links nothing of the guest agent.
func TestLeaf(t *testing.T) {
	for _, p := range goListDeps(t, ".") {
		if p != "github.com/kci-dev/kci/wire" {
			t.Errorf("wire imports %s: the wire between host and guest is a leaf", p)
		}
	}
}
