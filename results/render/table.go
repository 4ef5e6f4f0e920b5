package render

import (
	"strings"
	"unicode/utf8"
)

// table is a small column layout shared by the text and Markdown renderers.
type table struct {
	header []string
	right  []bool // right-align column i
	rows   [][]string
	// paint, if set, wraps a cell after padding (terminal colour), so
	// escape codes never disturb alignment.
	paint func(row, col int, padded string) string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) widths() []int {
	w := make([]int, len(t.header))
	for i, h := range t.header {
		w[i] = utf8.RuneCountInString(h)
	}
	for _, r := range t.rows {
		for i, c := range r {
			if i < len(w) {
				w[i] = max(w[i], utf8.RuneCountInString(c))
			}
		}
	}
	return w
}

func pad(s string, w int, right bool) string {
	n := w - utf8.RuneCountInString(s)
	if n <= 0 {
		return s
	}
	if right {
		return strings.Repeat(" ", n) + s
	}
	return s + strings.Repeat(" ", n)
}

// text renders aligned columns separated by two spaces, with indent.
func (t *table) text(indent string) string {
	w := t.widths()
	var b strings.Builder
	line := func(ri int, cells []string) {
		var parts []string
		for i := range t.header {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			p := pad(c, w[i], t.right[i])
			if ri >= 0 && t.paint != nil {
				p = t.paint(ri, i, p)
			}
			parts = append(parts, p)
		}
		b.WriteString(strings.TrimRight(indent+strings.Join(parts, "  "), " "))
		b.WriteByte('\n')
	}
	line(-1, t.header)
	for ri, r := range t.rows {
		line(ri, r)
	}
	return b.String()
}

// markdown renders a GitHub table; pipes in cells are escaped.
func (t *table) markdown() string {
	var b strings.Builder
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	row := func(cells []string) {
		b.WriteString("|")
		for i := range t.header {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			b.WriteString(" " + esc(c) + " |")
		}
		b.WriteByte('\n')
	}
	row(t.header)
	b.WriteString("|")
	for i := range t.header {
		if t.right[i] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteByte('\n')
	for _, r := range t.rows {
		row(r)
	}
	return b.String()
}
