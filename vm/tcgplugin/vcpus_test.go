package tcgplugin_test

import (
	"context"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"testing"

	"github.com/kci-dev/kci/vm/tcgplugin"
)

// pingRounds is testdata/pingpong.c's R.
const pingRounds = 2000

// TestQEMUVCPUs boots testdata/pingpong.c, two processes handing a turn
// back and forth through a shared line, on one vCPU and on two with the
// coherent model. Window 1 increments one line from both processes where
// window 0 increments a line each, with the same instructions: on two
// vCPUs that line moves between the cores twice a round, on one it never
// moves: counted in the processes' code, which holds the increments.
// It also checks that a two-vCPU boot repeats exactly, per vCPU, and that
// two vCPUs modelled as one core's hardware threads move nothing.
func TestQEMUVCPUs(t *testing.T) {
	g := newGuest(t)
	g.initrd = buildInitrd(t, context.Background(), "testdata/pingpong.c")
	run := func(smp int, o tcgplugin.Options) *tcgplugin.Counts {
		t.Helper()
		g.smp = smp
		out := filepath.Join(t.TempDir(), "counts.txt")
		g.boot(t, tcgplugin.Args(g.so, out, o))
		c := parseFile(t, out)
		if c.VCPUs != smp || len(c.Windows) != 2 || c.Windows[0].Incomplete || c.Windows[1].Incomplete {
			t.Fatalf("-smp %d: %d vCPUs, windows %+v", smp, c.VCPUs, c.Windows)
		}
		return c
	}
	o := tcgplugin.Options{Cache: true, Coherent: true}
	one := run(1, o)
	o.Quantum = 1000
	two := run(2, o)
	// The windows repeat exactly, per vCPU. The run's closing totals
	// (turns, coherence events from boot to exit) need not: this guest's
	// boot runs instrumented from its first instruction, and a host
	// event there (a realtime timer) can move a turn's end by a block
	// (916820 against 916822 turns, seen once).
	if again := run(2, o); !reflect.DeepEqual(again.Windows, two.Windows) {
		t.Errorf("second two-vCPU boot counted differently:\n%s", diffWindows(two, again))
	} else if *again.Coherence != *two.Coherence {
		t.Logf("whole-run totals differ outside the windows: %+v against %+v", *again.Coherence, *two.Coherence)
	}
	for _, w := range two.Windows {
		if len(w.PerVCPU) != 2 || w.PerVCPU[0].Insns == 0 || w.PerVCPU[1].Insns == 0 {
			t.Errorf("window %d: per vCPU %+v: want both vCPUs counted", w.Index, w.PerVCPU)
		}
	}
	if two.Coherence == nil || two.Coherence.Transfers < 2*pingRounds || two.Coherence.Locked < 4*pingRounds {
		t.Errorf("coherence %+v: want at least %d transfers and %d locked", two.Coherence, 2*pingRounds, 4*pingRounds)
	}
	// The processes' own code (where the increments are): the kernel's
	// share of a window also holds whichever timer interrupt fell in it.
	perRound := func(c *tcgplugin.Counts) (cycles, insns float64) {
		a, b := c.Windows[0].Sum(0, userTop), c.Windows[1].Sum(0, userTop)
		return (float64(b.Cycles) - float64(a.Cycles)) / pingRounds, (float64(b.Insns) - float64(a.Insns)) / pingRounds
	}
	c1, i1 := perRound(one)
	c2, i2 := perRound(two)
	t.Logf("shared line minus private lines, per round: one vCPU %+.1f cycles %+.2f insns; two vCPUs %+.1f cycles %+.2f insns; two-vCPU windows: %+v / %+v; %+v",
		c1, i1, c2, i2, two.Windows[0].PerVCPU, two.Windows[1].PerVCPU, *two.Coherence)
	if c1 < -10 || c1 > 10 {
		t.Errorf("one vCPU: the shared line moved cycles by %.1f a round, want |Δ| < 10", c1)
	}
	// Two transfers a round, each the model's core-to-core latency.
	if xfer := float64(two.Model.LatXfer); c2 < 1.9*xfer || c2 > 2.1*xfer {
		t.Errorf("two vCPUs: the shared line added %.1f cycles a round, want two transfers (2 × %.0f ± 5 %%)", c2, xfer)
	}
	// The blocks that made them say so: two cross-core events a round
	// in the processes' code with two vCPUs, none with one.
	coh := func(c *tcgplugin.Counts) float64 {
		a, b := c.Windows[0].Sum(0, userTop), c.Windows[1].Sum(0, userTop)
		return (float64(b.Coh) - float64(a.Coh)) / pingRounds
	}
	if h1, h2 := coh(one), coh(two); h1 != 0 || h2 < 1.9 || h2 > 2.1 {
		t.Errorf("cross-core events a round in the processes' blocks: %.2f (one vCPU), %.2f (two), want 0 and 2", h1, h2)
	}
	if i1 < -5 || i1 > 5 || i2 < -5 || i2 > 5 {
		t.Errorf("instructions moved %.2f (one vCPU) and %.2f (two) a round: want |Δ| <= 5", i1, i2)
	}
	// Two hardware threads of one core (smt=2) share its L1 and L2: the
	// line never leaves the core, as on one vCPU, while each vCPU keeps
	// its own counts.
	o.SMT2 = true
	sib := run(2, o)
	cs, _ := perRound(sib)
	t.Logf("SMT siblings: shared line minus private lines %+.1f cycles a round; model %s", cs, sib.Model.Name)
	if h := coh(sib); h != 0 || cs < -10 || cs > 10 || sib.Model.Cores != 1 || sib.Model.Name != "xeon-platinum-8180-coherent-smt2" {
		t.Errorf("SMT siblings: %.2f cross-core events and %+.1f cycles a round, %d cores, model %q: want 0, |Δ| < 10, 1, the smt2 model",
			h, cs, sib.Model.Cores, sib.Model.Name)
	}
	for _, w := range sib.Windows {
		if len(w.PerVCPU) != 2 || w.PerVCPU[0].Insns == 0 || w.PerVCPU[1].Insns == 0 {
			t.Errorf("SMT siblings, window %d: per vCPU %+v: want both vCPUs counted", w.Index, w.PerVCPU)
		}
	}
}

// TestQEMUTurnsOutsideWindows boots testdata/starve.c on two vCPUs: CPU 0
// spins, outside any window, on a flag only CPU 1 sets. QEMU 7.2 alone
// gives CPU 1 no instructions while CPU 0 spins, for as long as nothing
// else ends CPU 0's turn (logged; a QEMU that splits the budget itself,
// 8.1 on, does not starve it); under the plugin with arm=marker, the
// guard outside windows ends a turn after a million instructions with no
// other vCPU running, so CPU 1 sets the flag within a bounded number of
// spins, the same in two boots.
func TestQEMUTurnsOutsideWindows(t *testing.T) {
	g := newGuest(t)
	g.initrd = buildInitrd(t, context.Background(), "testdata/starve.c")
	g.smp = 2
	spins := func(console string) (int64, bool) {
		t.Helper()
		m := regexp.MustCompile(`kci-starve: (flag seen after|CPU 1 never ran in) (\d+) spins`).FindStringSubmatch(console)
		if m == nil {
			t.Fatalf("no kci-starve line in the console:\n%s", console)
		}
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return n, m[1] == "flag seen after"
	}
	plain, _ := g.boot(t, nil)
	if n, seen := spins(plain); seen {
		t.Logf("QEMU alone: CPU 1 set the flag only after %d spins of CPU 0", n)
	} else {
		t.Logf("QEMU alone: CPU 1 never ran in %d spins of CPU 0", n)
	}
	o := tcgplugin.Options{ArmAtMarker: true, Quantum: 1000}
	run := func() (int64, *tcgplugin.Counts) {
		out := filepath.Join(t.TempDir(), "counts.txt")
		console, _ := g.boot(t, tcgplugin.Args(g.so, out, o))
		n, seen := spins(console)
		if !seen {
			t.Fatalf("with the plugin's quantum: CPU 1 never ran in %d spins of CPU 0", n)
		}
		c := parseFile(t, out)
		if len(c.Windows) != 1 || c.Windows[0].Incomplete {
			t.Fatalf("windows %+v, want one complete", c.Windows)
		}
		return n, c
	}
	n, c := run()
	if c.Coherence == nil {
		t.Fatal("no turns line from a two-vCPU run")
	}
	t.Logf("with the plugin: flag seen after %d spins; %d turns ended by the plugin", n, c.Coherence.Turns)
	// A spin is 3 instructions, so 1<<24 spins are about 50 of the
	// guard's turns of CPU 0: CPU 1 moving itself and writing takes far
	// fewer of its own. Starved, CPU 0 spins all 1<<28.
	const most = 1 << 24
	if n > most || c.Coherence.Turns == 0 {
		t.Errorf("flag seen after %d spins, %d turns ended: want at most %d spins and turns ended", n, c.Coherence.Turns, most)
	}
	if again, _ := run(); again != n {
		t.Errorf("second boot: flag seen after %d spins, first %d", again, n)
	}
}
