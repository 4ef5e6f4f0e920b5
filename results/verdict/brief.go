package verdict

import (
	"fmt"
	"math"
	"strings"
)

// Change is one compared row reduced to what a cover letter quotes: the
// change of patched against base in percent with its interval, and how
// many boots back it. A "no change" says the change it would have shown.
type Change struct {
	Variant string  `json:"variant"`
	Name    string  `json:"name"` // program, or TotalRow
	Verdict Verdict `json:"verdict"`
	// Pct is the estimate, Row.changePct: the Hodges–Lehmann shift in
	// noisy mode, the difference of per-seed means in deterministic mode
	// (of medians when a side has fewer than two seeds).
	Pct float64 `json:"effect_pct"`
	// LowPct..HighPct is its interval: Hodges–Lehmann's in noisy mode (at
	// the family's level for a row called a change, 95 % otherwise);
	// Welch's 95 % over per-seed values in deterministic mode, and where
	// a deterministic row has none (fewer than two seeds a side), the
	// range of every base/patched boot pair's ratio (min/max of the two
	// observed ranges).
	LowPct  float64 `json:"effect_low_pct"`
	HighPct float64 `json:"effect_high_pct"`
	// WouldShowPct: for a "no change", the smallest change in percent the
	// row would have shown; 0 when not known.
	WouldShowPct float64 `json:"would_show_pct,omitempty"`
	BaseN        int     `json:"base_boots"`
	PatchedN     int     `json:"patched_boots"`
	// Metric and Unit name what the compared numbers measure
	// ("instruction-time", "ns/pkt"; the cache model's rows "cache model",
	// "modelled cycles/pkt"); the change itself is in percent.
	Metric string `json:"metric"`
	Unit   string `json:"unit"`
}

// Label names the row as the brief shows it: "<variant>/<program>", or
// the variant for its total.
func (e Change) Label() string {
	if e.Name == TotalRow {
		return e.Variant
	}
	return e.Variant + "/" + e.Name
}

// RowChange reduces a row of ab to its change: Row.changePct with its
// interval (Row.Shift: Hodges–Lehmann in noisy mode, at the family's
// level for a row called a change (Row.Adjusted); Welch's over per-seed
// values in deterministic mode); where a deterministic row has none (fewer than two
// seeds a side), the range of every base/patched boot pair's ratio.
func RowChange(ab TreeAB, variant string, r Row) Change {
	e := Change{Variant: variant, Name: r.Name, Verdict: r.Verdict, BaseN: r.Base.N, PatchedN: r.Patched.N,
		Pct: r.changePct(), LowPct: r.Shift.Lo, HighPct: r.Shift.Hi, Metric: ab.RowMetric(r.Name), Unit: RowUnit(r.Name)}
	if r.Adjusted != nil {
		// A noisy row called a change: the interval at the family's
		// level, which the decision used.
		e.LowPct, e.HighPct = r.Adjusted.Lo, r.Adjusted.Hi
	}
	if math.IsNaN(e.LowPct) || math.IsNaN(e.HighPct) {
		e.LowPct, e.HighPct = math.NaN(), math.NaN()
		if ab.Deterministic() && r.Base.N > 0 && r.Patched.N > 0 && r.Base.Min > 0 && r.Base.Max > 0 {
			e.LowPct = (r.Patched.Min/r.Base.Max - 1) * 100
			e.HighPct = (r.Patched.Max/r.Base.Min - 1) * 100
		}
	}
	if r.Verdict == NoChange && !r.Untested() {
		e.WouldShowPct = ab.rule().wouldShow(ab, r)
	}
	return e
}

// couldHide: a "no change" that would not have shown a change of the
// smallest effect.
func couldHide(ab TreeAB, r Row, e Change) bool {
	return r.Verdict == NoChange && ab.rule().couldHide(ab, r, e)
}

// Ran reports whether the row's program ran at all on either kernel: a
// program that never ran costs 0 in every sample and is no result.
func (r Row) Ran() bool {
	for _, d := range []Dist{r.Base, r.Patched} {
		for _, x := range d.Values {
			if x != 0 {
				return true
			}
		}
	}
	return false
}

// Brief is a tree's short answer: its outcome, the rows that changed,
// the "no change" rows that could hide one, and the rest in one count.
type Brief struct {
	Tree  string `json:"tree"`
	State string `json:"state"`
	Title string `json:"title"`
	// Outcome is the tree's outcome in the report's one vocabulary
	// (faster, slower, no change, survival regression, …).
	Outcome string `json:"verdict"`
	// PerfOutcome is what the numbers alone say; it differs from Outcome
	// when survival, a failed boot or an incomplete run decided.
	PerfOutcome string   `json:"perf_verdict"`
	Changed     []Change `json:"changed,omitempty"`
	// Hiding are "no change" rows that would not have shown the smallest
	// effect (with 90 % power, in deterministic mode).
	Hiding []Change `json:"could_hide,omitempty"`
	// Untested are deterministic rows with seed spread and too few seeds
	// to be tested at all (Row.Untested): no bound can be stated.
	Untested []Change `json:"untested,omitempty"`
	// Unchanged counts the other "no change" rows; UnchangedShowPct is
	// the largest change any of them would have missed.
	Unchanged        int     `json:"unchanged"`
	UnchangedShowPct float64 `json:"unchanged_would_show_pct,omitempty"`
	MinEffectPct     float64 `json:"min_effect_pct"`
	Metric           string  `json:"metric"`
	Unit             string  `json:"unit"`
	// Covers says whether the windows ran the patches' code (Coverage),
	// and that a "no change" over code they never ran covers nothing.
	Covers string `json:"covers,omitempty"`
}

// Metric names what a tree's numbers measure, apart from their unit.
func (ab TreeAB) Metric() string {
	switch {
	case ab.Deterministic():
		return "instruction-time"
	case ab.Emulated:
		return "emulated wall-time"
	}
	return "wall-time"
}

// briefOf computes a tree's brief from its report. Its headline is the
// conclusion's title.
func briefOf(tr TreeReport) Brief {
	b := perfBrief(tr)
	b.State, b.Title, b.PerfOutcome = tr.Conclusion.State, tr.Conclusion.Title, b.Outcome
	if h := b.headline(); !strings.HasPrefix(b.Title, h) {
		// Decided by something else than the numbers (survival, a failed
		// boot, an incomplete run): the title says what.
		b.Outcome = strings.TrimPrefix(b.Title, tr.Tree+": ")
	}
	b.Covers = tr.Coverage.covers(b.PerfOutcome)
	return b
}

// perfBrief sorts a tree's rows that ran into changed, could hide a
// change, and unchanged, and words the outcome they give.
func perfBrief(tr TreeReport) Brief {
	ab := tr.Perf
	b := Brief{Tree: tr.Tree, MinEffectPct: ab.MinEffectPct, Metric: ab.Metric(), Unit: NsUnit}
	for _, v := range ab.Variants {
		for _, r := range briefRows(v) {
			e := RowChange(ab, v.Variant, r)
			switch {
			case Changed(r):
				b.Changed = append(b.Changed, e)
			case r.Untested():
				b.Untested = append(b.Untested, e)
			case r.Verdict != NoChange || r.Note == NoteNotExamined:
			case couldHide(ab, r, e):
				b.Hiding = append(b.Hiding, e)
			default:
				b.Unchanged++
				b.UnchangedShowPct = math.Max(b.UnchangedShowPct, e.WouldShowPct)
			}
		}
	}
	slower, faster := hasVerdict(b.Changed, Slower), hasVerdict(b.Changed, Faster)
	switch {
	case slower && faster:
		b.Outcome = "slower and faster"
	case slower:
		b.Outcome = string(Slower)
	case faster:
		b.Outcome = string(Faster)
	case len(ab.Variants) == 0 && len(tr.Survival) > 0:
		b.Outcome = "survival unchanged"
	case len(ab.Variants) == 0:
		b.Outcome = "no results"
	default:
		b.Outcome = "no change"
	}
	return b
}

// briefRows are the rows of a variant the brief speaks of: its programs
// that ran, and its total.
func briefRows(v VariantAB) []Row {
	var out []Row
	progChanged := false
	for _, p := range v.Programs {
		if p.Ran() {
			out = append(out, p)
			progChanged = progChanged || Changed(p)
		}
	}
	// A variant's total is what fails a tree: always named when it
	// moved; otherwise only when no program of it did.
	switch {
	case len(out) == 1 && len(v.Programs) == 1:
		return []Row{v.Total} // the total is its one program
	case (Changed(v.Total) || !progChanged) && v.Total.Ran():
		out = append([]Row{v.Total}, out...)
	}
	return out
}

// Changed reports whether r is a decided change beyond the smallest
// effect: slower or faster, not InNoise, and a row that was examined.
func Changed(r Row) bool {
	return r.Verdict.moved() && !r.InNoise && r.Note != NoteNotExamined
}

func hasVerdict(es []Change, v Verdict) bool {
	for _, e := range es {
		if e.Verdict == v {
			return true
		}
	}
	return false
}

// FmtSigned writes a percentage with its sign and one decimal: "0.0"
// within ±0.05, "?" for NaN, "±∞" for the infinities.
func FmtSigned(x float64) string {
	switch {
	case math.Abs(x) < 0.05:
		return "0.0"
	case math.IsNaN(x):
		return "?"
	case math.IsInf(x, -1):
		return "-∞"
	case math.IsInf(x, 1):
		return "+∞"
	}
	return fmt.Sprintf("%+.1f", x)
}

// fmtChange writes a change as a cover letter quotes it:
// "gtp_write -41.6% [-41.9, -41.3], 3+3 boots"; a row in another unit
// than the tree's ns says its own ("hash/modelled-cycles +4.1% [+4.1,
// +4.1] in modelled cycles/pkt, 3+3 boots").
func fmtChange(e Change) string {
	s := e.Label() + " " + FmtSigned(e.Pct) + "%"
	if !math.IsNaN(e.LowPct) && !math.IsNaN(e.HighPct) {
		s += " [" + FmtSigned(e.LowPct) + ", " + FmtSigned(e.HighPct) + "]"
	}
	if e.Unit != "" && e.Unit != NsUnit {
		s += " in " + e.Unit
	}
	return s + fmt.Sprintf(", %d+%d boots", e.BaseN, e.PatchedN)
}

// Headline is the brief's first line, the conclusion's title: "gtp:
// faster (gtp_write -41.6% [-41.9, -41.3], 3+3 boots)".
func (b Brief) Headline() string {
	if b.Title != "" {
		return b.Title
	}
	return b.headline()
}

// briefMaxRows is how many changed rows a headline names.
const briefMaxRows = 3

func (b Brief) headline() string {
	s := b.Tree + ": " + b.Outcome
	if len(b.Changed) > 0 {
		var parts []string
		for i, e := range b.Changed {
			if i == briefMaxRows {
				parts = append(parts, fmt.Sprintf("%d more in the table", len(b.Changed)-i))
				break
			}
			parts = append(parts, fmtChange(e))
		}
		s += " (" + strings.Join(parts, "; ") + ")"
	}
	return s
}
