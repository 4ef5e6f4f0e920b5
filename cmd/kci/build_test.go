package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/kernel"
)

// kci build's phases line gives make's CPU beside the wall time, and only
// for the phases make ran in.
func TestPrintArtifactsPhaseCPU(t *testing.T) {
	var b strings.Builder
	printArtifacts(&b, &kernel.Artifacts{Release: "6.12.118-kci", Key: "k", BaseID: "0123456789abcdef", Phases: []kernel.Phase{
		{Name: "reset", Duration: 1200 * time.Millisecond},
		{Name: "build", Duration: 49900 * time.Millisecond, CPU: 55 * time.Second},
	}})
	if want := "  phases   reset 1.2s, build 49.9s (55.0s of CPU)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("output lacks %q:\n%s", want, b.String())
	}
}
