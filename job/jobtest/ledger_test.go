package jobtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/kernel"
)

func TestRecordLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger")
	t.Setenv(LedgerEnv, path)
	record(t, &kernel.Artifacts{Key: "0123456789abcdef", Patches: []string{"a\tb: first", "net: skbuff: a fixture"},
		Phases: []kernel.Phase{{Name: "config", CPU: 2 * time.Second}, {Name: "build", CPU: 150 * time.Second}}}, 95*time.Second)
	record(t, &kernel.Artifacts{Key: "fedcba9876543210", CacheHit: true, Phases: []kernel.Phase{{Name: "build", CPU: time.Hour}}}, 40*time.Minute)
	record(t, &kernel.Artifacts{Key: "fedcba9876543210", CacheHit: true}, time.Second)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"job/jobtest", t.Name(), "01234567 net: skbuff: a fixture", "built", "95.0", "152.0"},
		{"job/jobtest", t.Name(), "fedcba98 base", "waited", "2400.0", "0.0"},
		{"job/jobtest", t.Name(), "fedcba98 base", "cached", "1.0", "0.0"},
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("ledger has %d lines, want %d:\n%s", len(lines), len(want), data)
	}
	for i, l := range lines {
		if got := strings.Split(l, "\t"); strings.Join(got, "|") != strings.Join(want[i], "|") {
			t.Errorf("line %d: %q, want %q", i+1, got, want[i])
		}
	}
}

// A subject with a tab must not add a field.
func TestLedgerLabelOneField(t *testing.T) {
	if l := label(&kernel.Artifacts{Key: "k", Patches: []string{"x\ty\nz"}}); strings.ContainsAny(l, "\t\n") {
		t.Errorf("label %q", l)
	}
}

func TestLedgerOffWithoutEnv(t *testing.T) {
	t.Setenv(LedgerEnv, "")
	dir := t.TempDir()
	t.Chdir(dir)
	record(t, &kernel.Artifacts{Key: "k"}, time.Second)
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("record wrote %v with no ledger set", ents)
	}
}
