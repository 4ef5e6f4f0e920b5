package tcgplugin

import (
	"encoding/json"
	"fmt"
)

// Block is where a translation block's code lies, [Addr, End), and how
// many times it was entered in a window. A block runs straight through,
// so each of its instructions ran Execs times. In is how many of those
// entries ran in each stack class, Prog how many inside a program's call
// (zero when the run did not count them by context).
type Block struct {
	Addr, End, Execs uint64
	In               ClassCounts
	Prog             uint64
}

// Blocks are a window's entered blocks, by address. They marshal as
// [[addr, end, execs], …], a block counted by context as [addr, end,
// execs, hardirq, softirq, syscall, deferred, prog]: a boot keeps
// thousands.
type Blocks []Block

// Blocks is the window's blocks that were entered (format 2 counts the
// entries), in address order. prog, if not nil, says which call
// contexts' targets are programs (a BPF program's entry, not a
// trampoline's, inside which the traced function runs): entries inside
// their calls are the blocks' Prog.
func (w *Window) Blocks(prog func(target uint64) bool) Blocks {
	var bs Blocks
	for _, p := range w.PCs {
		if p.Execs == 0 {
			continue
		}
		b := Block{Addr: p.Addr, End: p.End, Execs: p.Execs, In: p.In}
		for _, c := range p.Calls {
			if prog != nil && c.Entries > 0 && prog(c.Target) {
				b.Prog += c.Entries
			}
		}
		bs = append(bs, b)
	}
	return bs
}

// Runs is how many times the code in [lo, hi) ran: the most any block
// holding part of it was entered (all of a block's part of the range ran
// each time it was). 0 when no entered block touches the range.
func (bs Blocks) Runs(lo, hi uint64) uint64 {
	n, _ := bs.RunsIn(lo, hi)
	return n
}

// RunsIn is Runs and the block that ran that often (zero if none).
func (bs Blocks) RunsIn(lo, hi uint64) (uint64, Block) {
	var top Block
	for _, b := range bs {
		if b.Addr < hi && b.End > lo && b.Execs > top.Execs {
			top = b
		}
	}
	return top.Execs, top
}

// MarshalJSON writes the blocks as triples, with their entries by
// context after them when counted.
func (bs Blocks) MarshalJSON() ([]byte, error) {
	t := make([][]uint64, len(bs))
	for i, b := range bs {
		t[i] = []uint64{b.Addr, b.End, b.Execs}
		if b.In != (ClassCounts{}) || b.Prog > 0 {
			t[i] = append(append(t[i], b.In[:]...), b.Prog)
		}
	}
	return json.Marshal(t)
}

// UnmarshalJSON reads what MarshalJSON writes, refusing a block that
// ends before it starts or whose entries by context are more than its
// entries: the blocks are read back from the result cache, untrusted.
func (bs *Blocks) UnmarshalJSON(data []byte) error {
	var t [][]uint64
	if err := json.Unmarshal(data, &t); err != nil {
		return err
	}
	out := make(Blocks, len(t))
	for i, x := range t {
		if len(x) != 3 && len(x) != 4+NClasses {
			return fmt.Errorf("block %d: %d numbers, want 3 or %d", i, len(x), 4+NClasses)
		}
		if x[1] <= x[0] {
			return fmt.Errorf("block %d: end %#x not after %#x", i, x[1], x[0])
		}
		out[i] = Block{Addr: x[0], End: x[1], Execs: x[2]}
		if len(x) > 3 {
			copy(out[i].In[:], x[3:])
			out[i].Prog = x[3+NClasses]
		}
		if !out[i].In.within(x[2]) || out[i].Prog > x[2] {
			return fmt.Errorf("block %d: entries by context %v and %d in programs' calls, of %d", i, out[i].In, out[i].Prog, x[2])
		}
	}
	*bs = out
	return nil
}
