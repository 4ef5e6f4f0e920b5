package main

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/results"
)

// saveRun writes a run of tree gtp whose patched kernel is 15 % slower,
// 8 repetitions each, in ABAB order.
func saveRun(t *testing.T, dir, id string, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	run := &results.Run{Schema: results.SchemaVersion, ID: id, Start: time.Unix(1790883472, 0).UTC(),
		Host: results.Host{Accel: results.AccelKVM}, Trees: []results.Tree{{Name: "gtp"}}}
	for rep := 1; rep <= 8; rep++ {
		for _, role := range []string{results.RoleBase, results.RolePatched} {
			ns := 500.0
			if role == results.RolePatched {
				ns = 575
			}
			ns *= 1 + 0.01*rng.NormFloat64()
			run.Boots = append(run.Boots, results.Boot{Seq: len(run.Boots) + 1, Tree: "gtp", Role: role, Rep: rep, Accel: results.AccelKVM,
				Variants: []results.VariantResult{{Variant: "gtp-gtp", Valid: true, Programs: []results.ProgStat{
					{Name: "gtp_write", Type: "sched_cls", RunTimeNs: uint64(ns * 1e6), RunCnt: 1e6},
				}}}})
		}
	}
	if err := results.Save(dir, run); err != nil {
		t.Fatal(err)
	}
}

func TestReportFormats(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	saveRun(t, dir, "cafe0001", 1)
	for format, want := range map[string]string{
		"text":      "== tree gtp ==",
		"markdown":  "| **gtp-gtp total** |",
		"benchstat": "Benchmarkgtp-gtp/gtp_write 1000000",
	} {
		var out strings.Builder
		if err := runReport(&out, &out, []string{dir}, reportOptions{format: format, failOnPerf: -1}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("--format %s lacks %q:\n%s", format, want, out.String())
		}
		if strings.Contains(out.String(), "\x1b[") {
			t.Errorf("--format %s to a non-terminal has colour codes", format)
		}
	}
	var js strings.Builder
	if err := runReport(&js, &js, []string{dir}, reportOptions{format: "json", failOnPerf: -1}); err != nil {
		t.Fatal(err)
	}
	var rep results.Report
	if err := json.Unmarshal([]byte(js.String()), &rep); err != nil || rep.RunID != "cafe0001" {
		t.Errorf("json: %v %+v", err, rep)
	}
	if err := runReport(&js, &js, []string{dir}, reportOptions{format: "yaml", failOnPerf: -1}); err == nil {
		t.Errorf("unknown format accepted")
	}
	if err := runReport(&js, &js, []string{dir}, reportOptions{format: "text", trees: []string{"nope"}, failOnPerf: -1}); err == nil {
		t.Errorf("unknown tree accepted")
	}
}

func TestReportFailOnRegression(t *testing.T) {
	dir := t.TempDir()
	saveRun(t, dir, "cafe0002", 2)
	var out strings.Builder
	err := runReport(&out, &out, []string{dir}, reportOptions{format: "text", failOnPerf: 10})
	var ec interface{ ExitCode() int }
	if !errors.As(err, &ec) || ec.ExitCode() != job.ExitPerformance {
		t.Fatalf("err %v: want the regression error with its exit code", err)
	}
	if !strings.Contains(out.String(), "slower") {
		t.Errorf("the report is printed before failing:\n%s", out.String())
	}
	if err := runReport(&out, &out, []string{dir}, reportOptions{format: "text", failOnPerf: 20}); err != nil {
		t.Errorf("15%% under a 20%% limit: %v", err)
	}
	// --min-effect 25: the 15% change's whole interval is inside ±25%,
	// below the smallest effect of interest: no regression to fail on.
	out.Reset()
	if err := runReport(&out, &out, []string{dir}, reportOptions{format: "text", failOnPerf: 10, minEffect: 25}); err != nil {
		t.Errorf("--min-effect 25: %v", err)
	}
	if !strings.Contains(out.String(), "within ±25.0%") {
		t.Errorf("--min-effect not applied to the report:\n%s", out.String())
	}
}

func TestReportAggAndMerge(t *testing.T) {
	root := t.TempDir()
	set := filepath.Join(root, "results-1")
	os.MkdirAll(set, 0o755)
	os.WriteFile(filepath.Join(set, "ext-cnt.bpfstats"), []byte("# stats\n"+
		`[{"name":"cnt_ingress","type":"sched_cls","run_time_ns":3590,"run_cnt":100},{"name":"cnt_egress","type":"sched_cls","run_time_ns":7030,"run_cnt":99}]`), 0o644)
	var out strings.Builder
	if err := runReport(&out, &out, []string{set}, reportOptions{agg: true, format: "text", failOnPerf: -1}); err != nil {
		t.Fatal(err)
	}
	if want := "ext-cnt          cnt_ingress            35.9      106.2 ± 0.0"; !strings.Contains(out.String(), want) {
		t.Errorf("agg output lacks %q:\n%s", want, out.String())
	}

	a, b, m := filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "merged")
	saveRun(t, a, "aaaa0001", 3)
	saveRun(t, b, "bbbb0002", 4)
	if err := runReport(&out, &out, []string{a, b}, reportOptions{merge: true, format: "text", failOnPerf: -1}); err == nil {
		t.Errorf("--merge without --out accepted")
	}
	out.Reset()
	if err := runReport(&out, &out, []string{a, b}, reportOptions{merge: true, out: m, format: "text", failOnPerf: -1}); err != nil {
		t.Fatal(err)
	}
	run, err := results.Load(m)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Boots) != 32 || !strings.Contains(out.String(), "16+16") {
		t.Errorf("merged %d boots; report:\n%s", len(run.Boots), out.String())
	}
}
