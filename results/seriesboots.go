package results

// SeriesSchema is the series.json schema this kci writes. 2 added each
// tree's boot records (SeriesTree.Boots); a schema 1 record has none, and
// reads as it was written: its perf numbers are in its rows and
// culprits only.
const SeriesSchema = 2

// SeriesBoot is one boot of a series, recorded as kci test records its
// boots: Role base is the tree's kernel (Prefix 0), patched is prefix
// Prefix; Rep is the logical seed, Seed the guest's under icount.
type SeriesBoot struct {
	Boot
	Prefix int `json:"prefix"`
	// Bench says the boot's plan measured the variants: when it
	// succeeded, its valid variants' costs are the prefix's numbers at
	// its seed.
	Bench bool `json:"bench,omitempty"`
}

// measured says b gives its prefix's numbers at its seed.
func (b SeriesBoot) measured() bool { return b.Bench && b.Error == "" }

// Measurement is the boot giving prefix's numbers at logical seed rep:
// its first boot there that measured and succeeded.
func (t *SeriesTree) Measurement(prefix, rep int) (SeriesBoot, bool) {
	for _, b := range t.Boots {
		if b.Prefix == prefix && b.Rep == rep && b.measured() {
			return b, true
		}
	}
	return SeriesBoot{}, false
}

// Costs is prefix's per-program costs at logical seed rep
// (Measurement's), keyed variant/prog; false when none was measured.
func (t *SeriesTree) Costs(prefix, rep int) (map[string]float64, bool) {
	b, ok := t.Measurement(prefix, rep)
	if !ok {
		return nil, false
	}
	return ProgCosts(b.Variants), true
}

// CostsAt is every measured prefix's costs at logical seed rep.
func (t *SeriesTree) CostsAt(rep int) map[int]map[string]float64 {
	out := map[int]map[string]float64{}
	for _, b := range t.Boots {
		if _, seen := out[b.Prefix]; !seen && b.Rep == rep && b.measured() {
			out[b.Prefix] = ProgCosts(b.Variants)
		}
	}
	return out
}

// ProgCosts is each valid variant's per-program cost per packet, keyed
// variant/prog: a series' numbers of one boot.
func ProgCosts(vs []VariantResult) map[string]float64 {
	m := map[string]float64{}
	for _, v := range vs {
		if v.Skipped != "" || !v.Valid {
			continue
		}
		costs, _ := PerPacket(v.Programs)
		for _, c := range costs {
			m[v.Variant+"/"+c.Name] = c.NsPerPkt
		}
	}
	return m
}
