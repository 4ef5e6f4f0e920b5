package jobtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/kernel"
)

// LedgerEnv names the file make test collects the tests' kernels in
// (scripts/test.sh sums it by package): which package built each kernel
// and how long the others waited for it.
const LedgerEnv = "KCI_TEST_LEDGER"

// waitedAfter is how long a cache hit may take and still count as one:
// longer, the test sat on the lock of a build another package ran.
const waitedAfter = 2 * time.Second

// record appends one tab-separated line to $KCI_TEST_LEDGER: package,
// test, kernel, how it came (built, waited, cached), seconds, and the CPU
// seconds make used for it (0 unless built here).
func record(t testing.TB, a *kernel.Artifacts, d time.Duration) {
	path := os.Getenv(LedgerEnv)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("test ledger: %v", err)
		return
	}
	// One write of one short line: appends from the packages' processes
	// do not interleave.
	_, err = fmt.Fprintf(f, "%s\t%s\t%s\t%s\t%.1f\t%.1f\n", pkgDir(), t.Name(), label(a), how(a, d), d.Seconds(), buildCPU(a).Seconds())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Errorf("test ledger %s: %v", path, err)
	}
}

// label names a kernel by its cache key and its last patch: tabs and
// newlines out, so the line stays one line of six fields.
func label(a *kernel.Artifacts) string {
	last := "base"
	if n := len(a.Patches); n > 0 {
		last = a.Patches[n-1]
		if len(last) > 48 {
			last = last[:48]
		}
	}
	return strings.Map(func(r rune) rune {
		if r == '\t' || r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, fmt.Sprintf("%.8s %s", a.Key, last))
}

// buildCPU is the CPU time a kernel's build took, for a kernel this call
// built; a cache hit's phases are the earlier build's.
func buildCPU(a *kernel.Artifacts) time.Duration {
	if a.CacheHit {
		return 0
	}
	_, cpu := a.Took()
	return cpu
}

func how(a *kernel.Artifacts, d time.Duration) string {
	switch {
	case !a.CacheHit:
		return "built"
	case d > waitedAfter:
		return "waited"
	}
	return "cached"
}

// pkgDir is the test's package directory within the module (go test runs
// a package's tests in its directory), or the directory itself when no
// go.mod is above it.
func pkgDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "?"
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			rel, err := filepath.Rel(d, wd)
			if err != nil {
				return wd
			}
			return strings.ReplaceAll(filepath.ToSlash(rel), "\t", " ")
		}
		if filepath.Dir(d) == d {
			return wd
		}
	}
}
