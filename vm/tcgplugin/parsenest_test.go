package tcgplugin

import (
	"reflect"
	"strings"
	"testing"
)

// goodNest is goodSplit with the inner target's calls nested in the
// outer's.
var goodNest = strings.Replace(strings.Replace(goodSplit, "nests 0", "nests 1", 1), "exit\n",
	"nest 100000 100040 5 10 2 100\nexit\n", 1)

func TestParseNests(t *testing.T) {
	c, err := Parse(strings.NewReader(goodNest))
	if err != nil {
		t.Fatal(err)
	}
	want := []Nest{{Outer: 0x100000, Inner: 0x100040, Calls: 5, Insns: 10, Mem: 2, Cycles: 100}}
	if got := c.Windows[0].Nests; !reflect.DeepEqual(got, want) {
		t.Errorf("Nests:\n got %+v\nwant %+v", got, want)
	}
}

// Each bad input breaks goodNest's nest line (line 15); the error names
// it.
func TestParseNestsBad(t *testing.T) {
	r := strings.Replace
	const line = "nest 100000 100040 5 10 2 100"
	for _, tc := range []struct{ name, in, err string }{
		{"fields", r(goodNest, line, "nest 100000 100040 5 10 2", 1), "line 15: want nest <outer> <inner>"},
		{"hex", r(goodNest, line, "nest 10000g 100040 5 10 2 100", 1), "line 15: bad number"},
		{"outside", r(goodNest, line, "nest 100000 100100 5 10 2 100", 1), "line 15: nest 100000 100100 outside the contexts range"},
		{"itself", r(goodNest, line, "nest 100040 100040 5 10 2 100", 1), "line 15: nest 100040 in itself"},
		{"no calls", r(goodNest, line, "nest 100000 100040 0 10 2 100", 1), "line 15: nest 100000 100040: 0 calls for 10 instructions"},
		{"cycles", r(goodNest, line, "nest 100000 100040 5 10 2 9", 1), "line 15: nest 100000 100040: cycles 9 below its 10 instructions"},
		{"unsorted", r(r(goodNest, "nests 1", "nests 2", 1), line, line+"\n"+line, 1), "line 16: nest 100000 100040 not after 100000 100040"},
		{"over the inner's", r(goodNest, line, "nest 100000 100040 6 10 2 100", 1), "line 15: window 0: nest 100000 100040: calls 6 insns 10 cycles 100, more than 100040's 5 10 100"},
		{"over the outer's", r(goodNest, line, "nest 100040 100000 5 20 2 200", 1), "line 15: window 0: nest 100040 100000: calls 5 insns 20 cycles 200, more than 100000's 5 20 200 or 100040's insns 10 cycles 100"},
		{"no ctx", r(goodNest, line, "nest 100000 100080 1 1 0 1", 1), "line 15: window 0: nest 100000 100080 of a target with no ctx line"},
		{"missing", r(goodNest, line+"\n", "", 1), "line 15: \"exit\" inside window 0, which expects 1 more nest lines"},
		{"extra", r(goodNest, "nests 1", "nests 0", 1), "line 15: nest line outside a window's block"},
	} {
		c, err := Parse(strings.NewReader(tc.in))
		if err == nil {
			t.Errorf("%s: Parse succeeded: %+v", tc.name, c)
			continue
		}
		if !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: error %q does not contain %q", tc.name, err, tc.err)
		}
	}
}
