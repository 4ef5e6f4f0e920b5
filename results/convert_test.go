package results

import (
	"testing"

	"github.com/kci-dev/kci/kernel"
)

// The record's readings of a kernel's findings, the one place reports and
// kci config take them from.
func TestRecordedFindingsRead(t *testing.T) {
	deliberate := DriftOf(kernel.Drift{Option: "NUMA", Here: "n", Production: "y", Why: "one node"})
	if got, want := deliberate.String(), "NUMA: here n, production y — deliberate: one node"; got != want {
		t.Errorf("drift %q, want %q", got, want)
	}
	if got, want := DriftOf(kernel.Drift{Option: "JUMP_LABEL", Here: "y", Production: "n"}).String(),
		"JUMP_LABEL: here y, production n — NOT deliberate: numbers may not transfer"; got != want {
		t.Errorf("drift %q, want %q", got, want)
	}
	c := CheckpatchOf(&kernel.Checkpatch{Errors: 1, Items: []kernel.CheckpatchItem{{Level: "ERROR", Type: "TRAILING_WHITESPACE", Line: 23, Message: "trailing whitespace"}}})
	if c.Summary() != "1E 0W 0C" || c.Items[0].String() != "ERROR:TRAILING_WHITESPACE: trailing whitespace" {
		t.Errorf("checkpatch %q, item %q", c.Summary(), c.Items[0].String())
	}
	if CheckpatchOf(&kernel.Checkpatch{}).Summary() != "clean" || CheckpatchOf(nil).Summary() != "-" {
		t.Error("a clean patch reads 'clean', one not checked '-'")
	}
}
