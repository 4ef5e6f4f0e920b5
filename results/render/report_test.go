package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kci-dev/kci/internal/golden"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/internal/failure"
)

// fullRun is a realistic two-tree run: gtp with 6 interleaved repetitions
// of two variants (the patch makes gtpchurn cheaper and leaves gtp alone)
// and survival cells with one regression and one fix; ext with 3 reps.
func fullRun(accel string) *results.Run {
	run := runtest.AbRun("gtp", accel, nil, nil)
	run.Trees[0].ConfigCheck = "ok: 0 violations"
	gtp := runtest.Normal(50, 6, 920, 0.01)
	gtp2 := runtest.Normal(51, 6, 920, 0.01)
	churnB := runtest.Normal(52, 6, 1190, 0.01)
	churnP := runtest.Normal(53, 6, 930, 0.01)
	cells := func(role string) []results.Cell {
		scrubPass := role == results.RolePatched // the patch makes ext survive scrubbing as declared
		markPass := role == results.RoleBase     // and breaks skb->mark across netns
		return []results.Cell{
			{Carrier: "skb-ext", Path: "veth-netns", Expected: "survives", Observed: map[bool]string{true: "survives", false: "lost"}[scrubPass], Pass: scrubPass, Detail: "lost at skb_scrub_packet"},
			{Carrier: "mark", Path: "veth-netns", Expected: "lost", Observed: map[bool]string{true: "lost", false: "survives"}[markPass], Pass: markPass, Detail: "mark kept across netns"},
			{Carrier: "map", Path: "loopback", Expected: "survives", Observed: "survives", Pass: true},
		}
	}
	for i := 0; i < 6; i++ {
		for _, role := range []string{results.RoleBase, results.RolePatched} {
			g, c := gtp[i], churnB[i]
			if role == results.RolePatched {
				g, c = gtp2[i], churnP[i]
			}
			run.Boots = append(run.Boots, results.Boot{Seq: len(run.Boots) + 1, Tree: "gtp", Role: role, Rep: i + 1, Accel: accel,
				BootToReady: 2 * time.Second, Cells: cells(role),
				Variants: []results.VariantResult{
					runtest.Vr("gtp-gtp", runtest.Pc{Name: "gtp_write", Ns: g * 0.6}, runtest.Pc{Name: "gtp_read", Ns: g * 0.1}, runtest.Pc{Name: "gtp_skb_free", Ns: g * 0.3, Typ: "tracing"}, runtest.Pc{Name: "gtp_skb_copy", Typ: "tracing"}),
					runtest.Vr("gtp-gtpchurn", runtest.Pc{Name: "gtp_write", Ns: c * 0.7}, runtest.Pc{Name: "gtp_read", Ns: c * 0.05}, runtest.Pc{Name: "gtp_skb_free", Ns: c * 0.25, Typ: "tracing"}),
				}})
		}
	}
	bad := runtest.Vr("gtp-gtp", runtest.Pc{Name: "gtp_write", Ns: 5000})
	bad.Valid, bad.Invalid = false, "stats FREE_REAPED 100 != EGRESS 140"
	run.Boots[3].Variants[0] = bad
	run.Phases = []results.Phase{{Name: "build", Tree: "gtp", Kernel: results.RoleBase, Duration: 5 * time.Minute}, {Name: "boot", Tree: "gtp", Kernel: results.RolePatched, Duration: 2 * time.Second}}
	run.Host.Checks = []results.Check{{Name: "cpu-freq", Status: results.CheckWarn, Detail: "scaling_min_freq != scaling_max_freq", Fix: "cpupower frequency-set -g performance"}}
	run.End = run.Start.Add(40 * time.Minute)
	return run
}

func TestSurvivalChanges(t *testing.T) {
	run := fullRun(results.AccelKVM)
	ch := reportOf(run, "gtp").Changes
	if len(ch) != 2 {
		t.Fatalf("changes %+v, want one regression and one fix", ch)
	}
	kinds := map[string]string{}
	for _, c := range ch {
		kinds[c.Base.Carrier] = c.Kind
	}
	if kinds["mark"] != verdict.Regression || kinds["skb-ext"] != verdict.Fixed {
		t.Errorf("kinds %v: mark passes on base and fails on patched (regression); skb-ext the reverse (fixed)", kinds)
	}
	loopback := func(run *results.Run) verdict.SurvivalRow {
		for _, r := range reportOf(run, "gtp").Survival {
			if r.Carrier == "map" && r.Path == "loopback" {
				return r
			}
		}
		t.Fatal("no map×loopback row")
		return verdict.SurvivalRow{}
	}
	if c := loopback(run).Base; c == nil || c.Runs != 6 || !c.Pass() {
		t.Errorf("map×loopback on base: %+v", c)
	}
	// A cell that fails in one boot out of six fails on that kernel.
	run.Boots[1].Cells[2].Pass, run.Boots[1].Cells[2].Observed = false, "lost"
	if c := loopback(run).Patched; c == nil || c.Pass() || c.Observed != "mixed" || c.Passes != 5 {
		t.Errorf("flaky cell: %+v", c)
	}
}

// TestConclude: each case's check state is asserted; the check run's
// words (title and summary, what GitHub shows) are the golden
// testdata/TestConclude/conclusions.txt.
func TestConclude(t *testing.T) {
	var words strings.Builder
	check := func(name string, c verdict.Conclusion, want string) {
		t.Helper()
		if c.State != want {
			t.Errorf("%s: state %s, want %s: %+v", name, c.State, want, c)
		}
		fmt.Fprintf(&words, "== %s: %s\ntitle: %s\nsummary:\n%s\n\n", name, c.State, c.Title, c.Summary)
	}
	run := fullRun(results.AccelKVM)
	check("survival regression", reportOf(run, "gtp").Conclusion, verdict.Failure)

	// Without survival cells: gtp-gtp is invalid in one patched boot and
	// in no base boot: the patch's doing, a failure that names the reason.
	for i := range run.Boots {
		run.Boots[i].Cells = nil
	}
	check("invalid on the patched kernel only", reportOf(run, "gtp").Conclusion, verdict.Failure)
	// The same invalid result on the base side instead: gtpchurn is much
	// faster, gtp unchanged; the summary still reports the invalid
	// repetition.
	run.Boots[2].Variants[0], run.Boots[3].Variants[0] = run.Boots[3].Variants[0], run.Boots[2].Variants[0]
	c := reportOf(run, "gtp").Conclusion
	check("speed-up, invalid on the base kernel only", c, verdict.Success)
	if v := reportOf(run, "gtp").Perf.Variants; v[1].Variant != "gtp-gtpchurn" || v[1].Total.Verdict != verdict.Faster {
		t.Errorf("speed-up: %s is %s, want gtp-gtpchurn faster", v[1].Variant, v[1].Total.Verdict)
	}

	tcg := fullRun(results.AccelTCG)
	for i := range tcg.Boots {
		tcg.Boots[i].Cells = nil
	}
	tcg.Boots[2].Variants[0], tcg.Boots[3].Variants[0] = tcg.Boots[3].Variants[0], tcg.Boots[2].Variants[0]
	check("emulated speed-up", reportOf(tcg, "gtp").Conclusion, verdict.Neutral)

	few := runtest.AbRun("gtp", results.AccelKVM, []float64{500, 501, 502}, []float64{400, 401, 402})
	check("3 samples a side", reportOf(few, "gtp").Conclusion, verdict.Neutral)
	if v := reportOf(few, "gtp").Perf.Variants[0].Total.Verdict; v != verdict.TooFew {
		t.Errorf("3 samples: verdict %s, want %s", v, verdict.TooFew)
	}

	slow := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(60, 8, 500, 0.01), runtest.Normal(61, 8, 560, 0.01))
	check("significant slowdown on KVM", reportOf(slow, "gtp").Conclusion, verdict.Failure)

	crash := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(62, 8, 500, 0.01), nil)
	crash.Boots = append(crash.Boots, results.Boot{Seq: 99, Tree: "gtp", Role: results.RolePatched, Rep: 1, Error: "Kernel panic - not syncing: Fatal exception", ErrorKind: "crash"})
	check("patched kernel panics", reportOf(crash, "gtp").Conclusion, verdict.Failure)
	// An infrastructure failure is not blamed on the patch.
	infra := runtest.AbRun("gtp", results.AccelKVM, []float64{1, 2, 3}, nil)
	infra.Boots = append(infra.Boots, results.Boot{Seq: 99, Tree: "gtp", Role: results.RolePatched, Rep: 1, Error: "qemu-system-x86_64 not found", ErrorKind: failure.Infra})
	check("infrastructure failure", reportOf(infra, "gtp").Conclusion, verdict.Neutral)
	golden.Own(t, "conclusions.txt", words.String())
}

// TestMarkdown: the PR comment without a report URL is the golden
// comment (TestGoldenEveryFormat, synthetic-tcg and synthetic-kvm) less
// its link paragraph.
func TestMarkdown(t *testing.T) {
	const link = "\n[report.html: every boot, the survival grid, timings](https://example.invalid/report.html)\n"
	for run, accel := range map[string]string{"synthetic-tcg": results.AccelTCG, "synthetic-kvm": results.AccelKVM} {
		comment, err := os.ReadFile(filepath.Join(goldenRoot, run, "comment-tree0.md"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Count(string(comment), link) != 1 {
			t.Fatalf("%s: the golden comment has no link paragraph:\n%s", run, comment)
		}
		want := strings.Replace(string(comment), link, "", 1)
		if got := Markdown(verdict.AnalyzeRun(fullRun(accel)), "gtp"); got != want {
			t.Errorf("%s: Markdown without a URL is not the golden comment less its link:\n--- got\n%s\n--- want\n%s", run, got, want)
		}
	}
}

// ansiRE matches the SGR escape codes the coloured text report uses.
var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestTextColourOnlyWhenAsked: the words of both are goldens
// (TestGoldenEveryFormat, synthetic-tcg report.txt and report.color.txt);
// here, that colour adds escape codes and nothing else, and that the
// A/B table is aligned.
func TestTextColourOnlyWhenAsked(t *testing.T) {
	run := fullRun(results.AccelTCG)
	var plain, col strings.Builder
	if err := Text(&plain, verdict.AnalyzeRun(run), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Text(&col, verdict.AnalyzeRun(run), TextOptions{Color: true}); err != nil {
		t.Fatal(err)
	}
	// A property of every plain report, not of this one's words: a golden
	// rewritten by -update would not guard it.
	if strings.Contains(plain.String(), "\x1b") {
		t.Errorf("plain text contains escape codes")
	}
	if n := len(ansiRE.FindAllString(col.String(), -1)); n == 0 {
		t.Errorf("colour text has no escape codes")
	}
	// Word by word: the coloured text pads its coloured cells and wraps
	// counting the escape codes as columns, so its lines break elsewhere.
	if got := ansiRE.ReplaceAllString(col.String(), ""); !slices.Equal(strings.Fields(got), strings.Fields(plain.String())) {
		t.Errorf("colour text without its escape codes has other words than the plain text:\n--- colour\n%s\n--- plain\n%s", got, plain.String())
	}
	// Aligned: every row of the A/B table has the verdict column at the
	// same offset as the header's.
	out := plain.String()
	lines := strings.Split(out, "\n")
	hdr := -1
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "row" && f[len(f)-1] == "verdict" {
			hdr = i
		}
	}
	if hdr < 0 {
		t.Fatalf("no A/B header:\n%s", out)
	}
	col0 := len([]rune(lines[hdr][:strings.Index(lines[hdr], "verdict")]))
	for _, l := range lines[hdr+1 : hdr+9] {
		if r := []rune(l); len(r) <= col0 || r[col0-1] != ' ' || r[col0] == ' ' {
			t.Errorf("row not aligned with the verdict column at %d: %q", col0, l)
		}
	}
	if IsTerminal(&plain) {
		t.Errorf("a strings.Builder is not a terminal")
	}
}

func TestJSONReport(t *testing.T) {
	run := fullRun(results.AccelKVM)
	// A variant only the patched kernel runs gives undefined base numbers.
	run.Boots[1].Variants = append(run.Boots[1].Variants, runtest.Vr("gtp-new", runtest.Pc{Name: "n", Ns: 5}))
	b, err := JSON(verdict.AnalyzeRun(run))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		RunID string `json:"run_id"`
		Trees []struct {
			Tree string `json:"tree"`
			Perf struct {
				Variants []struct {
					Variant string `json:"variant"`
					Total   struct {
						Verdict  string   `json:"verdict"`
						DeltaPct *float64 `json:"delta_pct"`
						Base     struct {
							Median *float64 `json:"median"`
						} `json:"base"`
					} `json:"total"`
				} `json:"variants"`
			} `json:"perf"`
			Conclusion verdict.Conclusion `json:"conclusion"`
		} `json:"trees"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if rep.RunID != run.ID || len(rep.Trees) != 1 || rep.Trees[0].Conclusion.State != verdict.Failure {
		t.Errorf("report %+v", rep)
	}
	vs := rep.Trees[0].Perf.Variants
	last := vs[len(vs)-1]
	if last.Variant != "gtp-new" || last.Total.Verdict != string(verdict.NotComparable) || last.Total.Base.Median != nil || last.Total.DeltaPct != nil {
		t.Errorf("undefined numbers must be null: %+v", last)
	}
	if vs[1].Total.Base.Median == nil || *vs[1].Total.Base.Median < 1000 {
		t.Errorf("gtpchurn base median %v", vs[1].Total.Base.Median)
	}
}

// benchstat must accept kci's benchmark-format files and see what kci saw.
func TestBenchstatAcceptsBenchFormat(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("benchstat check needs the go command to build golang.org/x/perf/cmd/benchstat")
	}
	dir := t.TempDir()
	run := fullRun(results.AccelKVM)
	if err := WriteReports(dir, verdict.AnalyzeRun(run)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "benchstat")
	build := exec.CommandContext(ctx, goBin, "build", "-o", bin, "golang.org/x/perf/cmd/benchstat")
	killGroup(build)
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("cannot build benchstat from the module cache (offline?): %v\n%s", err, out)
	}
	base, patched := benchPaths(dir, "gtp")
	out := runBenchstat(t, ctx, bin, base, patched)
	// The checks below read benchstat's output, not kci's words: its
	// numbers (the change, p, n) and its layout. A golden would pin
	// benchstat's version instead.
	// benchstat tidies ns/pkt into sec/pkt; rows are named variant/prog.
	var churn, gtp string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(l), "gtp-gtpchurn/total"):
			churn = l
		case strings.HasPrefix(strings.TrimSpace(l), "gtp-gtp/total"):
			gtp = l
		}
	}
	if !strings.Contains(churn, "-2") || !strings.Contains(churn, "%") || !strings.Contains(churn, "p=0.002 n=6") {
		t.Errorf("benchstat gtp-gtpchurn/total row %q: want a ~-22%% change with p=0.002 n=6\n%s", churn, out)
	}
	if !strings.Contains(gtp, "~") {
		t.Errorf("benchstat gtp-gtp/total row %q: want ~ (no change)\n%s", gtp, out)
	}
	// Totals have a table and a geomean of their own, not beside their parts.
	progs, totals, ok := strings.Cut(out, "total-sec/pkt")
	if !ok || strings.Contains(progs, "/total") || strings.Count(totals, "geomean") != 1 {
		t.Errorf("benchstat mixes variant totals into the programs' table:\n%s", out)
	}
	// Cross-check: kci's own verdict agrees with benchstat's.
	ab := reportOf(run, "gtp").Perf
	if ab.Variants[1].Total.Verdict != verdict.Faster || ab.Variants[0].Total.Verdict != verdict.NoChange {
		t.Errorf("kci verdicts %q / %q disagree with benchstat", ab.Variants[0].Total.Verdict, ab.Variants[1].Total.Verdict)
	}

	// The single-stream form works with -col role.
	var stream strings.Builder
	if err := BenchStream(&stream, run); err != nil {
		t.Fatal(err)
	}
	sf := filepath.Join(dir, "all.txt")
	os.WriteFile(sf, []byte(stream.String()), 0o644)
	out = runBenchstat(t, ctx, bin, "-col", "role", sf)
	if !strings.Contains(out, "base") || !strings.Contains(out, "patched") || !strings.Contains(out, "p=0.002 n=6") {
		t.Errorf("benchstat -col role:\n%s", out)
	}
}

func runBenchstat(t *testing.T, ctx context.Context, bin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	killGroup(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("benchstat %v: %v\n%s", args, err, out)
	}
	t.Logf("benchstat %v:\n%s", args, out)
	return string(out)
}

// killGroup runs cmd in its own process group and kills the whole group
// when the context ends.
func killGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return errors.New("not started")
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

func TestWriteReports(t *testing.T) {
	dir := t.TempDir()
	run := fullRun(results.AccelKVM)
	if err := WriteReports(dir, verdict.AnalyzeRun(run)); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, BenchFile("gtp", results.RolePatched)))
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Benchmarkgtp-gtp/total ") {
			lines++
			if f := strings.Fields(l); len(f) != 4 || f[3] != TotalUnitPrefix+"ns/pkt" || f[1] != "1000000" {
				t.Errorf("bench line %q: want name, packets, value, ns/pkt", l)
			}
		}
	}
	if lines != 5 {
		t.Errorf("%d gtp-gtp/total lines in the patched file, want one per valid repetition (5: rep 2 was invalid)", lines)
	}
	base, _ := os.ReadFile(filepath.Join(dir, BenchFile("gtp", results.RoleBase)))
	if n := strings.Count(string(base), "Benchmarkgtp-gtp/total "); n != 6 {
		t.Errorf("%d gtp-gtp/total lines in the base file, want 6", n)
	}
	// report.md is the run's golden one (TestGoldenEveryFormat).
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(goldenRoot, "synthetic-kvm", "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(md) != string(want) {
		t.Errorf("report.md is not synthetic-kvm's golden report.md:\n%s", md)
	}
}
