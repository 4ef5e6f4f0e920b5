package render

import (
	"encoding/json"
	"fmt"
	"github.com/kci-dev/kci/internal/golden"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"
)

// goldenRoot holds, per run, everything kci prints about it
// (TestGoldenEveryFormat).
const goldenRoot = "../testdata/golden"

// goldenRun is one run the goldens pin, by name.
type goldenRun struct {
	name string
	run  *results.Run
}

// goldenRuns are every run record under the repository's testdata (run
// directories and the schema fixtures, loaded as kci report loads them)
// and six synthetic runs: report_test.go's two (noisy mode, survival
// changes, an invalid variant, failed checks), a KVM slowdown that
// --fail-on-regression fails, a patched kernel's panic, two
// deterministic trees with exact counts (one Holm family for the rows
// and one for Where across trees), and a cache model's run whose
// modelled-cycles rows moved (runtest.CyclesRun).
func goldenRuns(t *testing.T) []goldenRun {
	t.Helper()
	dirs := map[string]string{
		"demo":         demoDir,
		"recorded-gtp": "../testdata/recorded-gtp",
		"forged-run":   "../../cmd/kci/testdata/forged-run",
	}
	files := map[string]string{
		"schema1-old": "../testdata/run-schema1-old.json",
		"schema2":     "../testdata/run-schema2.golden.json",
	}
	var out []goldenRun
	for _, name := range []string{"demo", "recorded-gtp", "forged-run"} {
		out = append(out, goldenRun{name, loadRun(t, dirs[name])})
	}
	for _, name := range []string{"schema1-old", "schema2"} {
		b, err := os.ReadFile(files[name])
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, results.RunFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, goldenRun{name, loadRun(t, dir)})
	}
	slow := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(60, 8, 500, 0.01), runtest.Normal(61, 8, 560, 0.01))
	crash := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(62, 8, 500, 0.01), nil)
	crash.Boots = append(crash.Boots, results.Boot{Seq: 99, Tree: "gtp", Role: results.RolePatched, Rep: 1, Error: "Kernel panic - not syncing: Fatal exception", ErrorKind: "crash"})
	return append(out, goldenRun{"synthetic-kvm", fullRun(results.AccelKVM)}, goldenRun{"synthetic-tcg", fullRun(results.AccelTCG)},
		goldenRun{"synthetic-slow-kvm", slow}, goldenRun{"synthetic-crash-kvm", crash}, goldenRun{"synthetic-icount-2trees", icountTwoTrees(t)},
		goldenRun{"synthetic-cycles", runtest.CyclesRun()})
}

// icountTwoTrees is a deterministic run of two trees, one family of
// rows for Holm and for Where: on gtp the patch slows hash_write by 2 %,
// on ext cnt_egress by 2 %; every boot has exact counts, with
// htab_map_update_elem 5 instructions per packet dearer on the patched
// kernels.
func icountTwoTrees(t *testing.T) *results.Run {
	bump := func(prog string) func(v, p string) float64 {
		return func(_, p string) float64 {
			if p == prog {
				return 1.02
			}
			return 1
		}
	}
	run := runtest.IcountRunN(t, 6, bump("hash_write"))
	ext := runtest.IcountRunN(t, 6, bump("cnt_egress"))
	run.Trees = append(run.Trees, results.Tree{Name: "ext", Base: run.Trees[0].Base, Patched: run.Trees[0].Patched})
	for _, b := range ext.Boots {
		b.Tree, b.Seq = "ext", len(run.Boots)+1
		run.Boots = append(run.Boots, b)
	}
	return runtest.WithExact(run, func(role string, seed uint64) map[string]float64 {
		m := map[string]float64{"htab_map_update_elem": 112, "bpf_prog_run": 40 + float64(seed%2)}
		if role == results.RolePatched {
			m["htab_map_update_elem"] += 5
		}
		return m
	})
}

// goldenOutputs renders an analysed run in every format kci prints it
// in: the text report (plain and coloured), the brief (text and
// Markdown), report.md, report.json, report.html, per tree the PR comment
// and the check run, and the facts the exit code is decided on.
func goldenOutputs(t *testing.T, a *verdict.Analysis) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, color := range map[string]bool{"report.txt": false, "report.color.txt": true} {
		var b strings.Builder
		if err := Text(&b, a, TextOptions{Color: color}); err != nil {
			t.Fatal(err)
		}
		out[name] = b.String()
	}
	out["brief.txt"] = BriefText(a, nil, TextWidth)
	out["report.md"] = MarkdownRun(a)
	js, err := JSON(a)
	if err != nil {
		t.Fatal(err)
	}
	out["report.json"] = string(js)
	var h strings.Builder
	if err := HTML(&h, a, ""); err != nil {
		t.Fatal(err)
	}
	out["report.html"] = h.String()
	var brief, exit strings.Builder
	for i, tr := range a.Trees {
		// Files are named by the tree's index: a forged record's tree
		// names hold newlines and "../".
		file := fmt.Sprintf("tree%d", i)
		brief.WriteString(BriefMarkdown(*tr.Brief))
		out["comment-"+file+".md"] = MarkdownComment(a, tr.Tree, "https://example.invalid/report.html")
		c, err := json.MarshalIndent(tr.Conclusion, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		out["check-"+file+".json"] = string(c) + "\n"
		for _, c := range tr.Changes {
			fmt.Fprintf(&exit, "%s: survival %s: %s × %s\n", tr.Tree, c.Kind, c.Base.Carrier, c.Base.Path)
		}
		for _, inv := range tr.PatchedOnlyInvalid() {
			fmt.Fprintf(&exit, "%s: patched only: %s\n", tr.Tree, inv)
		}
	}
	out["brief.md"] = brief.String()
	for _, pct := range []float64{0, 5} {
		fmt.Fprintf(&exit, "fail-on-regression %g: %v\n", pct, a.FailOnRegression(pct))
	}
	out["exit.txt"] = exit.String()
	return out
}

// analysisJSON is what an analysis says, to compare two of them.
func analysisJSON(t *testing.T, a *verdict.Analysis) string {
	t.Helper()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestGoldenEveryFormat pins every number and word kci prints about the
// recorded runs: each format of each run, rendered from the run's one
// analysis, against its golden file under testdata/golden/<run>/
// (-update rewrites them).
func TestGoldenEveryFormat(t *testing.T) {
	for _, g := range goldenRuns(t) {
		dir := filepath.Join(goldenRoot, g.name)
		if *golden.Update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		a := verdict.AnalyzeRun(g.run)
		before := analysisJSON(t, a)
		for name, got := range goldenOutputs(t, a) {
			golden.Check(t, filepath.Join(dir, name), got)
		}
		// The renderers read the analysis and change nothing in it (nor
		// in its run): it is what a fresh analysis of the run says.
		if after, fresh := analysisJSON(t, a), analysisJSON(t, verdict.AnalyzeRun(g.run)); after != before || after != fresh {
			t.Errorf("%s: rendering changed the analysis", g.name)
		}
	}
}
