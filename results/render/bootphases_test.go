package render

import (
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

func TestBootPhasesText(t *testing.T) {
	ph := func(kernel, bench time.Duration) []results.BootPhase {
		return []results.BootPhase{{Name: "firmware", Duration: 500 * time.Millisecond},
			{Name: "kernel", Duration: kernel}, {Name: "bench/hash", Duration: bench}}
	}
	run := &results.Run{ID: "r", Boots: []results.Boot{
		{Seq: 1, Phases: ph(4*time.Second, 30*time.Second)},
		{Seq: 2, Phases: ph(6*time.Second, 50*time.Second)},
		{Seq: 3, Phases: ph(5*time.Second, 40*time.Second)},
		// A hit's phases are the stored boot's: they must not move the median.
		{Seq: 4, Cache: results.CacheHit, Phases: ph(time.Hour, time.Hour)},
		{Seq: 5}, // a boot without phases (an older record)
	}}
	var b strings.Builder
	if err := Text(&b, verdict.AnalyzeRun(run), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "\nboot phases (host wall time, median of 3 booted boots; cache hits left out):\n" +
		"  boot phase  median  boots\n" +
		"  firmware     500ms      3\n" +
		"  kernel          5s      3\n" +
		"  bench/hash     40s      3\n"
	if got := b.String(); !strings.HasSuffix(got, want) {
		t.Errorf("report ends\n%s\nwant it to end\n%s", got[max(0, len(got)-len(want)-80):], want)
	}
	if got := bootPhasesText(&results.Run{Boots: run.Boots[3:]}); got != "" {
		t.Errorf("only a hit and a boot without phases: %q, want no section", got)
	}
}

func TestMedianDuration(t *testing.T) {
	ds := []time.Duration{3, 1, 2, 10}
	if got := medianDuration(ds); got != 2 {
		t.Errorf("median %v, want 2 (mean of 2 and 3, truncated)", got)
	}
	if ds[0] != 3 {
		t.Error("medianDuration sorted its argument")
	}
}
