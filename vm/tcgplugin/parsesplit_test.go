package tcgplugin

import (
	"reflect"
	"strings"
	"testing"
)

// goodSplit is goodCtx with its calls split by block: the outer target
// ran its own block and one entry of the inner's block while innermost
// (the inner's calls ended before that entry), the inner its block.
var goodSplit = strings.Replace(strings.Replace(goodCtx, "splits 0", "splits 3", 1), "exit\n",
	"split 100000 100000 5 10 100 40\nsplit 100000 100040 1 2 20 0\nsplit 100040 100040 3 6 60 54\nexit\n", 1)

func TestParseSplits(t *testing.T) {
	c, err := Parse(strings.NewReader(goodSplit))
	if err != nil {
		t.Fatal(err)
	}
	want := []Split{
		{Target: 0x100000, Addr: 0x100000, Execs: 5, Insns: 10, Cycles: 100, Fetch: 40},
		{Target: 0x100000, Addr: 0x100040, Execs: 1, Insns: 2, Cycles: 20},
		{Target: 0x100040, Addr: 0x100040, Execs: 3, Insns: 6, Cycles: 60, Fetch: 54},
	}
	if got := c.Windows[0].Splits; !reflect.DeepEqual(got, want) {
		t.Errorf("Splits:\n got %+v\nwant %+v", got, want)
	}
}

// Each bad input breaks one line of goodSplit; the error names that
// line (the sums' check names the window's last).
func TestParseSplitsBad(t *testing.T) {
	r := strings.Replace
	for _, tc := range []struct{ name, in, line string }{
		{"fields", r(goodSplit, "split 100040 100040 3 6 60 54", "split 100040 100040 3 6 60", 1), "line 14: want split <target> <block>"},
		{"fetch over the penalties", r(goodSplit, "100040 3 6 60 54", "100040 3 6 60 55", 1), "line 14: split 100040 100040: fetch cycles 55 over its 60 cycles' 54 penalties"},
		{"hex", r(goodSplit, "split 100040 100040", "split 10004g 100040", 1), "line 14: bad number"},
		{"number", r(goodSplit, "100040 3 6 60", "100040 3 x 60", 1), "line 14: bad number"},
		{"outside", r(goodSplit, "split 100040 100040", "split 100100 100040", 1), "line 14: split 100100 outside the contexts range"},
		{"no block", r(goodSplit, "split 100040 100040", "split 100040 100044", 1), "line 14: split 100040: block 100044 has no pc line"},
		{"unsorted", r(goodSplit, "split 100000 100040", "split 100000 100000", 1), "line 13: split 100000 100000 not after 100000 100000"},
		{"no entries", r(goodSplit, "100040 3 6 60", "100040 0 6 60", 1), "line 14: split 100040 100040: 0 entries, of the block's 5"},
		{"over entries", r(goodSplit, "100040 3 6 60", "100040 6 6 60", 1), "line 14: split 100040 100040: 6 entries, of the block's 5"},
		{"under an instruction", r(goodSplit, "100040 3 6 60", "100040 3 2 60", 1), "line 14: split 100040 100040: 3 entries for 2 instructions"},
		{"cycles", r(goodSplit, "100040 3 6 60 54", "100040 3 6 5 0", 1), "line 14: split 100040 100040: cycles 5 below its 6 instructions"},
		{"over its calls", r(goodSplit, "100000 5 10 100 40", "100000 5 19 100 40", 1), "line 14: window 0: target 100000's splits sum to insns 21 cycles 120, more than its calls' 20 200"},
		{"no calls", r(r(goodSplit, "ctx 100040 0 5 10 2 100\n", "", 1), "ctxs 2", "ctxs 1", 1), "line 13: window 0: splits of target 100040, which has no ctx line"},
		{"missing", r(goodSplit, "split 100040 100040 3 6 60 54\n", "", 1), "line 14: \"exit\" inside window 0, which expects 1 more split lines"},
		{"extra", r(goodSplit, "splits 3", "splits 2", 1), "line 14: split line outside a window's block"},
		{"one more", r(goodSplit, "splits 3", "splits 4", 1), "line 15: \"exit\" inside window 0, which expects 1 more split lines"},
		{"without blocks", r(goodCtxMulti, "splits 0", "splits 1", 1), "line 5: 1 split lines without entries counted by context"},
	} {
		c, err := Parse(strings.NewReader(tc.in))
		if err == nil {
			t.Errorf("%s: Parse succeeded: %+v", tc.name, c)
			continue
		}
		if !strings.Contains(err.Error(), tc.line) {
			t.Errorf("%s: error %q does not contain %q", tc.name, err, tc.line)
		}
	}
}
