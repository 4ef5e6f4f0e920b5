// Package ci posts kci's reports where reviewers read them: one sticky
// comment per tree on the pull request, a check run (or commit status) on
// the head commit, and the GitHub Actions step summary. Its input is plain
// data (Report), so it depends on no other kci stage.
package ci

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kci-dev/kci/internal/names"
)

// Conclusions a report can carry. Neutral is for results that say nothing
// either way: emulated (TCG) timings, too few samples for a confidence
// interval.
const (
	Success = "success"
	Failure = "failure"
	Neutral = "neutral"
)

// GitHub's documented size limits.
const (
	CommentLimit      = 65536   // issue comment body, characters
	CheckSummaryLimit = 65535   // check run output.summary, characters
	CheckTitleLimit   = 255     // not documented as hard; keeps the UI tidy
	StatusDescLimit   = 140     // commit status description
	StepSummaryLimit  = 1 << 20 // $GITHUB_STEP_SUMMARY, per step
)

// Report is what gets posted for one tree.
type Report struct {
	Tree       string // kernel tree name, e.g. "gtp"; one comment per tree
	Markdown   string // the full report
	Conclusion string // Success, Failure or Neutral
	Title      string // one line, e.g. "gtp: no significant change (emulated)"
	Summary    string // one short line for places with little room (commit status)
	DetailsURL string // link to the run and its artifacts; may be empty
}

// Validate checks the fields every poster relies on. The tree name comes
// from a run record: checked again here, since it becomes the marker (so
// it must map to one marker only), the check name and log lines.
func (r Report) Validate() error {
	if r.Tree == "" {
		return fmt.Errorf("report has no tree name")
	}
	if err := names.Tree(r.Tree); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	switch r.Conclusion {
	case Success, Failure, Neutral:
	default:
		return fmt.Errorf("report for tree %s: conclusion %q is not success, failure or neutral", r.Tree, r.Conclusion)
	}
	return nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// safeTree makes a tree name usable inside an HTML comment and a check
// name. Tree names come from run records, which a pull request's own job
// wrote, so they are untrusted: "x -->" must not close the marker.
func safeTree(tree string) string {
	s := unsafeName.ReplaceAllString(tree, "_")
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// logName is a tree name fit for the log: as is when valid, else quoted
// so that a newline or "::" cannot forge a workflow command.
func logName(tree string) string {
	if names.Tree(tree) == nil {
		return tree
	}
	return names.Quote(tree)
}

// defang is the poster's own guard on report Markdown, whose producer
// escapes what it takes from run records: kci never means to mention
// anyone or open an HTML comment, so any "@name", "#123" or "<!--" is
// broken with an invisible zero-width joiner (which also works inside
// code blocks, where an entity would show).
func defang(md string) string {
	md = strings.ReplaceAll(md, "<!--", "<"+zwj+"!--")
	md = strings.ReplaceAll(md, "-->", "--"+zwj+">")
	var b strings.Builder
	prev := ' '
	for i, r := range md {
		b.WriteRune(r)
		if (r == '@' || r == '#') && !isWordRune(prev) {
			if next, _ := utf8.DecodeRuneInString(md[i+1:]); isWordRune(next) {
				b.WriteString(zwj)
			}
		}
		prev = r
	}
	return b.String()
}

const zwj = "\u200d"

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// Marker is the hidden line that identifies the sticky comment of a tree.
func Marker(tree string) string {
	return "<!-- kci:tree=" + safeTree(tree) + " -->"
}

// CheckName is the name of the check run (and commit status context).
func CheckName(tree string) string { return "kci / " + safeTree(tree) }

// CommentBody is the full comment text: the marker on the first line, the
// report trimmed to GitHub's limit, and a link to the run, which trimming
// never removes.
func CommentBody(r Report) string {
	head := Marker(r.Tree) + "\n"
	foot := ""
	if r.DetailsURL != "" {
		foot = "\n<sub>[kci run and artifacts](" + r.DetailsURL + ")</sub>\n"
	}
	return head + Trim(defang(r.Markdown), CommentLimit-len(head)-len(foot), trimNote(r.DetailsURL)) + foot
}

func trimNote(detailsURL string) string {
	if detailsURL != "" {
		return fmt.Sprintf("\n\n> [!NOTE]\n> Report trimmed to fit GitHub's size limit; the full report is in the [run and its artifacts](%s).\n", detailsURL)
	}
	return "\n\n> [!NOTE]\n> Report trimmed to fit GitHub's size limit; the full report is in the run's artifacts.\n"
}

// Trim returns s if it fits in limit bytes, else its longest prefix that
// ends at a line break (or failing that a rune boundary) and leaves room
// for note, with an unclosed code fence closed, followed by note. Bytes
// bound characters from above, so the result fits however GitHub counts.
func Trim(s string, limit int, note string) string {
	if len(s) <= limit {
		return s
	}
	const fence = "\n```\n"
	budget := limit - len(note) - len(fence)
	if budget <= 0 {
		return truncRunes(note, limit)
	}
	cut := truncRunes(s, budget)
	if i := strings.LastIndexByte(cut, '\n'); i > len(cut)/2 {
		cut = cut[:i]
	}
	if strings.Count(cut, "```")%2 == 1 {
		cut += fence
	}
	return cut + note
}

// truncRunes cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// oneLine flattens text for single-line fields (titles, descriptions).
func oneLine(s string, limit int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= limit {
		return s
	}
	return truncRunes(s, limit-len("…")) + "…"
}

// CheckSummary is the check run's output summary: the report, led by
// its one-line answer, trimmed to GitHub's limit.
func CheckSummary(r Report) string {
	return Trim(defang(r.Markdown), CheckSummaryLimit, trimNote(r.DetailsURL))
}

// CheckTitle is the check run's output title.
func CheckTitle(r Report) string {
	t := r.Title
	if t == "" {
		t = "kci " + r.Tree + ": " + r.Conclusion
	}
	return oneLine(t, CheckTitleLimit)
}

// StatusState maps a conclusion onto a commit status state, which has no
// "neutral": neutral results must not block a merge, so they are success
// with the description saying neutral.
func StatusState(conclusion string) string {
	if conclusion == Failure {
		return "failure"
	}
	return "success"
}

// StatusDescription is the commit status's one-line description.
func StatusDescription(r Report) string {
	d := r.Summary
	if d == "" {
		d = r.Title
	}
	if d == "" {
		d = r.Conclusion
	}
	if r.Conclusion == Neutral && !strings.HasPrefix(strings.ToLower(d), "neutral") {
		d = "neutral: " + d
	}
	return oneLine(d, StatusDescLimit)
}
