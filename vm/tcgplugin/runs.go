package tcgplugin

import (
	"encoding/json"
	"fmt"
)

// Block is where a translation block's code lies, [Addr, End), and how
// many times it was entered in a window. A block runs straight through,
// so each of its instructions ran Execs times.
type Block struct {
	Addr, End, Execs uint64
}

// Blocks are a window's entered blocks, by address. They marshal as
// [[addr, end, execs], …]: a boot keeps thousands.
type Blocks []Block

// Blocks is the window's blocks that were entered (format 2 counts the
// entries), in address order.
func (w *Window) Blocks() Blocks {
	var bs Blocks
	for _, p := range w.PCs {
		if p.Execs > 0 {
			bs = append(bs, Block{Addr: p.Addr, End: p.End, Execs: p.Execs})
		}
	}
	return bs
}

// Runs is how many times the code in [lo, hi) ran: the most any block
// holding part of it was entered (all of a block's part of the range ran
// each time it was). 0 when no entered block touches the range.
func (bs Blocks) Runs(lo, hi uint64) uint64 {
	var n uint64
	for _, b := range bs {
		if b.Addr < hi && b.End > lo && b.Execs > n {
			n = b.Execs
		}
	}
	return n
}

// MarshalJSON writes the blocks as triples.
func (bs Blocks) MarshalJSON() ([]byte, error) {
	t := make([][3]uint64, len(bs))
	for i, b := range bs {
		t[i] = [3]uint64{b.Addr, b.End, b.Execs}
	}
	return json.Marshal(t)
}

// UnmarshalJSON reads triples, refusing a block that ends before it
// starts: the blocks are read back from the result cache, untrusted.
func (bs *Blocks) UnmarshalJSON(data []byte) error {
	var t [][3]uint64
	if err := json.Unmarshal(data, &t); err != nil {
		return err
	}
	out := make(Blocks, len(t))
	for i, x := range t {
		if x[1] <= x[0] {
			return fmt.Errorf("block %d: end %#x not after %#x", i, x[1], x[0])
		}
		out[i] = Block{Addr: x[0], End: x[1], Execs: x[2]}
	}
	*bs = out
	return nil
}
