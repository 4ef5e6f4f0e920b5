package render

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kci-dev/kci/internal/golden"
	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/results/benchtab"
)

// The mail's sets beside a recorded kci run, his gtp-* mapped to the
// run's patched kernel: the page kci bench --hardware prints is the
// golden testdata/TestHardwareText/hardware.txt, within 100 columns.
func TestHardwareText(t *testing.T) {
	hw, err := benchtab.ReadHardware(hardwareSets(), 0)
	if err != nil {
		t.Fatal(err)
	}
	bt := benchtab.BuildBench(loadRun(t, "../testdata/recorded-gtp"))
	var b strings.Builder
	if err := HardwareText(&b, benchtab.BuildHardware(bt, hw, map[string]string{"gtp": "gtp+patched"}, 0), bt.Model); err != nil {
		t.Fatal(err)
	}
	golden.Own(t, "hardware.txt", b.String())
	for _, l := range strings.Split(b.String(), "\n") {
		if utf8.RuneCountInString(l) > lines.Width {
			t.Errorf("%d columns: %s", utf8.RuneCountInString(l), l)
		}
	}
	// Targeted, the mail's numbers where the page prints them.
	for _, want := range []string{"gtp+patched-gtp       total             920.9 ± 34.5",
		"gtp+patched-gtp / gtp+patched-gtplru       1.70×", "hardware variants no kci row matches: ext-cnt, ext-ext"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// A unit kci gains (a multi-core model's cycles, say) is one more column
// of the rows and one more line of each ratio, numbered in the legend:
// nothing in the renderer names today's units.
func TestHardwareTextNewUnit(t *testing.T) {
	sp := func(m float64) benchtab.Spread { return benchtab.Spread{Mean: m, Spread: 1, N: 3} }
	ht := benchtab.HardwareTable{Sets: []string{"s1", "s2", "s3"}, Unit: benchtab.HardwareUnit,
		Rows: []benchtab.HardwareRow{{Variant: "t-a", Hardware: "t-a", Program: "total", HW: sp(100),
			KCI: []benchtab.UnitValue{{Unit: "unit one", Spread: sp(200)}, {Unit: "unit two", Spread: sp(300)}}}},
		Ratios: []benchtab.HardwareRatio{{A: "t-a", B: "t-b", HW: 2, HWLo: math.NaN(), HWHi: math.NaN(), KCI: []benchtab.UnitRatio{
			{Metric: "m", Unit: "unit one", Ratio: 2.2, Lo: math.NaN(), Hi: math.NaN(), N: 1, ErrPct: 10},
			{Metric: "m", Unit: "unit three", Ratio: 1.5, Lo: 1.4, Hi: 1.6, N: 3, ErrPct: -25}}}}}
	var b strings.Builder
	if err := HardwareText(&b, ht, ""); err != nil {
		t.Fatal(err)
	}
	s := b.String()
	if h := strings.Split(s, "\n")[1]; strings.Join(strings.Fields(h), " ") != "variant prog hardware kci [1] kci [2]" {
		t.Errorf("header %q: want a column for each unit of the rows", h)
	}
	for _, want := range []string{"200.0 ± 1.0  300.0 ± 1.0", "[1] kci: unit one", "[2] kci: unit two", "[3] kci: unit three",
		"  m [1]", "2.20×", "+10.0%", "  m [3]", "1.50× [1.40, 1.60]", "-25.0%"} {
		if !strings.Contains(s, want) {
			t.Errorf("lacks %q:\n%s", want, s)
		}
	}
}

// The programs' clocks follow the legend: the calls' unit by its number,
// the median, and a line per program with its distance from it and that
// figure's two factors (a dash where kci has no instruction counts).
func TestHardwareTextClocks(t *testing.T) {
	sp := func(m float64) benchtab.Spread { return benchtab.Spread{Mean: m, Spread: 1, N: 3} }
	unit := "modelled cycles/pkt, 6 cores, the programs' calls"
	ht := benchtab.HardwareTable{Sets: []string{"s1"}, Unit: benchtab.HardwareUnit,
		Rows: []benchtab.HardwareRow{{Variant: "gtp-gtp", Hardware: "gtp-gtp", Program: "gtp_write", HW: sp(521),
			KCI: []benchtab.UnitValue{{Unit: "ns", Spread: sp(1400)}, {Unit: unit, Spread: sp(1429)}}}},
		Clocks: []benchtab.ProgramClock{{Variant: "gtp-gtp", Program: "gtp_write", CyclesPerNs: 2.74, ErrPct: -37.7, InsnsPerNs: 1.0, CyclesPerInsn: 2.74},
			{Variant: "gtp-gtp", Program: "gtp_read", CyclesPerNs: 4.4}},
		ClockUnit: unit, ClockMedian: 4.40}
	var b strings.Builder
	if err := HardwareText(&b, ht, ""); err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{"per program, kci's " + unit + " [2] per the hardware's ns", "their median, 4.40,",
		"insns/ns cycles/insn", "gtp-gtp gtp_write 2.74 -37.7% 1.00 2.74", "gtp_read 4.40 +0.0% - -"} {
		if !strings.Contains(flat, want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	for _, l := range strings.Split(b.String(), "\n") {
		if utf8.RuneCountInString(l) > lines.Width {
			t.Errorf("%d columns: %s", utf8.RuneCountInString(l), l)
		}
	}
}

// Without the cache model the table is the hardware's instructions a ns
// alone, under a legend that says what they are.
func TestHardwareTextInsnsOnly(t *testing.T) {
	ht := benchtab.HardwareTable{Sets: []string{"s1"}, Unit: benchtab.HardwareUnit,
		Rows:   []benchtab.HardwareRow{{Variant: "gtp-gtp", Hardware: "gtp-gtp", Program: "gtp_write", HW: benchtab.Spread{Mean: 521, N: 1}}},
		Clocks: []benchtab.ProgramClock{{Variant: "gtp-gtp", Program: "gtp_write", InsnsPerNs: 1.04}}}
	var b strings.Builder
	if err := HardwareText(&b, ht, ""); err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{"per program, kci's exact instructions in its calls per the hardware's ns",
		"variant prog insns/ns gtp-gtp gtp_write 1.04"} {
		if !strings.Contains(flat, want) {
			t.Errorf("lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(flat, "cycles/ns") || strings.Contains(flat, "median") {
		t.Errorf("cycles' columns without the cache model:\n%s", b.String())
	}
}
