package profile

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Symbol is one function's share of a profile. Self counts samples taken
// in the function itself, Total samples with it anywhere on the stack
// (once per stack, so recursion does not count twice).
type Symbol struct {
	Name     string
	Kind     Kind
	Self     int64
	Total    int64
	SelfPct  float64
	TotalPct float64
}

// Symbols returns every function of p (task root frames excluded) with
// its self and total counts, unsorted.
func Symbols(p *Profile) map[string]*Symbol {
	all := float64(p.Total())
	out := map[string]*Symbol{}
	get := func(name string, depth int) *Symbol {
		s, ok := out[name]
		if !ok {
			s = &Symbol{Name: name, Kind: FrameKind(name, depth)}
			out[name] = s
		}
		return s
	}
	for _, st := range p.Stacks {
		if len(st.Frames) < 2 || st.Count <= 0 {
			continue
		}
		seen := map[string]bool{}
		for i, f := range st.Frames[1:] {
			s := get(f, i+1)
			if !seen[f] {
				seen[f] = true
				s.Total += st.Count
			}
		}
		get(st.Frames[len(st.Frames)-1], len(st.Frames)-1).Self += st.Count
	}
	if all > 0 {
		for _, s := range out {
			s.SelfPct = 100 * float64(s.Self) / all
			s.TotalPct = 100 * float64(s.Total) / all
		}
	}
	return out
}

// Top returns the n functions with the most self samples (ties: more
// total, then name); n <= 0 returns all.
func Top(p *Profile, n int) []Symbol {
	syms := Symbols(p)
	out := make([]Symbol, 0, len(syms))
	for _, s := range syms {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Self != b.Self {
			return a.Self > b.Self
		}
		if a.Total != b.Total {
			return a.Total > b.Total
		}
		return a.Name < b.Name
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// Delta is one function's change from base to patched, in percentage
// points of each profile's samples (the profiles may differ in size).
type Delta struct {
	Name             string
	Kind             Kind
	Base, Patched    Symbol
	SelfPP, TotalPP  float64 // patched minus base
	OnlyBase, OnlyPt bool    // seen in one profile only
}

// Diff compares the functions of two profiles and returns the n with the
// largest change in self or total share (ties: self, then name); n <= 0
// returns all.
func Diff(base, patched *Profile, n int) []Delta {
	b, p := Symbols(base), Symbols(patched)
	names := map[string]bool{}
	for k := range b {
		names[k] = true
	}
	for k := range p {
		names[k] = true
	}
	out := make([]Delta, 0, len(names))
	for name := range names {
		d := Delta{Name: name}
		if s, ok := b[name]; ok {
			d.Base, d.Kind = *s, s.Kind
		} else {
			d.OnlyPt = true
		}
		if s, ok := p[name]; ok {
			d.Patched, d.Kind = *s, s.Kind
		} else {
			d.OnlyBase = true
		}
		d.Base.Name, d.Patched.Name = name, name
		d.SelfPP = d.Patched.SelfPct - d.Base.SelfPct
		d.TotalPP = d.Patched.TotalPct - d.Base.TotalPct
		out = append(out, d)
	}
	// Rank by the larger of the two changes: a new leaf shows in self,
	// the function whose callees grew in total.
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if x, y := a.size(), b.size(); x != y {
			return x > y
		}
		if x, y := math.Abs(a.SelfPP), math.Abs(b.SelfPP); x != y {
			return x > y
		}
		return a.Name < b.Name
	})
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

func (d Delta) size() float64 {
	return math.Max(math.Abs(d.SelfPP), math.Abs(d.TotalPP))
}

// WriteTopText writes the top table for a terminal.
func WriteTopText(w io.Writer, syms []Symbol, total int64) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%7s %7s %8s %8s  %s\n", "self%", "total%", "self", "total", "symbol")
	for _, s := range syms {
		fmt.Fprintf(&b, "%7.2f %7.2f %8d %8d  %s\n", s.SelfPct, s.TotalPct, s.Self, s.Total, s.Name)
	}
	fmt.Fprintf(&b, "(%d samples)\n", total)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteTopMarkdown writes the top table as Markdown.
func WriteTopMarkdown(w io.Writer, syms []Symbol, total int64) error {
	var b strings.Builder
	b.WriteString("| symbol | kind | self % | total % | self | total |\n|---|---|--:|--:|--:|--:|\n")
	for _, s := range syms {
		fmt.Fprintf(&b, "| `%s` | %s | %.2f | %.2f | %d | %d |\n", mdCode(s.Name), s.Kind, s.SelfPct, s.TotalPct, s.Self, s.Total)
	}
	fmt.Fprintf(&b, "\n%d samples.\n", total)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDiffText writes the differential table for a terminal.
func WriteDiffText(w io.Writer, ds []Delta) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%8s %8s %8s  %8s %8s %8s  %s\n", "Δself", "base", "patched", "Δtotal", "base", "patched", "symbol (percentage points; self, then total)")
	for _, d := range ds {
		fmt.Fprintf(&b, "%+8.2f %8.2f %8.2f  %+8.2f %8.2f %8.2f  %s%s\n",
			d.SelfPP, d.Base.SelfPct, d.Patched.SelfPct, d.TotalPP, d.Base.TotalPct, d.Patched.TotalPct, d.Name, onlyNote(d))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteDiffMarkdown writes the differential table as Markdown.
func WriteDiffMarkdown(w io.Writer, ds []Delta) error {
	var b strings.Builder
	b.WriteString("| symbol | Δ self pp | base self % | patched self % | Δ total pp | base total % | patched total % |\n|---|--:|--:|--:|--:|--:|--:|\n")
	for _, d := range ds {
		fmt.Fprintf(&b, "| `%s`%s | %+.2f | %.2f | %.2f | %+.2f | %.2f | %.2f |\n",
			mdCode(d.Name), onlyNote(d), d.SelfPP, d.Base.SelfPct, d.Patched.SelfPct, d.TotalPP, d.Base.TotalPct, d.Patched.TotalPct)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func onlyNote(d Delta) string {
	switch {
	case d.OnlyBase:
		return " (base only)"
	case d.OnlyPt:
		return " (patched only)"
	}
	return ""
}

// mdCode keeps a name from closing its code span or the table cell.
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "|", "\\|").Replace(s)
}
