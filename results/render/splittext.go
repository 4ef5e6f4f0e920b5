package render

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/benchtab"
)

// splitTextTop is how many of a program's functions the text names; the
// rest are summed into one line (the bench table's JSON keeps them).
const splitTextTop = 8

// splitText writes each program's calls split by function, a call: what
// a profile of the program's children reads, in the plugin's counts.
func splitText(b *strings.Builder, splits []benchtab.CallSplit) {
	if len(splits) == 0 {
		return
	}
	unit := splits[0].Unit
	fmt.Fprintf(b, "\ninside each program's calls, by function (what ran while the call was the innermost one open: "+
		"the program's own code as bpf:<prog>, the kernel's by name; mean over boots [lowest, highest], "+
		"share of the whole call; under the cache model, the part of it the model charged to the function's "+
		"instruction fetches; %s):\n", unit)
	for _, s := range splits {
		if s.Unit != unit {
			unit = s.Unit
			fmt.Fprintf(b, "(%s from here on)\n", unit)
		}
		splitProg(b, s)
	}
}

// splitProg writes one program's split: a heading line, its top
// functions, the rest of them summed, the small and nested rows, and the
// accountant taken out.
func splitProg(b *strings.Builder, s benchtab.CallSplit) {
	boots := "boots"
	if s.Boots == 1 {
		boots = "boot"
	}
	stalls := ""
	if s.Unit == results.ModelledCyclesPerCallLabel {
		stalls = fmt.Sprintf(" (%s instructions; the model's stalls on them: fetch %s, data %s)",
			fmtNs(s.Insns), fmtNs(s.FetchStall), fmtNs(s.DataStall))
	}
	fmt.Fprintf(b, "  %s %s: %s a call%s, %d %s\n", printable(s.Variant), printable(s.Prog), fmtNs(s.Total), stalls, s.Boots, boots)
	cycles := s.Unit == results.ModelledCyclesPerCallLabel
	var rest benchtab.SplitFunc
	var tail []benchtab.SplitFunc
	n := 0
	for _, f := range s.Funcs {
		switch {
		case f.Name == benchtab.SplitOther || f.Name == benchtab.SplitNested:
			tail = append(tail, f)
		case n == splitTextTop:
			rest.Mean += f.Mean
			rest.Share += f.Share
		default:
			n++
			splitLine(b, f, cycles)
		}
	}
	if rest.Mean > 0 {
		fmt.Fprintf(b, "    %9s %5.1f %%  the rest of its functions at 1 %% or more\n", fmtNs(rest.Mean), 100*rest.Share)
	}
	for _, f := range tail {
		splitLine(b, f, cycles && f.Name == benchtab.SplitOther)
	}
	if s.Accountant >= 0.05 {
		fmt.Fprintf(b, "    %9s  kci's context accountant inside its calls (interrupts that landed in them): "+
			"taken out of the call and of every line above\n", fmtNs(s.Accountant))
	}
}

func splitLine(b *strings.Builder, f benchtab.SplitFunc, fetch bool) {
	col := ""
	if fetch {
		col = fmt.Sprintf("fetch %7s  ", fmtNs(f.Fetch))
	}
	fmt.Fprintf(b, "    %9s %5.1f %%  [%s, %s]  %s%s\n", fmtNs(f.Mean), 100*f.Share, fmtNs(f.Min), fmtNs(f.Max), col, printable(f.Name))
}

// printable is a name from a record (untrusted: a run directory may come
// from anyone) with every character a terminal would act on replaced.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return '?'
	}, s)
}
