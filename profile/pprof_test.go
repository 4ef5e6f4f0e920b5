package profile

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/pprof/profile"
)

func TestPprofRoundTrip(t *testing.T) {
	p := loadTestdata(t, "hash.folded")
	p.FreqHz = 99
	var buf bytes.Buffer
	if err := WritePprof(&buf, p, PprofOptions{Duration: 3 * time.Second, Comment: []string{"hash"}}); err != nil {
		t.Fatal(err)
	}
	q, err := profile.Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.SampleType) != 2 || q.SampleType[0].Type != "samples" || q.SampleType[1].Unit != "nanoseconds" {
		t.Fatalf("sample types %v", q.SampleType)
	}
	if q.Period != int64(time.Second)/99 || q.DurationNanos != int64(3*time.Second) {
		t.Errorf("period %d duration %d", q.Period, q.DurationNanos)
	}
	// Flat and cumulative counts per function, and per task, from the
	// parsed-back profile must match the folded input.
	flat, cum, comm := map[string]int64{}, map[string]int64{}, map[string]int64{}
	var total int64
	for _, s := range q.Sample {
		total += s.Value[0]
		if s.Value[1] != s.Value[0]*q.Period {
			t.Errorf("cpu value %d for %d samples", s.Value[1], s.Value[0])
		}
		comm[s.Label["comm"][0]] += s.Value[0]
		flat[s.Location[0].Line[0].Function.Name] += s.Value[0]
		seen := map[string]bool{}
		for _, l := range s.Location {
			n := l.Line[0].Function.Name
			if !seen[n] {
				seen[n] = true
				cum[n] += s.Value[0]
			}
		}
	}
	if total != 100 {
		t.Errorf("total %d, want 100", total)
	}
	syms := Symbols(p)
	for name, s := range syms {
		if flat[name] != s.Self || cum[name] != s.Total {
			t.Errorf("%s: pprof flat/cum %d/%d, folded self/total %d/%d", name, flat[name], cum[name], s.Self, s.Total)
		}
	}
	if comm["kci-guest"] != 65 || comm["swapper/0"] != 30 || comm["ksoftirqd/1"] != 5 {
		t.Errorf("comm labels %v", comm)
	}
	// The leaf comes first.
	for _, s := range q.Sample {
		if s.Location[len(s.Location)-1].Line[0].Function.Name == "htab_map_update_elem" {
			t.Error("stack stored root first")
		}
	}
}

func TestPprofNoRate(t *testing.T) {
	p, _ := ParseFoldedString("t;f 3\n")
	pp := Pprof(p, PprofOptions{})
	if len(pp.SampleType) != 1 || pp.Period != 0 {
		t.Errorf("without a rate: sample types %v period %d, want samples only", pp.SampleType, pp.Period)
	}
	if err := pp.CheckValid(); err != nil {
		t.Error(err)
	}
}

// TestGoToolPprof checks that the real pprof tool reads our file.
func TestGoToolPprof(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not on PATH")
	}
	p := loadTestdata(t, "hash.folded")
	p.FreqHz = 99
	file := filepath.Join(t.TempDir(), "hash.pb.gz")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := WritePprof(f, p, PprofOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "tool", "pprof", "-top", "-sample_index=samples", file)
	cmd.Env = append(os.Environ(), "PPROF_BINARY_PATH=/nonexistent")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof: %v\n%s", err, out)
	}
	// pprof_native_safe_halt is 30 of 100 samples, the top flat entry.
	var found bool
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasSuffix(strings.TrimSpace(l), "pv_native_safe_halt") {
			found = strings.HasPrefix(strings.TrimSpace(l), "30 30.00%")
		}
	}
	if !found {
		t.Errorf("pv_native_safe_halt with 30 flat samples not in:\n%s", out)
	}
}
