package render

import (
	"bytes"
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

func TestWhereRendered(t *testing.T) {
	run := whereRun()
	var b strings.Builder
	if err := Text(&b, verdict.AnalyzeRun(run), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	txt := b.String()
	var row string
	for _, l := range strings.Split(txt, "\n") {
		if strings.Contains(l, "htab_map_update_elem") {
			row = strings.Join(strings.Fields(l), " ")
		}
	}
	if row != "hash htab_map_update_elem 112.0 117.0 +5.0 exact" {
		t.Errorf("text row %q, want the +5.0 exact change\n%s", row, txt)
	}
	md := Markdown(verdict.AnalyzeRun(run), "gtp")
	if !strings.Contains(md, "Where it changed: 2 function rows") || strings.Contains(md, "<b>x") || strings.Contains(md, "x|y") {
		t.Errorf("markdown: want 2 rows with the markup escaped:\n%s", md)
	}
	var h bytes.Buffer
	if err := HTML(&h, verdict.AnalyzeRun(run), ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), "<td>htab_map_update_elem</td>") || strings.Contains(h.String(), "<b>x|y</b>") {
		t.Errorf("html: want the function's cell and the markup escaped")
	}
}
