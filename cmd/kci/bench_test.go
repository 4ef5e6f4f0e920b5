package main

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kci-dev/kci/internal/golden"
	"github.com/kci-dev/kci/internal/lines"
)

// TestBenchAddsBaseline: kci bench always boots the baseline, first, so
// every boot has the marginal cost; named explicitly it is not doubled.
func TestBenchAddsBaseline(t *testing.T) {
	for _, c := range []struct {
		asked, project []string
		want           string
	}{
		{nil, []string{"cnt", "ext"}, "none,cnt,ext"},
		{[]string{"gtp"}, []string{"cnt", "ext"}, "none,gtp"},
		{[]string{"gtp", "none"}, nil, "gtp,none"},
	} {
		if got := strings.Join(withBaseline(c.asked, c.project), ","); got != c.want {
			t.Errorf("withBaseline(%v, %v) = %s, want %s", c.asked, c.project, got, c.want)
		}
	}
}

// TestBenchFromRunDir: kci bench RUNDIR makes the table from a saved run
// without booting; a directory that is no run is refused by name.
func TestBenchFromRunDir(t *testing.T) {
	dir := t.TempDir()
	saveRun(t, dir, "r1", 1)
	var out strings.Builder
	if err := benchFromDirs(&out, []string{dir}, nil); err != nil {
		t.Fatalf("bench %s: %v", dir, err)
	}
	// saveRun's boots are KVM boots of gtp, 8 repetitions, no seeds: the
	// table is the golden testdata/TestBenchFromRunDir/bench.txt.
	golden.Own(t, "bench.txt", out.String())
	// 8 reps and a 19-letter variant: the table splits its rep columns
	// rather than pass the README's 100 columns.
	assertWidth(t, out.String())
	// Targeted: the refusal names the directory (a fact).
	bad := t.TempDir()
	if err := benchFromDirs(&out, []string{bad}, nil); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("bench of a directory without run.json: %v, want an error naming it", err)
	}
}

// assertWidth fails for every line of out wider than lines.Width runes.
func assertWidth(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(l); n > lines.Width {
			t.Errorf("%d columns > %d: %s", n, lines.Width, l)
		}
	}
}
