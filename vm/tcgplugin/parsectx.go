package tcgplugin

import (
	"fmt"
	"strconv"
)

// CtxRange is the entry range of a run's call contexts: a call whose
// code enters [Lo, Hi) opens one (README.md, Call contexts). Blocks says
// the run counted each block's entries per context (PC.In); Marks is how
// many functions marked a stack class (Options.Marks).
type CtxRange struct {
	Lo, Hi uint64
	Blocks bool
	Marks  int
}

// Class is the kind of work a block entry ran in (README.md, Stack
// classes): what the innermost marked call on the vCPU's stack began.
type Class int

const (
	ClassHardIRQ Class = iota
	ClassSoftIRQ
	ClassSyscall
	ClassDeferred
	NClasses int = iota
)

// classNames are the plugin's names (mark=<name>@<addr>), by Class.
var classNames = [NClasses]string{"hardirq", "softirq", "syscall", "deferred"}

func (k Class) String() string {
	if k < 0 || int(k) >= NClasses {
		return fmt.Sprintf("class(%d)", int(k))
	}
	return classNames[k]
}

// ClassCounts are block entries by Class.
type ClassCounts [NClasses]uint64

// CallEntries are a block's entries inside call contexts whose innermost
// one's target is Target (0: no target yet, no entries).
type CallEntries struct{ Target, Entries uint64 }

// Sum is the entries in any class.
func (c ClassCounts) Sum() uint64 {
	var n uint64
	for _, x := range c {
		n += x
	}
	return n
}

// within says the entries add up to at most n (and do not overflow).
func (c ClassCounts) within(n uint64) bool {
	left := n
	for _, x := range c {
		if x > left {
			return false
		}
		left -= x
	}
	return true
}

// Mark makes the calls of the function at Addr begin work of Class.
type Mark struct {
	Class Class
	Addr  uint64
}

// Context is what ran inside the calls into one target of the entry range
// in a window: the callee's code, what it called, and interrupts that
// landed meanwhile, as bpf_stats times a BPF program's run. Calls is how
// many such calls began in the window (a call open when it began counts
// its rest, no call). Contexts nest: a call's counts include those of
// the calls into other targets made inside it; what ran while several
// calls of one target were open on a vCPU counts once.
type Context struct {
	Target                    uint64
	Calls, Insns, Mem, Cycles uint64
	// PerVCPU is each vCPU's share that counted something, by vCPU
	// (nil with one vCPU).
	PerVCPU []CtxVCPU
}

// CtxVCPU is one vCPU's share of a Context.
type CtxVCPU struct {
	VCPU                      int
	Calls, Insns, Mem, Cycles uint64
}

// ctxKey orders a window's ctx lines: by target, then vCPU.
type ctxKey struct {
	set    bool
	target uint64
	vcpu   int
}

func (k ctxKey) before(o ctxKey) bool {
	return !k.set || k.target < o.target || k.target == o.target && k.vcpu < o.vcpu
}

// contexts reads line 3, "contexts off" or
// "contexts <hex lo> <hex hi> blocks on|off marks <n>".
func (p *parser) contexts(f []string) error {
	if p.line != 3 {
		return fmt.Errorf("contexts line must be line 3")
	}
	if len(f) == 2 && f[1] == "off" {
		return nil
	}
	if len(f) != 7 || f[3] != "blocks" || (f[4] != "on" && f[4] != "off") || f[5] != "marks" {
		return fmt.Errorf("want contexts off or contexts <lo> <hi> blocks on|off marks <n>")
	}
	marks, err := strconv.Atoi(f[6])
	if err != nil || marks < 0 || marks > 0 && f[4] != "on" {
		return fmt.Errorf("contexts marks %q: want a count, 0 with blocks off", f[6])
	}
	r, err := uints(f[1:3], 16)
	if err != nil {
		return err
	}
	if r[0] >= r[1] {
		return fmt.Errorf("contexts range %x-%x is empty", r[0], r[1])
	}
	p.c.Contexts = &CtxRange{Lo: r[0], Hi: r[1], Blocks: f[4] == "on", Marks: marks}
	return nil
}

// ctx reads "ctx <hex target> <vcpu> <calls> <insns> <mem> <cycles>", a
// window's counts of one target on one vCPU, by target then vCPU, after
// its vcpu lines.
func (p *parser) ctx(f []string) error {
	if p.ctxs == 0 {
		return fmt.Errorf("ctx line outside a window's block")
	}
	if len(f) != 7 {
		return fmt.Errorf("want ctx <target> <vcpu> <calls> <insns> <mem> <cycles>")
	}
	t, err := uints(f[1:2], 16)
	if err != nil {
		return err
	}
	v, err := strconv.Atoi(f[2])
	if err != nil || v < 0 || v >= p.c.VCPUs {
		return fmt.Errorf("ctx vcpu %q: want 0 to %d", f[2], p.c.VCPUs-1)
	}
	n, err := uints(f[3:], 10)
	if err != nil {
		return err
	}
	k := ctxKey{true, t[0], v}
	if !p.lastCtx.before(k) {
		return fmt.Errorf("ctx %x vcpu %d not after %x vcpu %d", t[0], v, p.lastCtx.target, p.lastCtx.vcpu)
	}
	p.lastCtx = k
	c := CtxVCPU{VCPU: v, Calls: n[0], Insns: n[1], Mem: n[2], Cycles: n[3]}
	if err := p.ctxFits(t[0], c); err != nil {
		return err
	}
	p.addCtx(t[0], c)
	p.ctxs--
	return p.check()
}

// ctxFits checks one ctx line against the run and its window: a target
// in the range, no more than the vCPU ran, a call runs at least one
// instruction, cycles only with the cache model and never below the
// instructions.
func (p *parser) ctxFits(target uint64, c CtxVCPU) error {
	r := p.c.Contexts
	if target < r.Lo || target >= r.Hi {
		return fmt.Errorf("ctx %x outside the contexts range %x-%x", target, r.Lo, r.Hi)
	}
	ran := VCPU{Insns: p.w.Insns, Mem: p.w.Mem, Cycles: p.w.Cycles}
	if len(p.w.PerVCPU) > 0 {
		ran = p.w.PerVCPU[c.VCPU]
	}
	switch {
	case !p.c.Cache && c.Cycles != 0:
		return fmt.Errorf("cycles %d without the cache model", c.Cycles)
	case c.Insns > ran.Insns || c.Mem > ran.Mem || c.Cycles > ran.Cycles:
		return fmt.Errorf("ctx %x vcpu %d: insns %d mem %d cycles %d, more than the vCPU's %d %d %d in the window",
			target, c.VCPU, c.Insns, c.Mem, c.Cycles, ran.Insns, ran.Mem, ran.Cycles)
	case c.Calls > c.Insns:
		return fmt.Errorf("ctx %x vcpu %d: %d calls for %d instructions", target, c.VCPU, c.Calls, c.Insns)
	case p.c.Cache && c.Cycles < c.Insns:
		return fmt.Errorf("ctx %x vcpu %d: cycles %d below its %d instructions", target, c.VCPU, c.Cycles, c.Insns)
	}
	return nil
}

// addCtx adds a ctx line to the window's Context of its target.
func (p *parser) addCtx(target uint64, c CtxVCPU) {
	cs := p.w.Contexts
	if len(cs) == 0 || cs[len(cs)-1].Target != target {
		p.w.Contexts = append(cs, Context{Target: target})
	}
	x := &p.w.Contexts[len(p.w.Contexts)-1]
	x.Calls += c.Calls
	x.Insns += c.Insns
	x.Mem += c.Mem
	x.Cycles += c.Cycles
	if p.c.VCPUs > 1 {
		x.PerVCPU = append(x.PerVCPU, c)
	}
}

// pcContexts reads a pc line's entries by context: "<hardirq> <softirq>
// <syscall> <deferred> <hex target> <entries> <hex target> <entries>
// <entries>", refusing more entries in classes, or in calls, than the
// block's, and entries of no target or of one outside the contexts'
// range.
func (p *parser) pcContexts(pc *PC, f []string) error {
	c, err := uints(f[:NClasses], 10)
	if err != nil {
		return err
	}
	copy(pc.In[:], c)
	if !pc.In.within(pc.Execs) {
		return fmt.Errorf("pc %x: %d entries in stack classes of %d entries", pc.Addr, pc.In.Sum(), pc.Execs)
	}
	f = f[NClasses:]
	t, err := uints([]string{f[0], f[2]}, 16)
	if err != nil {
		return err
	}
	n, err := uints([]string{f[1], f[3], f[4]}, 10)
	if err != nil {
		return err
	}
	r := p.c.Contexts
	for j := range pc.Calls {
		switch {
		case t[j] == 0 && n[j] > 0:
			return fmt.Errorf("pc %x: %d entries in calls of no target", pc.Addr, n[j])
		case t[j] != 0 && (t[j] < r.Lo || t[j] >= r.Hi):
			return fmt.Errorf("pc %x: calls of target %x, outside the contexts range %x-%x", pc.Addr, t[j], r.Lo, r.Hi)
		}
		pc.Calls[j] = CallEntries{Target: t[j], Entries: n[j]}
	}
	pc.CallsOther = n[2]
	left := pc.Execs
	for _, x := range n {
		if x > left {
			return fmt.Errorf("pc %x: %d + %d + %d entries in calls of %d entries", pc.Addr, n[0], n[1], n[2], pc.Execs)
		}
		left -= x
	}
	return nil
}
