package tcgplugin_test

import (
	"path/filepath"
	"testing"

	"github.com/kci-dev/kci/internal/proc"
	"github.com/kci-dev/kci/vm/tcgplugin"
)

// TestBareClasses runs testdata/classes.S with marks and checks the
// context of every entry of leaf and of the marked functions exactly: no
// frame, a marked call, a call inheriting its caller's class, the first
// frame on the IRQ stack, the innermost mark winning, a task switch
// whose sleeping task's class stays on its own stack, and the entries
// inside a call context (bpfprog's), which keep their class. In both
// cache modes.
func TestBareClasses(t *testing.T) {
	qemu, so, elf := bareGuest(t, "classes.elf", "testdata/classes.S")
	sym := symbols(t, elf, "ctx_lo", "ctx_hi", "leaf", "sys", "hirq", "soft", "def", "kwork", "bpfprog", "on_irqstack", "switch_c")
	const n = 1009 // classes.S's N
	marks := []tcgplugin.Mark{
		{Class: tcgplugin.ClassSyscall, Addr: sym["sys"]},
		{Class: tcgplugin.ClassHardIRQ, Addr: sym["hirq"]},
		{Class: tcgplugin.ClassSoftIRQ, Addr: sym["soft"]},
		{Class: tcgplugin.ClassDeferred, Addr: sym["def"]},
		{Class: tcgplugin.ClassDeferred, Addr: sym["kwork"]},
	}
	type cc = tcgplugin.ClassCounts
	want := map[string]cc{
		// 2N entries in no class: execs 9N minus the rest
		"leaf":        {tcgplugin.ClassHardIRQ: n, tcgplugin.ClassSoftIRQ: 2 * n, tcgplugin.ClassSyscall: 2 * n, tcgplugin.ClassDeferred: 2 * n},
		"sys":         {tcgplugin.ClassSyscall: n},
		"hirq":        {tcgplugin.ClassHardIRQ: n},
		"soft":        {tcgplugin.ClassSoftIRQ: n},
		"def":         {tcgplugin.ClassDeferred: n},
		"kwork":       {tcgplugin.ClassDeferred: n},
		"bpfprog":     {tcgplugin.ClassSoftIRQ: n},
		"on_irqstack": {tcgplugin.ClassSyscall: n},
		"switch_c":    {},
	}
	// Inside bpfprog's calls: its own entries and leaf's from there.
	wantCalls := map[string]uint64{"leaf": n, "bpfprog": n}
	for _, o := range []tcgplugin.Options{{}, {Cache: true, ArmAtMarker: true}} {
		o.Ctx = tcgplugin.CtxRange{Lo: sym["ctx_lo"], Hi: sym["ctx_hi"], Blocks: true}
		o.Marks = marks
		out := filepath.Join(t.TempDir(), "counts.txt")
		if code, ok := proc.ExitCode(runBare(t, qemu, elf, tcgplugin.Args(so, out, o))); !ok || code != 1 {
			t.Fatalf("%+v: qemu did not exit through isa-debug-exit", o)
		}
		c := parseFile(t, out)
		if c.Contexts == nil || c.Contexts.Marks != len(marks) || len(c.Windows) != 1 {
			t.Fatalf("%+v: contexts %+v, %d windows; want %d marks, one window", o, c.Contexts, len(c.Windows), len(marks))
		}
		for name, w := range want {
			p := pcAt(c.Windows[0].PCs, sym[name])
			if p == nil {
				t.Errorf("%+v: no block at %s", o, name)
				continue
			}
			if p.In != w {
				t.Errorf("%+v: %s's %d entries by class %v, want %v", o, name, p.Execs, p.In, w)
			}
			calls := [2]tcgplugin.CallEntries{}
			if wantCalls[name] > 0 {
				calls[0] = tcgplugin.CallEntries{Target: sym["bpfprog"], Entries: wantCalls[name]}
			}
			if p.Calls != calls || p.CallsOther != 0 {
				t.Errorf("%+v: %s's entries in calls %v and %d other, want %v", o, name, p.Calls, p.CallsOther, calls)
			}
			if name == "leaf" && p.Execs != 9*n {
				t.Errorf("%+v: leaf entered %d times, want %d", o, p.Execs, 9*n)
			}
		}
	}
}

func pcAt(pcs []tcgplugin.PC, addr uint64) *tcgplugin.PC {
	for i := range pcs {
		if pcs[i].Addr == addr {
			return &pcs[i]
		}
	}
	return nil
}
