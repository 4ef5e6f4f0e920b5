package render

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/benchtab"

	"github.com/kci-dev/kci/results/verdict"
)

// BenchText writes the mail's table with each variant's cost rows under its
// programs (mean ± spread in the total column), then the design ratios
// and what was left out.
func BenchText(w io.Writer, bt benchtab.BenchTable) error {
	var b strings.Builder
	t := bt.Agg
	t.Notes = nil
	t.Variants = slices.Clone(t.Variants)
	totals := map[[2]int]string{}
	for i := range t.Variants {
		if len(t.Variants[i].Programs) == 0 {
			// The baseline: its total column is the programs' 0.
			nan := make([]float64, len(t.Sets))
			for k := range nan {
				nan[k] = math.NaN()
			}
			t.Variants[i].Programs = []benchtab.AggProg{{Name: "(no programs)", Values: nan}}
		}
		progs := slices.Clone(t.Variants[i].Programs)
		for _, p := range bt.Paths[i] {
			totals[[2]int{i, len(progs)}] = fmt.Sprintf("%7s ± %s", fmtNs(p.Mean), fmtNs(p.Spread))
			progs = append(progs, benchtab.AggProg{Name: "[" + p.Name + "]", Values: p.Values})
		}
		t.Variants[i].Programs = progs
	}
	if err := aggText(&b, t, totals); err != nil {
		return err
	}
	var tail strings.Builder
	tail.WriteString("[whole-path]: every non-idle guest ns in the window but kci's own / packets; [marginal]: whole-path − the same boot's none (no program)\n")
	tail.WriteString("[outside-bpf]: whole-path − the bpf_stats sum\n")
	if hasRow(bt, verdict.RxSoftirqRow) {
		tail.WriteString("[rx-softirq]: the NET_RX softirq (the receive path, the skb extension's free), interrupts taken out; " +
			"[rx-marginal]: rx-softirq − the same boot's none\n")
		tail.WriteString("whole-path = [syscalls] (the traffic's read and write) + [rx-softirq] + [hardirq] + [user+runtime] " +
			"(the traffic threads' Go code and runtime) + [rest] (other tasks, RCU and timer softirqs: deferred work); " +
			"[agent] (kci's sampler and the Go runtime's own threads) is left out of it\n")
	}
	if hasRow(bt, verdict.CyclesRow) {
		tail.WriteString("[modelled-cycles]: the window in " + results.ModelledCyclesLabel + ", not ns: kci's cache model (" + bt.Model +
			"; a model, not a measurement: docs/cost.md); [cycles-marginal]: modelled-cycles − the same boot's none, " +
			results.ModelledCyclesLabel + "\n")
	}
	if len(bt.Ratios) > 0 {
		tail.WriteString("\ndesigns side by side (mean ratio over seeds, 95 % interval by the delta method, Student t):\n")
		for _, r := range bt.Ratios {
			tail.WriteString(ratioText(r) + "\n")
		}
	}
	for _, e := range bt.Excluded {
		tail.WriteString("excluded: " + e + "\n")
	}
	if bt.Interleaved {
		tail.WriteString("several vCPUs: " + verdict.InterleavedNote + "; here only the [modelled-cycles] and " +
			"[cycles-marginal] rows stand\n")
	}
	splitText(&tail, bt.Splits)
	_, err := io.WriteString(w, b.String()+lines.Fold(tail.String(), lines.Width))
	return err
}

func ratioText(r benchtab.DesignRatio) string {
	iv := "[n/a: one seed]"
	if !math.IsNaN(r.Lo) {
		iv = fmt.Sprintf("[%.2f, %.2f]", r.Lo, r.Hi)
	}
	return fmt.Sprintf("  %s vs %s %s cost: %.2f× %s (%d seeds)", r.A, r.B, r.Metric, r.Ratio, iv, r.N)
}

// String renders the table.
func BenchString(bt benchtab.BenchTable) string {
	var b strings.Builder
	_ = BenchText(&b, bt) // a strings.Builder does not fail
	return b.String()
}

// hasRow reports whether any variant has the named cost row.
func hasRow(bt benchtab.BenchTable, name string) bool {
	for _, rows := range bt.Paths {
		for _, r := range rows {
			if r.Name == name {
				return true
			}
		}
	}
	return false
}
