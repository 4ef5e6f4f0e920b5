// Package golden compares what a test produced with a file under the
// package's testdata, and rewrites the file with go test's -update flag
// (go test -run <Test> -update: it rewrites the goldens of every test
// that runs). Only tests import it.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Update is the -update flag.
var Update = flag.Bool("update", false, "rewrite the golden files from the tests' output")

// Check compares got with the file at path, or writes it under -update.
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (go test -run %s -update rewrites it):\n--- got\n%s\n--- want\n%s",
			path, t.Name(), got, want)
	}
}

// Own is Check on testdata/<top-level test>/<name>: one directory of
// goldens per test.
func Own(t testing.TB, name, got string) {
	t.Helper()
	Check(t, filepath.Join("testdata", strings.SplitN(t.Name(), "/", 2)[0], name), got)
}
