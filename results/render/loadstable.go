package render

import (
	"fmt"
	"strings"

	"github.com/kci-dev/kci/results/verdict"
)

// loadsTable renders the rows; a side that did not load reads "FAILED"
// and the error follows under the table.
func loadsTable(rows []verdict.LoadRow) (*table, []string) {
	t := &table{
		header: []string{"variant", "prog", "insns", "xlated B", "jited B", "verify µs", "load ms", "change"},
		right:  []bool{false, false, true, true, true, true, true, false},
	}
	var notes []string
	for _, r := range rows {
		if r.Base.Failed != "" || r.Patched.Failed != "" {
			if r.Patched.Failed != "" && r.Base.Failed == "" {
				notes = append(notes, r.Variant+": stopped loading on patched: "+oneLine(r.Patched.Failed))
			} else if r.Patched.Failed == "" && r.Base.Failed != "" {
				notes = append(notes, r.Variant+": loads on patched only; base: "+oneLine(r.Base.Failed))
			}
		}
		t.add(r.Variant, r.Program, pair(r.Base.VerifiedInsns, r.Patched.VerifiedInsns, r),
			pair(r.Base.XlatedBytes, r.Patched.XlatedBytes, r), pair(r.Base.JitedBytes, r.Patched.JitedBytes, r),
			pair(fmt.Sprint(r.Base.VerifyUs), fmt.Sprint(r.Patched.VerifyUs), r),
			pair(fmt.Sprintf("%.1f", float64(r.Base.LoadNs)/1e6), fmt.Sprintf("%.1f", float64(r.Patched.LoadNs)/1e6), r),
			loadChange(r))
	}
	return t, notes
}

// pair is "base → patched", one value when they agree or a side is absent.
func pair(base, patched string, r verdict.LoadRow) string {
	switch {
	case r.Base.Boots == 0 && r.Patched.Boots == 0:
		return "-"
	case r.Patched.Boots == 0:
		return base
	case r.Base.Boots == 0 || base == patched:
		return patched
	}
	return base + " → " + patched
}

func loadChange(r verdict.LoadRow) string {
	switch {
	case r.Patched.Failed != "" && r.Base.Failed == "":
		return "STOPPED LOADING"
	case r.Base.Failed != "" && r.Patched.Failed == "":
		return "loads now"
	case r.Base.Boots == 0 || r.Patched.Boots == 0:
		return ""
	case r.Base.VerifiedInsns != r.Patched.VerifiedInsns || r.Base.XlatedBytes != r.Patched.XlatedBytes || r.Base.JitedBytes != r.Patched.JitedBytes:
		return "changed" // the section is the verifier and JIT: their output
	}
	return "same"
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
