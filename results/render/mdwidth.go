package render

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/kci-dev/kci/internal/lines"
)

// foldMarkdown wraps every prose line of a Markdown document wider than
// width at blanks, keeping its meaning: a paragraph continues on the next
// line, a list item under its text, a block quote after "> ". A code
// span may be cut (its line ending reads as a blank), but no
// continuation line starts with what would open a block (a list marker, a quote, a heading, a table row, HTML).
// Table rows, headings and fenced code are left alone: tables fit by
// fitTable.
func foldMarkdown(doc string, width int) string {
	ls := strings.Split(doc, "\n")
	fenced := false
	for i, l := range ls {
		trim := strings.TrimLeft(l, " ")
		if strings.HasPrefix(trim, "```") {
			fenced = !fenced
		}
		if fenced || utf8.RuneCountInString(l) <= width || strings.HasPrefix(trim, "|") ||
			strings.HasPrefix(trim, "#") || strings.HasPrefix(trim, "<details") {
			continue
		}
		lead, cont := mdContinuation(l)
		ls[i] = mdWrap(lead, strings.Fields(l[len(lead):]), width, cont)
	}
	return strings.Join(ls, "\n")
}

var mdListMarker = regexp.MustCompile(`^ *([-+*]|\d{1,9}[.)]) `)

// mdContinuation is the line's block prefix (indent, "> ", a list
// marker) and what its continuation lines start with.
func mdContinuation(l string) (lead, cont string) {
	ind := l[:len(l)-len(strings.TrimLeft(l, " "))]
	switch {
	case strings.HasPrefix(l[len(ind):], "> "):
		return ind + "> ", ind + "> "
	case mdListMarker.MatchString(l):
		m := mdListMarker.FindString(l)
		return m, strings.Repeat(" ", utf8.RuneCountInString(m))
	}
	return ind, ind
}

var mdBlockStart = regexp.MustCompile(`^([-+*>#|=<]|\d{1,9}[.)]$)`)

// mdWrap lays words after lead, continuation lines after cont; a word
// that would open a block at a line's start takes the word before it
// along.
func mdWrap(lead string, words []string, width int, cont string) string {
	var out []string
	cur := []string{}
	prefix := lead
	n := func(ws []string) int { return utf8.RuneCountInString(prefix + strings.Join(ws, " ")) }
	for _, w := range words {
		if len(cur) == 0 || n(append(cur[:len(cur):len(cur)], w)) <= width {
			cur = append(cur, w)
			continue
		}
		next := []string{w}
		if mdBlockStart.MatchString(w) && len(cur) > 1 {
			next = []string{cur[len(cur)-1], w}
			cur = cur[:len(cur)-1]
		}
		out = append(out, prefix+strings.Join(cur, " "))
		cur, prefix = next, cont
	}
	out = append(out, prefix+strings.Join(cur, " "))
	return strings.Join(out, "\n")
}

// fitTable moves cells out of a Markdown table until every row fits
// width: the widest row's longest cell becomes a reference "(n)" and
// its text a numbered note under the table. A table row cannot wrap.
func fitTable(t *table, width int) (*table, []string) {
	fit := &table{header: t.header, right: t.right}
	for _, r := range t.rows {
		fit.rows = append(fit.rows, append([]string(nil), r...))
	}
	var notes []string
	for ri, r := range fit.rows {
		for mdRowWidth(r) > width {
			ci := longestCell(r)
			ref := fmt.Sprintf("(%d)", len(notes)+1)
			if utf8.RuneCountInString(r[ci]) <= utf8.RuneCountInString(ref) {
				break
			}
			name := t.rows[ri][0]
			if ci == 0 {
				name = "row"
			}
			notes = append(notes, fmt.Sprintf("%s %s, %s: %s", ref, strings.Trim(name, "* "), t.header[ci], r[ci]))
			r[ci] = ref
		}
	}
	return fit, notes
}

// mdRowWidth is the width of the row as table.markdown writes it.
func mdRowWidth(cells []string) int {
	n := 1
	for _, c := range cells {
		n += utf8.RuneCountInString(strings.ReplaceAll(c, "|", `\|`)) + 3
	}
	return n
}

func longestCell(r []string) int {
	best := 0
	for i, c := range r {
		if utf8.RuneCountInString(c) > utf8.RuneCountInString(r[best]) {
			best = i
		}
	}
	return best
}

// markdownFit is the table in Markdown within lines.Width, the cells
// moved out listed under it.
func (t *table) markdownFit() string {
	fit, notes := fitTable(t, lines.Width)
	s := fit.markdown()
	if len(notes) > 0 {
		s += "\n" + foldMarkdown("- "+strings.Join(notes, "\n- "), lines.Width) + "\n"
	}
	return s
}
