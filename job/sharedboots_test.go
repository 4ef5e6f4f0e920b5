package job_test

import (
	"os"
	"sync"
	"testing"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/rcache"
	"github.com/kci-dev/kci/results"
)

// sharedStore is a result cache that lives as long as the test binary:
// the stock tests that boot the same base (cnt and hash, test traffic,
// seeds 1-3) take those boots from the first of them to run, each after
// its own re-check boot. Each test still boots its own patched kernel.
var sharedStore = sync.OnceValues(func() (*rcache.Store, error) {
	dir, err := os.MkdirTemp("", "kci-job-shared-boots-")
	if err != nil {
		return nil, err
	}
	sharedDirs = append(sharedDirs, dir)
	return rcache.Open(dir, nil)
})

var sharedDirs []string

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range sharedDirs {
		_ = os.RemoveAll(d) // a temp dir: a leftover costs disk, not results
	}
	os.Exit(code)
}

// sharedBoots puts the shared result cache in front of tr's booter.
func sharedBoots(t *testing.T, tr *job.Tester) {
	t.Helper()
	tr.Booter = withSharedBoots(t, tr.Booter)
}

// withSharedBoots is b behind the shared result cache.
func withSharedBoots(t *testing.T, b boot.Booter) boot.Booter {
	t.Helper()
	store, err := sharedStore()
	if err != nil {
		t.Fatalf("shared result cache: %v", err)
	}
	return boot.WithResultCache(b, store, nil)
}

// logShared says how many of run's boots came from the shared cache, so
// a log shows which test booted the base.
func logShared(t *testing.T, run *results.Run) {
	t.Helper()
	hits := 0
	for _, b := range run.Boots {
		if b.Cache == results.CacheHit {
			hits++
		}
	}
	t.Logf("%d of %d boots from the shared result cache", hits, len(run.Boots))
}
