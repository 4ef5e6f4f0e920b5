// Package jobtest gives integration tests real kernels built by kci
// itself from the embedded default project, cached under $KCI_CACHE (or
// ~/.cache/kci) across test runs. Tests that use it are skipped under
// -short and when the host lacks what a kernel build needs.
package jobtest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
)

// Builder returns a job.Builder on the embedded default project.
func Builder(t testing.TB) *job.Builder {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a real kernel: skipped in -short mode")
	}
	for _, tool := range []string{"make", "gcc", "bison", "flex", "bc", "pahole", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("kernel build needs %s (make deps installs it)", tool)
		}
	}
	if _, err := os.Stat(kernel.DebianTarball); err != nil {
		t.Skipf("kernel build needs the base source %s (package linux-source-6.12)", kernel.DebianTarball)
	}
	cache, err := kernel.DefaultCache()
	if err != nil {
		t.Fatal(err)
	}
	p, err := project.Embedded(cache.Root)
	if err != nil {
		t.Fatal(err)
	}
	// The tests need all three trees: stock once, the others on it.
	return &job.Builder{Cache: cache, Project: p, StockFirst: true,
		Observe: func(a *kernel.Artifacts, took time.Duration) { record(t, a, took) }}
}

func ctx(t testing.TB) context.Context {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			c, cancel := context.WithDeadline(context.Background(), dl.Add(-30*time.Second))
			t.Cleanup(cancel)
			return c
		}
	}
	return context.Background()
}

// Base is the stock kernel: the default base with kci's fragments.
func Base(t testing.TB) *kernel.Artifacts {
	return Tree(t, "stock")
}

// Tree is the kernel of a tree of the default project (stock, ext, gtp).
func Tree(t testing.TB, name string) *kernel.Artifacts {
	t.Helper()
	b := Builder(t)
	tr, err := b.Project.Tree(name)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a, err := b.Tree(ctx(t), tr)
	if err != nil {
		t.Fatalf("build tree %s: %v", name, err)
	}
	t.Logf("kernel %s for tree %s in %s (cache hit %v, kept tree rebuilt %v)", a.Release, name, time.Since(start).Round(time.Millisecond), a.CacheHit, a.Regrown != nil)
	return a
}

// Patched is tree stock plus patches (files, dirs, mboxes or series files).
func Patched(t testing.TB, patches ...string) *kernel.Artifacts {
	t.Helper()
	return PatchedOn(t, "stock", patches...)
}

// PatchedOn is tree plus patches. A build failure fails the test; use
// Builder directly to test failures.
func PatchedOn(t testing.TB, tree string, patches ...string) *kernel.Artifacts {
	t.Helper()
	b := Builder(t)
	tr, err := b.Project.Tree(tree)
	if err != nil {
		t.Fatal(err)
	}
	base := Tree(t, tree)
	ps, err := kernel.LoadSeries(patches...)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	a, err := b.Patched(ctx(t), tr, base, ps)
	if err != nil {
		t.Fatalf("build %s + %v: %v", tree, patches, err)
	}
	t.Logf("kernel %s (%s + %d patches) in %s (cache hit %v)", a.Release, tree, len(ps), time.Since(start).Round(time.Millisecond), a.CacheHit)
	return a
}
