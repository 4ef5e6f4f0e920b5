package tcgplugin

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Version is the output format this package reads.
const Version = 6

// Counts is one QEMU run's output.
type Counts struct {
	Version int
	// VCPUs is the guest's vCPU count; Quantum the instructions a vCPU
	// ran before the plugin ended its turn (0: QEMU's own turns).
	VCPUs   int
	Quantum uint64
	Cache   bool   // the cache model ran
	Model   *Model // nil without the cache model
	// Coherent is the multi-core model (cache=coherent): private caches
	// per vCPU, a shared LLC, MESI states.
	Coherent bool
	// Coherence is the run's totals from boot to exit, with several
	// vCPUs or the coherent model (nil otherwise).
	Coherence *Coherence
	// Contexts is the call contexts' entry range (nil: contexts off).
	Contexts  *CtxRange
	Windows   []Window
	StrayEnds int  // end markers with no window open
	Exited    bool // QEMU ran the plugin's exit callback; false if it was killed
}

// Model is the cache model a run used, as the plugin named it.
type Model struct {
	Name                   string
	L1i, L1d, L2, LLC      Geometry
	LatL2, LatLLC, LatDRAM int // cycles added by an access that hit that level
	// The coherent model's: a line from another core's cache, an upgrade
	// of a shared line, a locked read-modify-write; and its cores.
	LatXfer, LatUpgrade, LatLock, Cores int
}

// Coherence is what the plugin counted over a whole run of several vCPUs:
// turns its quantum ended, and the coherent model's events.
type Coherence struct {
	Turns, Transfers, Upgrades, Invalidations, Locked uint64
}

// VCPU is one vCPU's share of a window.
type VCPU struct{ Insns, Mem, Cycles uint64 }

// Geometry is one cache level: size and line in bytes, associativity.
type Geometry struct{ Size, Ways, Line int }

// Window is what ran between a start marker and the marker (or exit)
// that closed it, the markers excluded.
type Window struct {
	Index  int
	Insns  uint64
	Mem    uint64 // loads and stores, one per access QEMU's callbacks see
	Cycles uint64 // modelled; 0 without the cache model
	// Incomplete is a window closed by the next start marker or by QEMU's
	// exit rather than by an end marker.
	Incomplete bool
	// PerVCPU is each vCPU's share, by index (nil with one vCPU).
	PerVCPU []VCPU
	// Contexts are the window's call contexts, by target (see Context).
	Contexts []Context
	PCs      []PC // by translation-block start address, sorted by Addr
	// Splits are, when the run counted entries by context, what each
	// block ran while a call of each target was the innermost one open
	// on its vCPU, by Target then Addr (see Split).
	Splits []Split
	// Nests are, with contexts, what the calls of one target ran inside
	// another's, by Outer then Inner (see Nest).
	Nests []Nest
}

// PC is the counts of the translation blocks starting at Addr (a guest
// virtual address; every translation of it adds up here). Execs is how
// many times such a block was entered, and End the end of its code (the
// highest of its translations): a block runs straight through, so every
// instruction in [Addr, End) ran Execs times. (Not quite: a block that
// leaves early, at a fault, or a shorter translation (icount) leaves the
// rest of [Addr, End) to a block starting mid-way; and End may include
// up to 14 bytes of an instruction QEMU moved to the next block because
// it crosses a page. README.md says more.) Execs is never more than Insns,
// and is 0 only when Insns is. Coh is, with the coherent model, the
// cross-core events its accesses made: lines brought from another core's
// cache and upgrades of shared lines (each invalidating the others'
// copies). When the run counted entries by context (CtxRange.Blocks), In
// is how many of the entries ran in each stack class, Calls how many ran
// inside call contexts whose innermost one had each of the first two
// targets seen, and CallsOther inside any other's.
type PC struct {
	Addr, Insns, Mem, Cycles, Execs, End uint64
	Coh                                  uint64
	In                                   ClassCounts
	Calls                                [2]CallEntries
	CallsOther                           uint64
}

// Sum is the counts of w's blocks with lo <= Addr < hi; its Addr is lo.
func (w *Window) Sum(lo, hi uint64) PC {
	s := PC{Addr: lo}
	for _, p := range w.PCs {
		if p.Addr >= lo && p.Addr < hi {
			s.Insns += p.Insns
			s.Mem += p.Mem
			s.Cycles += p.Cycles
			s.Coh += p.Coh
		}
	}
	return s
}

// parser holds Parse's state; each method reads one kind of line.
type parser struct {
	c       Counts
	line    int
	header  bool    // the header's cache (and model) line was read
	vcpus   int     // vcpu lines the current window still expects
	ctxs    int     // ctx lines the current window still expects
	pending int     // pc lines the current window still expects
	splits  int     // split lines the current window still expects
	nests   int     // nest lines the current window still expects
	w       *Window // the window being read
	lastCtx ctxKey  // the last ctx line's target and vCPU
}

// Parse reads the plugin's output. It is strict: an unknown line, a bad
// number, an unknown version, a window out of order or a block whose
// lines disagree with its totals is an error naming the line.
func Parse(r io.Reader) (*Counts, error) {
	p := &parser{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p.line++
		if err := p.parseLine(strings.Fields(sc.Text())); err != nil {
			return nil, fmt.Errorf("tcgplugin: line %d: %w", p.line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tcgplugin: line %d: %w", p.line+1, err)
	}
	if p.line == 0 {
		return nil, fmt.Errorf("tcgplugin: empty output (the plugin never started)")
	}
	if p.pending > 0 || p.ctxs > 0 || p.vcpus > 0 || p.splits > 0 || p.nests > 0 {
		return nil, fmt.Errorf("tcgplugin: line %d: window %d ends after %d of its pc lines", p.line, p.w.Index, len(p.w.PCs))
	}
	if !p.header {
		return nil, fmt.Errorf("tcgplugin: line %d: output ends inside the header", p.line)
	}
	return &p.c, nil
}

func (p *parser) parseLine(f []string) error {
	if len(f) == 0 {
		return fmt.Errorf("empty line")
	}
	if p.line == 1 {
		return p.version(f)
	}
	if p.c.Exited {
		return fmt.Errorf("%q after exit", f[0])
	}
	if err := p.expect(f[0]); err != nil {
		return err
	}
	switch f[0] {
	case "contexts":
		return p.contexts(f)
	case "ctx":
		return p.ctx(f)
	case "vcpus":
		return p.vcpuCount(f)
	case "vcpu":
		return p.vcpu(f)
	case "turns":
		return p.turns(f)
	case "cache":
		return p.cache(f)
	case "model":
		return p.model(f)
	case "window":
		return p.window(f)
	case "pc":
		return p.pc(f)
	case "split":
		return p.split(f)
	case "nest":
		return p.nest(f)
	case "stray":
		if len(f) != 1 {
			return fmt.Errorf("stray takes no fields")
		}
		p.c.StrayEnds++
		return nil
	case "exit":
		if len(f) != 1 {
			return fmt.Errorf("exit takes no fields")
		}
		p.c.Exited = true
		return nil
	}
	return fmt.Errorf("unknown line kind %q", f[0])
}

func (p *parser) version(f []string) error {
	if len(f) != 2 || f[0] != "kcicount" {
		return fmt.Errorf("not kcicount output: %q", strings.Join(f, " "))
	}
	v, err := strconv.Atoi(f[1])
	if err != nil {
		return fmt.Errorf("version %q: %w", f[1], err)
	}
	if v != Version {
		return fmt.Errorf("format version %d, this kci reads %d", v, Version)
	}
	p.c.Version = v
	return nil
}

// expect refuses a line of another kind than the window being read
// expects next: its vcpu lines, then its ctx lines, then its pc lines,
// then its split lines, then its nest lines.
func (p *parser) expect(kind string) error {
	switch {
	case p.vcpus > 0 && kind != "vcpu":
		return fmt.Errorf("%q inside window %d, which expects %d more vcpu lines", kind, p.w.Index, p.vcpus)
	case p.vcpus == 0 && p.ctxs > 0 && kind != "ctx":
		return fmt.Errorf("%q inside window %d, which expects %d more ctx lines", kind, p.w.Index, p.ctxs)
	case p.vcpus == 0 && p.ctxs == 0 && p.pending > 0 && kind != "pc":
		return fmt.Errorf("%q inside window %d, which expects %d more pc lines", kind, p.w.Index, p.pending)
	case p.vcpus == 0 && p.ctxs == 0 && p.pending == 0 && p.splits > 0 && kind != "split":
		return fmt.Errorf("%q inside window %d, which expects %d more split lines", kind, p.w.Index, p.splits)
	case p.vcpus == 0 && p.ctxs == 0 && p.pending == 0 && p.splits == 0 && p.nests > 0 && kind != "nest":
		return fmt.Errorf("%q inside window %d, which expects %d more nest lines", kind, p.w.Index, p.nests)
	}
	return nil
}

func (p *parser) cache(f []string) error {
	if p.line != 4 {
		return fmt.Errorf("cache line must be line 4")
	}
	if len(f) != 2 || (f[1] != "on" && f[1] != "off" && f[1] != "coherent") {
		return fmt.Errorf("want cache on|off|coherent")
	}
	p.c.Cache = f[1] != "off"
	p.c.Coherent = f[1] == "coherent"
	if p.c.VCPUs > 1 && f[1] == "on" {
		return fmt.Errorf("cache on (one core's model) with %d vCPUs", p.c.VCPUs)
	}
	p.header = !p.c.Cache
	return nil
}

// model reads
// "model <name> l1i=S:W:L l1d=S:W:L l2=S:W:L llc=S:W:L lat l2=N llc=N dram=N".
func (p *parser) model(f []string) error {
	if !p.c.Cache || p.line != 5 {
		return fmt.Errorf("model line must be line 5, after cache on|coherent")
	}
	want := 10
	if p.c.Coherent {
		want = 14
	}
	if len(f) != want || f[6] != "lat" {
		return fmt.Errorf("want model <name> l1i= l1d= l2= llc= lat l2= llc= dram=%s",
			map[bool]string{true: " xfer= upgrade= lock= cores="}[p.c.Coherent])
	}
	m := &Model{Name: f[1]}
	for i, g := range []*Geometry{&m.L1i, &m.L1d, &m.L2, &m.LLC} {
		key := []string{"l1i", "l1d", "l2", "llc"}[i]
		v, ok := strings.CutPrefix(f[2+i], key+"=")
		if !ok {
			return fmt.Errorf("field %d: want %s=size:ways:line, got %q", 3+i, key, f[2+i])
		}
		n, err := ints(strings.Split(v, ":"), 3)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		*g = Geometry{Size: n[0], Ways: n[1], Line: n[2]}
	}
	lats := []*int{&m.LatL2, &m.LatLLC, &m.LatDRAM, &m.LatXfer, &m.LatUpgrade, &m.LatLock, &m.Cores}
	for i, l := range lats[:want-7] {
		key := []string{"l2", "llc", "dram", "xfer", "upgrade", "lock", "cores"}[i]
		v, ok := strings.CutPrefix(f[7+i], key+"=")
		if !ok {
			return fmt.Errorf("field %d: want %s=cycles, got %q", 8+i, key, f[7+i])
		}
		n, err := ints([]string{v}, 1)
		if err != nil {
			return fmt.Errorf("latency %s: %w", key, err)
		}
		*l = n[0]
	}
	p.c.Model = m
	p.header = true
	return nil
}

// window reads "window <k> complete|incomplete insns N mem N cycles N
// pcs N ctxs N splits N nests N".
func (p *parser) window(f []string) error {
	if !p.header {
		return fmt.Errorf("window before the header's cache (and model) line")
	}
	if len(f) != 17 || f[3] != "insns" || f[5] != "mem" || f[7] != "cycles" || f[9] != "pcs" || f[11] != "ctxs" ||
		f[13] != "splits" || f[15] != "nests" {
		return fmt.Errorf("want window <k> complete|incomplete insns N mem N cycles N pcs N ctxs N splits N nests N")
	}
	k, err := strconv.Atoi(f[1])
	if err != nil {
		return fmt.Errorf("window index: %w", err)
	}
	if k != len(p.c.Windows) {
		return fmt.Errorf("window %d out of order: want %d", k, len(p.c.Windows))
	}
	if f[2] != "complete" && f[2] != "incomplete" {
		return fmt.Errorf("want complete or incomplete, got %q", f[2])
	}
	n, err := uints([]string{f[4], f[6], f[8], f[10], f[12], f[14], f[16]}, 10)
	if err != nil {
		return err
	}
	if (p.c.Contexts == nil || !p.c.Contexts.Blocks) && n[5] != 0 {
		return fmt.Errorf("%d split lines without entries counted by context", n[5])
	}
	if !p.c.Cache && n[2] != 0 {
		return fmt.Errorf("cycles %d without the cache model", n[2])
	}
	if p.c.Contexts == nil && n[4]+n[6] != 0 {
		return fmt.Errorf("%d ctx and %d nest lines with contexts off", n[4], n[6])
	}
	p.c.Windows = append(p.c.Windows, Window{Index: k, Insns: n[0], Mem: n[1], Cycles: n[2], Incomplete: f[2] == "incomplete"})
	p.w = &p.c.Windows[k]
	p.pending = int(n[3])
	p.ctxs = int(n[4])
	p.splits = int(n[5])
	p.nests = int(n[6])
	p.lastCtx = ctxKey{}
	if p.c.VCPUs > 1 {
		p.vcpus = p.c.VCPUs
	}
	return p.check()
}

// pc reads "pc <hex addr> <insns> <mem> <cycles> <execs> <hex end>",
// then " <coh>" with the coherent model and the entries by context when
// the run counts them.
func (p *parser) pc(f []string) error {
	if p.pending == 0 {
		return fmt.Errorf("pc line outside a window's block")
	}
	if len(f) == 5 {
		return fmt.Errorf("pc line without execs and end (format 1's shape): want pc <addr> <insns> <mem> <cycles> <execs> <end>")
	}
	blocks := p.c.Contexts != nil && p.c.Contexts.Blocks
	want, shape := 7, "pc <addr> <insns> <mem> <cycles> <execs> <end>"
	if p.c.Coherent {
		want, shape = want+1, shape+" <cross-core events> (the coherent model)"
	}
	if blocks {
		want, shape = want+NClasses+5, shape+fmt.Sprintf(" then %d entries by stack class, <target> <entries> twice and <entries> in other calls (contexts with blocks on)", NClasses)
	}
	if len(f) != want {
		return fmt.Errorf("want %s", shape)
	}
	a, err := uints([]string{f[1], f[6]}, 16)
	if err != nil {
		return err
	}
	n, err := uints(f[2:6], 10)
	if err != nil {
		return err
	}
	pc := PC{Addr: a[0], Insns: n[0], Mem: n[1], Cycles: n[2], Execs: n[3], End: a[1]}
	rest := f[7:]
	if p.c.Coherent {
		c, err := uints(rest[:1], 10)
		if err != nil {
			return err
		}
		// An access touches at most two lines, each one event at most.
		if pc.Coh, rest = c[0], rest[1:]; pc.Coh > 2*pc.Mem {
			return fmt.Errorf("pc %x: %d cross-core events for %d accesses", pc.Addr, pc.Coh, pc.Mem)
		}
	}
	if blocks {
		if err := p.pcContexts(&pc, rest); err != nil {
			return err
		}
	}
	if l := len(p.w.PCs); l > 0 && p.w.PCs[l-1].Addr >= pc.Addr {
		return fmt.Errorf("pc %x not after %x", pc.Addr, p.w.PCs[l-1].Addr)
	}
	if !p.c.Cache && pc.Cycles != 0 {
		return fmt.Errorf("cycles %d without the cache model", pc.Cycles)
	}
	// A block holds at least one instruction, and each entry counts the
	// instruction it entered at.
	if pc.End <= pc.Addr {
		return fmt.Errorf("pc %x: end %x not after it", pc.Addr, pc.End)
	}
	if pc.Execs > pc.Insns || (pc.Execs == 0) != (pc.Insns == 0) {
		return fmt.Errorf("pc %x: %d entries for %d instructions", pc.Addr, pc.Execs, pc.Insns)
	}
	p.w.PCs = append(p.w.PCs, pc)
	p.pending--
	return p.check()
}

// check makes a finished block's pc lines add up to its window line,
// and its split lines fit its contexts.
func (p *parser) check() error {
	if p.pending > 0 || p.vcpus > 0 || p.ctxs > 0 || p.splits > 0 || p.nests > 0 {
		return nil
	}
	if err := p.splitsFit(); err != nil {
		return err
	}
	if err := p.nestsFit(); err != nil {
		return err
	}
	var s PC
	for _, pc := range p.w.PCs {
		s.Insns, s.Mem, s.Cycles = s.Insns+pc.Insns, s.Mem+pc.Mem, s.Cycles+pc.Cycles
	}
	if s.Insns != p.w.Insns || s.Mem != p.w.Mem || s.Cycles != p.w.Cycles {
		return fmt.Errorf("window %d: pc lines sum to insns %d mem %d cycles %d, window line says %d %d %d",
			p.w.Index, s.Insns, s.Mem, s.Cycles, p.w.Insns, p.w.Mem, p.w.Cycles)
	}
	return nil
}

func uints(f []string, base int) ([]uint64, error) {
	n := make([]uint64, len(f))
	for i, s := range f {
		v, err := strconv.ParseUint(s, base, 64)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", s)
		}
		n[i] = v
	}
	return n, nil
}

func ints(f []string, want int) ([]int, error) {
	if len(f) != want {
		return nil, fmt.Errorf("want %d numbers, got %d", want, len(f))
	}
	n := make([]int, len(f))
	for i, s := range f {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("bad number %q", s)
		}
		n[i] = v
	}
	return n, nil
}
