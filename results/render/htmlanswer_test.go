package render

import (
	"bytes"
	"github.com/kci-dev/kci/internal/golden"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

func renderPage(t *testing.T, run *results.Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, verdict.AnalyzeRun(run), ""); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// hostClockDemo is the demo run measured as wall time under TCG, with
// twice the boots: its check state is neutral while its numbers say
// "faster", the page the issue saw a grey "neutral" badge on.
func hostClockDemo(t *testing.T) *results.Run {
	t.Helper()
	run := loadRun(t, demoDir)
	n := len(run.Boots)
	for i := 0; i < n; i++ {
		run.Boots[i].Clock = results.ClockHost
		c := run.Boots[i]
		c.Rep, c.Seq = c.Rep+3, c.Seq+n
		run.Boots = append(run.Boots, c)
	}
	return run
}

// badgeRE matches any badge of the page: its class and its word.
var badgeRE = regexp.MustCompile(`<span class="badge ([a-z]*)">([^<]*)</span>`)

var briefRE = regexp.MustCompile(`<li class="tree-brief" data-tree="([^"]*)">(?:<span class="badge ([a-z]+)">([^<]*)</span> )?<strong>`)

// The badge beside a headline is the numbers' outcome, coloured by it:
// never the check state ("neutral" beside "faster").
func TestHTMLBadgeAgreesWithOutcome(t *testing.T) {
	runs := map[string]*results.Run{"host-clock demo": hostClockDemo(t)}
	for _, f := range runFixtures(t) {
		runs[f] = loadRun(t, f)
	}
	class := map[string]string{"faster": "faster", "slower": "slower", "slower and faster": "slower"}
	neutralSeen := false
	for name, run := range runs {
		page := renderPage(t, run)
		got := briefRE.FindAllStringSubmatch(page, -1)
		if len(got) != len(run.TreeNames()) {
			t.Fatalf("%s: %d tree briefs, want %d", name, len(got), len(run.TreeNames()))
		}
		for _, m := range got {
			b := *reportOf(run, m[1]).Brief
			neutralSeen = neutralSeen || b.State == verdict.Neutral
			wantClass := class[b.PerfOutcome]
			if wantClass == "" {
				wantClass = "same"
			}
			if m[3] != b.PerfOutcome || m[2] != wantClass {
				t.Errorf("%s: %s: badge %q (class %q), want %q (class %q); state %s", name, m[1], m[3], m[2], b.PerfOutcome, wantClass, b.State)
			}
		}
		for _, b := range badgeRE.FindAllStringSubmatch(page, -1) {
			if b[1] == "neutral" || b[2] == "neutral" {
				t.Errorf("%s: a neutral badge: %s", name, b[0])
			}
		}
	}
	if !neutralSeen {
		t.Fatal("no fixture has a neutral tree: the test checks nothing")
	}
}

// A tree decided by something else than its numbers shows a badge only
// when that fails it.
func TestBadgeOfNonPerfOutcome(t *testing.T) {
	for _, c := range []struct {
		b           verdict.Brief
		word, class string
	}{
		{verdict.Brief{State: verdict.Failure, Outcome: "1 survival regression", PerfOutcome: "faster"}, "failure", "failure"},
		{verdict.Brief{State: verdict.Neutral, Outcome: "base kernel failed too: x", PerfOutcome: "no results"}, "", ""},
		{verdict.Brief{State: verdict.Neutral, Outcome: "faster", PerfOutcome: "faster"}, "faster", "faster"},
		{verdict.Brief{State: verdict.Failure, Outcome: "slower", PerfOutcome: "slower"}, "slower", "slower"},
	} {
		if hb := badgeOf(c.b); hb.Badge != c.word || hb.BadgeClass != c.class {
			t.Errorf("%+v: badge %q %q, want %q %q", c.b, hb.Badge, hb.BadgeClass, c.word, c.class)
		}
	}
}

// failedRun is the record a job leaves when it fails before any tree is
// measured: written and read back as run.json, with markup in the cause.
func failedRun(t *testing.T, cause string) *results.Run {
	t.Helper()
	dir := t.TempDir()
	rec, err := results.NewRecorder(dir, "failed")
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Finish(cause); err != nil {
		t.Fatal(err)
	}
	return loadRun(t, dir)
}

const hostileCause = `build gtp: "make" failed: <script>alert(1)</script> & <b>more</b>`

// answerBox is the page's answer box, <div class="brief">…</div>.
func answerBox(t *testing.T, page string) string {
	t.Helper()
	i := strings.Index(page, `<div class="brief" id="brief">`)
	if i < 0 {
		t.Fatalf("no answer box:\n%s", page)
	}
	box := page[i:]
	return box[:strings.Index(box, "</div>")+len("</div>")]
}

// A failed run's answer box states the cause run.json records, as text;
// a stopped run's states why above its briefs. The boxes are the goldens
// testdata/TestHTMLFailedRunStatesCause/.
func TestHTMLFailedRunStatesCause(t *testing.T) {
	page := renderPage(t, failedRun(t, hostileCause))
	golden.Own(t, "failed.html", answerBox(t, page))
	// Targeted as well: no golden rewritten by -update may let the
	// record's markup through.
	if strings.Contains(page, "<script>") || strings.Contains(page, "<b>more") {
		t.Error("the cause from run.json became markup")
	}
	// A run stopped after measuring: its briefs and, above them, why.
	run := loadRun(t, demoDir)
	run.Incomplete, run.IncompleteReason = true, "interrupted"
	golden.Own(t, "incomplete.html", answerBox(t, renderPage(t, run)))
	// A dead run's record says it did not finish.
	run.IncompleteReason = ""
	golden.Own(t, "incomplete-no-reason.html", answerBox(t, renderPage(t, run)))
}

// The failed run's page in the browser: the cause is text in the box.
func TestHTMLFailedRunInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, HTMLFile)
	if err := os.WriteFile(page, []byte(renderPage(t, failedRun(t, hostileCause))), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(runChromium(t, bin, page, "--dump-dom"))
	// Targeted: the hostile cause as text in the browser's DOM (a golden
	// would pin Chromium's serialisation of the whole page).
	if !strings.Contains(dom, "Run failed:</strong> build gtp: \"make\" failed: &lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;more&lt;/b&gt;") {
		t.Errorf("DOM lacks the cause as text:\n%s", dom)
	}
}

var (
	sectionRE = regexp.MustCompile(`<section class="tree" id="tree-([^"]*)">`)
	figOpenRE = regexp.MustCompile(`<figure class="row ([a-z]+)" data-row="([^"]*)"`)
	foldRE    = regexp.MustCompile(`<details class="unchanged"><summary>(\d+) rows without a decided change</summary>`)
)

// checkOrder: in every tree's section the changed rows' charts come
// first and the others follow folded in one <details>; trees with a
// changed row come first, so the page's first chart is a changed one.
func checkOrder(t *testing.T, name string, run *results.Run, page string) {
	t.Helper()
	secs := sectionRE.FindAllStringSubmatchIndex(page, -1)
	firstChanged, firstSame := -1, -1
	sawSame := false
	for i, s := range secs {
		tree, end := page[s[2]:s[3]], len(page)
		if i+1 < len(secs) {
			end = secs[i+1][0]
		}
		sec := page[s[0]:end]
		changed := changedLabels(run, tree)
		if len(changed) > 0 && sawSame {
			t.Errorf("%s: tree %s, with changed rows, comes after a tree without", name, tree)
		}
		sawSame = sawSame || len(changed) == 0
		fold, foldEnd := len(sec), len(sec)
		nFolded := 0
		if m := foldRE.FindStringSubmatchIndex(sec); m != nil {
			fold, foldEnd = m[0], strings.Index(sec, "</details>")
			nFolded, _ = strconv.Atoi(sec[m[2]:m[3]])
		}
		folded := 0
		for _, f := range figOpenRE.FindAllStringSubmatchIndex(sec, -1) {
			class, label, at := sec[f[2]:f[3]], sec[f[4]:f[5]], f[0]
			inFold := at > fold && at < foldEnd
			if changed[label] == inFold || (class == "same") != inFold {
				t.Errorf("%s: %s %s: class %q, folded %v; changed %v", name, tree, label, class, inFold, changed[label])
			}
			if inFold {
				folded++
				if firstSame < 0 {
					firstSame = s[0] + at
				}
			} else if firstChanged < 0 {
				firstChanged = s[0] + at
			}
		}
		if folded != nFolded {
			t.Errorf("%s: %s: summary says %d folded rows, %d there", name, tree, nFolded, folded)
		}
	}
	if firstChanged < 0 || firstSame < 0 || firstChanged > firstSame {
		t.Errorf("%s: first changed chart at %d, first unchanged at %d: want changed first", name, firstChanged, firstSame)
	}
}

// changedLabels are a tree's rows with a decided change, by chart label.
func changedLabels(run *results.Run, tree string) map[string]bool {
	out := map[string]bool{}
	for _, v := range reportOf(run, tree).Perf.Variants {
		out[v.Variant+" total"] = verdict.Changed(v.Total)
		for _, p := range v.Programs {
			out[v.Variant+"/"+p.Name] = verdict.Changed(p)
		}
	}
	return out
}

// The page opens on what changed even when the unchanged tree is first
// in run.json (the demo's page had 40 unchanged charts before gtp's).
func TestHTMLChangedRowsFirst(t *testing.T) {
	run := loadRun(t, demoDir)
	run.Trees[0], run.Trees[1] = run.Trees[1], run.Trees[0]
	if run.TreeNames()[0] != "ext" {
		t.Fatalf("trees %v: want ext first", run.TreeNames())
	}
	checkOrder(t, "demo, ext first", run, renderPage(t, run))
	// Both trees changed: each opens on its own changed rows.
	run = hostClockDemo(t)
	checkOrder(t, "host-clock demo", run, renderPage(t, run))
	for _, f := range runFixtures(t) {
		r := loadRun(t, f)
		checkOrder(t, f, r, renderPage(t, r))
	}
}
