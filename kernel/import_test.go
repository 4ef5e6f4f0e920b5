package kernel

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// lineMeter records what a phase meter was told.
type lineMeter struct{ lines []string }

func (m *lineMeter) Begin(f string, a ...any) {
	m.lines = append(m.lines, "begin "+fmt.Sprintf(f, a...))
}
func (m *lineMeter) End(f string, a ...any) { m.lines = append(m.lines, "end "+fmt.Sprintf(f, a...)) }

// The one-time base import said nothing for 20 s and more: it is a phase
// of its own, announced with an estimate, and a cached base is silent.
func TestImportTarballShowsItsPhase(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "linux-source-x")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "Makefile"), []byte("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(dir, "linux.tar.gz")
	if out, err := exec.Command("tar", "czf", tarball, "-C", dir, "linux-source-x").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	m := &lineMeter{}
	c := &Cache{Root: filepath.Join(dir, "cache"), Meter: m}
	if _, err := c.Import(context.Background(), Base{Tarball: tarball}); err != nil {
		t.Fatal(err)
	}
	if len(m.lines) != 2 || !strings.HasPrefix(m.lines[0], "begin importing ") || !strings.Contains(m.lines[0], "into the cache (one time, ~1 s)") ||
		m.lines[1] != "end done" {
		t.Fatalf("meter lines %q, want the import's begin (with an estimate) and end", m.lines)
	}
	if _, err := c.Import(context.Background(), Base{Tarball: tarball}); err != nil {
		t.Fatal(err)
	}
	if len(m.lines) != 2 {
		t.Errorf("a cached base announced an import: %q", m.lines[2:])
	}
}
