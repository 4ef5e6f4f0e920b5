package profile

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

func TestSymbolsSelfTotal(t *testing.T) {
	// f recurses; its total must count each stack once.
	p, _ := ParseFoldedString("t;a;f;f 4\nt;a;g 6\nt;f 10\nu 5\n")
	s := Symbols(p)
	want := map[string][2]int64{"a": {0, 10}, "f": {14, 14}, "g": {6, 6}}
	if len(s) != len(want) {
		t.Errorf("symbols %v: task frames t and u must not be symbols", keys(s))
	}
	for n, w := range want {
		if s[n] == nil || s[n].Self != w[0] || s[n].Total != w[1] {
			t.Errorf("%s = %+v, want self %d total %d", n, s[n], w[0], w[1])
		}
	}
	if math.Abs(s["f"].SelfPct-14.0/25*100) > 1e-9 || math.Abs(s["a"].TotalPct-40) > 1e-9 {
		t.Errorf("percentages f self %.3f, a total %.3f", s["f"].SelfPct, s["a"].TotalPct)
	}
}

func keys(m map[string]*Symbol) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestTop(t *testing.T) {
	p := loadTestdata(t, "hash.folded")
	top := Top(p, 3)
	if len(top) != 3 {
		t.Fatalf("top 3 = %d entries", len(top))
	}
	// pv_native_safe_halt 30, htab_map_update_elem 20 self (32 total), [user] 15.
	if top[0].Name != "pv_native_safe_halt" || top[0].Self != 30 || top[0].SelfPct != 30 {
		t.Errorf("top[0] = %+v", top[0])
	}
	if top[1].Name != "htab_map_update_elem" || top[1].Self != 20 || top[1].Total != 32 {
		t.Errorf("top[1] = %+v", top[1])
	}
	if top[2].Name != "[user]" || top[2].Kind != KindUser {
		t.Errorf("top[2] = %+v", top[2])
	}
	if n := len(Top(p, 0)); n != len(Symbols(p)) {
		t.Errorf("Top(0) = %d, want all %d", n, len(Symbols(p)))
	}
	var b bytes.Buffer
	WriteTopText(&b, top, p.Total())
	if !strings.Contains(b.String(), "  20.00   32.00       20       32  htab_map_update_elem") {
		t.Errorf("text table:\n%s", b.String())
	}
	b.Reset()
	WriteTopMarkdown(&b, top, p.Total())
	if !strings.Contains(b.String(), "| `htab_map_update_elem` | kernel | 20.00 | 32.00 | 20 | 32 |") {
		t.Errorf("markdown table:\n%s", b.String())
	}
}

func TestDiff(t *testing.T) {
	// Different sizes: percentages are of each profile's own samples.
	base, _ := ParseFoldedString("t;a;upd 20\nt;a;other 20\nt;gone 10\n")   // 50
	patched, _ := ParseFoldedString("t;a;upd 60\nt;a;other 30\nt;new 10\n") // 100
	ds := Diff(base, patched, 0)
	got := map[string]Delta{}
	for _, d := range ds {
		got[d.Name] = d
	}
	check := func(name string, selfPP, totalPP float64) {
		t.Helper()
		d, ok := got[name]
		if !ok {
			t.Fatalf("no delta for %s", name)
		}
		if math.Abs(d.SelfPP-selfPP) > 1e-9 || math.Abs(d.TotalPP-totalPP) > 1e-9 {
			t.Errorf("%s: Δself %.3f Δtotal %.3f, want %.3f %.3f", name, d.SelfPP, d.TotalPP, selfPP, totalPP)
		}
	}
	check("upd", 60-40, 60-40)   // 40% → 60%
	check("other", 30-40, 30-40) // 40% → 30%
	check("a", 0, 90-80)         // total 80% → 90%, no self
	check("gone", -20, -20)
	check("new", 10, 10)
	if !got["gone"].OnlyBase || !got["new"].OnlyPt {
		t.Error("one-sided symbols not marked")
	}
	// Sorted by the larger change: gone and upd (20, by name), then
	// new and other (10 in self and total), then a (10 in total only).
	if got, want := strings.Join(names(ds), " "), "gone upd new other a"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
	if len(Diff(base, patched, 2)) != 2 {
		t.Error("n not applied")
	}
	var b bytes.Buffer
	WriteDiffText(&b, ds)
	if !strings.Contains(b.String(), "+20.00    40.00    60.00    +20.00    40.00    60.00  upd") {
		t.Errorf("text diff:\n%s", b.String())
	}
	b.Reset()
	WriteDiffMarkdown(&b, ds)
	if !strings.Contains(b.String(), "| `gone` (base only) | -20.00 | 20.00 | 0.00 | -20.00 | 20.00 | 0.00 |") {
		t.Errorf("markdown diff:\n%s", b.String())
	}
}

func names(ds []Delta) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Name)
	}
	return out
}
