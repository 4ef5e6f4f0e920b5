package render

import (
	"fmt"
	"github.com/kci-dev/kci/internal/golden"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

func TestLoads(t *testing.T) {
	load := func(insns uint32, us uint64) []results.ProgLoad {
		return []results.ProgLoad{{Name: "gtp_write", VerifiedInsns: insns, XlatedBytes: 800, JitedBytes: 500, VerifyUs: us, LoadNs: 4e6}}
	}
	run := &results.Run{Boots: []results.Boot{
		{Seq: 1, Tree: "gtp", Role: results.RoleBase, Rep: 1, Variants: []results.VariantResult{
			{Variant: "gtp", Loads: load(120, 300)}, {Variant: "cnt", Loads: []results.ProgLoad{{Name: "cnt_egress", VerifiedInsns: 9}}}}},
		{Seq: 2, Tree: "gtp", Role: results.RolePatched, Rep: 1, Variants: []results.VariantResult{
			{Variant: "gtp", Loads: load(131, 310)}, {Variant: "cnt", LoadError: "program cnt_egress: load program: permission denied\nverifier log..."}}},
		{Seq: 3, Tree: "gtp", Role: results.RolePatched, Rep: 2, Variants: []results.VariantResult{{Variant: "gtp", Loads: load(131, 330)}}},
	}}
	rows := reportOf(run, "gtp").Loads
	if len(rows) != 2 {
		t.Fatalf("rows = %+v, want gtp_write and cnt_egress", rows)
	}
	g := rows[0]
	if g.Program != "gtp_write" || g.Base.VerifiedInsns != "120" || g.Patched.VerifiedInsns != "131" || g.Patched.Boots != 2 || g.Patched.VerifyUs != 320 {
		t.Errorf("gtp_write = %+v", g)
	}
	if c := rows[1]; c.Program != "cnt_egress" || c.Patched.Failed == "" || c.Base.Failed != "" {
		t.Errorf("cnt_egress = %+v, want failed on patched only", c)
	}
	// The table and its notes are the golden testdata/TestLoads/table.txt.
	tab, notes := loadsTable(rows)
	if len(notes) != 1 {
		t.Errorf("notes = %q, want cnt_egress's failure alone", notes)
	}
	out := tab.text("")
	for _, n := range notes {
		out += fmt.Sprintf("note: %q\n", n)
	}
	golden.Own(t, "table.txt", out)
}

// TestLoadsInTextOnce: the text report shows the verifier table once per
// tree (a rebase once left two copies).
func TestLoadsInTextOnce(t *testing.T) {
	run := &results.Run{Schema: results.SchemaVersion, ID: "x", Trees: []results.Tree{{Name: "gtp"}}, Boots: []results.Boot{
		{Seq: 1, Tree: "gtp", Role: results.RoleBase, Rep: 1, Variants: []results.VariantResult{{Variant: "cnt", Valid: true,
			Loads: []results.ProgLoad{{Name: "cnt_egress", VerifiedInsns: 13, XlatedBytes: 168, JitedBytes: 113}}}}}}}
	var b strings.Builder
	if err := Text(&b, verdict.AnalyzeRun(run), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "verifier and JIT"); n != 1 {
		t.Errorf("verifier table %d times in the text report, want 1:\n%s", n, b.String())
	}
}
