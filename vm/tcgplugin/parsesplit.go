package tcgplugin

import (
	"fmt"
	"sort"
	"strings"
)

// Split is what the block at Addr ran while a call of Target was the
// innermost call context open on its vCPU (README.md, Calls by block):
// Execs entries, Insns instructions, Cycles modelled cycles (0 without
// the cache model), of which Fetch the penalties of its instruction
// fetches (the rest over Insns are its data accesses'). A target's splits sum to its Context's counts less
// those of the contexts that ran nested in its calls.
type Split struct {
	Target, Addr                uint64
	Execs, Insns, Cycles, Fetch uint64
}

// split reads "split <hex target> <hex block> <entries> <insns>
// <cycles> <fetch cycles>", a window's block inside one target's calls, by target then
// block, after its pc lines.
func (p *parser) split(f []string) error {
	if p.splits == 0 {
		return fmt.Errorf("split line outside a window's block")
	}
	a, n, err := twoAddrs(f, "split <target> <block> <entries> <insns> <cycles> <fetch>")
	if err != nil {
		return err
	}
	s := Split{Target: a[0], Addr: a[1], Execs: n[0], Insns: n[1], Cycles: n[2], Fetch: n[3]}
	if l := len(p.w.Splits); l > 0 {
		if q := p.w.Splits[l-1]; q.Target > s.Target || q.Target == s.Target && q.Addr >= s.Addr {
			return fmt.Errorf("split %x %x not after %x %x", s.Target, s.Addr, q.Target, q.Addr)
		}
	}
	if err := p.splitFits(s); err != nil {
		return err
	}
	p.w.Splits = append(p.w.Splits, s)
	p.splits--
	return p.check()
}

// twoAddrs reads a line of two hex addresses and then counts, of the
// shape want names (its field count is the line's).
func twoAddrs(f []string, want string) (addrs, counts []uint64, err error) {
	if len(f) != len(strings.Fields(want)) {
		return nil, nil, fmt.Errorf("want %s", want)
	}
	if addrs, err = uints(f[1:3], 16); err != nil {
		return nil, nil, err
	}
	if counts, err = uints(f[3:], 10); err != nil {
		return nil, nil, err
	}
	return addrs, counts, nil
}

// splitFits checks one split line against its window: a target in the
// contexts' range, a block the window counted and no more of its
// entries, at least one instruction an entry, cycles only with the
// cache model and never below the instructions, fetch penalties within
// the cycles over the instructions.
func (p *parser) splitFits(s Split) error {
	r := p.c.Contexts
	if s.Target < r.Lo || s.Target >= r.Hi {
		return fmt.Errorf("split %x outside the contexts range %x-%x", s.Target, r.Lo, r.Hi)
	}
	i := sort.Search(len(p.w.PCs), func(i int) bool { return p.w.PCs[i].Addr >= s.Addr })
	if i == len(p.w.PCs) || p.w.PCs[i].Addr != s.Addr {
		return fmt.Errorf("split %x: block %x has no pc line", s.Target, s.Addr)
	}
	switch pc := p.w.PCs[i]; {
	case s.Execs == 0 || s.Execs > pc.Execs:
		return fmt.Errorf("split %x %x: %d entries, of the block's %d", s.Target, s.Addr, s.Execs, pc.Execs)
	case s.Insns < s.Execs:
		return fmt.Errorf("split %x %x: %d entries for %d instructions", s.Target, s.Addr, s.Execs, s.Insns)
	case !p.c.Cache && s.Cycles+s.Fetch != 0:
		return fmt.Errorf("cycles %d and fetch cycles %d without the cache model", s.Cycles, s.Fetch)
	case p.c.Cache && s.Cycles < s.Insns:
		return fmt.Errorf("split %x %x: cycles %d below its %d instructions", s.Target, s.Addr, s.Cycles, s.Insns)
	case p.c.Cache && s.Fetch > s.Cycles-s.Insns:
		return fmt.Errorf("split %x %x: fetch cycles %d over its %d cycles' %d penalties", s.Target, s.Addr, s.Fetch, s.Cycles, s.Cycles-s.Insns)
	}
	return nil
}

// splitsFit checks a finished window's splits against its contexts: a
// target's splits are what ran while it was innermost, so they are part
// of its counts.
func (p *parser) splitsFit() error {
	var sum Split
	for i, s := range p.w.Splits {
		if i == 0 || s.Target != sum.Target {
			sum = Split{Target: s.Target}
		}
		sum.Insns += s.Insns
		sum.Cycles += s.Cycles
		if i+1 < len(p.w.Splits) && p.w.Splits[i+1].Target == s.Target {
			continue
		}
		j := sort.Search(len(p.w.Contexts), func(j int) bool { return p.w.Contexts[j].Target >= s.Target })
		if j == len(p.w.Contexts) || p.w.Contexts[j].Target != s.Target {
			return fmt.Errorf("window %d: splits of target %x, which has no ctx line", p.w.Index, s.Target)
		}
		if c := p.w.Contexts[j]; sum.Insns > c.Insns || sum.Cycles > c.Cycles {
			return fmt.Errorf("window %d: target %x's splits sum to insns %d cycles %d, more than its calls' %d %d",
				p.w.Index, s.Target, sum.Insns, sum.Cycles, c.Insns, c.Cycles)
		}
	}
	return nil
}
