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

	"github.com/kci-dev/kci/internal/golden"
	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"

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
	// Each format's output is the golden testdata/TestReportFormats/<format>.
	for _, format := range []string{"text", "markdown", "benchstat"} {
		var out strings.Builder
		if err := runReport(&out, &out, []string{dir}, reportOptions{format: format, failOnPerf: -1}); err != nil {
			t.Fatalf("%s: %v", format, err)
		}
		golden.Own(t, format, out.String())
		// Targeted as well: colour follows the terminal, whatever a golden
		// rewritten by -update holds.
		if strings.Contains(out.String(), "\x1b[") {
			t.Errorf("--format %s to a non-terminal has colour codes", format)
		}
	}
	var js strings.Builder
	if err := runReport(&js, &js, []string{dir}, reportOptions{format: "json", failOnPerf: -1}); err != nil {
		t.Fatal(err)
	}
	var rep render.Report
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
	// The report is printed before failing: testdata/TestReportFailOnRegression/fail-10.txt.
	golden.Own(t, "fail-10.txt", out.String())
	if err := runReport(&out, &out, []string{dir}, reportOptions{format: "text", failOnPerf: 20}); err != nil {
		t.Errorf("15%% under a 20%% limit: %v", err)
	}
	// --min-effect 25: the 15% change's whole interval is inside ±25%,
	// below the smallest effect of interest: no regression to fail on.
	out.Reset()
	if err := runReport(&out, &out, []string{dir}, reportOptions{format: "text", failOnPerf: 10, minEffect: 25}); err != nil {
		t.Errorf("--min-effect 25: %v", err)
	}
	// The report says the change is within ±25 %: min-effect-25.txt.
	golden.Own(t, "min-effect-25.txt", out.String())
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
	golden.Own(t, "agg.txt", strings.ReplaceAll(out.String(), root, "$ROOT"))

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
	tr, _ := verdict.AnalyzeRun(run).Tree("gtp")
	tot := tr.Perf.Variants[0].Total
	if len(run.Boots) != 32 || tot.Base.N != 16 || tot.Patched.N != 16 {
		t.Errorf("merged %d boots, %d+%d in the total; report:\n%s", len(run.Boots), tot.Base.N, tot.Patched.N, out.String())
	}
	// The merged run's ID is random.
	golden.Own(t, "merged.txt", strings.NewReplacer(root, "$ROOT", run.ID, "$MERGED_ID").Replace(out.String()))
	for _, f := range []string{"report.txt", "report.md", "report.json", "report.html", render.BenchFile("gtp", results.RoleBase), render.BenchFile("gtp", results.RolePatched)} {
		if _, err := os.Stat(filepath.Join(m, f)); err != nil {
			t.Errorf("report --merge did not write %s: %v", f, err)
		}
	}
}

// --agg honours --format and --tree, totals a run's sets by the median
// with the unit in the title, and refuses flags that decide something.
func TestAggFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	saveRun(t, dir, "cafe0003", 1)
	var txt strings.Builder
	if err := runReport(&txt, &txt, []string{dir}, reportOptions{agg: true, format: "text", trees: []string{"gtp"}, failOnPerf: -1}); err != nil {
		t.Fatal(err)
	}
	// The tables, totalled by the median with the unit in the title, are
	// the goldens testdata/TestAggFlags/.
	golden.Own(t, "agg.txt", txt.String())
	assertWidth(t, txt.String()) // 8 reps split into blocks
	var md strings.Builder
	if err := runReport(&md, &md, []string{dir}, reportOptions{agg: true, format: "markdown", failOnPerf: -1}); err != nil {
		t.Fatal(err)
	}
	golden.Own(t, "agg.md", md.String())
	var js strings.Builder
	if err := runReport(&js, &js, []string{dir}, reportOptions{agg: true, format: "json", failOnPerf: -1}); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tables []struct {
			Unit     string
			Variants []struct {
				Center string
				Total  *float64
			}
		}
	}
	if err := json.Unmarshal([]byte(js.String()), &doc); err != nil || len(doc.Tables) != 2 || doc.Tables[0].Unit != "ns/pkt" ||
		doc.Tables[0].Variants[0].Center != "median" || doc.Tables[0].Variants[0].Total == nil {
		t.Errorf("agg json %v: %s", err, js.String())
	}
	// Targeted: each refusal names the tree or the flag (a fact).
	for _, c := range []struct {
		o    reportOptions
		want string
	}{
		{reportOptions{agg: true, format: "text", trees: []string{"nosuch"}, failOnPerf: -1}, `no run has tree "nosuch"`},
		{reportOptions{agg: true, format: "text", minEffect: 1, failOnPerf: -1}, "--min-effect"},
		{reportOptions{agg: true, format: "benchstat", failOnPerf: -1}, "--format benchstat"},
		{reportOptions{agg: true, format: "text", failOnPerf: 3}, "--fail-on-regression"},
	} {
		var out strings.Builder
		if err := runReport(&out, &out, []string{dir}, c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--agg %+v: %v, want an error naming %q", c.o, err, c.want)
		}
	}
}

// Several run directories give one JSON document.
func TestJSONSeveralRuns(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	saveRun(t, a, "cafe000a", 1)
	saveRun(t, b, "cafe000b", 2)
	var js strings.Builder
	if err := runReport(&js, &js, []string{a, b}, reportOptions{format: "json", failOnPerf: -1}); err != nil {
		t.Fatal(err)
	}
	var doc render.MultiReport
	if err := json.Unmarshal([]byte(js.String()), &doc); err != nil || len(doc.Runs) != 2 || doc.Runs[1].RunID != "cafe000b" {
		t.Errorf("two runs: %v, %d runs:\n%s", err, len(doc.Runs), js.String())
	}
	for _, d := range []string{a, b} {
		if _, err := os.Stat(filepath.Join(d, render.HTMLFile)); err != nil {
			t.Errorf("kci report did not draw %s: %v", render.HTMLFile, err)
		}
	}
}
