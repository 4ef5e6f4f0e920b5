// Tests of locating a performance change in a series: the seeded test
// under icount, bisection and --each otherwise.

package job

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// TestSeriesSeedsOption: --seeds 4 boots every measured prefix with
// seeds 1-4 (the tree's 1-3 are its spread runs) and the culprit says 4.
func TestSeriesSeedsOption(t *testing.T) {
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log")}
	boot := &fakeSeriesBooter{perf: map[string]float64{"tree": 400, "prefix-1": 400, "prefix-2": 204}}
	rep, _, _ := runSeries(t, seriesTester(b, boot), SeriesOptions{
		Patches: []string{writeDiffs(t, 2)}, Trees: []string{"stock"}, Variants: []string{"gtp"}, Seeds: 4})
	tr := rep.Trees[0]
	if len(tr.Culprits) != 1 || tr.Culprits[0].Patch != 2 || tr.Culprits[0].Seeds != 4 {
		t.Errorf("culprits %+v, want patch 2 over 4 seeds", tr.Culprits)
	}
	if tr.PerfBoots != 3*4 || !strings.Contains(tr.PerfNote, "seeds 1–4") {
		t.Errorf("%d bench boots, note %q: want 12 (3 kernels x 4 seeds) and seeds 1–4", tr.PerfBoots, tr.PerfNote)
	}
}

// TestSeriesFirstSeedOption: --first-seed 21 boots every guest seed of
// the series 20 higher (the survival boots too), and the note names the
// seeds it used.
func TestSeriesFirstSeedOption(t *testing.T) {
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log")}
	boot := &fakeSeriesBooter{perf: map[string]float64{"tree": 400, "prefix-1": 400, "prefix-2": 204}}
	rep, _, _ := runSeries(t, seriesTester(b, boot), SeriesOptions{
		Patches: []string{writeDiffs(t, 2)}, Trees: []string{"stock"}, Variants: []string{"gtp"}, Seeds: 3, FirstSeed: 21})
	tr := rep.Trees[0]
	if len(tr.Culprits) != 1 || tr.Culprits[0].Patch != 2 {
		t.Errorf("culprits %+v, want patch 2", tr.Culprits)
	}
	if !strings.Contains(tr.PerfNote, "seeds 21–23") {
		t.Errorf("note %q: want seeds 21–23", tr.PerfNote)
	}
	for _, l := range boot.boots {
		if !strings.HasSuffix(l, " seed 21") && !strings.HasSuffix(l, " seed 22") && !strings.HasSuffix(l, " seed 23") {
			t.Errorf("boot %q: want a guest seed of 21-23", l)
		}
	}
}

// TestSeriesPerfBisect: 3 patches, only patch 2 adds work to gtp_write;
// gtp_read moves 1 % at patch 1, less than its 3.5 % spread over seeds on
// the tree kernel. Under icount every prefix is measured over 6 seeds and
// each step tested: patch 2 and only patch 2 is named.
func TestSeriesPerfBisect(t *testing.T) {
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log")}
	boot := &fakeSeriesBooter{perf: map[string]float64{"tree": 400, "prefix-1": 400, "prefix-2": 204, "prefix-3": 204},
		read:     map[string]float64{"prefix-1": 40.4, "prefix-2": 40.4, "prefix-3": 40.4},
		readSeed: map[uint64]float64{2: 2, 3: -1.5}}
	rep, code, txt := runSeries(t, seriesTester(b, boot), SeriesOptions{
		Patches: []string{writeDiffs(t, 3)}, Trees: []string{"stock"}, Boot: true, Survival: true, Variants: []string{"gtp"}})
	t.Logf("series.txt:\n%s", txt)
	tr := rep.Trees[0]
	if code != 0 {
		t.Errorf("exit %d", code)
	}
	if len(tr.Culprits) != 1 {
		t.Fatalf("culprits %+v, want patch 2 only", tr.Culprits)
	}
	c := tr.Culprits[0]
	if c.Patch != 2 || c.Key != "gtp-gtp/gtp_write" || c.Unit != "instruction-time" || c.Share != 100 || c.Seeds != 6 || c.From != 0 {
		t.Errorf("culprit %+v", c)
	}
	if want := "patch 2/3 ‹gtp: step 2 of the fake series›: gtp-gtp/gtp_write −49 % [−49 %, −49 %] (instruction-time, 6 seeds per prefix)"; !strings.Contains(txt, want) {
		t.Errorf("text lacks %q:\n%s", want, txt)
	}
	// Validation boots, then every prefix with seeds 1-6 (the tree's
	// seeds 2 and 3 are its spread runs).
	want := []string{"tree", "prefix-1", "prefix-2", "prefix-3"}
	for _, k := range []string{"tree", "prefix-1", "prefix-2", "prefix-3"} {
		want = append(want, k+"+bench")
		for seed := 2; seed <= 6; seed++ {
			want = append(want, fmt.Sprintf("%s+bench seed %d", k, seed))
		}
	}
	if !reflect.DeepEqual(boot.boots, want) {
		t.Errorf("boots %v, want %v", boot.boots, want)
	}
	if tr.PerfBoots != 24 {
		t.Errorf("perf boots %d, want 24 (4 prefixes × 6 seeds)", tr.PerfBoots)
	}
	if want := "every prefix measured over seeds 1–6; each step and the whole series tested"; !strings.HasPrefix(tr.PerfNote, want) {
		t.Errorf("perf note %q, want it to start %q", tr.PerfNote, want)
	}
	if tr.Patches[1].Perf == nil {
		t.Errorf("patch 2's row carries no perf although it was measured")
	}
}

func TestSeriesPerfEach(t *testing.T) {
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log")}
	boot := &fakeSeriesBooter{perf: map[string]float64{"tree": 100, "prefix-1": 150, "prefix-2": 150, "prefix-3": 200}}
	rep, _, _ := runSeries(t, seriesTester(b, boot), SeriesOptions{
		Patches: []string{writeDiffs(t, 3)}, Trees: []string{"stock"}, Boot: true, Survival: true, Variants: []string{"gtp"}, Each: true})
	// --each: one boot per kernel, survival and bench together, then
	// every prefix's seeds 2-6 (the tree's 2 and 3 are its spread runs).
	want := []string{"tree+bench", "prefix-1+bench", "prefix-2+bench", "prefix-3+bench"}
	for _, k := range []string{"tree", "prefix-1", "prefix-2", "prefix-3"} {
		for seed := 2; seed <= 6; seed++ {
			want = append(want, fmt.Sprintf("%s+bench seed %d", k, seed))
		}
	}
	if !reflect.DeepEqual(boot.boots, want) {
		t.Errorf("boots %v, want %v", boot.boots, want)
	}
	var got []string
	for _, c := range rep.Trees[0].Culprits {
		got = append(got, fmt.Sprintf("%d %s %.0f%% share %.0f", c.Patch, c.Key, c.Pct, c.Share))
	}
	if want := []string{"1 gtp-gtp/gtp_write 50% share 50", "3 gtp-gtp/gtp_write 33% share 50"}; !reflect.DeepEqual(got, want) {
		t.Errorf("culprits %q, want %q", got, want)
	}
	assertRedecided(t, rep)
}

// TestSeriesPerfNoisy: under a noisy clock the series is not located
// through the test: the tree's kernel is measured over seeds 1-3 for its
// spread, then prefixes are bisected (one boot each, from the record) or,
// with --each, every prefix's validation boot is its measurement.
func TestSeriesPerfNoisy(t *testing.T) {
	for _, each := range []bool{false, true} {
		b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log")}
		boot := &fakeSeriesBooter{clock: results.ClockHost, perf: map[string]float64{"tree": 100, "prefix-1": 100, "prefix-2": 100, "prefix-3": 200, "prefix-4": 200}}
		rep, _, _ := runSeries(t, seriesTester(b, boot), SeriesOptions{Patches: []string{writeDiffs(t, 4)}, Trees: []string{"stock"},
			Boot: true, Survival: true, Variants: []string{"gtp"}, Each: each})
		tr := rep.Trees[0]
		want := []string{"tree", "prefix-1", "prefix-2", "prefix-3", "prefix-4", "tree+bench", "tree+bench seed 2", "tree+bench seed 3", "prefix-4+bench", "prefix-2+bench", "prefix-3+bench"}
		note := "binary search over prefixes, threshold max(0.5 %, each program's spread over seeds 1–3 of the tree kernel), 6 bench boot(s) (wall, one boot: noisy)"
		if each {
			want = []string{"tree+bench", "prefix-1+bench", "prefix-2+bench", "prefix-3+bench", "prefix-4+bench", "tree+bench seed 2", "tree+bench seed 3"}
			note = "every prefix measured, threshold max(0.5 %, each program's spread over seeds 1–3 of the tree kernel), 7 bench boot(s) (wall, one boot: noisy)"
		}
		if !reflect.DeepEqual(boot.boots, want) {
			t.Errorf("--each %v: boots %v, want %v", each, boot.boots, want)
		}
		if len(tr.Culprits) != 1 || tr.Culprits[0].Patch != 3 || tr.Culprits[0].Key != "gtp-gtp/gtp_write" || tr.Culprits[0].Pct != 100 || tr.Culprits[0].Seeds != 0 {
			t.Errorf("--each %v: culprits %+v, want patch 3's gtp_write +100 %%, not seeded", each, tr.Culprits)
		}
		if tr.PerfNote != note {
			t.Errorf("--each %v: note %q, want %q", each, tr.PerfNote, note)
		}
		if tr.Seeds != 0 {
			t.Errorf("--each %v: record says located over %d seeds: want 0 (not through the test)", each, tr.Seeds)
		}
		assertRedecided(t, rep)
	}
}

// assertRedecided checks that series.json's boots decide the culprits
// again as the run did (kci report's verdict.RedecideSeries), and that a
// record whose boots say otherwise is decided otherwise.
func assertRedecided(t *testing.T, rep *results.Series) {
	t.Helper()
	var again results.Series
	b, err := json.Marshal(rep)
	if err == nil {
		err = json.Unmarshal(b, &again)
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range again.Trees {
		again.Trees[i].Culprits = nil
	}
	verdict.RedecideSeries(&again)
	for i, tr := range rep.Trees {
		if !reflect.DeepEqual(again.Trees[i].Culprits, tr.Culprits) {
			t.Errorf("tree %s: decided again from series.json: %+v, the run's %+v", tr.Tree, again.Trees[i].Culprits, tr.Culprits)
		}
	}
	// The same record with every boot measuring what the tree kernel's
	// seed-1 boot did: no culprit.
	flat := again.Trees[0]
	m, ok := flat.Measurement(0, 1)
	if !ok {
		t.Fatal("no seed-1 boot of the tree kernel in the record")
	}
	flat.Boots = append([]results.SeriesBoot(nil), flat.Boots...)
	for j := range flat.Boots {
		flat.Boots[j].Variants = m.Variants
	}
	one := results.Series{Clock: again.Clock, Trees: []results.SeriesTree{flat}}
	verdict.RedecideSeries(&one)
	if len(one.Trees[0].Culprits) != 0 {
		t.Errorf("a record of flat boots decided culprits %+v", one.Trees[0].Culprits)
	}
}
