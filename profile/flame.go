package profile

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"sort"
	"strings"
)

// FlameOptions shape a flame graph.
type FlameOptions struct {
	Title    string
	Subtitle string // e.g. kernel, accelerator, CPUs and rate
	Width    int    // pixels; default 1200
	// Base, when set, makes a differential graph: the frames are the
	// profile's, coloured by how their share of all samples changed
	// against Base (red: more, blue: less).
	Base *Profile
}

// Layout constants, in pixels.
const (
	frameHeight = 16
	padSide     = 10
	padTop      = 54
	padBottom   = 34
	fontSize    = 11
	charWidth   = 6.6 // of the monospace font at fontSize, for truncation
	minWidth    = 0.1 // narrower frames (and their children) are not drawn
)

// node is one frame in the merged call tree.
type node struct {
	name     string
	depth    int // 0 is the synthetic "all"
	total    int64
	self     int64
	children []*node
	index    map[string]*node
}

func (n *node) child(name string) *node {
	if c, ok := n.index[name]; ok {
		return c
	}
	c := &node{name: name, depth: n.depth + 1}
	if n.index == nil {
		n.index = map[string]*node{}
	}
	n.index[name] = c
	n.children = append(n.children, c)
	return c
}

// buildTree merges the stacks into a call tree rooted at "all", children
// sorted by name as flame graphs are (the x axis is not time).
func buildTree(p *Profile) *node {
	root := &node{name: "all"}
	for _, s := range p.Stacks {
		if s.Count <= 0 {
			continue
		}
		n := root
		n.total += s.Count
		for _, f := range s.Frames {
			n = n.child(f)
			n.total += s.Count
		}
		n.self += s.Count
	}
	var sortRec func(n *node)
	sortRec = func(n *node) {
		sort.Slice(n.children, func(i, j int) bool { return n.children[i].name < n.children[j].name })
		for _, c := range n.children {
			sortRec(c)
		}
	}
	sortRec(root)
	return root
}

func (n *node) maxDepth() int {
	d := n.depth
	for _, c := range n.children {
		if cd := c.maxDepth(); cd > d {
			d = cd
		}
	}
	return d
}

// shares maps each frame path ("a;b;c") to its fraction of all samples.
func shares(p *Profile) map[string]float64 {
	total := float64(p.Total())
	out := map[string]float64{}
	if total == 0 {
		return out
	}
	for _, s := range p.Stacks {
		for i := range s.Frames {
			out[strings.Join(s.Frames[:i+1], ";")] += float64(s.Count) / total
		}
	}
	return out
}

// Rect is one drawn frame, exposed for tests of the layout.
type Rect struct {
	Name          string
	Kind          Kind
	Depth         int // 1 = root frame (the task)
	X, Y, W       float64
	Samples, Self int64
	Delta         float64 // differential graphs: change in share, percentage points
	Fill          string
}

// Layout computes the frames of p's flame graph: widths proportional to
// samples, the root at the bottom.
func Layout(p *Profile, o FlameOptions) (rects []Rect, width, height int) {
	width = o.Width
	if width <= 0 {
		width = 1200
	}
	root := buildTree(p)
	height = padTop + (root.maxDepth()+1)*frameHeight + padBottom
	if root.total == 0 {
		return nil, width, height
	}
	scale := float64(width-2*padSide) / float64(root.total)
	var base map[string]float64
	var maxDelta float64
	if o.Base != nil {
		base = shares(o.Base)
		mine := shares(p)
		for k, v := range mine {
			maxDelta = math.Max(maxDelta, math.Abs(v-base[k]))
		}
		for k, v := range base {
			maxDelta = math.Max(maxDelta, math.Abs(mine[k]-v))
		}
	}
	total := float64(root.total)
	var walk func(n *node, x float64, path []string)
	walk = func(n *node, x float64, path []string) {
		w := float64(n.total) * scale
		if w < minWidth {
			return
		}
		if n.depth > 0 {
			path = append(path, n.name)
		}
		r := Rect{Name: n.name, Depth: n.depth, X: x, W: w,
			Y:       float64(height - padBottom - (n.depth+1)*frameHeight),
			Samples: n.total, Self: n.self}
		switch n.depth {
		case 0:
			r.Kind = KindUnknown
			r.Fill = "rgb(200,200,200)"
		default:
			r.Kind = FrameKind(n.name, n.depth-1)
			r.Fill = kindColor(r.Kind, n.name)
		}
		if base != nil && n.depth > 0 {
			k := strings.Join(path, ";")
			d := float64(n.total)/total - base[k]
			r.Delta = 100 * d
			r.Fill = diffColor(d, maxDelta)
		}
		rects = append(rects, r)
		cx := x
		for _, c := range n.children {
			walk(c, cx, path)
			cx += float64(c.total) * scale
		}
	}
	walk(root, padSide, nil)
	return rects, width, height
}

// kindColor picks a colour from the kind's palette, the same for a name
// in every graph so frames can be compared by eye.
func kindColor(k Kind, name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := float64(h.Sum32()%1000) / 1000
	var r, g, b float64
	switch k {
	case KindKernel: // orange, as kernel frames are in perf's graphs
		r, g, b = 225+30*v, 110+80*v, 30+30*v
	case KindBPF: // green, as JIT code is
		r, g, b = 60+70*v, 180+60*v, 70+50*v
	case KindTask: // slate
		r, g, b = 140+40*v, 155+40*v, 190+40*v
	case KindUser: // red
		r, g, b = 215+40*v, 70+60*v, 70+60*v
	default: // grey
		r, g, b = 170+40*v, 170+40*v, 170+40*v
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", int(r), int(g), int(b))
}

// diffColor is red for a grown share, blue for a shrunk one, white for no
// change, saturating at the largest change in the graph.
func diffColor(d, maxAbs float64) string {
	if maxAbs <= 0 {
		return "rgb(250,250,250)"
	}
	t := math.Min(1, math.Abs(d)/maxAbs)
	fade := int(250 - 190*t)
	if d > 0 {
		return fmt.Sprintf("rgb(250,%d,%d)", fade, fade)
	}
	if d < 0 {
		return fmt.Sprintf("rgb(%d,%d,250)", fade, fade)
	}
	return "rgb(250,250,250)"
}

// WriteFlameGraph renders p as a standalone SVG: one rectangle per frame,
// width proportional to its samples, a tooltip (<title>) with the counts,
// names where they fit.
func WriteFlameGraph(w io.Writer, p *Profile, o FlameOptions) error {
	rects, width, height := Layout(p, o)
	total := p.Total()
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d">
<style>
text { font-family: monospace; font-size: %dpx; fill: rgb(0,0,0); }
.title { font-size: 17px; font-family: sans-serif; }
.sub { font-size: 12px; font-family: sans-serif; fill: rgb(80,80,80); }
.frame:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }
</style>
<rect x="0" y="0" width="%d" height="%d" fill="rgb(248,248,240)"/>
`, width, height, width, height, fontSize, width, height)
	title := o.Title
	if title == "" {
		title = "Flame Graph"
	}
	fmt.Fprintf(bw, `<text class="title" x="%d" y="24" text-anchor="middle">%s</text>`+"\n", width/2, esc(title))
	sub := o.Subtitle
	if sub != "" {
		sub += " · "
	}
	sub += fmt.Sprintf("%d samples", total)
	if o.Base != nil {
		sub += fmt.Sprintf(" · differential against %d base samples: red grew, blue shrank (share of all samples)", o.Base.Total())
	}
	fmt.Fprintf(bw, `<text class="sub" x="%d" y="42" text-anchor="middle">%s</text>`+"\n", width/2, esc(sub))
	for _, r := range rects {
		pct := 100 * float64(r.Samples) / float64(total)
		tip := fmt.Sprintf("%s (%s) — %d samples, %.2f%%", r.Name, r.Kind, r.Samples, pct)
		if r.Depth == 0 {
			tip = fmt.Sprintf("all — %d samples", r.Samples)
		}
		if r.Self > 0 && r.Depth > 0 {
			tip += fmt.Sprintf(", self %d (%.2f%%)", r.Self, 100*float64(r.Self)/float64(total))
		}
		if o.Base != nil && r.Depth > 0 {
			tip += fmt.Sprintf(", %+.2f pp vs base", r.Delta)
		}
		fmt.Fprintf(bw, `<g class="frame" data-name="%s" data-x="%.2f" data-w="%.2f" data-d="%d"><title>%s</title><rect x="%.2f" y="%.0f" width="%.2f" height="%d" fill="%s" rx="2" ry="2"/>`,
			esc(r.Name), r.X, r.W, r.Depth, esc(tip), r.X, r.Y, r.W, frameHeight-1, r.Fill)
		// Every frame has its text element, so zooming can label frames
		// that grow wide enough.
		fmt.Fprintf(bw, `<text x="%.2f" y="%.0f">%s</text>`, r.X+3, r.Y+frameHeight-4.5, esc(fitLabel(r.Name, r.W)))
		_, _ = bw.WriteString("</g>\n") // bufio keeps the first error for Flush
	}
	legend := "width = share of samples · colours: orange kernel, green BPF (JIT), red user mode, slate task, grey unknown · hover a frame for its counts, click to zoom"
	if o.Base != nil {
		legend = "frames and widths of the patched profile · colour: change in share against base, red more, blue less, white unchanged · hover a frame for its counts, click to zoom"
	}
	fmt.Fprintf(bw, `<text class="sub" x="%d" y="%d">%s</text>`+"\n", padSide, height-12, esc(legend))
	fmt.Fprintf(bw, `<text id="unzoom" class="sub" x="%d" y="24" style="cursor:pointer;display:none">Reset zoom</text>`+"\n", padSide)
	fmt.Fprintf(bw, zoomScript, width-2*padSide, padSide, charWidth)
	_, _ = bw.WriteString("</svg>\n") // Flush below reports a failed write
	return bw.Flush()
}

// zoomScript makes a frame fill the width when clicked (its ancestors
// span the graph, unrelated frames hide); "Reset zoom" or the root frame
// undoes it. Viewers that do not run scripts show the static graph.
const zoomScript = `<script type="text/ecmascript"><![CDATA[
(function () {
  var W = %d, PAD = %d, CW = %g;
  var frames = Array.prototype.slice.call(document.querySelectorAll("g.frame"));
  var unzoom = document.getElementById("unzoom");
  function num(g, a) { return parseFloat(g.getAttribute(a)); }
  function label(name, w) {
    var n = Math.floor((w - 6) / CW);
    if (n < 3) return "";
    return name.length <= n ? name : name.substring(0, n - 2) + "..";
  }
  function place(g, x, w) {
    var r = g.querySelector("rect"), t = g.querySelector("text");
    g.style.display = "";
    r.setAttribute("x", x.toFixed(2));
    r.setAttribute("width", w.toFixed(2));
    t.setAttribute("x", (x + 3).toFixed(2));
    t.textContent = label(g.getAttribute("data-name"), w);
  }
  function zoom(z) {
    var x0 = num(z, "data-x"), w0 = num(z, "data-w"), d0 = num(z, "data-d"), eps = 1e-6;
    var scale = W / w0;
    frames.forEach(function (g) {
      var x = num(g, "data-x"), w = num(g, "data-w"), d = num(g, "data-d");
      if (d < d0) {
        if (x <= x0 + eps && x + w >= x0 + w0 - eps) place(g, PAD, W); else g.style.display = "none";
      } else if (x >= x0 - eps && x + w <= x0 + w0 + eps) {
        place(g, PAD + (x - x0) * scale, w * scale);
      } else {
        g.style.display = "none";
      }
    });
    unzoom.style.display = d0 > 0 ? "" : "none";
  }
  frames.forEach(function (g) {
    g.style.cursor = "pointer";
    g.addEventListener("click", function () { zoom(g); });
  });
  unzoom.addEventListener("click", function () { zoom(frames[0]); });
})();
]]></script>
`

// fitLabel is the name, truncated with ".." to fit width, or "" when not
// even three characters fit.
func fitLabel(name string, width float64) string {
	n := int((width - 6) / charWidth)
	if n < 3 {
		return ""
	}
	if len(name) <= n {
		return name
	}
	return name[:n-2] + ".."
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) //nolint:errcheck // strings.Builder does not fail
	return b.String()
}
