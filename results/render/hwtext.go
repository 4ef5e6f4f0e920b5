package render

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/results/benchtab"
	"github.com/kci-dev/kci/results/verdict"
)

// HardwareText writes kci's bench table beside the user's hardware sets:
// the BPF rows both have (hardware, then kci in each of its units, each
// unit a column), the ratios with kci's model error per metric and unit
// (a line each), and what either side has alone. Units are numbered in a
// legend, in order of first use: a unit kci gains is a column and a line
// more, never a new layout.
func HardwareText(w io.Writer, ht benchtab.HardwareTable, model string) error {
	units := hardwareUnits(ht)
	var b strings.Builder
	b.WriteString(lines.Fold(fmt.Sprintf("kci beside the hardware sets %s: %s, mean ± spread over the sets\n",
		strings.Join(ht.Sets, ", "), ht.Unit), lines.Width))
	if len(ht.Rows) == 0 {
		b.WriteString("no variant of the hardware sets is a row of kci's table\n")
	} else {
		b.WriteString(hardwareRowsTable(ht, units).text(""))
	}
	var tail strings.Builder
	for i, u := range units {
		fmt.Fprintf(&tail, "[%d] kci: %s%s, mean ± spread over the seeds\n", i+1, u, modelNote(u, model))
	}
	tail.WriteString("absolute numbers of different units do not compare: only the ratios below get a model error\n")
	if ht.FloorNs > 0 {
		fmt.Fprintf(&tail, "the hardware's rows are less bpf_stats' floor, %.1f ns a call (--hardware-floor): kci's "+
			"call:* rows hold no clock reads either; its bpf rows are the guest's bpf_stats, whose clock reads are in them\n", ht.FloorNs)
	}
	hwTrees := slices.Sorted(maps.Keys(ht.Trees))
	for _, t := range hwTrees {
		fmt.Fprintf(&tail, "the hardware's %s-* variants are kci's %s-* rows (--hardware-tree)\n", t, ht.Trees[t])
	}
	if len(ht.Clocks) > 0 && ht.ClockUnit == "" {
		fmt.Fprintf(&tail, "\nper program, kci's exact instructions in its calls per the hardware's ns: what the "+
			"hardware retired a ns (at f GHz its IPC is insns/ns ÷ f; programs the hardware read at %g ns or less "+
			"are left out):\n", benchtab.MinHardwareNs)
		b.WriteString(lines.Fold(tail.String(), lines.Width))
		tail.Reset()
		b.WriteString(insnsTable(ht).text(""))
	} else if len(ht.Clocks) > 0 {
		fmt.Fprintf(&tail, "\nper program, kci's %s [%d] per the hardware's ns: one figure for all if the model "+
			"charged each program what the hardware spends; their median, %.2f, stands for the hardware's clock, "+
			"and a program above it is one the model charges more than the others for the hardware's time, "+
			"below it less (programs the hardware read at %g ns or less are left out); cycles/ns is the product "+
			"of insns/ns, kci's exact instructions in the calls per the hardware's ns (what the hardware "+
			"retired a ns: at f GHz its IPC is insns/ns ÷ f), and cycles/insn, what the model charged each:\n",
			ht.ClockUnit, slices.Index(units, ht.ClockUnit)+1, ht.ClockMedian, benchtab.MinHardwareNs)
		b.WriteString(lines.Fold(tail.String(), lines.Width))
		tail.Reset()
		b.WriteString(clockTable(ht).text(""))
	}
	if len(ht.Ratios) > 0 {
		tail.WriteString("\nratios, the dearer on the hardware over the cheaper: the hardware's of the sets' means " +
			"[lowest, highest of the sets' own]; kci's per metric and unit [95 % interval] and its model error, " +
			"kci / hardware − 1:\n")
		b.WriteString(lines.Fold(tail.String(), lines.Width))
		tail.Reset()
		b.WriteString(hardwareRatioTable(ht, units).text(""))
	}
	if len(ht.OnlyHardware) > 0 {
		tail.WriteString("hardware variants no kci row matches: " + strings.Join(ht.OnlyHardware, ", ") + "\n")
	}
	if len(ht.OnlyKCI) > 0 {
		tail.WriteString("kci rows without a hardware number: " + strings.Join(ht.OnlyKCI, ", ") + "\n")
	}
	_, err := io.WriteString(w, b.String()+lines.Fold(tail.String(), lines.Width))
	return err
}

// hardwareUnits are kci's units in the table, in order of first use.
func hardwareUnits(ht benchtab.HardwareTable) []string {
	var units []string
	add := func(u string) {
		if !slices.Contains(units, u) {
			units = append(units, u)
		}
	}
	for _, r := range ht.Rows {
		for _, v := range r.KCI {
			add(v.Unit)
		}
	}
	for _, r := range ht.Ratios {
		for _, v := range r.KCI {
			add(v.Unit)
		}
	}
	return units
}

// modelNote names the cache model beside its unit.
func modelNote(unit, model string) string {
	if model == "" || !strings.HasPrefix(unit, verdict.RowUnit(verdict.CyclesRow)) {
		return ""
	}
	return " (kci's cache model " + model + ": a model, not a measurement)"
}

// hardwareRowsTable: a line per BPF row, the hardware's number and kci's
// in each unit the rows have ("[n]" columns, the legend's numbers).
func hardwareRowsTable(ht benchtab.HardwareTable, legend []string) *table {
	t := &table{header: []string{"variant", "prog", "hardware"}, right: []bool{false, false, true}}
	var units []string
	for i, u := range legend {
		if slices.ContainsFunc(ht.Rows, func(r benchtab.HardwareRow) bool {
			return slices.ContainsFunc(r.KCI, func(v benchtab.UnitValue) bool { return v.Unit == u })
		}) {
			units = append(units, u)
			t.header = append(t.header, fmt.Sprintf("kci [%d]", i+1))
			t.right = append(t.right, true)
		}
	}
	last := ""
	for _, r := range ht.Rows {
		name := ""
		if r.Variant != last {
			name, last = r.Variant, r.Variant
		}
		cells := []string{name, r.Program, fmtSpread(r.HW)}
		for _, u := range units {
			cell := "-"
			for _, v := range r.KCI {
				if v.Unit == u {
					cell = fmtSpread(v.Spread)
				}
			}
			cells = append(cells, cell)
		}
		t.add(cells...)
	}
	return t
}

// clockTable: a line per program with its modelled cycles per the
// hardware's ns and their distance from the programs' median.
func clockTable(ht benchtab.HardwareTable) *table {
	t := &table{header: []string{"variant", "prog", "cycles/ns", "against the median", "insns/ns", "cycles/insn"},
		right: []bool{false, false, true, true, true, true}}
	last := ""
	for _, c := range ht.Clocks {
		name := ""
		if c.Variant != last {
			name, last = c.Variant, c.Variant
		}
		if c.CyclesPerNs == 0 {
			continue // no cycles in its calls
		}
		insns, cpi := "-", "-"
		if c.InsnsPerNs > 0 {
			insns, cpi = fmt.Sprintf("%.2f", c.InsnsPerNs), fmt.Sprintf("%.2f", c.CyclesPerInsn)
		}
		t.add(name, c.Program, fmt.Sprintf("%.2f", c.CyclesPerNs), fmtErrPct(c.ErrPct), insns, cpi)
	}
	return t
}

// insnsTable: a line per program with the hardware's instructions a ns
// (no cache model ran).
func insnsTable(ht benchtab.HardwareTable) *table {
	t := &table{header: []string{"variant", "prog", "insns/ns"}, right: []bool{false, false, true}}
	last := ""
	for _, c := range ht.Clocks {
		name := ""
		if c.Variant != last {
			name, last = c.Variant, c.Variant
		}
		t.add(name, c.Program, fmt.Sprintf("%.2f", c.InsnsPerNs))
	}
	return t
}

// hardwareRatioTable: a line per ratio with the hardware's, then a line
// per metric and unit of kci's with its model error.
func hardwareRatioTable(ht benchtab.HardwareTable, units []string) *table {
	t := &table{header: []string{"ratio / kci metric [unit]", "hardware", "kci [95 % interval]", "error"},
		right: []bool{false, false, false, true}}
	for _, r := range ht.Ratios {
		hw := fmtRatio(r.HW)
		if !math.IsNaN(r.HWLo) {
			hw += fmt.Sprintf(" [%.2f, %.2f]", r.HWLo, r.HWHi)
		}
		t.add(r.A+" / "+r.B, hw, "", "")
		for _, k := range r.KCI {
			iv := fmtRatio(k.Ratio)
			if !math.IsNaN(k.Lo) {
				iv += fmt.Sprintf(" [%.2f, %.2f]", k.Lo, k.Hi)
			}
			t.add(fmt.Sprintf("  %s [%d]", k.Metric, slices.Index(units, k.Unit)+1), "", iv, fmtErrPct(k.ErrPct))
		}
	}
	return t
}

func fmtSpread(s benchtab.Spread) string {
	if math.IsNaN(s.Mean) {
		return "-"
	}
	return fmtNs(s.Mean) + " ± " + fmtNs(s.Spread)
}

func fmtRatio(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2f×", x)
}

func fmtErrPct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return fmt.Sprintf("%+.1f%%", x)
}
