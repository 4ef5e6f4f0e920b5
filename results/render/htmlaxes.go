package render

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// evenTicks are gonum's default tick positions, every label of an axis
// with the same number of decimals: the fewest that tell the labelled
// values apart exactly (3750 and 10000, not 3750.00 beside 10000).
type evenTicks struct{}

func (evenTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	prec := 0
	for ; prec < 6; prec++ {
		exact := true
		for _, t := range ticks {
			if t.Label == "" {
				continue
			}
			v, _ := strconv.ParseFloat(strconv.FormatFloat(t.Value, 'f', prec, 64), 64)
			if math.Abs(v-t.Value) > 1e-9*math.Max(1, math.Abs(t.Value)) {
				exact = false
			}
		}
		if exact {
			break
		}
	}
	for i, t := range ticks {
		if t.Label != "" {
			ticks[i].Label = strconv.FormatFloat(t.Value, 'f', prec, 64)
		}
	}
	return ticks
}

// chartPad is the room kept between a legend above the plot and the
// plot's title.
const chartPad = vg.Length(4)

// chartLayout is where drawChart put things: the data area and the
// legend's box (empty without one), in the canvas' coordinates.
type chartLayout struct {
	Data, Legend vg.Rectangle
}

// drawChart draws p with its legend l above it, never over the data, and
// keeps room on the right for half the last x label, which gonum centres
// on its tick at the canvas' edge.
func drawChart(c draw.Canvas, p *plot.Plot, l *plot.Legend, lastX string) chartLayout {
	var lay chartLayout
	area := c
	if lastX != "" {
		half := p.X.Tick.Label.Rectangle(lastX).Size().X/2 + 2
		area = draw.Crop(area, 0, -half, 0, 0)
	}
	if l != nil {
		l.Top = true
		lay.Legend = l.Rectangle(area)
		area = draw.Crop(area, 0, 0, 0, -(lay.Legend.Size().Y + chartPad))
		l.Draw(c)
	}
	p.Draw(area)
	lay.Data = p.DataCanvas(area).Rectangle
	return lay
}

// overlaps reports whether two rectangles share any area.
func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}
