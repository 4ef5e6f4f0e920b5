package render

import (
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/benchtab"
)

// The bench text names each program's top functions a call with their
// share and range over boots, sums the rest of them into one line, and
// keeps the other functions' and nested calls' rows last; a unit that
// changes is said where it does.
func TestSplitText(t *testing.T) {
	var funcs []benchtab.SplitFunc
	for i := 0; i < 10; i++ {
		funcs = append(funcs, benchtab.SplitFunc{Name: "f" + string(rune('a'+i)), Mean: float64(100 - i), Min: 90, Max: 110, Share: 0.1,
			Fetch: float64(i)})
	}
	funcs = append(funcs, benchtab.SplitFunc{Name: benchtab.SplitOther, Mean: 3, Min: 3, Max: 3, Share: 0.003},
		benchtab.SplitFunc{Name: benchtab.SplitNested, Mean: 7, Min: 0, Max: 14, Share: 0.007})
	var b strings.Builder
	splitText(&b, []benchtab.CallSplit{
		{Variant: "gtp-gtp", Prog: "gtp_write", Unit: results.ModelledCyclesPerCallLabel, Boots: 2, Total: 1000, Funcs: funcs, Accountant: 32.4,
			Insns: 400, FetchStall: 300, DataStall: 270},
		{Variant: "gtp-none", Prog: "x", Unit: results.InstructionsPerCallLabel, Boots: 1, Total: 5,
			Funcs: append(funcs[:1:1], benchtab.SplitFunc{Name: "\x1b[2Jevil", Mean: 1})},
	})
	got := b.String()
	for _, want := range []string{
		"; " + results.ModelledCyclesPerCallLabel + "):\n",
		"  gtp-gtp gtp_write: 1000.0 a call (400.0 instructions; the model's stalls on them: fetch 300.0, data 270.0), 2 boots\n",
		"     100.0  10.0 %  [90.0, 110.0]  fetch     0.0  fa\n",
		"      93.0  10.0 %  [90.0, 110.0]  fetch     7.0  fh\n",
		"     183.0  20.0 %  the rest of its functions at 1 % or more\n",
		"       3.0   0.3 %  [3.0, 3.0]  fetch     0.0  " + benchtab.SplitOther + "\n",
		"       7.0   0.7 %  [0.0, 14.0]  " + benchtab.SplitNested + "\n         32.4  kci's context accountant inside its calls",
		"taken out of the call and of every line above\n(" + results.InstructionsPerCallLabel + " from here on)\n",
		"  gtp-none x: 5.0 a call, 1 boot\n        100.0  10.0 %  [90.0, 110.0]  fa\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b") || !strings.Contains(got, "  ?[2Jevil\n") {
		t.Errorf("a name's escape sequence reached the text:\n%q", got)
	}
	if strings.Contains(got, "  fi\n") {
		t.Errorf("the ninth function has a line of its own:\n%s", got)
	}
	b.Reset()
	splitText(&b, nil)
	if b.Len() != 0 {
		t.Errorf("no splits wrote %q", b.String())
	}
}
