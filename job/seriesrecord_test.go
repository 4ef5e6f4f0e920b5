// Tests of a series' record: every boot is a boot record, and the
// culprits are decided from the records again as they were when run.

package job

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// TestSeriesBootRecords: with --first-seed 21 and --seeds 3, series.json
// (schema 2) holds the three validation boots and the nine bench boots,
// each with its prefix, role, logical seed, guest seed and order.
func TestSeriesBootRecords(t *testing.T) {
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log")}
	boot := &fakeSeriesBooter{perf: map[string]float64{"tree": 400, "prefix-1": 400, "prefix-2": 204}}
	dir := t.TempDir()
	runSeries(t, seriesTester(b, boot), SeriesOptions{Patches: []string{writeDiffs(t, 2)}, Trees: []string{"stock"},
		Boot: true, Survival: true, Variants: []string{"gtp"}, Seeds: 3, FirstSeed: 21, Out: dir})
	s, err := results.LoadSeries(dir)
	if err != nil {
		t.Fatal(err)
	}
	if s.Schema != results.SeriesSchema || len(s.Trees) != 1 {
		t.Fatalf("schema %d, %d trees: want %d, 1", s.Schema, len(s.Trees), results.SeriesSchema)
	}
	var got []string
	for _, b := range s.Trees[0].Boots {
		got = append(got, fmt.Sprintf("%d %d %s %d %d %v", b.Seq, b.Prefix, b.Role, b.Rep, b.Seed, b.Bench))
	}
	want := []string{"1 0 base 1 21 false", "2 1 patched 1 21 false", "3 2 patched 1 21 false"}
	seq := 3
	for k := range 3 {
		role := "patched"
		if k == 0 {
			role = "base"
		}
		for rep := 1; rep <= 3; rep++ {
			seq++
			want = append(want, fmt.Sprintf("%d %d %s %d %d true", seq, k, role, rep, 20+rep))
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("boot records\n%q\nwant\n%q", got, want)
	}
	vals := verdict.SeriesValues(&s.Trees[0], []int{0, 1, 2}, 3)
	if g := vals[2]["gtp-gtp/gtp_write"]; !reflect.DeepEqual(g.Seeds, []uint64{21, 22, 23}) || !reflect.DeepEqual(g.Vals, []float64{204, 204, 204}) {
		t.Errorf("prefix 2's gtp_write from the records: %+v, want 204 at seeds 21-23", g)
	}
}

// TestSeriesRedecidedFromRecord: the culprits decided again from a saved
// series' boot records are the ones the run decided; records that no
// longer show the step decide no culprit.
func TestSeriesRedecidedFromRecord(t *testing.T) {
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log")}
	boot := &fakeSeriesBooter{perf: map[string]float64{"tree": 400, "prefix-1": 400, "prefix-2": 204}}
	dir := t.TempDir()
	rep, _, _ := runSeries(t, seriesTester(b, boot), SeriesOptions{Patches: []string{writeDiffs(t, 2)}, Trees: []string{"stock"},
		Variants: []string{"gtp"}, Out: dir})
	s, err := results.LoadSeries(dir)
	if err != nil {
		t.Fatal(err)
	}
	ran := rep.Trees[0].Culprits
	if len(ran) != 1 || ran[0].Patch != 2 || ran[0].Seeds != 6 {
		t.Fatalf("the run's culprits %+v, want patch 2 over 6 seeds", ran)
	}
	s.Trees[0].Culprits = nil
	verdict.RedecideSeries(s)
	if !reflect.DeepEqual(s.Trees[0].Culprits, ran) {
		t.Errorf("re-decided %+v\nthe run's %+v", s.Trees[0].Culprits, ran)
	}
	// Prefix 2's boots measured what prefix 1's did: no step left.
	tr := &s.Trees[0]
	for i := range tr.Boots {
		if tr.Boots[i].Prefix == 2 {
			tr.Boots[i].Variants = tr.Boots[i-6].Variants
		}
	}
	verdict.RedecideSeries(s)
	if len(tr.Culprits) != 0 {
		t.Errorf("culprits %+v from records without the step", tr.Culprits)
	}
}
