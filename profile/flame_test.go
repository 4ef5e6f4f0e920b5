package profile

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// svgFrame is a drawn frame as read back from the SVG.
type svgFrame struct {
	title string
	x, w  float64
	fill  string
	text  string
}

// readSVG parses the whole document (it must be well-formed XML) and
// returns its frames.
func readSVG(t *testing.T, b []byte) (frames []svgFrame, width float64) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var cur *svgFrame
	var inTitle, inText, sawRoot bool
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := func(n string) string {
				for _, a := range e.Attr {
					if a.Name.Local == n {
						return a.Value
					}
				}
				return ""
			}
			switch e.Name.Local {
			case "svg":
				sawRoot = true
				if e.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("svg namespace %q", e.Name.Space)
				}
				width, _ = strconv.ParseFloat(attr("width"), 64)
			case "g":
				if attr("class") == "frame" {
					cur = &svgFrame{}
				}
			case "title":
				inTitle = cur != nil
			case "text":
				inText = cur != nil
			case "rect":
				if cur != nil {
					cur.x, _ = strconv.ParseFloat(attr("x"), 64)
					cur.w, _ = strconv.ParseFloat(attr("width"), 64)
					cur.fill = attr("fill")
				}
			}
		case xml.CharData:
			if inTitle {
				cur.title += string(e)
			}
			if inText {
				cur.text += string(e)
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "title":
				inTitle = false
			case "text":
				inText = false
			case "g":
				if cur != nil {
					frames = append(frames, *cur)
					cur = nil
				}
			}
		}
	}
	if !sawRoot {
		t.Fatal("no <svg> element")
	}
	return frames, width
}

func frameNamed(frames []svgFrame, name string) (svgFrame, bool) {
	for _, f := range frames {
		if strings.HasPrefix(f.title, name+" (") || strings.HasPrefix(f.title, name+" —") {
			return f, true
		}
	}
	return svgFrame{}, false
}

func TestFlameGraphWidths(t *testing.T) {
	p, _ := ParseFoldedString("a;x 30\na;y 10\nb 60\n")
	var buf bytes.Buffer
	if err := WriteFlameGraph(&buf, p, FlameOptions{Title: "t <&> t", Width: 1000}); err != nil {
		t.Fatal(err)
	}
	frames, width := readSVG(t, buf.Bytes())
	if width != 1000 {
		t.Fatalf("width %v", width)
	}
	usable := 1000.0 - 2*padSide
	for _, c := range []struct {
		name string
		frac float64
	}{{"all", 1}, {"a", 0.4}, {"x", 0.3}, {"y", 0.1}, {"b", 0.6}} {
		f, ok := frameNamed(frames, c.name)
		if !ok {
			t.Fatalf("no frame %q in %+v", c.name, frames)
		}
		if math.Abs(f.w-c.frac*usable) > 0.01 {
			t.Errorf("%s: width %.2f, want %.2f (%.0f%% of %.0f)", c.name, f.w, c.frac*usable, 100*c.frac, usable)
		}
	}
	// Children sit inside their parent, side by side in name order.
	a, _ := frameNamed(frames, "a")
	x, _ := frameNamed(frames, "x")
	y, _ := frameNamed(frames, "y")
	b, _ := frameNamed(frames, "b")
	if x.x != a.x || math.Abs(y.x-(x.x+x.w)) > 0.01 || math.Abs(b.x-(a.x+a.w)) > 0.01 {
		t.Errorf("positions a=%v x=%v y=%v b=%v", a.x, x.x, y.x, b.x)
	}
	if !strings.Contains(x.title, "30 samples, 30.00%") {
		t.Errorf("tooltip %q lacks counts", x.title)
	}
	if !strings.Contains(buf.String(), "t &lt;&amp;&gt; t") {
		t.Error("title not escaped")
	}
}

func TestFlameGraphKindsAndLabels(t *testing.T) {
	p := loadTestdata(t, "hash.folded")
	var buf bytes.Buffer
	if err := WriteFlameGraph(&buf, p, FlameOptions{}); err != nil {
		t.Fatal(err)
	}
	frames, _ := readSVG(t, buf.Bytes())
	fill := func(name string) string {
		f, ok := frameNamed(frames, name)
		if !ok {
			t.Fatalf("no frame %q", name)
		}
		return f.fill
	}
	// The same name always gets the same colour; kinds get their palette.
	if fill("htab_map_update_elem") != kindColor(KindKernel, "htab_map_update_elem") {
		t.Error("kernel frame not in the kernel palette")
	}
	if fill("bpf_prog_1a2b3c4d5e6f7a8b_hash_write") != kindColor(KindBPF, "bpf_prog_1a2b3c4d5e6f7a8b_hash_write") {
		t.Error("BPF frame not in the BPF palette")
	}
	if fill("[user]") != kindColor(KindUser, "[user]") {
		t.Error("user frame not in the user palette")
	}
	for _, f := range frames {
		if f.text == "" {
			continue
		}
		if float64(len(f.text))*charWidth > f.w {
			t.Errorf("label %q (%d chars) overflows its %.1f px frame", f.text, len(f.text), f.w)
		}
	}
}

func TestFlameGraphDiffColours(t *testing.T) {
	base, _ := ParseFoldedString("t;grow 10\nt;shrink 50\nt;same 40\n")
	patched, _ := ParseFoldedString("t;grow 60\nt;shrink 10\nt;same 40\n")
	rects, _, _ := Layout(patched, FlameOptions{Base: base})
	got := map[string]Rect{}
	for _, r := range rects {
		got[r.Name] = r
	}
	// patched total 110: grow 54.5% vs 10%, shrink 9.1% vs 50%, same 36.4% vs 40%.
	if d := got["grow"].Delta; math.Abs(d-(100*60.0/110-10)) > 1e-9 {
		t.Errorf("grow delta %.3f", d)
	}
	if !strings.HasPrefix(got["grow"].Fill, "rgb(250,") || got["grow"].Fill == "rgb(250,250,250)" {
		t.Errorf("grown frame fill %s, want red", got["grow"].Fill)
	}
	if !strings.HasSuffix(got["shrink"].Fill, ",250)") || got["shrink"].Fill == "rgb(250,250,250)" {
		t.Errorf("shrunk frame fill %s, want blue", got["shrink"].Fill)
	}
	if got["t"].Delta != 0 {
		t.Errorf("root frame delta %v, want 0 (100%% on both)", got["t"].Delta)
	}
}

func TestFitLabel(t *testing.T) {
	if got := fitLabel("htab_map_update_elem", 1000); got != "htab_map_update_elem" {
		t.Errorf("wide: %q", got)
	}
	if got := fitLabel("htab_map_update_elem", 6+charWidth*10+0.1); got != "htab_map.." {
		t.Errorf("10 chars: %q", got)
	}
	if got := fitLabel("htab_map_update_elem", 10); got != "" {
		t.Errorf("narrow: %q", got)
	}
}

func TestFlameGraphEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteFlameGraph(&buf, &Profile{}, FlameOptions{}); err != nil {
		t.Fatal(err)
	}
	frames, _ := readSVG(t, buf.Bytes())
	if len(frames) != 0 {
		t.Errorf("empty profile drew %d frames", len(frames))
	}
}
