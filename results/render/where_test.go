package render

import (
	"bytes"
	"fmt"
	"github.com/kci-dev/kci/internal/golden"
	"slices"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"
)

// whereRun: htab_map_update_elem +5 on every seed, and a function whose
// name (from a patched kernel's symbols: untrusted) carries markup.
func whereRun() *results.Run {
	run := runtest.MkRun(results.AccelTCG, results.ClockICount, 3, 3, []runtest.VarSpec{{Name: "hash", Progs: []string{"hash_write"}}},
		func(string, int, string, string) float64 { return 100 })
	return runtest.WithExact(run, func(role string, seed uint64) map[string]float64 {
		f := map[string]float64{"htab_map_update_elem": 112, "<b>x|y</b>": 10}
		if role == results.RolePatched {
			f["htab_map_update_elem"] += 5
			f["<b>x|y</b>"] += 2
		}
		return f
	})
}

// TestWhereRendered: the rows as values, the text and Markdown reports
// as the goldens testdata/TestWhereRendered/, and the function name's
// markup escaped in every format.
func TestWhereRendered(t *testing.T) {
	a := verdict.AnalyzeRun(whereRun())
	tr, _ := a.Tree("gtp")
	var got []string
	for _, r := range tr.Where.Rows {
		got = append(got, fmt.Sprintf("%s %s %.1f %.1f %+.1f", r.Variant, r.Func, r.Insns.Base, r.Insns.Patched, r.Insns.Delta))
	}
	if want := []string{"hash htab_map_update_elem 112.0 117.0 +5.0", "hash <b>x|y</b> 10.0 12.0 +2.0"}; !slices.Equal(got, want) {
		t.Errorf("where rows %q, want %q", got, want)
	}
	var b strings.Builder
	if err := Text(&b, a, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	md := Markdown(a, "gtp")
	golden.Own(t, "report.txt", b.String())
	golden.Own(t, "comment.md", md)
	var h bytes.Buffer
	if err := HTML(&h, a, ""); err != nil {
		t.Fatal(err)
	}
	// Targeted rather than golden: the name comes from a patched kernel's
	// symbols, and no format may pass its markup on (report.html is a
	// page of charts, pinned whole by TestGoldenEveryFormat's runs).
	if strings.Contains(md, "<b>x") || strings.Contains(md, "x|y") {
		t.Errorf("markdown: the function's markup is not escaped:\n%s", md)
	}
	if !strings.Contains(h.String(), "<td>htab_map_update_elem</td>") || strings.Contains(h.String(), "<b>x|y</b>") {
		t.Errorf("html: want the function's cell and the markup escaped")
	}
}
