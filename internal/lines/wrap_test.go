package lines

import (
	"strings"
	"testing"
)

func TestWrap(t *testing.T) {
	cases := []struct {
		in, indent string
		width      int
		want       string
	}{
		{"one two three", "", 7, "one two\nthree"},
		{"  one two three", "    ", 9, "  one two\n    three"},
		{"averyveryverylongword x", " ", 5, "averyveryverylongword\n x"},
		{"short", "", 100, "short"},
	}
	for _, c := range cases {
		if got := Wrap(c.in, c.width, c.indent); got != c.want {
			t.Errorf("Wrap(%q, %d) = %q, want %q", c.in, c.width, got, c.want)
		}
	}
}

func TestFold(t *testing.T) {
	in := "head\n  " + strings.Repeat("wörd ", 30) + "\ntail"
	got := Fold(in, 40)
	if w := Widest(got); w > 40 {
		t.Errorf("widest line %d > 40:\n%s", w, got)
	}
	for _, l := range strings.Split(got, "\n")[2:] {
		if l != "tail" && !strings.HasPrefix(l, "    wörd") {
			t.Errorf("continuation %q not indented by the line's indent + 2", l)
		}
	}
	if strings.Join(strings.Fields(got), " ") != strings.Join(strings.Fields(in), " ") {
		t.Errorf("Fold changed the words: %q", got)
	}
}
