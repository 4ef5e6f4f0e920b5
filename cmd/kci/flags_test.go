package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Nonsense flags get a one-line error naming the flag, before any work:
// no cache, no run directory.
func TestTestFlagsValidatedFirst(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("KCI_CACHE", filepath.Join(dir, "cache"))
	patch := filepath.Join(dir, "p.patch")
	if err := os.WriteFile(patch, []byte("--- a/x\n+++ b/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--reps", "-1", patch}, "--reps -1"},
		{[]string{"--window", "-3s", patch}, "--window"},
		{[]string{"--fail-on-regression", "-5", patch}, "--fail-on-regression"},
		{[]string{"--fail-on-regression", "-1", patch}, "--fail-on-regression -1"},
		{[]string{"--tree", "nope", patch}, `--tree: no tree "nope"`},
		{[]string{"--clock", "wall", patch}, "--clock"},
		{[]string{}, "name a patch (or --tree"},
		{[]string{"--first-seed", "0", patch}, "--first-seed 0"},
		{[]string{"--seed", "2", "--first-seed", "3", patch}, "--seed and --first-seed"},
		{[]string{"--tree", "nope"}, `--tree: no tree "nope"`},
		{[]string{filepath.Join(dir, "missing.patch")}, "patch " + filepath.Join(dir, "missing.patch")},
		{[]string{"--cpus", "-2", patch}, "--cpus -2"},
		{[]string{"--parallel", "-1", patch}, "--parallel -1"},
		{[]string{"--parallel", "2", "--clock", "host", patch}, "--parallel 2 with --clock host"},
		{[]string{"--memory", "10", patch}, "--memory 10"},
		{[]string{"--accel", "hvf", patch}, "--accel"},
		{[]string{"--pin", "x-y", patch}, "--pin"},
	} {
		cache := filepath.Join(dir, "cache-"+strings.ReplaceAll(tc.want, "/", "_"))
		t.Setenv("KCI_CACHE", cache)
		cmd := newTestCmd()
		cmd.SetArgs(tc.args)
		cmd.SetOut(&strings.Builder{})
		cmd.SetErr(&strings.Builder{})
		err := cmd.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("kci test %v: %v, want an error naming %q", tc.args, err, tc.want)
		}
		if _, serr := os.Stat(filepath.Join(dir, "kci-results")); serr == nil {
			t.Fatalf("kci test %v created a run directory before refusing", tc.args)
		}
		// VM flags are refused before the cache is opened.
		if strings.HasPrefix(tc.want, "--cpus") || strings.HasPrefix(tc.want, "--memory") || tc.want == "--accel" || tc.want == "--pin" {
			if _, serr := os.Stat(cache); serr == nil {
				t.Errorf("kci test %v created the cache before refusing", tc.args)
			}
		}
	}
}
