package lines

import (
	"strings"
	"unicode/utf8"
)

// Width is the widest line kci prints: every text output, report.txt and
// report.md stay within it (the README's promise).
const Width = 100

// Widest is the rune count of the widest line of s.
func Widest(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, utf8.RuneCountInString(l))
	}
	return w
}

// Wrap breaks s (one line) at blanks so that no line is wider than width
// runes, keeping its leading blanks; continuation lines start with
// indent. A word wider than the room stays whole. The result has no
// trailing newline.
func Wrap(s string, width int, indent string) string {
	var sb strings.Builder
	line := s[:len(s)-len(strings.TrimLeft(s, " "))]
	empty := true
	for _, w := range strings.Fields(s) {
		switch {
		case empty:
			line += w
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(w) > width:
			sb.WriteString(line + "\n")
			line = indent + w
		default:
			line += " " + w
		}
		empty = false
	}
	sb.WriteString(line)
	return sb.String()
}

// Fold wraps every line of s wider than width at blanks, continuing at
// the line's own indentation plus two blanks.
func Fold(s string, width int) string {
	ls := strings.Split(s, "\n")
	for i, l := range ls {
		if utf8.RuneCountInString(l) > width {
			ind := len(l) - len(strings.TrimLeft(l, " "))
			ls[i] = Wrap(l, width, strings.Repeat(" ", ind+2))
		}
	}
	return strings.Join(ls, "\n")
}
