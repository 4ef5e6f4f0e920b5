package tcgplugin_test

import (
	"github.com/kci-dev/kci/vm/tcgplugin"

	"context"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kci-dev/kci/internal/proc"
)

// TestBareMetal runs testdata/bare.S, a multiboot program with interrupts
// off, so every count is known exactly, cycles included: it needs QEMU
// and gcc but no Linux kernel, and takes about a second.
func TestBareMetal(t *testing.T) {
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Skip("needs qemu-system-x86_64 (package qemu-system-x86)")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("needs gcc (package build-essential)")
	}
	ctx := context.Background()
	dir := t.TempDir()
	so, err := tcgplugin.Build(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	elf := buildBare(t, dir, "bare.elf")
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

func buildBare(t *testing.T, dir, name string) string {
	t.Helper()
	elf := filepath.Join(dir, name)
	args := []string{"-m32", "-nostdlib", "-static", "-Wl,-Ttext=0x100000", "-Wl,--build-id=none", "-o", elf, "testdata/bare.S"}
	if _, err := (proc.Cmd{Name: "gcc", Args: args, Timeout: time.Minute}).Run(context.Background()); err != nil {
		t.Fatalf("build bare.S: %v", err)
	}
	return elf
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
