package render

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/results/verdict"
)

// Every text and Markdown output of every golden run (the recorded gtp
// run's long host line, PVM check and 42-row legend among them) stays
// within the README's 100 columns, counted in runes, colour codes not
// counted: report.txt, the brief, report.md and the PR comments.
func TestEveryOutputWithinWidth(t *testing.T) {
	for _, g := range goldenRuns(t) {
		for name, out := range goldenOutputs(t, verdict.AnalyzeRun(g.run)) {
			if strings.HasSuffix(name, ".json") || strings.HasSuffix(name, ".html") || name == "exit.txt" {
				continue
			}
			for i, l := range strings.Split(ansiRE.ReplaceAllString(out, ""), "\n") {
				if n := utf8.RuneCountInString(l); n > lines.Width {
					t.Errorf("%s/%s:%d: %d columns > %d: %s", g.name, name, i+1, n, lines.Width, l)
				}
			}
		}
	}
}

// A table row cannot wrap in Markdown: its longest cells move to notes
// under the table, and nothing is lost.
func TestFitTable(t *testing.T) {
	tb := &table{header: []string{"row", "a", "verdict"}, right: []bool{false, true, false}}
	tb.add("**x total**", "1.0", strings.Repeat("long verdict ", 10))
	tb.add("y", "2.0", "short")
	fit, notes := fitTable(tb, 60)
	if len(notes) != 1 || fit.rows[0][2] != "(1)" || !strings.Contains(notes[0], "x total, verdict: long verdict") {
		t.Errorf("rows %q, notes %q", fit.rows, notes)
	}
	if tb.rows[0][2] == "(1)" {
		t.Error("fitTable changed the table it was given")
	}
	if w := lines.Widest(fit.markdown()); w > 60 {
		t.Errorf("fitted table %d wide:\n%s", w, fit.markdown())
	}
}

// foldMarkdown never starts a continuation line with what opens a block.
func TestFoldMarkdownNoBlockStarts(t *testing.T) {
	in := "- item " + strings.Repeat("word ", 17) + "- not a list 1. nor this > nor a quote # nor a heading"
	got := foldMarkdown(in, 30)
	for _, l := range strings.Split(got, "\n")[1:] {
		if mdBlockStart.MatchString(strings.TrimLeft(l, " ")) || !strings.HasPrefix(l, "  ") {
			t.Errorf("continuation %q opens a block or leaves the item", l)
		}
	}
	if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(in), " ") {
		t.Errorf("words changed: %q", got)
	}
}
