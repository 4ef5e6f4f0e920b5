package lines

import "testing"

func TestFirst(t *testing.T) {
	for in, want := range map[string]string{
		"":                 "",
		"one":              "one",
		"one\ntwo\n":       "one",
		"\nsecond":         "",
		"cause: x\ndetail": "cause: x",
	} {
		if got := First(in); got != want {
			t.Errorf("First(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestLast(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 5, "a\nb\nc"},
		{"a\nb\nc\n\n\n", 1, "c"},
		{"", 3, ""},
	}
	for _, c := range cases {
		if got := Last(c.in, c.n); got != c.want {
			t.Errorf("Last(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}
