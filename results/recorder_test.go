package results_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/wire"
)

func TestRecorderWritesAfterEveryAddition(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "kci-results", "run")
	rec, err := results.NewRecorder(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	// A run that dies right away still leaves a record marked incomplete.
	r, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ID) != 8 {
		t.Errorf("id %q, want 8 hex digits", r.ID)
	}
	if !r.Incomplete || r.IncompleteReason == "" || r.Schema != results.SchemaVersion {
		t.Errorf("fresh record: incomplete %v reason %q schema %d", r.Incomplete, r.IncompleteReason, r.Schema)
	}

	if err := rec.SetHost(results.Host{Hostname: "h", Accel: results.AccelTCG, Checks: []results.Check{{Name: "kvm", Status: results.CheckWarn, Detail: "no /dev/kvm", Fix: "modprobe kvm"}}}); err != nil {
		t.Fatal(err)
	}
	if err := rec.SetPlan(results.PlanOf(wire.Plan{Survival: true, Variants: []string{"gtp-gtp"}, Bench: wire.DefaultBench()})); err != nil {
		t.Fatal(err)
	}
	if err := rec.SetTree(results.Tree{Name: "gtp", Base: &results.Kernel{Key: "k1"}}); err != nil {
		t.Fatal(err)
	}
	if err := rec.SetTree(results.Tree{Name: "gtp", Base: &results.Kernel{Key: "k1"}, Patched: &results.Kernel{Key: "k2"}, ConfigCheck: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := rec.AddPhase(results.Phase{Name: "build", Tree: "gtp", Kernel: results.RoleBase, Start: time.Now(), Duration: 3 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	seq, err := rec.AddBoot(results.Boot{Tree: "gtp", Role: results.RoleBase, Rep: 1, Accel: results.AccelTCG, Variants: []results.VariantResult{runtest.Vr("gtp-gtp", runtest.Pc{Name: "gtp_write", Ns: 500})}})
	if err != nil || seq != 1 {
		t.Fatalf("AddBoot seq %d err %v, want 1", seq, err)
	}

	// Without Finish (the process died here), everything so far is on disk.
	r, err = results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Incomplete {
		t.Errorf("unfinished run not marked incomplete")
	}
	if len(r.Trees) != 1 || r.Trees[0].Patched == nil || r.Trees[0].Patched.Key != "k2" {
		t.Errorf("trees %+v: SetTree must replace the tree of the same name", r.Trees)
	}
	if len(r.Boots) != 1 || r.Boots[0].Seq != 1 || r.Boots[0].Variants[0].Programs[0].RunTimeNs != 500*runtest.RefCnt {
		t.Errorf("boot not recorded whole: %+v", r.Boots)
	}
	if len(r.Phases) != 1 || r.Phases[0].Duration != 3*time.Minute {
		t.Errorf("phases %+v", r.Phases)
	}
	if r.Host.Checks[0].Fix != "modprobe kvm" || r.Plan.Bench.Pairs != 3 {
		t.Errorf("host or plan lost: %+v %+v", r.Host, r.Plan)
	}

	if err := rec.Finish(""); err != nil {
		t.Fatal(err)
	}
	r, _ = results.Load(dir)
	if r.Incomplete || r.End.IsZero() {
		t.Errorf("finished run: incomplete %v end %v", r.Incomplete, r.End)
	}
	if err := rec.Finish("qemu killed by timeout"); err != nil {
		t.Fatal(err)
	}
	r, _ = results.Load(dir)
	if !r.Incomplete || r.IncompleteReason != "qemu killed by timeout" {
		t.Errorf("Finish(reason): incomplete %v reason %q", r.Incomplete, r.IncompleteReason)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if e.Name() != results.RunFile {
			t.Errorf("left behind %s: temporary files must be renamed or removed", e.Name())
		}
	}
}

func TestRecorderConcurrentBoots(t *testing.T) {
	dir := t.TempDir()
	rec, err := results.NewRecorder(dir, "conc0001")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if _, err := rec.AddBoot(results.Boot{Tree: "t", Role: results.RoleBase, Rep: i + 1}); err != nil {
				t.Error(err)
			}
		}(i)
	}
	wg.Wait()
	r, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, b := range r.Boots {
		seen[b.Seq] = true
	}
	if len(r.Boots) != 16 || len(seen) != 16 {
		t.Errorf("%d boots with %d distinct seqs, want 16 and 16", len(r.Boots), len(seen))
	}
}

func TestLoadRejectsUnknownSchema(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, results.RunFile), []byte(`{"schema": 99, "id": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := results.Load(dir); err == nil || !strings.Contains(err.Error(), "schema 99") {
		t.Errorf("newer schema: err %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.RunFile), []byte(`{"id": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := results.Load(dir); err == nil {
		t.Errorf("record without schema accepted")
	}
	if _, err := results.Load(t.TempDir()); err == nil {
		t.Errorf("missing run.json accepted")
	}
}

func TestDefaultDir(t *testing.T) {
	start := time.Date(2026, 10, 1, 21, 39, 3, 0, time.FixedZone("CEST", 2*3600))
	if got, want := results.DefaultDir(start, "1a2b3c4d"), filepath.Join("kci-results", "20261001T193903Z-1a2b3c4d"); got != want {
		t.Errorf("DefaultDir = %q, want %q", got, want)
	}
	if a, b := results.NewID(), results.NewID(); a == b {
		t.Errorf("two ids in a row are equal")
	}
}

// A save that fails is not forgotten: the recorder keeps the first error,
// even when a later save succeeds, so the job can fail with it at the end.
func TestRecorderKeepsTheFirstSaveError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	rec, err := results.NewRecorder(dir, "err00001")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Err() != nil {
		t.Fatalf("fresh recorder: Err %v", rec.Err())
	}
	// The run directory vanishing stands for a disk that refuses writes
	// (permissions do not stop root).
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	first := rec.SetArgs([]string{"kci", "test"})
	if first == nil {
		t.Fatal("save into a removed directory succeeded")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rec.Finish(""); err != nil {
		t.Fatalf("save after the directory came back: %v", err)
	}
	if got := rec.Err(); got == nil || got.Error() != first.Error() {
		t.Errorf("Err() = %v, want the first failure %v", got, first)
	}
	if r, err := results.Load(dir); err != nil || len(r.Args) != 2 {
		t.Errorf("later save must still write the whole record: %+v, %v", r, err)
	}
}
