package main

import (
	"github.com/kci-dev/kci/internal/golden"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/results/render"

	"github.com/kci-dev/kci/results"
)

// TestSeriesRerender: a saved series run renders again in every format.
func TestSeriesRerender(t *testing.T) {
	dir := t.TempDir()
	s := &results.Series{Schema: 1, ID: "x", Trees: []results.SeriesTree{{Tree: "stock", Patches: []results.PatchResult{
		{Index: 1, Of: 2, Subject: "net: a | pipe", Apply: "ok", Build: "ok", BuildTime: 42 * time.Second,
			Checkpatch: &results.Checkpatch{Errors: 1, Items: []results.CheckpatchItem{{Level: "ERROR", Type: "TRAILING_WHITESPACE", Message: "trailing whitespace"}}}},
		{Index: 2, Of: 2, Subject: "net: b", Apply: "ok", Build: "FAIL", BuildError: "x.c:1:2: error: y"},
	}}}}
	if err := render.WriteSeries(dir, s); err != nil {
		t.Fatal(err)
	}
	rep, err := results.LoadSeries(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Each format is the golden testdata/TestSeriesRerender/<format>.
	for _, format := range []string{"text", "markdown", "json"} {
		var b strings.Builder
		if err := renderSeries(&b, rep, format); err != nil {
			t.Fatal(err)
		}
		golden.Own(t, format, b.String())
	}
	if err := renderSeries(&strings.Builder{}, rep, "html"); err == nil {
		t.Error("an unknown format is accepted")
	}
	// kci report on the directory shows the same as kci series RUNDIR.
	var viaReport, viaSeries strings.Builder
	if err := runReport(&viaReport, &strings.Builder{}, []string{dir}, reportOptions{format: "markdown", failOnPerf: -1}); err != nil {
		t.Fatalf("kci report on a series directory: %v", err)
	}
	if err := renderSeries(&viaSeries, rep, "markdown"); err != nil {
		t.Fatal(err)
	}
	if viaReport.String() != viaSeries.String() {
		t.Errorf("kci report shows a series directory otherwise than kci series RUNDIR:\n%s\n--- series:\n%s", viaReport.String(), viaSeries.String())
	}
}
