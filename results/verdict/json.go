package verdict

import (
	"encoding/json"
	"math"
)

// Finite is a pointer to x, or nil for NaN and ±Inf, which encoding/json
// refuses.
func Finite(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// MarshalJSON writes undefined statistics as null, and the median's CI
// as numbers: its ends in percent of the median.
func (d Dist) MarshalJSON() ([]byte, error) {
	type plain Dist
	ciLo, ciHi := math.NaN(), math.NaN()
	if d.Median != 0 {
		ciLo, ciHi = (d.Lo/d.Median-1)*100, (d.Hi/d.Median-1)*100
	}
	return json.Marshal(struct {
		plain
		CI     string   `json:"ci,omitempty"` // the string form, left out
		CILo   *float64 `json:"ci_low_pct"`
		CIHi   *float64 `json:"ci_high_pct"`
		Median *float64 `json:"median"`
		Lo     *float64 `json:"lo"`
		Hi     *float64 `json:"hi"`
		CV     *float64 `json:"cv_pct"`
		Min    *float64 `json:"min"`
		Max    *float64 `json:"max"`
		Spread *float64 `json:"spread_pct"`
	}{plain(d), "", Finite(ciLo), Finite(ciHi), Finite(d.Median), Finite(d.Lo), Finite(d.Hi), Finite(d.CV), Finite(d.Min), Finite(d.Max), Finite(d.Spread)})
}

// MarshalJSON writes undefined statistics as null, and the unit of the
// row's values (RowUnit: the cache model's rows count modelled cycles).
func (r Row) MarshalJSON() ([]byte, error) {
	type plain Row
	return json.Marshal(struct {
		plain
		Unit     string   `json:"unit"`
		DeltaPct *float64 `json:"delta_pct"`
		P        *float64 `json:"p"`
		PAdj     *float64 `json:"p_adj"`
	}{plain(r), RowUnit(r.Name), Finite(r.DeltaPct), Finite(r.P), Finite(r.PAdj)})
}

// MarshalJSON writes undefined numbers as null, with the unit and the
// metric beside them.
func (e Change) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Variant  string   `json:"variant"`
		Name     string   `json:"name"`
		Verdict  Verdict  `json:"verdict"`
		Pct      *float64 `json:"effect_pct"`
		Lo       *float64 `json:"effect_low_pct"`
		Hi       *float64 `json:"effect_high_pct"`
		Show     *float64 `json:"would_show_pct,omitempty"`
		BaseN    int      `json:"base_boots"`
		PatchedN int      `json:"patched_boots"`
		Metric   string   `json:"metric"`
		Unit     string   `json:"unit"`
	}{e.Variant, e.Name, e.Verdict, Finite(e.Pct), Finite(e.LowPct), Finite(e.HighPct), positive(e.WouldShowPct), e.BaseN, e.PatchedN, e.Metric, e.Unit})
}

// MarshalJSON adds what the tree's numbers are: unit and metric (a
// cache model's row says its own: Row.MarshalJSON).
func (ab TreeAB) MarshalJSON() ([]byte, error) {
	type plain TreeAB
	return json.Marshal(struct {
		plain
		Unit   string `json:"unit"`
		Metric string `json:"metric"`
	}{plain(ab), NsUnit, ab.Metric()})
}

func positive(x float64) *float64 {
	if x > 0 {
		return Finite(x)
	}
	return nil
}

// MarshalJSON writes an undefined estimate or an unbounded interval end
// as null.
func (s Shift) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Est *float64 `json:"est_pct"`
		Lo  *float64 `json:"lo_pct"`
		Hi  *float64 `json:"hi_pct"`
	}{Finite(s.Est), Finite(s.Lo), Finite(s.Hi)})
}
