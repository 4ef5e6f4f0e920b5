package fsutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCopyFileCopiesAndCreatesTheDirectory(t *testing.T) {
	d := t.TempDir()
	src := filepath.Join(d, "a")
	if err := os.WriteFile(src, []byte("config\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(d, "sub", "dir", "b")
	if err := CopyFile(nil, src, nil, dst); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "config\n" {
		t.Errorf("copy holds %q, %v; want %q", b, err, "config\n")
	}
}

func TestCopyFileReturnsEveryError(t *testing.T) {
	d := t.TempDir()
	if err := CopyFile(nil, filepath.Join(d, "missing"), nil, filepath.Join(d, "b")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing source: %v, want an error naming it", err)
	}
	src := filepath.Join(d, "a")
	if err := os.WriteFile(src, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The destination's directory is a file: creating it fails.
	if err := CopyFile(nil, src, nil, filepath.Join(src, "b")); err == nil {
		t.Error("destination under a file: no error")
	}
	// A write that fails (a full disk) is reported, not a short file.
	if _, err := os.Stat("/dev/full"); err == nil {
		if err := CopyFile(nil, src, nil, "/dev/full"); err == nil {
			t.Error("copy to /dev/full: no error")
		}
	}
}

func TestCopyFileStaysInsideItsRoots(t *testing.T) {
	d := t.TempDir()
	src, err := os.OpenRoot(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	if err := os.WriteFile(filepath.Join(d, "in"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CopyFile(src, "in", src, "console/out"); err != nil {
		t.Fatal(err)
	}
	if err := CopyFile(src, "../escape", src, "x"); err == nil {
		t.Error("a name escaping the root was opened")
	}
}
