package tcgplugin

import (
	"encoding/json"
	"reflect"
	"testing"
)

// A range is as run as the most-entered block that holds part of it.
func TestRuns(t *testing.T) {
	w := &Window{PCs: []PC{
		{Addr: 0x100, End: 0x110, Execs: 5, Insns: 20},
		{Addr: 0x110, End: 0x120, Execs: 7, Insns: 21}, // a loop body
		{Addr: 0x180, End: 0x190, Insns: 4},            // counted, never entered: not a block
		{Addr: 0x200, End: 0x204, Execs: 1, Insns: 1, In: ClassCounts{ClassSoftIRQ: 1}, Calls: [2]CallEntries{{0xa0, 1}}},
	}}
	bs := w.Blocks(func(t uint64) bool { return t == 0xa0 })
	if len(bs) != 3 {
		t.Fatalf("blocks %v, want the 3 entered", bs)
	}
	for _, c := range []struct {
		lo, hi, want uint64
	}{
		{0x108, 0x10c, 5}, // inside the first block
		{0x10c, 0x114, 7}, // across both: the loop's count
		{0x120, 0x200, 0}, // between blocks: never ran
		{0x0f0, 0x100, 0}, // ends where a block starts
		{0x203, 0x300, 1}, // overlaps the last block's end
	} {
		if got := bs.Runs(c.lo, c.hi); got != c.want {
			t.Errorf("Runs(%#x, %#x) = %d, want %d", c.lo, c.hi, got, c.want)
		}
	}
	b, err := json.Marshal(bs)
	if n, top := bs.RunsIn(0x200, 0x204); n != 1 || top.In != (ClassCounts{ClassSoftIRQ: 1}) || top.Prog != 1 {
		t.Errorf("RunsIn = %d %+v, want 1 in softirq, in a program's call", n, top)
	}
	if err != nil || string(b) != "[[256,272,5],[272,288,7],[512,516,1,0,1,0,0,1]]" {
		t.Fatalf("marshal %s, %v", b, err)
	}
	var back Blocks
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, bs) {
		t.Errorf("round trip %v, %v", back, err)
	}
	for _, bad := range []string{"[[16,16,1]]", "[[16,17,1,1,1,0,0,0]]", "[[16,17,1,1]]", "[[16,17,1,0,0,18446744073709551615,2,0]]", "[[16,17,1,0,0,0,0,2]]"} {
		if err := json.Unmarshal([]byte(bad), &back); err == nil {
			t.Errorf("%s was read", bad)
		}
	}
}
