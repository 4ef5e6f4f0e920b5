package boot

import (
	"context"
	"fmt"
	"os"
	"sort"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/profile"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/vm"
	"github.com/kci-dev/kci/vm/tcgplugin"
	"github.com/kci-dev/kci/wire"
)

// exactMinPerPacket is the share below which a function is folded into
// results.FuncSmall: the run.json stays small, and no row is decided from
// less than a twentieth of an instruction per packet.
const exactMinPerPacket = 0.05

// pluginConfig builds the exact-count plugin once per booter and puts it
// into the boot template under TCG's instruction clock. A host that
// cannot build it (no C compiler) runs without it: one warning, and the
// run's rows say they need the plugin; never a wrong number.
func (b *VMBooter) pluginConfig(ctx context.Context) vm.Config {
	c := b.VM
	// Several vCPUs take turns on one host thread under icount: the
	// plugin counts them per vCPU (vm.pluginOptions).
	if b.PluginDir == "" || c.Accel != vm.AccelTCG || vm.GuestClock(c) != vm.ClockICount || c.Interactive {
		return c
	}
	b.pluginOnce.Do(func() {
		so, err := tcgplugin.Build(ctx, b.PluginDir)
		if err != nil {
			if b.Log != nil {
				fmt.Fprintf(b.Log, "kci: warning: no exact counts (where the work goes, modelled cycles): %v\n", err)
				if c.CPUs > 1 {
					// kcicount.c's on_tb_unarmed: QEMU 7.2's own turns
					// can starve every vCPU but the first.
					fmt.Fprintf(b.Log, "kci: warning: without the plugin %d vCPUs take QEMU's own turns, "+
						"which can give all but one vCPU no time while it spins (a stall, not a number)\n", c.CPUs)
				}
			}
			return
		}
		b.plugin = so
	})
	c.Plugin, c.CacheModel = b.plugin, b.plugin != "" && b.CacheModel
	c.Contexts = b.plugin != ""
	return c
}

// attachExact reads the plugin's counts of a finished boot and gives each
// variant that measured a window its share. Counts that are missing,
// malformed or do not match the guest's windows fail the boot as the
// machine's fault: a wrong attribution must never pass for a number.
func (b *VMBooter) attachExact(out *BootResult, res *vm.Result, k *kernel.Artifacts) error {
	if res.Counts == "" {
		return nil
	}
	f, err := os.Open(res.Counts)
	if err != nil {
		return fmt.Errorf("exact counts: %w", err)
	}
	defer func() { _ = f.Close() }()
	counts, err := tcgplugin.Parse(f)
	if err != nil {
		return fmt.Errorf("exact counts: %w", err)
	}
	if counts.StrayEnds > 0 {
		return fmt.Errorf("exact counts: %d window end(s) without a start", counts.StrayEnds)
	}
	syms, err := b.kernelSymbols(k.Vmlinux)
	if err != nil {
		return fmt.Errorf("exact counts: %w", err)
	}
	model := ""
	if counts.Model != nil {
		model = counts.Model.Name
	}
	for _, v := range out.Variants {
		if v.ExactWindow == nil {
			continue
		}
		i := *v.ExactWindow
		if i < 0 || i >= len(counts.Windows) || counts.Windows[i].Index != i {
			return fmt.Errorf("exact counts: variant %s measured in window %d, the plugin counted %d", v.Variant, i, len(counts.Windows))
		}
		w := &counts.Windows[i]
		if w.Incomplete {
			return fmt.Errorf("exact counts: variant %s: window %d did not close", v.Variant, i)
		}
		e := attribute(w, v, syms)
		e.Model = model
		e.Quantum = counts.Quantum
		for _, c := range w.PerVCPU {
			e.VCPUs = append(e.VCPUs, results.VCPUCount{Insns: c.Insns, Mem: c.Mem, Cycles: c.Cycles})
		}
		byCtx := counts.Contexts != nil && counts.Contexts.Blocks
		out.Exact = append(out.Exact, VariantExact{Variant: v.Variant, Exact: e, Blocks: kernelBlocks(w, v), ByContext: byCtx})
	}
	return nil
}

// VariantExact is one variant's exact counts in a BootResult. Blocks are
// the kernel's code the window entered, by block: what a patch's hunks
// are looked up in (job's coverage), kept in the result cache with the
// boot so a replayed boot covers any patch's hunks, not run.json.
type VariantExact struct {
	Variant string           `json:"variant"`
	Exact   *results.Exact   `json:"exact"`
	Blocks  tcgplugin.Blocks `json:"blocks,omitempty"`
	// ByContext says the blocks' entries were counted by context
	// (Block.In, Block.Prog): an entry in no stack class counts as
	// results.ContextOther.
	ByContext bool `json:"by_context,omitempty"`
}

// Runs is how often the window ran the code in ranges (every inline
// copy of a hunk's lines a range): as often as the most entered block
// holding part of any. When the blocks were counted by context and the
// code ran, in is those runs by context, as that block's were: per stack
// class, results.ContextOther for none, and results.ContextBPF for those
// inside a BPF program's call (which also have a class).
func (e VariantExact) Runs(ranges []kernel.CodeRange) (n uint64, in map[string]uint64) {
	var top tcgplugin.Block
	for _, r := range ranges {
		if m, b := e.Blocks.RunsIn(r.Lo, r.Hi); m > top.Execs {
			top = b
		}
	}
	if !e.ByContext || top.Execs == 0 {
		return top.Execs, nil
	}
	in = map[string]uint64{}
	for k, x := range top.In {
		if x > 0 {
			in[tcgplugin.Class(k).String()] = x
		}
	}
	if other := top.Execs - top.In.Sum(); other > 0 {
		in[results.ContextOther] = other
	}
	if top.Prog > 0 {
		in[results.ContextBPF] = top.Prog
	}
	return top.Execs, in
}

// kernelBlocks are the window's entered blocks in the kernel's half of
// the address space (its text, modules and JIT'd BPF), with their
// entries inside the calls of v's BPF programs (the benchmark's and the
// accountant's: not a BPF trampoline's, inside which the function it
// traces runs).
func kernelBlocks(w *tcgplugin.Window, v wire.VariantResult) tcgplugin.Blocks {
	ranges := jitRanges(v)
	prog := func(target uint64) bool {
		for _, r := range ranges {
			if target >= r.lo && target < r.hi {
				return true
			}
		}
		return false
	}
	var out tcgplugin.Blocks
	for _, b := range w.Blocks(prog) {
		if b.Addr >= 1<<63 {
			out = append(out, b)
		}
	}
	return out
}

// kernelSymbols loads vmlinux's symbols once per path.
func (b *VMBooter) kernelSymbols(vmlinux string) (*profile.KernelSymbols, error) {
	b.keyMu.Lock()
	defer b.keyMu.Unlock()
	if s, ok := b.syms[vmlinux]; ok {
		return s, nil
	}
	s, err := profile.LoadKernelSymbols(vmlinux)
	if err != nil {
		return nil, err
	}
	if b.syms == nil {
		b.syms = map[string]*profile.KernelSymbols{}
	}
	b.syms[vmlinux] = s
	return s, nil
}

// codeRange is a named range of JIT'd code.
type codeRange struct {
	name   string
	lo, hi uint64
}

// attribute names a window's blocks: the variant's BPF programs and the
// accountant's by their JIT ranges, the kernel's by vmlinux's symbols, the
// rest into buckets (tcgplugin.Window.ByName sums and folds them).
func attribute(w *tcgplugin.Window, v wire.VariantResult, syms *profile.KernelSymbols) *results.Exact {
	ranges := jitRanges(v)
	e := &results.Exact{Insns: w.Insns, Mem: w.Mem, Cycles: w.Cycles, Packets: exactPackets(v)}
	name := func(addr uint64) string { return nameOf(addr, ranges, syms) }
	for _, f := range w.ByName(name, tcgplugin.Fold{Packets: e.Packets, MinPerPacket: exactMinPerPacket, Small: results.FuncSmall}) {
		e.Funcs = append(e.Funcs, results.FuncCount{Name: f.Name, Insns: f.Insns, Mem: f.Mem, Cycles: f.Cycles, CrossCore: f.Coh})
	}
	e.Calls = callsOf(w, name)
	return e
}

// callsOf names the window's call contexts by their targets, as
// attribute names code (a BPF program's entry is in its JIT range:
// call:bpf:<prog>), summing the targets of one name, largest first (by
// instructions, then name). A target in no known code keeps its address
// in its name: such contexts (a BPF trampoline's, whose call of the
// traced function may sleep) can nest in each other, and their sum would
// be no one's count. Each call gets its split by function and the calls
// made inside it, both named once here.
func callsOf(w *tcgplugin.Window, name func(addr uint64) string) []results.CallCount {
	var calls callSums
	for _, c := range w.Contexts {
		calls.add(callName(c.Target, name), c.Calls, c.Insns, c.Mem, c.Cycles)
	}
	inside := map[string]*callSums{}
	for _, x := range w.Nests {
		outer := callName(x.Outer, name)
		if inside[outer] == nil {
			inside[outer] = &callSums{}
		}
		inside[outer].add(callName(x.Inner, name), x.Calls, x.Insns, x.Mem, x.Cycles)
	}
	splits := splitsOf(w, name)
	out := calls.sorted()
	for i := range out {
		out[i].Funcs = splits[out[i].Name]
		if in := inside[out[i].Name]; in != nil {
			out[i].Inside = in.sorted()
		}
	}
	return out
}

// callSums sums call counts by name.
type callSums struct {
	out []results.CallCount
	at  map[string]int
}

func (s *callSums) add(name string, calls, insns, mem, cycles uint64) {
	i, ok := s.at[name]
	if !ok {
		if s.at == nil {
			s.at = map[string]int{}
		}
		i = len(s.out)
		s.at[name] = i
		s.out = append(s.out, results.CallCount{Name: name})
	}
	s.out[i].Calls += calls
	s.out[i].Insns += insns
	s.out[i].Mem += mem
	s.out[i].Cycles += cycles
}

// sorted is the sums, largest first (by instructions, then name).
func (s *callSums) sorted() []results.CallCount {
	sort.Slice(s.out, func(i, j int) bool {
		if s.out[i].Insns != s.out[j].Insns {
			return s.out[i].Insns > s.out[j].Insns
		}
		return s.out[i].Name < s.out[j].Name
	})
	return s.out
}

// callName names the calls of target (callsOf).
func callName(target uint64, name func(addr uint64) string) string {
	n := results.CallPrefix + name(target)
	if n == results.CallPrefix+results.FuncOutside || n == results.CallPrefix+results.FuncUser {
		n += fmt.Sprintf(" %x", target)
	}
	return n
}

// splitsOf is, per call name (callsOf's naming), the window's splits of
// the targets of that name by function, largest first (by cycles, then
// instructions, then name).
func splitsOf(w *tcgplugin.Window, name func(addr uint64) string) map[string][]results.FuncCount {
	out := map[string][]results.FuncCount{}
	at := map[[2]string]int{}
	for _, s := range w.Splits {
		call, f := callName(s.Target, name), name(s.Addr)
		i, ok := at[[2]string{call, f}]
		if !ok {
			i = len(out[call])
			at[[2]string{call, f}] = i
			out[call] = append(out[call], results.FuncCount{Name: f})
		}
		c := &out[call][i]
		c.Insns += s.Insns
		c.Cycles += s.Cycles
		c.Fetch += s.Fetch
	}
	for _, fs := range out {
		sort.Slice(fs, func(i, j int) bool {
			if fs[i].Cycles != fs[j].Cycles {
				return fs[i].Cycles > fs[j].Cycles
			}
			if fs[i].Insns != fs[j].Insns {
				return fs[i].Insns > fs[j].Insns
			}
			return fs[i].Name < fs[j].Name
		})
	}
	return out
}

// jitRanges are the JIT'd code of v's programs: the benchmark's
// (bpf:<prog>) and the context accountant's (observer:<prog>).
func jitRanges(v wire.VariantResult) []codeRange {
	var ranges []codeRange
	for _, l := range v.Loads {
		for _, r := range l.JIT {
			ranges = append(ranges, codeRange{"bpf:" + r.Prog, r.Addr, r.Addr + uint64(r.Len)})
		}
	}
	for _, r := range v.Observer {
		ranges = append(ranges, codeRange{"observer:" + r.Prog, r.Addr, r.Addr + uint64(r.Len)})
	}
	return ranges
}

func nameOf(addr uint64, ranges []codeRange, syms *profile.KernelSymbols) string {
	if addr < 1<<63 {
		return results.FuncUser
	}
	for _, r := range ranges {
		if addr >= r.lo && addr < r.hi {
			return r.name
		}
	}
	if n := syms.Lookup(addr); n != "" {
		return n
	}
	return results.FuncOutside
}

// exactPackets is what a window's per-packet figures divide by: the
// datagrams written between the plugin's markers where the accountant
// ran, else (an agent before MarkPackets) its own window's, else the
// window's.
func exactPackets(v wire.VariantResult) uint64 {
	if v.Cost == nil {
		return 0
	}
	if v.Cost.MarkPackets > 0 {
		return v.Cost.MarkPackets
	}
	if v.Cost.AcctPackets > 0 {
		return v.Cost.AcctPackets
	}
	return v.Cost.Packets
}
