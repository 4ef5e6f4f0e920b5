// Tests of locating a performance change in a series: the seeded test
// under icount, bisection and --each otherwise.

package job

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
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
}

func TestLocatePerf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		values   []float64 // gtp_write at prefix 0..N
		want     []int     // culprit patches
		maxCalls int
	}{
		{"none", []float64{100, 100, 100.2, 100, 100}, nil, 2},
		{"one of 3", []float64{400, 400, 204, 204}, []int{2}, 4},
		{"first", []float64{100, 200, 200, 200, 200, 200, 200, 200, 200}, []int{1}, 5},
		{"last of 8", []float64{100, 100, 100, 100, 100, 100, 100, 100, 130}, []int{8}, 5},
		{"two", []float64{100, 100, 150, 150, 150, 150, 200, 200, 200}, []int{2, 6}, 8},
		// The series as a whole moves nothing: bisection looks no further
		// (--each measures every prefix and sees both steps).
		{"up and down", []float64{100, 100, 150, 150, 100}, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefixes := make([]int, len(tc.values))
			for i := range prefixes {
				prefixes[i] = i
			}
			calls := 0
			steps, err := LocatePerf(prefixes, func(k int) (map[string]float64, error) {
				calls++
				return map[string]float64{"v/gtp_write": tc.values[k], "v/gtp_read": 40}, nil
			}, flat)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, s := range steps {
				got = append(got, s.Patch)
				if s.Key != "v/gtp_write" {
					t.Errorf("step on %s: only gtp_write moves", s.Key)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("culprits %v, want %v", got, tc.want)
			}
			if calls > tc.maxCalls {
				t.Errorf("%d measurements, want at most %d", calls, tc.maxCalls)
			}
		})
	}
	// Every prefix measured: each adjacent step counts.
	m := map[int]map[string]float64{0: {"p": 100}, 1: {"p": 100}, 2: {"p": 150}, 3: {"p": 150}, 4: {"p": 100}}
	var got []string
	for _, s := range AdjacentSteps([]int{0, 1, 2, 3, 4}, m, flat) {
		got = append(got, fmt.Sprintf("%d %+.0f%%", s.Patch, s.Pct))
	}
	if want := []string{"2 +50%", "4 -33%"}; !reflect.DeepEqual(got, want) {
		t.Errorf("every prefix: steps %q, want %q", got, want)
	}
	// Prefixes that did not build are not measured: the step lands on the
	// next one that did.
	steps, _ := LocatePerf([]int{0, 1, 3}, func(k int) (map[string]float64, error) {
		return map[string]float64{"p": map[int]float64{0: 10, 1: 10, 3: 20}[k]}, nil
	}, flat)
	if len(steps) != 1 || steps[0].Patch != 3 {
		t.Errorf("with prefix 2 unbuilt: %+v", steps)
	}
}

// TestPerfThresholdPerProgram: both programs move 1 % at patch 2; lru_write
// spreads 2.4 % over seeds on the tree kernel, cnt 0.2 %. With the
// threshold max(0.5 %, spread) only cnt is blamed, by bisection and by
// every prefix alike.
func TestPerfThresholdPerProgram(t *testing.T) {
	spread := SeedSpread([]map[string]float64{
		{"v/lru_write": 1000, "v/cnt": 500},
		{"v/lru_write": 1024, "v/cnt": 501},
		{"v/lru_write": 1010, "v/cnt": 500.5},
	})
	if got := fmt.Sprintf("%.2f %.2f", spread["v/lru_write"], spread["v/cnt"]); got != "2.38 0.20" {
		t.Fatalf("spreads %s, want 2.38 0.20 ((max-min)/median)", got)
	}
	thr := func(key string) float64 { return max(0.5, spread[key]) }
	m := map[int]map[string]float64{}
	for k := 0; k <= 3; k++ {
		f := 1.0
		if k >= 2 {
			f = 1.01
		}
		m[k] = map[string]float64{"v/lru_write": 1000 * f, "v/cnt": 500 * f}
	}
	want := []string{"2 v/cnt +1.0% thr 0.5"}
	steps, err := LocatePerf([]int{0, 1, 2, 3}, func(k int) (map[string]float64, error) { return m[k], nil }, thr)
	if err != nil {
		t.Fatal(err)
	}
	for name, steps := range map[string][]PerfStep{"bisection": steps, "every prefix": AdjacentSteps([]int{0, 1, 2, 3}, m, thr)} {
		var got []string
		for _, s := range steps {
			got = append(got, fmt.Sprintf("%d %s %+.1f%% thr %.1f", s.Patch, s.Key, s.Pct, s.ThrPct))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: steps %q, want %q", name, got, want)
		}
	}
	// Without the spread, lru_write's move is blamed too.
	if steps := AdjacentSteps([]int{0, 1, 2, 3}, m, flat); len(steps) != 2 {
		t.Errorf("flat 0.5 %%: %d steps, want 2 (the case the spread guards against)", len(steps))
	}
	if s := SeedSpread([]map[string]float64{{"p": 0}, {"p": 0}, {"p": 0}}); s["p"] != 0 {
		t.Errorf("spread of a zero-cost program %v, want 0", s["p"])
	}
}

// flat is the threshold 0.5 % for every program.
func flat(string) float64 { return 0.5 }

// A series step must move a program by whole instructions: the null
// patch's +0.39 ns on cnt_egress (+0.5 %) is not located, two nops on
// hash_read (+2 ns, +1 %) are, and nothing from zero is located below
// one instruction.
func TestMovedByResolution(t *testing.T) {
	cases := []struct {
		a, b, thr float64
		want      bool
	}{
		{73.00, 73.39, 0.5, false},
		{204.66, 206.64, 0.5, true},
		{204.66, 206.64, 1.5, false},
		{0, 0.5, 0.5, false},
		{0, 2, 0.5, true},
		{477.15, 472.0, 0.5, true},
	}
	for _, c := range cases {
		if got := movedBy(c.a, c.b, c.thr); got != c.want {
			t.Errorf("movedBy(%v, %v, %v%%) = %v, want %v", c.a, c.b, c.thr, got, c.want)
		}
	}
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
	}
}
