package job

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/wire"
)

// skipping is a clean boot that also reports variant "y" skipped for
// reason, as the guest does on a kernel lacking a kfunc.
func skipping(ns float64, reason string) scriptedBoot {
	return func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
		res, err := bootOK(ns)(ctx, req)
		res.Variants = append(res.Variants, wire.VariantResult{Variant: "y", Skipped: reason})
		return res, err
	}
}

// A tree whose kernels lack a capability reports the skip at every boot;
// the log says it once per tree and reason, a new reason again.
func TestSkipLoggedOncePerTree(t *testing.T) {
	const lacks, other = "kernel lacks kfunc bpf_gtp_reap", "kernel lacks map type arena"
	boots := &fakeBooter{base: []scriptedBoot{skipping(100, lacks)}, patched: []scriptedBoot{skipping(100, lacks), skipping(100, other)}}
	var log syncBuffer
	proj := &project.File{Path: "kci.yaml", Trees: []project.Tree{{Name: "stock"}}}
	o := TestOptions{Patches: []string{testPatch}, Reps: 3, Out: filepath.Join(t.TempDir(), "run"), Log: &log}
	if _, err := (&Tester{Kernels: &fakeBuilder{}, Booter: boots, Project: proj}).Test(context.Background(), o); err != nil {
		t.Fatalf("Test: %v", err)
	}
	if n := len(boots.roles()); n < 4 {
		t.Fatalf("%d boots, want >= 4 (the skip reported more than once)", n)
	}
	out := log.String()
	for reason, want := range map[string]int{lacks: 1, other: 1} {
		if n := strings.Count(out, "y skipped: "+reason); n != want {
			t.Errorf("%q logged %d times, want %d:\n%s", reason, n, want, out)
		}
	}
}
