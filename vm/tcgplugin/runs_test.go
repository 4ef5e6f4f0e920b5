package tcgplugin

import "testing"

// A range is as run as the most-entered block that holds part of it.
func TestRuns(t *testing.T) {
	w := &Window{PCs: []PC{
		{Addr: 0x100, End: 0x110, Execs: 5},
		{Addr: 0x110, End: 0x120, Execs: 7}, // a loop body
		{Addr: 0x200, End: 0x204, Execs: 1},
	}}
	for _, c := range []struct {
		lo, hi, want uint64
	}{
		{0x108, 0x10c, 5}, // inside the first block
		{0x10c, 0x114, 7}, // across both: the loop's count
		{0x120, 0x200, 0}, // between blocks: never ran
		{0x0f0, 0x100, 0}, // ends where a block starts
		{0x203, 0x300, 1}, // overlaps the last block's end
	} {
		if got := w.Runs(c.lo, c.hi); got != c.want {
			t.Errorf("Runs(%#x, %#x) = %d, want %d", c.lo, c.hi, got, c.want)
		}
	}
}
