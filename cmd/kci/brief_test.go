package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/results"
)

// kci report --brief over two runs names each before its answer, in
// text and Markdown; over one run it adds nothing.
func TestBriefNamesEachRun(t *testing.T) {
	root := t.TempDir()
	a, b := filepath.Join(root, "run-a"), filepath.Join(root, "run-b")
	saveRun(t, a, "cafe000a", 1)
	saveRun(t, b, "cafe000b", 2)
	for _, format := range []string{"text", "markdown"} {
		var out strings.Builder
		if err := runReport(&out, &out, []string{a, b}, reportOptions{brief: true, format: format, failOnPerf: -1}); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		ia, ib := strings.Index(got, "run-a"), strings.Index(got, "run-b")
		if ia < 0 || ib < ia || !strings.Contains(got, "cafe000a") || !strings.Contains(got, "cafe000b") {
			t.Errorf("%s: the runs are not named in order:\n%s", format, got)
		}
		if n := strings.Count(got, "gtp: slower"); n != 2 || strings.Index(got, "gtp: slower") < ia {
			t.Errorf("%s: %d answers, want each after its run's name:\n%s", format, n, got)
		}
		assertWidth(t, got)
	}
	var one strings.Builder
	if err := runReport(&one, &one, []string{a}, reportOptions{brief: true, format: "text", failOnPerf: -1}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(one.String(), "run-a") {
		t.Errorf("one run is named:\n%s", one.String())
	}
}

// An interrupted run's brief is not empty: it says the run was
// interrupted and what it has (its boots; a tree's answer if any).
func TestBriefOfInterruptedRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "stopped")
	run := &results.Run{Schema: results.SchemaVersion, ID: "dead0001", Start: time.Unix(1790883472, 0).UTC(),
		Incomplete: true, IncompleteReason: "interrupted", Host: results.Host{Accel: results.AccelKVM}}
	if err := results.Save(dir, run); err != nil {
		t.Fatal(err)
	}
	partial := filepath.Join(t.TempDir(), "partial")
	saveRun(t, partial, "dead0002", 3)
	r, err := results.Load(partial)
	if err != nil {
		t.Fatal(err)
	}
	r.Incomplete, r.IncompleteReason = true, "run did not finish (interrupted or crashed)"
	if err := results.Save(partial, r); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{dir, "no tree measured yet: 0 boots recorded"},
		{partial, "gtp: slower"},
	} {
		for _, format := range []string{"text", "markdown"} {
			var out strings.Builder
			if err := runReport(&out, &out, []string{c.dir}, reportOptions{brief: true, format: format, failOnPerf: -1}); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if !strings.Contains(got, "run incomplete:") || !strings.Contains(got, "interrupted") || !strings.Contains(got, c.want) {
				t.Errorf("%s --format %s: %q, want the stop and %q", filepath.Base(c.dir), format, got, c.want)
			}
		}
	}
}
