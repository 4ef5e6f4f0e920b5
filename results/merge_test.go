package results_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"
)

func TestMergeShardsEqualsOneRun(t *testing.T) {
	base := runtest.Normal(21, 8, 900, 0.02)
	patched := runtest.Normal(22, 8, 640, 0.02)
	whole := runtest.AbRun("gtp", results.AccelKVM, base, patched)
	// Two CI jobs each ran 4 repetitions, both numbering them 1..4.
	a := runtest.AbRun("gtp", results.AccelKVM, base[:4], patched[:4])
	b := runtest.AbRun("gtp", results.AccelKVM, base[4:], patched[4:])
	a.ID, b.ID = "shard0a0", "shard0b0"
	b.Start = a.Start.Add(time.Minute)
	b.End = b.Start.Add(time.Hour)
	a.End = a.Start.Add(30 * time.Minute)

	m, err := results.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.MergedFrom, ","); got != "shard0a0,shard0b0" {
		t.Errorf("merged from %s", got)
	}
	if len(m.Boots) != 16 {
		t.Fatalf("%d boots, want 16", len(m.Boots))
	}
	reps := map[string]bool{}
	for i, bt := range m.Boots {
		if bt.Seq != i+1 {
			t.Errorf("boot %d has seq %d", i, bt.Seq)
		}
		k := fmt.Sprint(bt.Role, bt.Rep)
		if reps[k] {
			t.Errorf("duplicate %s rep %d after merge", bt.Role, bt.Rep)
		}
		reps[k] = true
	}
	if !m.Start.Equal(a.Start) || !m.End.Equal(b.End) {
		t.Errorf("merged span %v..%v, want %v..%v", m.Start, m.End, a.Start, b.End)
	}

	gtp := func(run *results.Run) verdict.TreeAB {
		tr, _ := verdict.AnalyzeRun(run).Tree("gtp")
		return tr.Perf
	}
	got, want := gtp(m), gtp(whole)
	g, w := got.Variants[0].Total, want.Variants[0].Total
	sort.Float64s(g.Base.Values)
	sort.Float64s(w.Base.Values)
	sort.Float64s(g.Patched.Values)
	sort.Float64s(w.Patched.Values)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("merged statistics differ from one run holding all samples:\n got %+v\nwant %+v", g, w)
	}
	if g.Base.N != 8 || g.Verdict != verdict.Faster {
		t.Errorf("merged: n=%d verdict %q", g.Base.N, g.Verdict)
	}
}

func TestMergeRefusesDifferentKernels(t *testing.T) {
	a := runtest.AbRun("gtp", results.AccelKVM, []float64{1}, []float64{1})
	b := runtest.AbRun("gtp", results.AccelKVM, []float64{1}, []float64{1})
	b.Trees[0].Patched = &results.Kernel{Key: "otherpatch"}
	if _, err := results.Merge(a, b); err == nil || !strings.Contains(err.Error(), "patched kernel") {
		t.Errorf("err %v, want a refusal naming the patched kernel", err)
	}
	c := runtest.AbRun("gtp", results.AccelKVM, []float64{1}, []float64{1})
	c.Plan.Variants = []string{"gtp-gtpchurn"}
	if _, err := results.Merge(a, c); err == nil || !strings.Contains(err.Error(), "plan") {
		t.Errorf("err %v, want a refusal naming the plan", err)
	}
}

func TestMergeKeepsIncompleteAndTCG(t *testing.T) {
	a := runtest.AbRun("gtp", results.AccelKVM, []float64{1}, []float64{1})
	b := runtest.AbRun("gtp", results.AccelTCG, []float64{1}, []float64{1})
	b.Incomplete, b.IncompleteReason = true, "runner lost"
	m, err := results.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if want := "shard " + b.ID + ": runner lost"; !m.Incomplete || m.IncompleteReason != want {
		t.Errorf("incomplete %v %q", m.Incomplete, m.IncompleteReason)
	}
	if !m.Emulated("gtp") {
		t.Errorf("a shard measured under TCG must keep the merged run labelled emulated")
	}
}

func TestMergeDirsCopiesLogsAndRendersNothing(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for i, id := range []string{"aaaa0001", "bbbb0002"} {
		r := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(uint64(30+i), 3, 100, 0.01), runtest.Normal(uint64(40+i), 3, 100, 0.01))
		r.ID = id
		d := filepath.Join(root, id)
		os.MkdirAll(filepath.Join(d, "console"), 0o755)
		r.Boots[0].ConsoleLog = "console/boot-1.log"
		os.WriteFile(filepath.Join(d, "console/boot-1.log"), []byte("Linux version "+id+"\n"), 0o644)
		if err := results.Save(d, r); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	out := filepath.Join(root, "merged")
	m, err := results.MergeDirs(out, dirs...)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := results.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Boots) != 12 || loaded.ID != m.ID {
		t.Errorf("merged record has %d boots, id %s/%s", len(loaded.Boots), loaded.ID, m.ID)
	}
	second := loaded.Boots[6] // first boot of the second shard
	if second.ConsoleLog != filepath.Join("shard-bbbb0002", "console/boot-1.log") {
		t.Fatalf("console log path %q", second.ConsoleLog)
	}
	b, err := os.ReadFile(filepath.Join(out, second.ConsoleLog))
	if err != nil || !strings.Contains(string(b), "bbbb0002") {
		t.Errorf("copied log: %q %v", b, err)
	}
	// The record is merged; rendering is the caller's (kci report --merge).
	if _, err := os.Stat(filepath.Join(out, "report.txt")); err == nil {
		t.Errorf("the record's merge rendered a report")
	}
}
