package render

import (
	"github.com/kci-dev/kci/internal/golden"
	"regexp"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"
)

// mention is what GitHub links (and notifies): "@" then a login or team.
var mention = regexp.MustCompile(`(^|[^\w])@[A-Za-z0-9]`)

// A forged run record: every string the comment shows carries a mention,
// an unclosed HTML comment, a tag and Markdown that would restructure the
// report. None of it may survive as Markdown or HTML.
func TestMarkdownEscapesRunRecord(t *testing.T) {
	hostile := "@org/team <!-- hide `x` [link](https://evil) **bold** <img src=x onerror=alert(1)> #1"
	r := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(71, 8, 500, 0.01), runtest.Normal(72, 8, 505, 0.01))
	r.ID = "run`@evil"
	r.Host.Hostname = hostile
	r.Host.Checks = []results.Check{{Name: "x @alice", Status: results.CheckWarn, Detail: hostile, Fix: "x` @bob `y"}}
	r.Incomplete, r.IncompleteReason = true, hostile
	r.Trees[0].Patched.Patches = []string{"# " + hostile, "- @alice\n\n## injected heading"}
	r.Trees[0].ConfigCheck = hostile
	for i := range r.Boots {
		r.Boots[i].Variants[0].Variant = "gtp-x @carol <!--"
	}

	// The escaped words are the goldens testdata/TestMarkdownEscapesRunRecord/;
	// the checks below are targeted as well, so that no golden rewritten
	// by -update lets the record's HTML, mentions or blocks through.
	comment, run := Markdown(verdict.AnalyzeRun(r), "gtp"), MarkdownRun(verdict.AnalyzeRun(r))
	golden.Own(t, "comment.md", comment)
	golden.Own(t, "report.md", run)
	for name, md := range map[string]string{"Markdown": comment, "MarkdownRun": run} {
		if strings.Contains(md, "<!--") || strings.Contains(md, "<img") || strings.Contains(md, "-->") {
			t.Errorf("%s: HTML from the record survives:\n%s", name, md)
		}
		if m := mention.FindString(md); m != "" {
			t.Errorf("%s: a mention survives (%q):\n%s", name, m, md)
		}
		if strings.Contains(md, "[link](") || strings.Contains(md, " **bold**") {
			t.Errorf("%s: Markdown from the record survives:\n%s", name, md)
		}
		for _, line := range strings.Split(md, "\n") {
			if strings.HasPrefix(line, "## injected") || strings.HasPrefix(line, "- # ") || strings.HasPrefix(line, "- - ") {
				t.Errorf("%s: the record opened a block: %q", name, line)
			}
		}
	}
}

func TestMdHelpers(t *testing.T) {
	cases := []struct{ in, want string }{
		{"stats FREE_REAPED 100", "stats FREE_REAPED 100"},
		{"_x_ *y*", `\_x\_ \*y\*`},
		{"a <b> & c", "a &lt;b&gt; &amp; c"},
		{"@team", "@\u200dteam"},
		{"fixes #12", "fixes #\u200d12"},
		{"1. item", `1\. item`},
		{"- item", `\- item`},
		{"two\nlines\r\tand\x00more", "two lines and more"},
	}
	for _, c := range cases {
		if got := mdText(c.in); got != c.want {
			t.Errorf("mdText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := mdCode("a ``b`` c"); got != "```a ``b`` c```" {
		t.Errorf("mdCode = %q", got)
	}
	if got := mdCode("`x"); got != "`` `x ``" {
		t.Errorf("mdCode = %q", got)
	}
	if got := mdText(strings.Repeat("x", 5000)); len(got) > mdFieldMax {
		t.Errorf("mdText does not cap: %d bytes", len(got))
	}
}
