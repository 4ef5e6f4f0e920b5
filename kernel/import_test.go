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

// A base's id is a property of its source, not of when or where it was
// imported: two imports of one tarball, into two caches, give the same tree
// id, and nothing of the cache or the import (a stamp, a build dir's
// exclude) enters it. The tarball has what Debian's has: a top-level
// .gitignore of /* (every file must still be committed), nested
// directories, an executable script and a symlink.
func TestImportTarballIdentity(t *testing.T) {
	dir := t.TempDir()
	top := filepath.Join(dir, "linux-source-6.12")
	files := map[string]string{
		".gitignore":           "/*\n",
		"Makefile":             "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 7\n",
		"net/core/skbuff.c":    "int x;\n",
		"scripts/link-vmlinux": "#!/bin/sh\n",
	}
	writeFiles(t, top, files)
	if err := os.Chmod(filepath.Join(top, "scripts/link-vmlinux"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("skbuff.c", filepath.Join(top, "net/core/alias.c")); err != nil {
		t.Fatal(err)
	}
	tarball := filepath.Join(dir, "linux.tar.xz")
	if out, err := exec.Command("tar", "cJf", tarball, "-C", dir, "linux-source-6.12").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	ctx := context.Background()
	var ids []string
	for i := range 2 {
		c := &Cache{Root: filepath.Join(dir, fmt.Sprintf("cache%d", i))}
		src, err := c.Import(ctx, Base{Tarball: tarball})
		if err != nil {
			t.Fatal(err)
		}
		if src.Version != "6.12.7" {
			t.Errorf("version %q, want 6.12.7 from the Makefile", src.Version)
		}
		out, err := exec.Command("git", "-C", src.Dir, "ls-files").Output()
		if err != nil || len(strings.Fields(string(out))) != len(files)+1 {
			t.Errorf("import %d committed %q (%v), want all %d files: the .gitignore of /* hid some", i, out, err, len(files)+1)
		}
		again, err := c.Import(ctx, Base{Tarball: tarball})
		if err != nil || again.Dir != src.Dir || again.ID != src.ID {
			t.Errorf("second import into cache %d: %v, %+v, want %+v", i, err, again, src)
		}
		ids = append(ids, src.ID)
	}
	if ids[0] != ids[1] {
		t.Errorf("two imports of one tarball: tree ids %s and %s", ids[0], ids[1])
	}
}

// writeFiles writes files (path under dir → content), making directories.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
