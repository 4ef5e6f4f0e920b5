package render

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strings"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Colours of the two kernels in every picture.
var (
	baseColor    = color.RGBA{R: 0x4c, G: 0x72, B: 0xb0, A: 0xff}
	patchedColor = color.RGBA{R: 0xdd, G: 0x84, B: 0x52, A: 0xff}
)

// chartFont is a sans face from the fonts gonum/plot ships (Liberation),
// so measuring text needs nothing from the system.
var chartFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

// rowChart draws one row of a tree's comparison: every boot's value for
// base and patched as a dot, beside each side its interval (the observed
// range in deterministic mode, the median's 95 % CI otherwise) with the
// median as a tick, on an axis in the row's unit (chartUnit). The SVG is
// gonum/plot's (vgsvg); text in it is escaped by the library.
func rowChart(ab verdict.TreeAB, title, unit string, r verdict.Row) (template.HTML, error) {
	p := plot.New()
	setFonts(p)
	p.Title.Text = title
	p.Y.Label.Text = unit
	p.NominalX(results.RoleBase, results.RolePatched)
	p.X.Min, p.X.Max = -0.6, 1.6
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, d := range []verdict.Dist{r.Base, r.Patched} {
		col := baseColor
		if i == 1 {
			col = patchedColor
		}
		if len(d.Values) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(d.Values))
		for j, v := range d.Values {
			pts[j] = plotter.XY{X: float64(i) + jitter(j, len(d.Values)), Y: v}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return "", fmt.Errorf("results: chart %s: %w", title, err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
		p.Add(sc)
		ilo, ihi := interval(ab, d)
		x := float64(i) + 0.32
		bar, err := plotter.NewLine(plotter.XYs{{X: x, Y: ilo}, {X: x, Y: ihi}})
		if err != nil {
			return "", fmt.Errorf("results: chart %s: %w", title, err)
		}
		bar.Color, bar.Width = col, vg.Points(2)
		tick, err := plotter.NewLine(plotter.XYs{{X: x - 0.08, Y: d.Median}, {X: x + 0.08, Y: d.Median}})
		if err != nil {
			return "", fmt.Errorf("results: chart %s: %w", title, err)
		}
		tick.Color, tick.Width = col, vg.Points(2)
		p.Add(bar, tick)
		lo, hi = math.Min(lo, ilo), math.Max(hi, ihi)
	}
	if !math.IsInf(lo, 0) {
		pad := math.Max((hi-lo)*0.15, math.Max(math.Abs(hi)*0.002, 0.05))
		p.Y.Min, p.Y.Max = lo-pad, hi+pad
	}
	p.Add(plotter.NewGrid())
	return svgOf(p, nil, "", 3.3*vg.Inch, 2.5*vg.Inch)
}

// interval is what rowChart draws beside the dots: the observed range in
// deterministic mode, the 95 % CI of the median otherwise (clamped to
// the range when the CI is unbounded).
func interval(ab verdict.TreeAB, d verdict.Dist) (lo, hi float64) {
	if ab.Deterministic() || math.IsNaN(d.Lo) || math.IsInf(d.Lo, 0) || math.IsInf(d.Hi, 0) {
		return d.Min, d.Max
	}
	return d.Lo, d.Hi
}

// jitter spreads a side's dots a little along x so that equal values
// stay countable; deterministic, in boot order.
func jitter(j, n int) float64 {
	if n <= 1 {
		return 0
	}
	return -0.15 + 0.3*float64(j)/float64(n-1)
}

// bootChart draws every boot's time from QEMU start to the guest agent's
// ready, in run order, coloured by kernel; the legend, above the plot,
// names only the kernels that have a boot.
func bootChart(boots []results.Boot) (template.HTML, error) {
	p, l, err := bootPlot(boots)
	if err != nil {
		return "", err
	}
	w := vg.Length(math.Max(4, 0.35*float64(len(boots)))) * vg.Inch
	return svgOf(p, l, lastLabel(boots), w, 2.5*vg.Inch+l.Rectangle(draw.Canvas{}).Size().Y+chartPad)
}

// bootPlot is bootChart's plot and legend.
func bootPlot(boots []results.Boot) (*plot.Plot, *plot.Legend, error) {
	p := plot.New()
	setFonts(p)
	p.Title.Text = "boot to ready, per boot"
	p.Y.Label.Text = "seconds"
	l := plot.NewLegend()
	l.TextStyle = p.Legend.TextStyle
	var names []string
	for i, role := range []string{results.RoleBase, results.RolePatched} {
		vals := make(plotter.Values, len(boots))
		n := 0
		for j, b := range boots {
			if b.Role == role {
				vals[j] = b.BootToReady.Seconds()
				n++
			}
		}
		if n == 0 {
			continue // no bar, no legend entry
		}
		bars, err := plotter.NewBarChart(vals, vg.Points(10))
		if err != nil {
			return nil, nil, fmt.Errorf("results: boot chart: %w", err)
		}
		bars.Color = baseColor
		if i == 1 {
			bars.Color = patchedColor
		}
		bars.LineStyle.Width = 0
		p.Add(bars)
		l.Add(role, bars)
	}
	for _, b := range boots {
		names = append(names, fmt.Sprintf("%d", b.Seq))
	}
	p.NominalX(names...)
	p.X.Label.Text = "boot"
	p.Add(plotter.NewGrid())
	return p, &l, nil
}

// lastLabel is the boot chart's last x label.
func lastLabel(boots []results.Boot) string {
	if len(boots) == 0 {
		return ""
	}
	return fmt.Sprintf("%d", boots[len(boots)-1].Seq)
}

func setFonts(p *plot.Plot) {
	for _, t := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		size := t.Size
		*t = chartFont
		t.Size = size
	}
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.Y.Tick.Marker = evenTicks{}
}

// svgOf renders p (and its legend l above it, if any; room for the last
// x label lastX) as an inline <svg> element (without the XML prelude,
// which has no place inside HTML).
func svgOf(p *plot.Plot, l *plot.Legend, lastX string, w, h vg.Length) (template.HTML, error) {
	c := vgsvg.New(w, h)
	drawChart(draw.New(c), p, l, lastX)
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("results: render chart: %w", err)
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i >= 0 {
		s = s[i:]
	}
	// The SVG is the library's output: numbers, colours and text it
	// escaped itself (html.EscapeString in vgsvg.FillString).
	return template.HTML(s), nil //nolint:gosec // escaped by vgsvg
}
