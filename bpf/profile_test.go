package bpf

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cilium/ebpf"
)

// TestRegenerateProfile checks the committed profiler object against its
// C source, as TestRegenerate does for the benchmark objects.
func TestRegenerateProfile(t *testing.T) {
	for _, tool := range []string{"clang", "llvm-strip"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("skipped: %s not installed (needed to regenerate the BPF objects)", tool)
		}
	}
	lines, err := generateLines("profile.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 {
		t.Fatalf("profile.go has %d go:generate lines, want 1", len(lines))
	}
	args := lines[0]
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"run", args[2], "-output-dir", out}, args[3:]...)...)
	cmd.Env = append(cleanEnv(), "GOPACKAGE=bpf", "GOFILE=profile.go")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%q: %v\n%s", args, err, b)
	}
	for _, name := range []string{"profile_x86_bpfel.go", "profile_x86_bpfel.o"} {
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: generated but not committed: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what profile.go produces now; run go generate ./bpf and commit", name)
		}
	}
}

func TestProfileSpec(t *testing.T) {
	spec, err := ProfileSpec()
	if err != nil {
		t.Fatal(err)
	}
	p, ok := spec.Programs[ProfileProgram]
	if !ok {
		t.Fatalf("no program %s in %v", ProfileProgram, spec.Programs)
	}
	if p.Type != ebpf.PerfEvent {
		t.Errorf("%s has type %v, want perf_event", ProfileProgram, p.Type)
	}
	st := spec.Maps[ProfileStacksMap]
	if st == nil || st.Type != ebpf.StackTrace || st.ValueSize != ProfileStackDepth*8 {
		t.Errorf("stacks map = %+v, want a stack-trace map of %d frames", st, ProfileStackDepth)
	}
	c := spec.Maps[ProfileCountsMap]
	if c == nil || c.Type != ebpf.Hash {
		t.Fatalf("counts map = %+v, want a hash", c)
	}
	var k ProfileKey
	if got, want := c.KeySize, uint32(4+4+len(k.Comm)); got != want {
		t.Errorf("counts key size %d, Go ProfileKey is %d bytes", got, want)
	}
	if spec.Maps[ProfileDroppedMap] == nil {
		t.Errorf("no %s map", ProfileDroppedMap)
	}
}
