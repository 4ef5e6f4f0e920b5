package tcgplugin_test

import (
	"github.com/kci-dev/kci/vm/tcgplugin"

	"context"
	"debug/elf"
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/internal/proc"
)

// TestBareMetal runs testdata/bare.S, a multiboot program with interrupts
// off, so every count is known exactly, cycles included: it needs QEMU
// and gcc but no Linux kernel, and takes about a second.
func TestBareMetal(t *testing.T) {
	qemu, so, elf := bareGuest(t, "bare.elf", "testdata/bare.S")
	run := func(o tcgplugin.Options) *tcgplugin.Counts {
		out := filepath.Join(t.TempDir(), "counts.txt")
		err := runBare(t, qemu, elf, tcgplugin.Args(so, out, o))
		// isa-debug-exit's status for a 0 write is 1: anything else is
		// QEMU failing (or the program not reaching its exit).
		if code, ok := proc.ExitCode(err); !ok || code != 1 {
			t.Fatalf("qemu: want exit status 1 from isa-debug-exit, got %v", err)
		}
		return parseFile(t, out)
	}

	const n = 1 << 20
	want := []tcgplugin.Window{
		{Index: 0, Insns: 2001},
		{Index: 1, Insns: 4*n + 2, Mem: n},
		{Index: 2, Insns: 4*n + 2, Mem: n},
		{Index: 3, Insns: 1 + 1 + 2*100 + 1, Mem: 2}, // call, work's mov, loop, ret; push, pop
		{Index: 4, Insns: 3, Incomplete: true},       // nop, mov, out: hlt never runs
	}
	// Cycles: instructions, plus 240 per DRAM access, data or code line
	// (bare.S at 0x100000; objdump shows the lines). Window 0's code line
	// was fetched by the nop before it. Window 1 misses on every load, and
	// its loop runs into the next code line, which window 2's code shares;
	// window 2's first load misses (window 1 evicted its line). Window 3's
	// push misses (window 1 evicted the stack's line); its code line (the
	// call's and work's) was fetched when work first ran, but under
	// arm=marker that was before the arm marker, unseen by the model, so
	// there it misses too. Window 4's code shares window 3's line.
	wantCycles := func(o tcgplugin.Options) []uint64 {
		w3 := uint64(203 + 240)
		if o.ArmAtMarker {
			w3 += 240
		}
		return []uint64{2001, 4*n + 2 + 240*n + 240, 4*n + 2 + 240, w3, 3}
	}
	// Both arm modes count the same instructions and accesses: under
	// arm=marker what runs before the arm marker is not instrumented,
	// and window 3's code, translated then, is translated again.
	for _, o := range []tcgplugin.Options{{}, {Cache: true}, {ArmAtMarker: true}, {Cache: true, ArmAtMarker: true}} {
		cache := o.Cache
		c := run(o)
		if !c.Exited || c.StrayEnds != 1 || c.Cache != cache || len(c.Windows) != len(want) {
			t.Fatalf("%+v: exited %v, %d stray ends, cache %v, %d windows; want true, 1, %v, %d",
				o, c.Exited, c.StrayEnds, c.Cache, len(c.Windows), cache, len(want))
		}
		for i, w := range c.Windows {
			wc := uint64(0)
			if cache {
				wc = wantCycles(o)[i]
			}
			got := tcgplugin.Window{Index: w.Index, Insns: w.Insns, Mem: w.Mem, Incomplete: w.Incomplete}
			if !reflect.DeepEqual(got, want[i]) || w.Cycles != wc {
				t.Errorf("%+v: window %d = %+v cycles %d, want %+v cycles %d", o, i, got, w.Cycles, want[i], wc)
			}
		}
		if again := run(o); !reflect.DeepEqual(again, c) {
			t.Errorf("%+v: second run differs:\n%s", o, diffWindows(c, again))
		}
	}
}

// bareGuest builds the plugin and the multiboot program src into a
// temporary directory (as name) and returns QEMU's path with theirs;
// without QEMU or gcc the test is skipped.
func bareGuest(t *testing.T, name, src string) (qemu, so, elf string) {
	t.Helper()
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Skip("needs qemu-system-x86_64 (package qemu-system-x86)")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("needs gcc (package build-essential)")
	}
	dir := t.TempDir()
	if so, err = tcgplugin.Build(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	return qemu, so, buildBare(t, dir, name, src)
}

func buildBare(t *testing.T, dir, name, src string) string {
	t.Helper()
	elf := filepath.Join(dir, name)
	args := []string{"-m32", "-nostdlib", "-static", "-Wl,-Ttext=0x100000", "-Wl,--build-id=none", "-o", elf, src}
	if _, err := (proc.Cmd{Name: "gcc", Args: args, Timeout: time.Minute}).Run(context.Background()); err != nil {
		t.Fatalf("build %s: %v", src, err)
	}
	return elf
}

// TestBareRuns runs testdata/runs.S, one window around a loop of known
// count with interrupts off, and checks the plugin's per-block entries
// (Execs) and block ends (End) against the program's layout, read from
// its symbol table, and what Window.Runs makes of them: the loop body's
// block is entered exactly N times and ends where the body does, the
// code after the loop ran once, and code never run ran 0 times. In
// every arm and cache mode; instruction counts stay exact.
func TestBareRuns(t *testing.T) {
	qemu, so, elf := bareGuest(t, "runs.elf", "testdata/runs.S")
	sym := symbols(t, elf, "_start", "head", "head_end", "body", "body_end", "after", "after_end", "never", "never_end")

	const n = 123457 // runs.S's N
	for _, o := range []tcgplugin.Options{{}, {Cache: true}, {ArmAtMarker: true}, {Cache: true, ArmAtMarker: true}} {
		out := filepath.Join(t.TempDir(), "counts.txt")
		if code, ok := proc.ExitCode(runBare(t, qemu, elf, tcgplugin.Args(so, out, o))); !ok || code != 1 {
			t.Fatalf("%+v: qemu did not exit through isa-debug-exit", o)
		}
		c := parseFile(t, out)
		if len(c.Windows) != 1 || c.Windows[0].Incomplete || c.StrayEnds != 0 {
			t.Fatalf("%+v: %d windows, %d stray ends; want one complete window", o, len(c.Windows), c.StrayEnds)
		}
		w := &c.Windows[0]
		if w.Insns != 2+3*n+1 || w.Mem != 0 {
			t.Errorf("%+v: window insns %d mem %d, want %d 0", o, w.Insns, w.Mem, 2+3*n+1)
		}
		byAddr := map[uint64]tcgplugin.PC{}
		for _, p := range w.PCs {
			byAddr[p.Addr] = p
			t.Logf("%+v: pc %#x insns %d execs %d end %#x", o, p.Addr, p.Insns, p.Execs, p.End)
		}
		// The blocks: _start's (cli, mov, start marker, mov, jmp; its
		// entry in the window counted on the mov after the marker), the
		// body's, and the one after the loop (inc, end marker, mov, out:
		// an I/O instruction ends a block under icount).
		for _, b := range []struct {
			addr, end, insns, execs uint64
		}{
			{sym["_start"], sym["head_end"], 2, 1},
			{sym["body"], sym["body_end"], 3 * n, n},
			{sym["after"], sym["after_end"] + 8 + 2 + 2, 1, 1},
		} {
			p, ok := byAddr[b.addr]
			if !ok {
				t.Errorf("%+v: no block at %#x", o, b.addr)
				continue
			}
			if p.Insns != b.insns || p.Execs != b.execs || p.End != b.end || p.End <= p.Addr {
				t.Errorf("%+v: block %#x: insns %d execs %d end %#x, want %d %d %#x", o, b.addr, p.Insns, p.Execs, p.End, b.insns, b.execs, b.end)
			}
		}
		for _, r := range []struct {
			name   string
			lo, hi uint64
			want   uint64
		}{
			{"loop body", sym["body"], sym["body_end"], n},
			{"the loop's jnz", sym["body_end"] - 2, sym["body_end"], n},
			{"head", sym["head"], sym["head_end"], 1},
			{"after the loop", sym["after"], sym["after_end"], 1},
			{"head to after", sym["head"], sym["after_end"], n},
			{"padding before the body", sym["head_end"], sym["body"], 0},
			{"never run", sym["never"], sym["never_end"], 0},
		} {
			if got := w.Blocks(nil).Runs(r.lo, r.hi); got != r.want {
				t.Errorf("%+v: Runs(%s [%#x, %#x)) = %d, want %d", o, r.name, r.lo, r.hi, got, r.want)
			}
		}
	}
}

// symbols is an ELF's symbol addresses by name; each of want must be
// there.
func symbols(t *testing.T, path string, want ...string) map[string]uint64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]uint64{}
	for _, s := range syms {
		m[s.Name] = s.Value
	}
	for _, w := range want {
		if _, ok := m[w]; !ok {
			t.Fatalf("%s: no symbol %s", path, w)
		}
	}
	return m
}

func runBare(t *testing.T, qemu, elf string, plugin []string) error {
	t.Helper()
	qargs := append([]string{
		"-accel", "tcg", "-icount", "shift=0,sleep=off", "-smp", "1", "-m", "256",
		"-display", "none", "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
		"-kernel", elf,
	}, plugin...)
	_, err := proc.Cmd{Name: qemu, Args: qargs, Timeout: 2 * time.Minute}.Run(context.Background())
	return err
}

// TestBareCalls runs testdata/calls.S with its entry range as the call
// contexts' and checks each context's counts exactly: a direct call, a
// retpoline and a call nested in another context open one, counting the
// callee's code and what it calls; a call of the same helper from outside
// and a jump into the range count in none; a call nested in a call of
// its own target counts as a call, its code once; a context whose ret
// never comes ends at the next call storing at or above its slot. Every
// cache and arm mode, with and without the per-block entries inside
// contexts.
func TestBareCalls(t *testing.T) {
	qemu, so, elf := bareGuest(t, "calls.elf", "testdata/calls.S")
	sym := symbols(t, elf, "ctx_lo", "ctx_hi", "entry", "entry_back", "entry2", "entry2_back", "escape", "escaped", "rec", "rec_end",
		"loop", "helper")
	const n = 10007 // calls.S's N
	for _, o := range []tcgplugin.Options{{}, {Cache: true}, {ArmAtMarker: true}, {Cache: true, ArmAtMarker: true}} {
		for _, blocks := range []bool{false, true} {
			o.Ctx = tcgplugin.CtxRange{Lo: sym["ctx_lo"], Hi: sym["ctx_hi"], Blocks: blocks}
			out := filepath.Join(t.TempDir(), "counts.txt")
			if code, ok := proc.ExitCode(runBare(t, qemu, elf, tcgplugin.Args(so, out, o))); !ok || code != 1 {
				t.Fatalf("%+v: qemu did not exit through isa-debug-exit", o)
			}
			checkCalls(t, o, parseFile(t, out), sym, n)
		}
	}
}

func checkCalls(t *testing.T, o tcgplugin.Options, c *tcgplugin.Counts, sym map[string]uint64, n uint64) {
	t.Helper()
	if len(c.Windows) != 1 || c.Windows[0].Incomplete || *c.Contexts != o.Ctx {
		t.Fatalf("%+v: %d windows, contexts %+v; want one complete window, %+v", o, len(c.Windows), c.Contexts, o.Ctx)
	}
	w := &c.Windows[0]
	if w.Insns != 1+38*n || w.Mem != 30*n {
		t.Errorf("%+v: window insns %d mem %d, want %d %d", o, w.Insns, w.Mem, 1+38*n, 30*n)
	}
	want := []tcgplugin.Context{
		{Target: sym["entry"], Calls: 2 * n, Insns: 12 * n, Mem: 14 * n},
		{Target: sym["entry2"], Calls: n, Insns: 8 * n, Mem: 9 * n},
		{Target: sym["escape"], Calls: n, Insns: 5*n - 1, Mem: n - 1},
		{Target: sym["rec"], Calls: 2 * n, Insns: 7 * n, Mem: 3 * n},
	}
	if o.Cache {
		// calls.S says why
		want[0].Cycles, want[1].Cycles, want[2].Cycles, want[3].Cycles = 12*n+3*240, 8*n, 5*n-1, 7*n
	}
	if !reflect.DeepEqual(w.Contexts, want) {
		t.Errorf("%+v: contexts\n got %+v\nwant %+v", o, w.Contexts, want)
	}
	for _, p := range w.PCs {
		wantC := uint64(0)
		switch {
		case !o.Ctx.Blocks:
		case p.Addr == sym["helper"]:
			wantC = 2 * n // called from entry; the loop's calls are outside
		case p.Addr == sym["entry"] || p.Addr == sym["entry_back"]:
			wantC = 2 * n
		case p.Addr == sym["entry2"] || p.Addr == sym["entry2_back"] || p.Addr == sym["escape"] || p.Addr == sym["escaped"]:
			wantC = n
		case p.Addr >= sym["rec"] && p.Addr < sym["rec_end"]:
			wantC = p.Execs
		case p.Addr == sym["loop"]:
			wantC = n - 1 // inside escape's context from the second iteration on
		}
		inCalls := p.Calls[0].Entries + p.Calls[1].Entries + p.CallsOther
		if p.In != (tcgplugin.ClassCounts{}) || inCalls != wantC {
			t.Errorf("%+v: pc %#x: %v by class, %v and %d in calls, of %d entries: want none by class, %d in calls", o, p.Addr, p.In, p.Calls, p.CallsOther, p.Execs, wantC)
		}
	}
	checkSplits(t, o, w, want, sym, n)
	// entry's calls from entry2 are the one nest (rec's inner call is
	// its own target's, escape's and entry's direct calls are in none).
	nest := tcgplugin.Nest{Outer: sym["entry2"], Inner: sym["entry"], Calls: n, Insns: 6 * n, Mem: 7 * n}
	if o.Cache {
		nest.Cycles = 6 * n
	}
	if !reflect.DeepEqual(w.Nests, []tcgplugin.Nest{nest}) {
		t.Errorf("%+v: nests %+v, want %+v", o, w.Nests, nest)
	}
}

// checkSplits: with blocks on, each target's splits are its context's
// counts but for those of the contexts nested in it (entry's 6N
// instructions in entry2's calls), helper's block is entry's alone (the
// loop's calls of it are in no context) and the loop's block is
// escape's (its call runs before the call's store closes escape's).
func checkSplits(t *testing.T, o tcgplugin.Options, w *tcgplugin.Window, ctxs []tcgplugin.Context, sym map[string]uint64, n uint64) {
	t.Helper()
	if !o.Ctx.Blocks {
		if len(w.Splits) > 0 {
			t.Errorf("%+v: %d splits with blocks off", o, len(w.Splits))
		}
		return
	}
	sums := map[uint64]tcgplugin.Split{}
	for _, s := range w.Splits {
		x := sums[s.Target]
		x.Insns, x.Cycles, x.Fetch = x.Insns+s.Insns, x.Cycles+s.Cycles, x.Fetch+s.Fetch
		sums[s.Target] = x
		switch {
		case s.Addr == sym["helper"] && (s.Target != sym["entry"] || s.Execs != 2*n):
			t.Errorf("%+v: helper's block in %#x's calls %d times, want entry's %d", o, s.Target, s.Execs, 2*n)
		case s.Addr == sym["loop"] && (s.Target != sym["escape"] || s.Execs != n-1):
			t.Errorf("%+v: the loop's block in %#x's calls %d times, want escape's %d", o, s.Target, s.Execs, n-1)
		}
	}
	for _, c := range ctxs {
		want := tcgplugin.Split{Insns: c.Insns, Cycles: c.Cycles}
		if c.Target == sym["entry"] && o.Cache {
			want.Fetch = 2 * 240 // entry's and helper's code lines; the third miss is counter's, data
		}
		if c.Target == sym["entry2"] {
			want.Insns -= 6 * n
			if o.Cache {
				want.Cycles -= 6 * n
			}
		}
		if got := sums[c.Target]; got != want {
			t.Errorf("%+v: target %#x's splits sum to insns %d cycles %d fetch %d, want %d %d %d", o, c.Target, got.Insns, got.Cycles, got.Fetch,
				want.Insns, want.Cycles, want.Fetch)
		}
	}
	if len(sums) != len(ctxs) {
		t.Errorf("%+v: splits of %d targets, want %d", o, len(sums), len(ctxs))
	}
}

// A malformed call-contexts argument stops QEMU at the plugin's install,
// with the plugin's message, before the guest runs.
func TestBareBadCtxArgs(t *testing.T) {
	qemu, so, elf := bareGuest(t, "runs.elf", "testdata/runs.S")
	out := filepath.Join(t.TempDir(), "counts.txt")
	for arg, want := range map[string]string{
		"ctx=101040-100000":                "malformed argument ctx=101040-100000",
		"ctx=100000-100000":                "malformed argument ctx=100000-100000",
		"ctx=10000g-200000":                "malformed argument ctx=10000g-200000",
		"ctx=100000-":                      "malformed argument ctx=100000-",
		"ctx=-100000":                      "malformed argument ctx=-100000",
		"ctxblocks=maybe":                  "malformed argument ctxblocks=maybe",
		"ctx=off,ctxblocks=on":             "ctxblocks=on needs call contexts",
		"ctx=100000-200000,ctx=":           "malformed argument ctx=",
		"ctxblocks=on,mark=bpf@100000":     "malformed argument mark=bpf@100000",
		"ctxblocks=on,mark=softirq@":       "malformed argument mark=softirq@",
		"ctxblocks=on,mark=softirq":        "malformed argument mark=softirq",
		"ctxblocks=on,mark=softirq@10000g": "malformed argument mark=softirq@10000g",
		"mark=softirq@100000":              "mark= needs ctxblocks=on",
	} {
		plugin := []string{"-plugin", "file=" + so + ",out=" + out + "," + arg}
		err := runBare(t, qemu, elf, plugin)
		var pe *proc.Error
		if !errors.As(err, &pe) || !strings.Contains(pe.Tail, "kcicount: ") || !strings.Contains(pe.Tail, want) {
			t.Errorf("%s: QEMU gave %v, want the plugin refusing it: %q", arg, err, want)
		}
	}
}
