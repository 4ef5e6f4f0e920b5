package materialize

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

func TestDirConcurrentFirstUse(t *testing.T) {
	fsys := fstest.MapFS{
		"a/b.txt": {Data: []byte("b")},
		"c.txt":   {Data: []byte("c")},
	}
	root := filepath.Join(t.TempDir(), "missing", "cache")
	var wg sync.WaitGroup
	dirs := make([]string, 8)
	errs := make([]error, 8)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[i], errs[i] = Dir(fsys, root, "src")
		}()
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil {
			t.Fatalf("use %d: %v", i, errs[i])
		}
		if dirs[i] != dirs[0] {
			t.Fatalf("uses disagree: %s vs %s", dirs[i], dirs[0])
		}
	}
	b, err := os.ReadFile(filepath.Join(dirs[0], "a", "b.txt"))
	if err != nil || string(b) != "b" {
		t.Fatalf("a/b.txt: %q, %v", b, err)
	}
	if left, _ := filepath.Glob(filepath.Join(root, "src", ".tmp-*")); len(left) != 0 {
		t.Fatalf("temporary directories left: %v", left)
	}
	// Other content, other directory.
	fsys["c.txt"] = &fstest.MapFile{Data: []byte("C")}
	d2, err := Dir(fsys, root, "src")
	if err != nil || d2 == dirs[0] {
		t.Fatalf("changed content gave %s (%v), same as %s", d2, err, dirs[0])
	}
}

func TestDirUnwritableRootNamesIt(t *testing.T) {
	// A regular file in the way fails for root too (permission bits don't).
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Dir(fstest.MapFS{"x": {Data: []byte("x")}}, filepath.Join(f, "cache"), "src")
	if err == nil {
		t.Fatal("a cache root under a regular file was accepted")
	}
	if want := f; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name the cache root %s", err, want)
	}
}
