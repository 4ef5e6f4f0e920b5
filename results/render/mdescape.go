package render

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Everything a run record says (patch subjects, tree and variant names,
// boot errors, host details) was written by the pull request's own job
// and ends up in a comment the bot posts. These make such a string inert
// in GitHub Markdown: no mention or issue reference (which would notify
// people as the bot), no HTML (an unclosed "<!--" would hide the rest of
// the report), no emphasis, link or code span, no new line or block, and
// a bounded length.

// mdFieldMax bounds one untrusted field, in bytes. Subjects are ~70.
const mdFieldMax = 300

// zwj, put after "@" or "#", stops GitHub from reading a mention or an
// issue reference; it is invisible and works inside code too.
const zwj = "\u200d"

// mdText escapes s for the start of a line or a list item.
func mdText(s string) string { return blockSafe(mdInline(s)) }

// mdInline escapes s for running Markdown text inside a line (a heading
// after its marks, a table cell: table.markdown escapes "|" itself).
func mdInline(s string) string {
	s = flatten(s, mdFieldMax)
	var b strings.Builder
	prev := rune(' ')
	for i, r := range s {
		next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):])
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '\\', '`', '*', '[', ']', '~':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '_':
			// Intraword underscores never emphasise (FREE_REAPED stays
			// readable in the source); others might.
			if !isWord(prev) || !isWord(next) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		case '@', '#':
			b.WriteRune(r)
			if isWord(next) {
				b.WriteString(zwj)
			}
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

var orderedItem = regexp.MustCompile(`^[0-9]{1,9}[.)]`)

// blockSafe escapes what would open a block when s starts a line or a
// list item: "# " (heading), "- " or "+ " (list), "1. " (ordered list).
func blockSafe(s string) string {
	if s != "" && strings.ContainsRune("#+-", rune(s[0])) {
		return `\` + s
	}
	if m := orderedItem.FindString(s); m != "" {
		return m[:len(m)-1] + `\` + s[len(m)-1:]
	}
	return s
}

// mdCode renders s as an inline code span: a fence longer than any run of
// backticks inside, so s cannot close it. Mentions do not ping inside
// code, but the zero-width joiner is added anyway for places (check run
// titles) that show the source.
func mdCode(s string) string {
	s = flatten(s, mdFieldMax)
	s = breakRefs(s)
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || s == "" {
		s = " " + s + " "
	}
	return fence + s + fence
}

// breakRefs puts a zero-width joiner after every "@" and "#" followed by
// a word character.
func breakRefs(s string) string {
	var b strings.Builder
	for i, r := range s {
		b.WriteRune(r)
		if r == '@' || r == '#' {
			if next, _ := utf8.DecodeRuneInString(s[i+1:]); isWord(next) {
				b.WriteString(zwj)
			}
		}
	}
	return b.String()
}

// flatten turns every run of white space and control characters into one
// space and cuts s to at most limit bytes, marking the cut.
func flatten(s string, limit int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError
	}), " ")
	if len(s) <= limit {
		return s
	}
	n := limit - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func isWord(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// escapeCells returns t with every header and cell escaped by mdInline.
func escapeCells(t *table) *table {
	c := *t
	c.header = escapeAll(t.header)
	c.rows = make([][]string, len(t.rows))
	for i, r := range t.rows {
		c.rows[i] = escapeAll(r)
	}
	return &c
}

func escapeAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = mdInline(s)
	}
	return out
}
