package render

import (
	"fmt"
	"github.com/kci-dev/kci/results/benchtab"
	"io"
	"math"
	"strings"

	"github.com/kci-dev/kci/results/verdict"
)

// BenchText writes the mail's table with each variant's cost rows under its
// programs (mean ± spread in the total column), then the design ratios
// and what was left out.
func BenchText(w io.Writer, bt benchtab.BenchTable) error {
	var b strings.Builder
	t := bt.Agg
	t.Notes = nil
	for i := range t.Variants {
		if len(t.Variants[i].Programs) == 0 {
			// The baseline: its total column is the programs' 0.
			nan := make([]float64, len(t.Sets))
			for k := range nan {
				nan[k] = math.NaN()
			}
			t.Variants[i].Programs = []benchtab.AggProg{{Name: "(no programs)", Values: nan}}
		}
		for _, p := range bt.Paths[i] {
			t.Variants[i].Programs = append(t.Variants[i].Programs, benchtab.AggProg{Name: "[" + p.Name + "]", Values: p.Values})
		}
	}
	if err := AggText(&b, t); err != nil {
		return err
	}
	text := benchAnnotate(bt, b.String())
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
		tail.WriteString("[modelled-cycles]: the window's cycles per packet in kci's cache model (" + bt.Model + "; a model, not a measurement: " +
			"docs/cost.md); [cycles-marginal]: modelled-cycles − the same boot's none\n")
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
	_, err := io.WriteString(w, text+tail.String())
	return err
}

// benchAnnotate puts each cost row's mean ± spread in the total column.
func benchAnnotate(bt benchtab.BenchTable, table string) string {
	lines := strings.Split(table, "\n")
	vi, width := -1, 0
	for i, l := range lines {
		if strings.HasPrefix(l, "variant ") {
			width = len([]rune(l)) - len("   total mean ± spread")
		}
		for k, v := range bt.Agg.Variants {
			if strings.HasPrefix(l, v.Variant+" ") {
				vi = k
			}
		}
		f := strings.Fields(l)
		if vi < 0 || len(f) == 0 {
			continue
		}
		for _, p := range bt.Paths[vi] {
			if f[0] == "["+p.Name+"]" {
				pad := max(0, width-len([]rune(l)))
				lines[i] = l + strings.Repeat(" ", pad) + fmt.Sprintf("   %7s ± %s", fmtNs(p.Mean), fmtNs(p.Spread))
			}
		}
	}
	return strings.Join(lines, "\n")
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
