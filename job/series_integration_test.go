package job_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/results/render"

	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/job/jobtest"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/vm"
	"github.com/kci-dev/kci/vmimage"
)

// runSeries runs kci series on accel (vm.AccelTCG pins deterministic
// mode for the tests of its claims), its booter as testerOn's, behind
// the package's shared result cache when shared is set.
func runSeries(t *testing.T, accel vm.Accel, shared bool, o job.SeriesOptions) (*results.Series, int, *job.Builder) {
	t.Helper()
	b := jobtest.Builder(t) // skips under -short
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("needs qemu-system-x86_64 (package qemu-system-x86)")
	}
	scratch := t.TempDir() // as testerOn's tests
	var booter boot.Booter = &boot.VMBooter{
		VM:        vm.Config{Accel: accel, CPUs: 1, MemoryMiB: 1024, CacheDir: b.Cache.Root, BootTimeout: 45 * time.Second},
		ImageOpts: vmimage.Options{CacheDir: b.Cache.Root}, PluginDir: b.Cache.Root, ScratchDir: scratch,
	}
	if shared {
		booter = withSharedBoots(t, booter)
	}
	st := &job.SeriesTester{Project: b.Project, Builder: b, Booter: booter}
	if o.Out == "" {
		o.Out = filepath.Join(t.TempDir(), "run")
	}
	var log strings.Builder
	o.Log = &log
	start := time.Now()
	_, rep, err := st.Series(context.Background(), o)
	t.Logf("kci series %v: %s, err=%v\n%s", o.Patches, time.Since(start).Round(time.Second), err, log.String())
	code := 0
	var ee *job.ExitError
	if errors.As(err, &ee) {
		code = ee.Code
	} else if err != nil {
		t.Fatalf("series: %v", err)
	}
	if rep == nil || len(rep.Trees) != 1 {
		t.Fatalf("report %+v", rep)
	}
	var txt strings.Builder
	render.SeriesText(&txt, rep)
	t.Logf("series report:\n%s", txt.String())
	assertNoQEMU(t, scratch)
	return rep, code, b
}

// seriesBesideEachOther runs the series tests side by side, after the
// package's other tests: kci series boots one guest at a time, so one
// series alone leaves a core idle.
func seriesBesideEachOther(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a real kernel: skipped in -short mode")
	}
	t.Parallel()
}

// TestSeriesPerPatch: the 4-patch fixture on the stock tree, built and
// booted for real: 1 has a checkpatch error, 2 breaks the build, 3 repairs
// it, 4 adds an unused variable. One boot per prefix, no bench.
func TestSeriesPerPatch(t *testing.T) {
	seriesBesideEachOther(t)
	rep, code, b := runSeries(t, vm.AccelAuto, false, job.SeriesOptions{
		Patches: []string{"testdata/series-bisect"}, Trees: []string{"stock"}, Boot: true, Survival: true, Bench: testBench()})
	tr := rep.Trees[0]
	p := tr.Patches
	if len(p) != 4 {
		t.Fatalf("%d rows, want 4", len(p))
	}
	if code != job.ExitBuild {
		t.Errorf("exit %d, want %d", code, job.ExitBuild)
	}
	want := []string{results.StepOK, results.StepFail, results.StepOK, results.StepOK}
	for i, r := range p {
		if r.Apply != results.StepOK || r.Build != want[i] {
			t.Errorf("patch %d: apply %s build %s (%s), want ok/%s", i+1, r.Apply, r.Build, r.BuildError, want[i])
		}
		t.Logf("patch %d: build %s (cache hit %v), boot %s", i+1, r.BuildTime.Round(time.Second), r.CacheHit, func() string {
			if r.Boot == nil {
				return "-"
			}
			return r.Boot.Time.Round(time.Second).String()
		}())
	}
	if !strings.Contains(p[1].BuildError, "skbuff.c") || !strings.Contains(p[1].BuildError, "error") {
		t.Errorf("patch 2 build error %q: want the compiler's error in skbuff.c", p[1].BuildError)
	}
	if len(tr.Bisect) != 1 || tr.Bisect[0].Broken != 2 || tr.Bisect[0].Fixed != 3 {
		t.Errorf("bisectability %+v, want patch 2 broken, patch 3 fixes", tr.Bisect)
	}
	found := false
	for _, w := range p[3].NewWarnings {
		if w.File == "net/core/skbuff.c" && strings.Contains(w.Message, "kci_unused") && w.Line > 6000 {
			found = true
		}
	}
	if !found {
		t.Errorf("patch 4 new warnings %+v: want net/core/skbuff.c:<line>: unused variable 'kci_unused'", p[3].NewWarnings)
	}
	for i := 0; i < 3; i++ {
		for _, w := range p[i].NewWarnings {
			if strings.Contains(w.Message, "kci_") {
				t.Errorf("patch %d: the fixture's warning shows up before patch 4: %s", i+1, w)
			}
		}
	}
	cp := p[0].Checkpatch
	if cp == nil || cp.Errors != 1 || len(cp.Items) == 0 || cp.Items[0].Message != "trailing whitespace" {
		t.Errorf("patch 1 checkpatch %+v (%s): want checkpatch's own 'trailing whitespace' error", cp, p[0].CheckpatchError)
	}
	for _, i := range []int{0, 2, 3} {
		if p[i].Boot == nil || p[i].Boot.Result != results.StepOK || len(p[i].Boot.Lost) > 0 {
			t.Errorf("patch %d boot %+v: want ok, no survival cell lost", i+1, p[i].Boot)
		}
	}
	// Incremental: prefix 4 recompiles a handful of objects, not the kernel.
	if !p[3].CacheHit {
		a, err := b.Cache.Lookup(p[3].BuildKey)
		if err != nil {
			t.Fatal(err)
		}
		o, err := kernel.ParseMakeLog(a.Log)
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Compiled) > 30 {
			t.Errorf("prefix 4 compiled %d objects: not an incremental build", len(o.Compiled))
		}
	}
}

// TestSeriesFindsPerfPatch: 3 patches on the stock tree; patch 2 adds a
// 2 us busy-wait to htab_map_update_elem, patches 1 and 3 only add comments
// (to net/core/skbuff.c and lib/string.c: line numbers shift, no code
// changes). Deterministic mode: every prefix and the tree's kernel are
// booted with seeds 1-3 (--seeds 3: the default 6 doubles the test's
// boots) and each step is a Welch test over the per-seed values, Holm over
// all steps and programs (results.LocateSeries): patch 2 is named for
// hash_write, which is exact over seeds, and nothing is named on patch 1
// or 3. The boots are kci test's (same plan, seeds and guest): the tree's
// kernel and prefixes 1 and 2 are the kernels of the null and slowdown
// tests, whose boots the shared result cache serves after one re-check.
func TestSeriesFindsPerfPatch(t *testing.T) {
	seriesBesideEachOther(t)
	rep, code, _ := runSeries(t, vm.AccelTCG, true, job.SeriesOptions{
		Patches: []string{"testdata/series-perf"}, Trees: []string{"stock"}, Variants: []string{"cnt", "hash"}, Bench: testBench(), Seeds: 3})
	tr := rep.Trees[0]
	hits := 0
	for _, b := range tr.Boots {
		if b.Cache == results.CacheHit {
			hits++
		}
	}
	t.Logf("%d of %d boots from the shared result cache", hits, len(tr.Boots))
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	if rep.Clock != results.ClockICount {
		t.Fatalf("clock %q with TCG pinned: bisection needs deterministic mode (TCG + icount)", rep.Clock)
	}
	if len(tr.Culprits) == 0 {
		t.Fatalf("no culprit found (%s)", tr.PerfNote)
	}
	found := false
	for _, c := range tr.Culprits {
		t.Logf("culprit: %s (%.4g -> %.4g)", c, c.Before, c.After)
		if c.Patch != 2 {
			t.Errorf("culprit %s: patches 1 and 3 change comments only", c)
		}
		if c.Key == "hash/hash_write" && c.Patch == 2 {
			found = true
		}
	}
	if !found {
		t.Errorf("hash/hash_write not attributed to patch 2: %v", tr.Culprits)
	}
	for _, p := range tr.Patches {
		for _, d := range p.Perf {
			t.Logf("patch %d: %s %.4g (%+.2f %% vs %d)", p.Index, d.Key, d.Value, d.Pct, d.Against)
		}
	}
	// The tree kernel and the 3 prefixes, each under seeds 1-3; the
	// tree's are the spread boots, counted once.
	if want := 4 * 3; tr.PerfBoots != want {
		t.Errorf("%d bench boots: want %d (tree + 3 prefixes, 3 seeds each)", tr.PerfBoots, want)
	}
	for _, w := range []string{"seeds 1–3", "Welch t over per-seed values", "Holm over"} {
		if !strings.Contains(tr.PerfNote, w) {
			t.Errorf("perf note %q does not say how the changes were tested (%q)", tr.PerfNote, w)
		}
	}
	if !regexp.MustCompile(`>= [0-9.]+ % and [0-9.]+ instruction-time ns`).MatchString(tr.PerfNote) {
		t.Errorf("perf note %q does not name the floors a step must clear", tr.PerfNote)
	}
}
