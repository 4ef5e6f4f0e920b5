package render

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/results/benchtab"

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
		// Its header is as wide as its rows: kci report --agg in text is the narrow layout.
		b.WriteString(escapeCells(tb).markdown())
		fmt.Fprintf(&b, "\n<sub>%s</sub>\n\n", mdInline("unit: "+strings.TrimSpace(t.Metric+" "+t.Unit)+"; spread = (max − min) / 2 over the sets"))
		for _, n := range t.Notes {
			b.WriteString("- " + mdText(n) + "\n")
		}
		if len(t.Notes) > 0 {
			b.WriteString("\n")
		}
	}
	_, err := io.WriteString(w, foldMarkdown(b.String(), lines.Width))
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
// program columns at least 16 wide, one right-aligned column per set at
// least 10 wide, then "mean ± spread" on each variant's first line, a
// blank line after each variant. Trailing blanks are trimmed. Sets that
// would take a line past lines.Width go to further blocks of the same
// rows, the total column in the last.
func AggText(w io.Writer, t benchtab.AggTable) error { return aggText(w, t, nil) }

// aggTotalTail is the total column's width: "   total mean ± spread".
const aggTotalTail = 24

// aggText is AggText with the total cells of rows past a variant's first
// (totals[[2]int{variant, program}], kci bench's cost rows).
func aggText(w io.Writer, t benchtab.AggTable, totals map[[2]int]string) error {
	var b strings.Builder
	line := func(s string) {
		b.WriteString(strings.TrimRight(s, " "))
		b.WriteByte('\n')
	}
	nameW, progW := aggNameW, aggNameW
	for _, v := range t.Variants {
		nameW = max(nameW, utf8.RuneCountInString(v.Variant))
		for _, p := range v.Programs {
			progW = max(progW, utf8.RuneCountInString(p.Name))
		}
	}
	widths := make([]int, len(t.Sets))
	for i, s := range t.Sets {
		widths[i] = max(aggSetW, utf8.RuneCountInString(s))
	}
	if t.Title != "" {
		line(t.Title)
	}
	_, what := t.Center(benchtab.AggVariant{})
	groups := aggGroups(widths, lines.Width-(nameW+1)-(progW+1), aggTotalTail)
	for gi, g := range groups {
		last := gi == len(groups)-1
		h := fmt.Sprintf("%-*s %-*s ", nameW, "variant", progW, "prog")
		setsW := 0
		for _, i := range g {
			h += fmt.Sprintf("%*s ", widths[i], t.Sets[i])
			setsW += widths[i] + 1
		}
		rule := nameW + 1 + progW + 1 + setsW
		if last {
			h += "   total " + what + " ± spread"
			rule += aggTotalTail
		}
		line(h)
		line(strings.Repeat("-", rule))
		aggRows(line, t, g, nameW, progW, widths, last, totals)
	}
	for _, n := range t.Notes {
		line(lines.Wrap(n, lines.Width, "  "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// aggRows writes every variant's rows for the sets g, with the total
// column if last.
func aggRows(line func(string), t benchtab.AggTable, g []int, nameW, progW int, widths []int, last bool, totals map[[2]int]string) {
	for vi, v := range t.Variants {
		for pi, p := range v.Programs {
			name := ""
			if pi == 0 {
				name = v.Variant
			}
			row := fmt.Sprintf("%-*s %-*s ", nameW, name, progW, p.Name)
			for _, si := range g {
				row += fmt.Sprintf("%*s ", widths[si], fmtNs(p.Values[si]))
			}
			switch tot, ok := totals[[2]int{vi, pi}]; {
			case !last:
			case pi == 0:
				c, _ := t.Center(v)
				row += fmt.Sprintf("   %7s ± %-5s", fmtNs(c), fmtNs(v.Spread))
			case ok:
				row += "   " + tot
			}
			line(row)
		}
		if len(v.Programs) == 0 {
			line(fmt.Sprintf("%-*s %-*s", nameW, v.Variant, progW, "(no programs)"))
		}
		line("")
	}
}

// aggGroups splits the set columns (their widths, each plus a blank)
// into runs that fit room, the last one with tail more: the last run is
// filled from the end, the others from the front. A column wider than
// the room gets a run of its own.
func aggGroups(widths []int, room, tail int) [][]int {
	var lastG []int
	used := tail
	i := len(widths) - 1
	for ; i >= 0 && (len(lastG) == 0 || used+widths[i]+1 <= room); i-- {
		lastG = append([]int{i}, lastG...)
		used += widths[i] + 1
	}
	var groups [][]int
	var cur []int
	used = 0
	for k := 0; k <= i; k++ {
		if len(cur) > 0 && used+widths[k]+1 > room {
			groups, cur, used = append(groups, cur), nil, 0
		}
		cur = append(cur, k)
		used += widths[k] + 1
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	return append(groups, lastG)
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
