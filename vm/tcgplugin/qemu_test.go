package tcgplugin_test

import (
	"github.com/kci-dev/kci/vm/tcgplugin"

	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/u-root/u-root/pkg/cpio"

	"github.com/kci-dev/kci/internal/proc"
	"github.com/kci-dev/kci/job/jobtest"
)

// loops is testdata/init.c's N.
const loops = 1 << 20

// userTop bounds the guest's user addresses: Sum(0, userTop) is /init's
// own code, without the interrupts that land in a window.
const userTop = 1 << 47

// guest is what a real-QEMU test boots.
type guest struct {
	qemu, bzImage, initrd, so string
	smp                       int // vCPUs; 0 = 1
}

// newGuest finds QEMU and a kernel, skipping (before any expensive work)
// when one is missing, then builds the plugin and the initramfs.
func newGuest(t *testing.T) *guest {
	t.Helper()
	if testing.Short() {
		t.Skip("boots a kernel in QEMU under TCG: skipped in -short mode")
	}
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Skip("needs qemu-system-x86_64 (package qemu-system-x86)")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("needs gcc (package build-essential) for the plugin and /init")
	}
	g := &guest{qemu: qemu, bzImage: findKernel(t)}
	t.Logf("kernel %s", g.bzImage)
	ctx := context.Background()
	g.so, err = tcgplugin.Build(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g.initrd = buildInitrd(t, ctx, "testdata/init.c")
	return g
}

// findKernel is $KCI_TEST_BZIMAGE, else kci's stock kernel built (or
// reused) by jobtest. Not "the newest kernel in the cache": under make
// test that is whichever fixture kernel another package built last (one
// of them never finished this test's boot in ten minutes).
func findKernel(t *testing.T) string {
	if k := os.Getenv("KCI_TEST_BZIMAGE"); k != "" {
		if _, err := os.Stat(k); err != nil {
			t.Fatalf("KCI_TEST_BZIMAGE: %v", err)
		}
		return k
	}
	return jobtest.Base(t).BzImage
}

// buildInitrd compiles src (testdata/init.c) into a static /init and packs
// it with /dev/console into a newc cpio.
func buildInitrd(t *testing.T, ctx context.Context, src string) string {
	dir := t.TempDir()
	bin := filepath.Join(dir, "init")
	args := []string{"-static", "-nostdlib", "-fno-pie", "-no-pie", "-fno-stack-protector", "-O1", "-o", bin, src}
	if _, err := (proc.Cmd{Name: "gcc", Args: args, Timeout: time.Minute}).Run(ctx); err != nil {
		t.Fatalf("build /init: %v", err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "initrd.cpio"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := cpio.Newc.Writer(f)
	recs := []cpio.Record{
		cpio.Directory("dev", 0o755),
		cpio.CharDev("dev/console", 0o600, 5, 1),
		cpio.StaticFile("init", string(data), 0o755),
	}
	if err := cpio.WriteRecords(w, recs); err != nil {
		t.Fatal(err)
	}
	if err := cpio.WriteTrailer(w); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// qemuArgs is the boot's command line, its serial console going to the
// file console; plugin is nil for a run without.
//
// Two host clocks reach the guest unless pinned, and either makes it take
// its interrupts at other instructions from one boot to the next (same
// totals, other TB splits, other handler paths): the RTC, which follows
// the host's time by default (one boot in two or three differed), and the
// UART's transmit interrupt, which waits for a pipe on stdout to drain (a
// loaded host differed). So the RTC runs on the virtual clock from a fixed
// date, and the console is a file, whose writes never wait.
func (g *guest) qemuArgs(console string, plugin []string) []string {
	smp := max(g.smp, 1)
	args := []string{
		"-accel", "tcg", "-icount", "shift=0,sleep=off", "-smp", strconv.Itoa(smp), "-m", "256",
		"-rtc", "base=2020-01-01T00:00:00,clock=vm",
		"-display", "none", "-monitor", "none", "-serial", "file:" + console,
		"-no-reboot", "-kernel", g.bzImage, "-initrd", g.initrd,
		"-append", "console=ttyS0 panic=-1 quiet",
	}
	return append(args, plugin...)
}

// boot runs the guest to power-off and returns its console and how long
// QEMU ran.
func (g *guest) boot(t *testing.T, plugin []string) (string, time.Duration) {
	t.Helper()
	console := filepath.Join(t.TempDir(), "console.txt")
	start := time.Now()
	_, err := proc.Cmd{Name: g.qemu, Args: g.qemuArgs(console, plugin), Timeout: 10 * time.Minute}.Run(context.Background())
	d := time.Since(start)
	if err != nil {
		t.Fatalf("qemu: %v", err)
	}
	out, err := os.ReadFile(console)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "kci-init: windows done") {
		t.Fatalf("/init never finished its windows; console:\n%s", out)
	}
	return string(out), d
}

// count boots with the plugin and parses its output.
func (g *guest) count(t *testing.T, cache bool) *tcgplugin.Counts {
	t.Helper()
	out := filepath.Join(t.TempDir(), "counts.txt")
	g.boot(t, tcgplugin.Args(g.so, out, tcgplugin.Options{Cache: cache}))
	return parseFile(t, out)
}

// parseFile reads a counts file the plugin wrote.
func parseFile(t *testing.T, path string) *tcgplugin.Counts {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := tcgplugin.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestQEMU(t *testing.T) {
	g := newGuest(t)
	off := g.count(t, false)
	checkWindows(t, off)
	if again := g.count(t, false); !reflect.DeepEqual(again, off) {
		t.Errorf("second boot counted differently:\n%s", diffWindows(off, again))
	}

	on := g.count(t, true)
	checkWindows(t, on)
	if again := g.count(t, true); !reflect.DeepEqual(again, on) {
		t.Errorf("second cache=on boot counted differently:\n%s", diffWindows(on, again))
	}
	// icount makes the guest's run independent of the plugin's work: the
	// model changes cycles, never what ran.
	for i := range on.Windows {
		a, b := on.Windows[i], off.Windows[i]
		if a.Insns != b.Insns || a.Mem != b.Mem {
			t.Errorf("window %d: cache=on counted insns %d mem %d, cache=off %d %d", i, a.Insns, a.Mem, b.Insns, b.Mem)
		}
	}
	stream, hot := on.Windows[1], on.Windows[2]
	perStream := float64(stream.Cycles) / float64(stream.Mem)
	perHot := float64(hot.Cycles) / float64(hot.Mem)
	t.Logf("cycles per access: streaming %.1f, hot %.2f (ratio %.1f); hot cycles %d for %d insns",
		perStream, perHot, perStream/perHot, hot.Cycles, hot.Insns)
	if perStream < 20*perHot {
		t.Errorf("streaming window %.1f cycles per access, hot %.2f: want a ratio >= 20", perStream, perHot)
	}
	if float64(hot.Cycles) > 1.05*float64(hot.Insns) {
		t.Errorf("hot window: %d cycles for %d insns, want within 5%%", hot.Cycles, hot.Insns)
	}
	if u := stream.Sum(0, userTop); u.Cycles < uint64(loops)*240 {
		t.Errorf("streaming loop: %d cycles, want >= %d (a DRAM miss per load)", u.Cycles, loops*240)
	}
}

// checkWindows asserts the counts testdata/init.c's comment derives.
func checkWindows(t *testing.T, c *tcgplugin.Counts) {
	t.Helper()
	if !c.Exited || c.StrayEnds != 0 || len(c.Windows) != 3 {
		t.Fatalf("exited %v, %d stray ends, %d windows: want a clean exit, 0, 3", c.Exited, c.StrayEnds, len(c.Windows))
	}
	for _, w := range c.Windows {
		if w.Incomplete {
			t.Errorf("window %d incomplete", w.Index)
		}
	}
	if w := c.Windows[0]; w.Insns != 2001 || w.Mem != 0 {
		t.Errorf("window 0: insns %d mem %d, want 2001 0", w.Insns, w.Mem)
	}
	// Instructions are exact. Memory accesses may gain a few: QEMU 7.2
	// reports the stack accesses it makes delivering an interrupt or an
	// exception against the instruction whose memory callbacks were
	// enabled last, which can be one of /init's (11 seen: a 5-word
	// interrupt frame and a 6-word fault frame, or an iret's 5 loads).
	for _, w := range c.Windows {
		u := w.Sum(0, userTop)
		t.Logf("window %d: insns %d mem %d cycles %d (%d pcs); /init's: insns %d mem %d cycles %d",
			w.Index, w.Insns, w.Mem, w.Cycles, len(w.PCs), u.Insns, u.Mem, u.Cycles)
	}
	for _, w := range c.Windows[1:] {
		if u := w.Sum(0, userTop); u.Insns != 4*loops+2 || u.Mem < loops || u.Mem > loops+64 {
			t.Errorf("window %d in /init: insns %d mem %d, want %d and %d (+ at most 64)", w.Index, u.Insns, u.Mem, 4*loops+2, loops)
		}
	}
	// Entries are exact too, interrupts and all: each window's loop
	// falls into its first iteration from the block holding the start
	// marker, so the loop's own block is entered once per other
	// iteration, and /init's code ran at most that often.
	for i, iters := range []uint64{1000, loops, loops} {
		w := &c.Windows[i]
		var loop tcgplugin.PC
		for _, p := range w.PCs {
			if p.Addr < userTop && p.Execs > loop.Execs {
				loop = p
			}
		}
		if loop.Execs != iters-1 || loop.End <= loop.Addr || w.Blocks(nil).Runs(0, userTop) != iters-1 {
			t.Errorf("window %d: /init's most entered block %+v, Runs %d: want %d entries", i, loop, w.Blocks(nil).Runs(0, userTop), iters-1)
		}
	}
}

// diffWindows says where two runs' counts differ, for a failure message.
func diffWindows(a, b *tcgplugin.Counts) string {
	if len(a.Windows) != len(b.Windows) || a.StrayEnds != b.StrayEnds {
		return fmt.Sprintf("%d windows, %d stray ends vs %d, %d", len(a.Windows), a.StrayEnds, len(b.Windows), b.StrayEnds)
	}
	var s []string
	for i, x := range a.Windows {
		y := b.Windows[i]
		if !reflect.DeepEqual(x, y) {
			s = append(s, fmt.Sprintf("window %d: insns %d mem %d cycles %d (%d pcs) vs %d %d %d (%d pcs)",
				i, x.Insns, x.Mem, x.Cycles, len(x.PCs), y.Insns, y.Mem, y.Cycles, len(y.PCs)))
		}
	}
	return strings.Join(s, "\n")
}
