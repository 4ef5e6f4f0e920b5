package render

import (
	"strings"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// briefState is what the brief says of a run besides its trees: that it
// stopped (its recorded cause) and, when no tree has an answer, what it
// got that far ("" for a finished run with answers).
func briefState(run *results.Run, answers int) string {
	var s []string
	if run.Incomplete {
		cause := run.IncompleteReason
		if cause == "" {
			cause = "no cause recorded"
		}
		s = append(s, "run incomplete: "+cause)
	}
	if answers == 0 {
		s = append(s, "no tree measured yet: "+run.BootsLine("")+" recorded")
	}
	return strings.Join(s, "; ")
}

// BriefRunText is kci report --brief's text for one run: name (the run's
// directory, "" when it is the only run) and the run's id first, then
// whether it stopped early, then BriefText's lines, so an interrupted
// run still says what it has.
func BriefRunText(a *verdict.Analysis, trees []string, width int, name string) string {
	var b strings.Builder
	if name != "" {
		b.WriteString(wrap(name+" (run "+a.Run.ID+"):", width, "  "))
	}
	sel := a.Select(trees)
	if st := briefState(a.Run, len(sel)); st != "" {
		b.WriteString(wrap(st, width, "  "))
	}
	b.WriteString(BriefText(a, trees, width))
	return b.String()
}

// BriefRunMarkdown is BriefRunText in Markdown: the name in bold with
// the id as code, the stop as a quote, then a bullet per tree.
func BriefRunMarkdown(a *verdict.Analysis, trees []string, name string) string {
	var b strings.Builder
	if name != "" {
		b.WriteString("**" + mdInline(name) + "** (run " + mdCode(a.Run.ID) + "):\n\n")
	}
	sel := a.Select(trees)
	if st := briefState(a.Run, len(sel)); st != "" {
		b.WriteString("> " + mdInline(st) + "\n\n")
	}
	for _, tr := range sel {
		b.WriteString(BriefMarkdown(*tr.Brief))
	}
	return foldMarkdown(b.String(), lines.Width)
}
