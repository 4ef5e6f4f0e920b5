package tcgplugin

import (
	"fmt"
	"sort"
)

// Nest is what the calls of Inner ran inside calls of Outer (README.md,
// Nested calls): Calls calls that opened and closed in the window while
// a call of Outer was the innermost context open on their vCPU, and
// their counts. Cycles is 0 without the cache model.
type Nest struct {
	Outer, Inner              uint64
	Calls, Insns, Mem, Cycles uint64
}

// nest reads "nest <hex outer> <hex inner> <calls> <insns> <mem>
// <cycles>", by outer then inner, after a window's split lines.
func (p *parser) nest(f []string) error {
	if p.nests == 0 {
		return fmt.Errorf("nest line outside a window's block")
	}
	a, n, err := twoAddrs(f, "nest <outer> <inner> <calls> <insns> <mem> <cycles>")
	if err != nil {
		return err
	}
	x := Nest{Outer: a[0], Inner: a[1], Calls: n[0], Insns: n[1], Mem: n[2], Cycles: n[3]}
	if l := len(p.w.Nests); l > 0 {
		if q := p.w.Nests[l-1]; q.Outer > x.Outer || q.Outer == x.Outer && q.Inner >= x.Inner {
			return fmt.Errorf("nest %x %x not after %x %x", x.Outer, x.Inner, q.Outer, q.Inner)
		}
	}
	r := p.c.Contexts
	switch {
	case x.Outer < r.Lo || x.Outer >= r.Hi || x.Inner < r.Lo || x.Inner >= r.Hi:
		return fmt.Errorf("nest %x %x outside the contexts range %x-%x", x.Outer, x.Inner, r.Lo, r.Hi)
	case x.Outer == x.Inner:
		return fmt.Errorf("nest %x in itself", x.Outer)
	case x.Calls == 0 || x.Calls > x.Insns:
		return fmt.Errorf("nest %x %x: %d calls for %d instructions", x.Outer, x.Inner, x.Calls, x.Insns)
	case !p.c.Cache && x.Cycles != 0:
		return fmt.Errorf("cycles %d without the cache model", x.Cycles)
	case p.c.Cache && x.Cycles < x.Insns:
		return fmt.Errorf("nest %x %x: cycles %d below its %d instructions", x.Outer, x.Inner, x.Cycles, x.Insns)
	}
	p.w.Nests = append(p.w.Nests, x)
	p.nests--
	return p.check()
}

// nestsFit checks a finished window's nests against its contexts: both
// targets counted in the window, and the nested calls ran no more than
// their target's calls and than the calls around them.
func (p *parser) nestsFit() error {
	ctx := func(t uint64) *Context {
		j := sort.Search(len(p.w.Contexts), func(j int) bool { return p.w.Contexts[j].Target >= t })
		if j == len(p.w.Contexts) || p.w.Contexts[j].Target != t {
			return nil
		}
		return &p.w.Contexts[j]
	}
	for _, x := range p.w.Nests {
		o, in := ctx(x.Outer), ctx(x.Inner)
		switch {
		case o == nil || in == nil:
			return fmt.Errorf("window %d: nest %x %x of a target with no ctx line", p.w.Index, x.Outer, x.Inner)
		case x.Calls > in.Calls || x.Insns > in.Insns || x.Cycles > in.Cycles || x.Insns > o.Insns || x.Cycles > o.Cycles:
			return fmt.Errorf("window %d: nest %x %x: calls %d insns %d cycles %d, more than %x's %d %d %d or %x's insns %d cycles %d",
				p.w.Index, x.Outer, x.Inner, x.Calls, x.Insns, x.Cycles, x.Inner, in.Calls, in.Insns, in.Cycles, x.Outer, o.Insns, o.Cycles)
		}
	}
	return nil
}
