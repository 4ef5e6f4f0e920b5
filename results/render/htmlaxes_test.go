package render

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"
)

// Every labelled tick of an axis has the same number of decimals, the
// fewest that give its value exactly: 3750 beside 10000, 332.5 beside
// 330.0.
func TestEvenTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		dec    int
	}{
		{3700, 10100, 0}, {0, 52, 0}, {329.2, 333.1, 0}, {330, 332.6, 1}, {35000, 38500, 0}, {0.11, 0.37, 2},
	} {
		var labels []string
		for _, tk := range (evenTicks{}).Ticks(c.lo, c.hi) {
			if tk.Label == "" {
				continue
			}
			labels = append(labels, tk.Label)
			dec := 0
			if _, frac, ok := strings.Cut(tk.Label, "."); ok {
				dec = len(frac)
			}
			v, err := strconv.ParseFloat(tk.Label, 64)
			if dec != c.dec || err != nil || math.Abs(v-tk.Value) > 1e-9*math.Max(1, math.Abs(v)) {
				t.Errorf("[%g, %g]: label %q of %g, want %d decimals, exact", c.lo, c.hi, tk.Label, tk.Value, c.dec)
			}
		}
		if len(labels) < 2 {
			t.Errorf("[%g, %g]: labels %q", c.lo, c.hi, labels)
		}
	}
}

var (
	viewBoxRE = regexp.MustCompile(`viewBox="0 0 ([0-9.]+) ([0-9.]+)"`)
	svgTextRE = regexp.MustCompile(`(?s)<text x="([-0-9.e]+)" y="[^"]*"[^>]*>([^<]*)</text>`)
)

// The recorded run's boot chart: its legend sits above the plot, not over
// the bars, and the last boot's label is inside the picture.
func TestBootChartLayout(t *testing.T) {
	boots := verdict.SortedBoots(loadRun(t, "../testdata/recorded-gtp"))
	p, l, err := bootPlot(boots)
	if err != nil {
		t.Fatal(err)
	}
	w, h := vg.Length(7*vg.Inch), vg.Length(3*vg.Inch)
	lay := drawChart(draw.New(vgsvg.New(w, h)), p, l, lastLabel(boots))
	if lay.Legend.Size().X == 0 || overlaps(lay.Data, lay.Legend) {
		t.Errorf("legend %v over the data area %v", lay.Legend, lay.Data)
	}
	if lay.Legend.Max.Y > h || lay.Legend.Min.Y < lay.Data.Max.Y {
		t.Errorf("legend %v not between the data area %v and the top %v", lay.Legend, lay.Data, h)
	}
	svg, err := bootChart(boots)
	if err != nil {
		t.Fatal(err)
	}
	vb := viewBoxRE.FindStringSubmatch(string(svg))
	if vb == nil {
		t.Fatalf("no viewBox in %.200s", svg)
	}
	width, _ := strconv.ParseFloat(vb[1], 64)
	last := lastLabel(boots)
	found := false
	for _, m := range svgTextRE.FindAllStringSubmatch(string(svg), -1) {
		if m[2] != last {
			continue
		}
		found = true
		x, _ := strconv.ParseFloat(m[1], 64)
		if right := x + float64(p.X.Tick.Label.Rectangle(last).Size().X); right > width {
			t.Errorf("last x label %q ends at %.2f, past the viewBox's %.2f", last, right, width)
		}
	}
	if !found {
		t.Errorf("no x label %q in the boot chart", last)
	}
}

// A run whose patched kernel never booted: the dots' key and the boot
// chart's legend name base only; a run with no chart has no key at all.
func TestLegendOnlyForSeriesWithPoints(t *testing.T) {
	baseOnly := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(62, 8, 500, 0.01), nil)
	baseOnly.Incomplete, baseOnly.IncompleteReason = true, "interrupted (SIGINT)"
	var b strings.Builder
	if err := HTML(&b, verdict.AnalyzeRun(baseOnly), ""); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, `<p class="key">Dots: one per boot, <span class="b">● base</span>;`) {
		t.Errorf("the key does not name base alone:\n%s", keyLine(page))
	}
	chart, err := bootChart(verdict.SortedBoots(baseOnly))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(chart), ">"+results.RolePatched+"</text>") {
		t.Error("the boot chart's legend names patched, which has no boot")
	}
	empty := &results.Run{Schema: results.SchemaVersion, ID: "stopped01", Incomplete: true, IncompleteReason: "interrupted (SIGTERM)"}
	b.Reset()
	if err := HTML(&b, verdict.AnalyzeRun(empty), ""); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "Dots:") {
		t.Errorf("a run without a chart has a dots key:\n%s", keyLine(b.String()))
	}
}

func keyLine(page string) string {
	i := strings.Index(page, `<p class="key">`)
	if i < 0 {
		return "(no key)"
	}
	return page[i:min(len(page), i+200)]
}
