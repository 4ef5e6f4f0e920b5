package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// helpOf is `kci PATH... --help` as a user runs it.
func helpOf(t *testing.T, path []string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), append(path, "--help"), &out, &errOut); code != 0 {
		t.Fatalf("kci %s --help: exit %d: %s", strings.Join(path, " "), code, errOut.String())
	}
	return out.String()
}

// verbPaths is every command below root, as argument lists.
func verbPaths(c *cobra.Command, prefix []string) [][]string {
	var ps [][]string
	for _, s := range c.Commands() {
		p := append(append([]string{}, prefix...), s.Name())
		ps = append(ps, p)
		ps = append(ps, verbPaths(s, p)...)
	}
	return ps
}

// Every verb's help fits a 100-column terminal, shows no sentinel default,
// and the job verbs' (and kci's own) list the exit codes.
func TestHelpFitsTerminal(t *testing.T) {
	paths := append([][]string{nil}, verbPaths(newRoot(), nil)...)
	seen := map[string]bool{}
	for _, p := range paths {
		name := strings.Join(append([]string{"kci"}, p...), " ")
		h := helpOf(t, p)
		for i, l := range strings.Split(h, "\n") {
			if n := utf8.RuneCountInString(l); n > helpWidth {
				t.Errorf("%s --help line %d is %d columns: %q", name, i+1, n, l)
			}
		}
		if strings.Contains(h, "(default -") {
			t.Errorf("%s --help shows a sentinel default:\n%s", name, h)
		}
		if len(p) == 0 || (len(p) == 1 && jobVerbs[p[0]]) {
			seen[strings.Join(p, "")] = true
			for _, e := range exitCodes {
				if !strings.Contains(h, fmt.Sprintf("\n  %-4d %s", e.code, e.what[:min(20, len(e.what))])) {
					t.Errorf("%s --help lacks exit code %d", name, e.code)
				}
			}
		}
	}
	for v := range jobVerbs {
		if !seen[v] {
			t.Errorf("job verb %s is not a command", v)
		}
	}
}

func TestWrapIndent(t *testing.T) {
	for _, c := range []struct {
		in     string
		width  int
		indent int
		want   string
	}{
		{"short", 10, 2, "short"},
		{"aaa bbb ccc ddd", 8, 2, "aaa bbb\n  ccc\n  ddd"},
		{"  aaa bbb ccc", 9, 2, "  aaa bbb\n  ccc"},
		{"averyveryverylongword x", 8, 0, "averyveryverylongword\nx"},
		{"é é é é", 3, 0, "é é\né é"},
	} {
		if got := wrapIndent(c.in, c.width, c.indent); got != c.want {
			t.Errorf("wrapIndent(%q, %d, %d) = %q, want %q", c.in, c.width, c.indent, got, c.want)
		}
	}
}

// A flag whose default is a negative sentinel shows none; others keep theirs.
func TestFlagUsagesHideSentinel(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	cmd.Flags().Duration("warmup", -1, "warm-up (default: kci.yaml)")
	cmd.Flags().Float64("fail", -1, "exit 6 above PCT (default: off)")
	cmd.Flags().Int("reps", 3, "boots")
	got := flagUsages(cmd.Flags())
	if strings.Contains(got, "(default -") || !strings.Contains(got, "(default 3)") {
		t.Errorf("flag usages:\n%s", got)
	}
}
