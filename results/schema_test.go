package results

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/wire"
)

var update = flag.Bool("update", false, "rewrite testdata/run-schema2.golden.json from fixedRun")

const (
	goldenRun = "testdata/run-schema2.golden.json"
	// oldRun was written by the schema 1 code (kernel.Artifacts and suite
	// types inside Run) from the same values fixedRun converts.
	oldRun = "testdata/run-schema1-old.json"
)

// fixedArtifacts is a kernel as the cache hands it over: absolute paths
// under /home/ci/.cache/kci, one fragment outside the cache.
func fixedArtifacts(key string, patches []string, parent string) *kernel.Artifacts {
	root := "/home/ci/.cache/kci"
	dir := root + "/kernels/" + key
	return &kernel.Artifacts{
		Key: key, Dir: dir, BzImage: dir + "/bzImage", Vmlinux: dir + "/vmlinux", Config: dir + "/config", Log: dir + "/build.log",
		Release: "6.12.117-kci", BuildID: "ea717530e970b00c04c80b84a15243d1558ebb7" + key[:1], BaseID: "23481b65e33b461f4934938716acfba8fe6d61dd",
		BaseOrigin: "debian linux-source-6.12 6.12.117-1~deb12u1", Commit: "531cb78be702053efd34bc360ea4d4aad8d3db82", Version: "6.12.117",
		Patches: patches, ConfigHash: "251d2a5e15cf9e0c36e2629a41407e69e2578affff252f051859b094d7ab356" + key[:1],
		Fragments: []string{root + "/fragments/b16c6a1666c8/kci.config", "/home/ci/project/patches/gtp/extra.config"},
		Drift:     []kernel.Drift{{Option: "NR_CPUS", Here: "64", Production: "8192", Why: "only sizes per-CPU areas"}, {Option: "HZ", Here: "1000", Production: "250"}},
		Verified:  []string{"kfunc bpf_trace_skb"},
		Parent:    parent,
		Phases:    []kernel.Phase{{Name: "configure", Duration: 3 * time.Second}, {Name: "make", Duration: 412 * time.Second}},
		CacheHit:  true, // not part of the record
	}
}

// fixedBoot is a measured boot as the guest reports it, every field set.
func fixedBoot() Boot {
	variants := []wire.VariantResult{{Variant: "gtp-cnt", Attach: "tcx",
		Programs:  []wire.ProgStat{{Name: "cnt_ingress", Type: "sched_cls", RunTimeNs: 742486, RunCnt: 10425, NsPerPkt: 71.22}},
		Counters:  map[string]uint64{"INGRESS": 15630},
		Lo:        wire.LoStat{RxPackets: 10425, TxPackets: 10425, RxErrors: 1, TxErrors: 2, RxDropped: 3, TxDropped: 4},
		PerSecond: []uint64{5217, 5204},
		CPUs:      []wire.CPUStat{{CPU: 0, Busy: 14.5, Sys: 11.5, Soft: 1.25}},
		PPS:       5210.5, Window: 2 * time.Second, Valid: true},
		{Variant: "gtp-hash", Skipped: "kfunc bpf_dynptr_from_skb_ext missing"},
		{Variant: "gtp-rhash", Invalid: "clocksource jiffies: run times are coarse"}}
	return Boot{Seq: 1, Tree: "gtp", Role: RoleBase, Rep: 1, Accel: AccelKVM, BootToReady: 2500 * time.Millisecond,
		Sanity: SanityOf(&wire.Sanity{Release: "6.12.117-kci", BuildID: "ea717530e970b00c04c80b84a15243d1558ebb70",
			Version: "Linux version 6.12.117-kci", JIT: true, NumCPU: 8, ClockSource: "tsc"}),
		Caps: CapsOf(&wire.Caps{Kfuncs: map[string]bool{"bpf_trace_skb": false}, Tracepoints: map[string]bool{"kfree_skb": true},
			MapTypes: map[string]bool{"BPF_MAP_TYPE_HASH": true}, TCX: true, Links: map[string]bool{"veth": true}}),
		Cells: CellsOf([]wire.Cell{{Carrier: "skb_ext", Path: "veth", Expected: "survives", Observed: "survives",
			Reason: "scrubbed on netns change", Detail: "seen 10/10", Pass: true}}),
		Variants:   VariantsOf(variants),
		ConsoleLog: "console/gtp-base-1.log", Clock: ClockKVM, TSCkHz: 2445432, Clocksource: "tsc"}
}

// fixedRun is a fully populated record built through the conversions, as
// job does; the values are those of the schema 1 fixture.
func fixedRun() *Run {
	start := time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)
	return &Run{
		Schema: SchemaVersion, ID: "5c1e0a11", Args: []string{"kci", "test", "--reps", "2", "series.mbox"},
		Start: start, End: start.Add(20 * time.Minute), Incomplete: true, IncompleteReason: "shard 2: interrupted",
		Host: Host{Hostname: "bench-1", Kernel: "6.1.0-28-amd64", CPUModel: "AMD EPYC 7763", NProc: 8, MemBytes: 32 << 30, Accel: AccelKVM,
			Checks: []Check{{Name: "cpu-governor", Status: CheckWarn, Detail: "ondemand", Fix: "cpupower frequency-set -g performance"}}},
		Trees: []Tree{{Name: "gtp",
			Base:        KernelOf(fixedArtifacts("0e38b975f295db0499da6591", nil, "")),
			Patched:     KernelOf(fixedArtifacts("7f00aa11bb22cc33dd44ee55", []string{"net: Add gated skb tracepoints", "bpf: Add bpf_trace_skb() kfunc"}, "0e38b975f295db0499da6591")),
			ConfigCheck: "lockdep-free: every requested option verified",
			Drift:       []string{"NR_CPUS: here 64, production 8192 — deliberate: only sizes per-CPU areas"}}},
		Plan: PlanOf(wire.Plan{Sanity: true, Survival: true, Variants: []string{"gtp-cnt", "gtp-hash"}, Bench: wire.DefaultBench(),
			Profile: true, Command: []string{"true"}, StepTimeout: 132 * time.Second}),
		Phases: []Phase{{Name: "build", Tree: "gtp", Kernel: RoleBase, Start: start.Add(time.Second), Duration: 415 * time.Second}},
		Boots: []Boot{fixedBoot(),
			{Seq: 2, Tree: "gtp", Role: RolePatched, Rep: 1, Accel: AccelKVM, Error: "kernel panic: BUG: unable to handle page fault",
				ErrorKind: "crash", ConsoleLog: "console/gtp-patched-1.log"}},
		MergedFrom:   []string{"aaaa0001", "bbbb0002"},
		MinEffectPct: 1.5,
	}
}

// loadFile loads a run.json fixture through Load, which reads a run dir.
func loadFile(t *testing.T, path string) *Run {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, RunFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Load(dir)
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return r
}

// TestRunGolden pins run.json's layout: a change shows up as a golden diff
// and decides whether SchemaVersion moves. The record must name no
// machine directory.
func TestRunGolden(t *testing.T) {
	dir := t.TempDir()
	if err := Save(dir, fixedRun()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(goldenRun, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenRun)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("run.json differs from %s (run with -update if the change is meant):\n%s", goldenRun, got)
	}
	if bytes.Contains(got, []byte("/home/")) || bytes.Contains(got, []byte("CacheHit")) {
		t.Errorf("run.json carries a machine path or a cache-only field:\n%s", got)
	}
	if r := loadFile(t, goldenRun); !reflect.DeepEqual(r, fixedRun()) {
		t.Errorf("golden does not load back to fixedRun:\ngot  %+v\nwant %+v", r, fixedRun())
	}
}

// TestLoadSchema1 loads a record written by the schema 1 code: every value
// comes back, the kernels' absolute paths made relative to the cache.
func TestLoadSchema1(t *testing.T) {
	r := loadFile(t, oldRun)
	if !reflect.DeepEqual(r, fixedRun()) {
		t.Errorf("schema 1 record loads as\n%+v\nwant\n%+v", r, fixedRun())
	}
	b, p := r.Trees[0].Base, r.Trees[0].Patched
	for _, c := range []struct{ got, want string }{
		{b.Dir, "kernels/0e38b975f295db0499da6591"},
		{b.BzImage, "kernels/0e38b975f295db0499da6591/bzImage"},
		{p.Log, "kernels/7f00aa11bb22cc33dd44ee55/build.log"},
		{strings.Join(p.Fragments, " "), "fragments/b16c6a1666c8/kci.config extra.config"},
		{p.Parent, b.Key},
		{KernelID(p), "6.12.117-kci (7f00aa11bb22)"},
		{p.Drift[1].String(), "HZ: here 1000, production 250 — NOT deliberate: numbers may not transfer"},
		{r.Boots[0].Sanity.ClockSource, "tsc"},
		{r.Boots[0].Cells[0].Detail, "seen 10/10"},
		{r.Boots[0].Variants[2].Invalid, "clocksource jiffies: run times are coarse"},
		{r.Boots[1].ErrorKind, "crash"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	v := r.Boots[0].Variants[0]
	if r.Schema != SchemaVersion || p.Phases[1].Duration != 412*time.Second || r.Plan.Bench.Window != time.Minute ||
		r.Plan.StepTimeout != 132*time.Second || v.Lo.TxDropped != 4 || v.CPUs[0].Soft != 1.25 || v.Programs[0].RunCnt != 10425 ||
		!r.Boots[0].Caps.Links["veth"] || r.MinEffectPct != 1.5 || !slices.Equal(r.MergedFrom, []string{"aaaa0001", "bbbb0002"}) {
		t.Errorf("schema 1 values lost: schema %d, phases %+v, plan %+v, variant %+v, caps %+v, min effect %v, merged %v",
			r.Schema, p.Phases, r.Plan, v, r.Boots[0].Caps, r.MinEffectPct, r.MergedFrom)
	}
}

// TestLoadRefusesNewerSchema: a record from a newer kci is refused, not
// misread.
func TestLoadRefusesNewerSchema(t *testing.T) {
	dir := t.TempDir()
	next := SchemaVersion + 1
	rec := fmt.Appendf(nil, `{"schema": %d, "id": "x", "trees": [{"name": "gtp", "base": {"key": "k", "dir": "/c/kernels/k"}}]}`, next)
	if err := os.WriteFile(filepath.Join(dir, RunFile), rec, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("schema %d is newer", next)) {
		t.Errorf("schema %d record: error %v, want a refusal", next, err)
	}
}

// TestKernelOfPaths: paths inside the cache become cache-relative, every
// other path its bare name; a kernel not laid out as <root>/kernels/<key>
// keeps only names.
func TestKernelOfPaths(t *testing.T) {
	for _, c := range []struct {
		dir, file, wantDir, wantFile string
	}{
		{"/c/kernels/k1", "/c/kernels/k1/bzImage", "kernels/k1", "kernels/k1/bzImage"},
		{"/c/kernels/k1/", "/c/logs/k1.log", "kernels/k1", "logs/k1.log"},
		{"/c/kernels/k1", "/elsewhere/bzImage", "kernels/k1", "bzImage"},
		{"/tmp/build-7", "/tmp/build-7/bzImage", "build-7", "bzImage"},
		{"kernels/k1", "../../etc/passwd", "kernels/k1", "passwd"},
		{"", "", "", ""},
	} {
		k := KernelOf(&kernel.Artifacts{Dir: c.dir, BzImage: c.file, Fragments: []string{c.file}})
		if k.Dir != c.wantDir || k.BzImage != c.wantFile || k.Fragments[0] != c.wantFile {
			t.Errorf("dir %q file %q: got dir %q bzimage %q fragment %q, want %q and %q",
				c.dir, c.file, k.Dir, k.BzImage, k.Fragments[0], c.wantDir, c.wantFile)
		}
	}
	if KernelOf(nil) != nil || SanityOf(nil) != nil || CapsOf(nil) != nil {
		t.Error("nil stage structs must stay nil in the record")
	}
}

// TestSchemaCoversStageFields: every field a stage struct has is either
// in the record's type or listed here as deliberately left out, so a field
// a stage adds is a decision about the schema, not a silent loss.
func TestSchemaCoversStageFields(t *testing.T) {
	// The plugin's window index and the accountant's JIT ranges are read
	// into VariantResult.Exact on the host.
	notRecorded := map[string]bool{"Artifacts.CacheHit": true, "Artifacts.Regrown": true, "VariantResult.ExactWindow": true, "VariantResult.Observer": true}
	for _, p := range []struct{ stage, record any }{
		{kernel.Artifacts{}, Kernel{}}, {kernel.Phase{}, KernelPhase{}}, {kernel.Drift{}, Drift{}},
		{wire.Plan{}, Plan{}}, {wire.BenchParams{}, BenchParams{}},
		{wire.Sanity{}, Sanity{}}, {wire.Caps{}, Caps{}}, {wire.Cell{}, Cell{}},
		{wire.VariantResult{}, VariantResult{}}, {wire.ProgStat{}, ProgStat{}},
		{wire.CPUStat{}, CPUStat{}}, {wire.LoStat{}, LoStat{}},
	} {
		st, rt := reflect.TypeOf(p.stage), reflect.TypeOf(p.record)
		for i := range st.NumField() {
			f := st.Field(i)
			if notRecorded[st.Name()+"."+f.Name] {
				continue
			}
			rf, ok := rt.FieldByName(f.Name)
			if !ok || rf.Tag.Get("json") != f.Tag.Get("json") {
				t.Errorf("%s.%s (json %q) has no counterpart in results.%s", st, f.Name, f.Tag.Get("json"), rt.Name())
			}
		}
	}
}

// TestKernelOfPhaseCPU: a kernel's phases keep make's CPU beside the
// wall time, in the record and its JSON.
func TestKernelOfPhaseCPU(t *testing.T) {
	k := KernelOf(&kernel.Artifacts{Phases: []kernel.Phase{{Name: "build", Duration: 412 * time.Second, CPU: 790 * time.Second}}})
	if len(k.Phases) != 1 || k.Phases[0].CPU != 790*time.Second {
		t.Fatalf("phases %+v, want the build's 790 s of CPU", k.Phases)
	}
	data, err := json.Marshal(k.Phases[0])
	if err != nil || !strings.Contains(string(data), `"cpu_ns":790000000000`) {
		t.Errorf("phase JSON %s (%v)", data, err)
	}
}
