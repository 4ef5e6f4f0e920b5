package vmimage

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goCmd must not hand the go tool (which runs code from the module graph:
// go generate, cgo, toolchain downloads) kci's credentials.
func TestGoCmdEnvHasNoSecrets(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/sh\nenv\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("GITHUB_TOKEN", "ghs_leaked0123456789")
	t.Setenv("GH_TOKEN", "gh_leaked")
	out, err := goCmd(context.Background(), t.TempDir(), []string{"CGO_ENABLED=0"}, "env")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "leaked") {
		t.Errorf("go tool environment carries a secret:\n%s", out)
	}
	if !strings.Contains(out, "CGO_ENABLED=0") {
		t.Errorf("go tool environment lost the extra variable:\n%s", out)
	}
}
