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
	elf := filepath.Join(dir, "bare.elf")
	args := []string{"-m32", "-nostdlib", "-static", "-Wl,-Ttext=0x100000", "-Wl,--build-id=none", "-o", elf, "testdata/bare.S"}
	if _, err := (proc.Cmd{Name: "gcc", Args: args, Timeout: time.Minute}).Run(ctx); err != nil {
		t.Fatalf("build bare.S: %v", err)
	}
	run := func(cache bool) *tcgplugin.Counts {
		out := filepath.Join(t.TempDir(), "counts.txt")
		qargs := append([]string{
			"-accel", "tcg", "-icount", "shift=0,sleep=off", "-smp", "1", "-m", "256",
			"-display", "none", "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=4",
			"-kernel", elf,
		}, tcgplugin.Args(so, out, cache)...)
		_, err := proc.Cmd{Name: qemu, Args: qargs, Timeout: 2 * time.Minute}.Run(ctx)
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
		{Index: 3, Insns: 3, Incomplete: true}, // nop, mov, out: hlt never runs
	}
	// Cycles: instructions, plus 240 per DRAM access. Window 1 misses on
	// every load; window 2's first load misses (window 1 evicted its
	// line) and so does the fetch of its first code line.
	wantCycles := []uint64{2001, 4*n + 2 + 240*n, 4*n + 2 + 2*240, 3}
	for _, cache := range []bool{false, true} {
		c := run(cache)
		if !c.Exited || c.StrayEnds != 1 || c.Cache != cache || len(c.Windows) != len(want) {
			t.Fatalf("cache %v: exited %v, %d stray ends, cache %v, %d windows; want true, 1, %v, %d",
				cache, c.Exited, c.StrayEnds, c.Cache, len(c.Windows), cache, len(want))
		}
		for i, w := range c.Windows {
			wc := uint64(0)
			if cache {
				wc = wantCycles[i]
			}
			got := tcgplugin.Window{Index: w.Index, Insns: w.Insns, Mem: w.Mem, Incomplete: w.Incomplete}
			if !reflect.DeepEqual(got, want[i]) || w.Cycles != wc {
				t.Errorf("cache %v: window %d = %+v cycles %d, want %+v cycles %d", cache, i, got, w.Cycles, want[i], wc)
			}
		}
		if again := run(cache); !reflect.DeepEqual(again, c) {
			t.Errorf("cache %v: second run differs:\n%s", cache, diffWindows(c, again))
		}
	}
}
