package render

import (
	"encoding/json"
	"fmt"
	"github.com/kci-dev/kci/results/benchtab"
	"io"
	"math"
	"strings"

	"github.com/kci-dev/kci/results/verdict"
)

// Column widths of the user's table.
const (
	aggNameW = 16
	aggSetW  = 10
)

// fmtNs writes ns/pkt with one decimal, "-" for NaN (a set without the
// variant).
func fmtNs(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.1f", x)
}

// RenderAggMarkdown writes the tables as GitHub Markdown: per table its
// title, one row per program with its value per set, the variant's total
// (median or mean ± spread) on its first row.
func RenderAggMarkdown(w io.Writer, tables []benchtab.AggTable) error {
	var b strings.Builder
	for _, t := range tables {
		_, what := t.Center(benchtab.AggVariant{})
		if t.Title != "" {
			b.WriteString("**" + mdInline(t.Title) + "**\n\n")
		}
		tb := &table{header: append(append([]string{"variant", "prog"}, t.Sets...), "total "+what+" ± spread")}
		tb.right = make([]bool, len(tb.header))
		for i := 2; i < len(tb.right); i++ {
			tb.right[i] = true
		}
		for _, v := range t.Variants {
			for pi, p := range v.Programs {
				row := []string{"", p.Name}
				if pi == 0 {
					row[0] = v.Variant
				}
				for _, x := range p.Values {
					row = append(row, fmtNs(x))
				}
				total := ""
				if pi == 0 {
					c, _ := t.Center(v)
					total = fmtNs(c) + " ± " + fmtNs(v.Spread)
				}
				tb.add(append(row, total)...)
			}
		}
		b.WriteString(escapeCells(tb).markdown())
		fmt.Fprintf(&b, "\n<sub>%s</sub>\n\n", mdInline("unit: "+strings.TrimSpace(t.Metric+" "+t.Unit)+"; spread = (max − min) / 2 over the sets"))
		for _, n := range t.Notes {
			b.WriteString("- " + mdText(n) + "\n")
		}
		if len(t.Notes) > 0 {
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// AggJSON is the tables as one JSON document, numbers as numbers
// (absent sets null), with the center statistic named.
func AggJSON(tables []benchtab.AggTable) ([]byte, error) {
	type prog struct {
		Name   string     `json:"name"`
		Values []*float64 `json:"values_ns_per_pkt"`
	}
	type variant struct {
		Variant  string     `json:"variant"`
		Programs []prog     `json:"programs"`
		Totals   []*float64 `json:"totals"`
		Center   string     `json:"center"`
		Value    *float64   `json:"total"`
		Mean     *float64   `json:"mean"`
		Median   *float64   `json:"median"`
		Spread   *float64   `json:"spread"`
	}
	type tab struct {
		Title    string    `json:"title,omitempty"`
		Unit     string    `json:"unit"`
		Metric   string    `json:"metric,omitempty"`
		Sets     []string  `json:"sets"`
		Variants []variant `json:"variants"`
		Notes    []string  `json:"notes,omitempty"`
	}
	nums := func(xs []float64) []*float64 {
		out := make([]*float64, len(xs))
		for i, x := range xs {
			out[i] = verdict.Finite(x)
		}
		return out
	}
	doc := struct {
		Tables []tab `json:"tables"`
	}{Tables: []tab{}}
	for _, t := range tables {
		jt := tab{Title: t.Title, Unit: t.Unit, Metric: t.Metric, Sets: t.Sets, Notes: t.Notes, Variants: []variant{}}
		for _, v := range t.Variants {
			c, what := t.Center(v)
			jv := variant{Variant: v.Variant, Totals: nums(v.Totals), Center: what, Value: verdict.Finite(c),
				Mean: verdict.Finite(v.Mean), Median: verdict.Finite(v.Median), Spread: verdict.Finite(v.Spread)}
			for _, p := range v.Programs {
				jv.Programs = append(jv.Programs, prog{Name: p.Name, Values: nums(p.Values)})
			}
			jt.Variants = append(jt.Variants, jv)
		}
		doc.Tables = append(doc.Tables, jt)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("results: agg: encode: %w", err)
	}
	return append(b, '\n'), nil
}

// AggText writes the table in the user's layout (the mail's): variant and
// program columns 16 wide, one right-aligned column per set at least 10
// wide, then "mean ± spread" on each variant's first line, a blank line
// after each variant. Trailing blanks are trimmed.
func AggText(w io.Writer, t benchtab.AggTable) error {
	var b strings.Builder
	line := func(s string) {
		b.WriteString(strings.TrimRight(s, " "))
		b.WriteByte('\n')
	}
	widths := make([]int, len(t.Sets))
	setsW := 0
	for i, s := range t.Sets {
		widths[i] = max(aggSetW, len([]rune(s)))
		setsW += widths[i] + 1
	}
	if t.Title != "" {
		line(t.Title)
	}
	h := fmt.Sprintf("%-*s %-*s ", aggNameW, "variant", aggNameW, "prog")
	for i, s := range t.Sets {
		h += fmt.Sprintf("%*s ", widths[i], s)
	}
	_, what := t.Center(benchtab.AggVariant{})
	line(h + "   total " + what + " ± spread")
	line(strings.Repeat("-", 2*(aggNameW+1)+setsW+24))
	for _, v := range t.Variants {
		for pi, p := range v.Programs {
			name := ""
			if pi == 0 {
				name = v.Variant
			}
			row := fmt.Sprintf("%-*s %-*s ", aggNameW, name, aggNameW, p.Name)
			for si, x := range p.Values {
				row += fmt.Sprintf("%*s ", widths[si], fmtNs(x))
			}
			if pi == 0 {
				c, _ := t.Center(v)
				row += fmt.Sprintf("   %7s ± %-5s", fmtNs(c), fmtNs(v.Spread))
			}
			line(row)
		}
		if len(v.Programs) == 0 {
			line(fmt.Sprintf("%-*s %-*s", aggNameW, v.Variant, aggNameW, "(no programs)"))
		}
		line("")
	}
	for _, n := range t.Notes {
		line(n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// String renders the table.
func AggString(t benchtab.AggTable) string {
	var b strings.Builder
	_ = AggText(&b, t) // a strings.Builder does not fail
	return b.String()
}

// RenderAgg writes tables one after another, separated by a blank line.
func RenderAgg(w io.Writer, tables []benchtab.AggTable) error {
	for i, t := range tables {
		if i > 0 {
			if _, err := io.WriteString(w, "\n"); err != nil {
				return err
			}
		}
		if err := AggText(w, t); err != nil {
			return err
		}
	}
	return nil
}
