package render

import (
	"bytes"
	"context"
	"fmt"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/internal/proc"
)

// chromium finds the headless browser the HTML tests open report.html
// in (Debian's chromium; make deps installs it), or skips naming it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no headless browser: chromium is not installed (make deps installs Debian's chromium)")
	return ""
}

// runChromium opens page in headless Chromium with nothing that could
// reach a network, and returns its stdout.
func runChromium(t *testing.T, bin, page string, extra ...string) []byte {
	t.Helper()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}, extra...)
	out, err := proc.Cmd{Name: bin, Args: append(args, "file://"+page), Timeout: 2 * time.Minute, StdoutOnly: true}.Run(context.Background())
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return out
}

// writeDemoHTML renders the demo run's report.html into a fresh run
// directory with one flame graph beside it.
func writeDemoHTML(t *testing.T) (dir string, run *results.Run) {
	t.Helper()
	return writeFixtureHTML(t, demoDir)
}

func writeFixtureHTML(t *testing.T, fixture string) (dir string, run *results.Run) {
	t.Helper()
	run = loadRun(t, fixture)
	dir = t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "profiles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "profiles", "gtp-patched-rep1-gtp.svg"), []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(dir, verdict.AnalyzeRun(run)); err != nil {
		t.Fatal(err)
	}
	return dir, run
}

var (
	figureRE = regexp.MustCompile(`(?s)<figure class="row [a-z]+" data-row="([^"]*)" data-base-boots="(\d+)" data-patched-boots="(\d+)">(.*?)</figure>`)
	// A dot is gonum's circle glyph: a closed path of two arcs, filled
	// in its kernel's colour.
	dotRE = regexp.MustCompile(`(?i)<path d="M[^"]*A3,3 [^"]*Z"\s*style="fill:(#[0-9a-f]{6})`)
)

func hexColor(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// The page as the browser builds it shows every program that ran, one
// dot per boot and kernel, the survival grid and the flame graph link,
// and what run.json says is escaped, not markup: the demo run and every
// recorded run under testdata.
func TestHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	for _, fixture := range runFixtures(t) {
		dir, run := writeFixtureHTML(t, fixture)
		dom := string(runChromium(t, bin, filepath.Join(dir, HTMLFile), "--dump-dom"))
		checkDOM(t, fixture, run, dom)
		checkOrder(t, fixture+" (DOM)", run, dom)
		if fixture != demoDir {
			continue
		}
		// Targeted: facts of the DOM the browser built (the answer, a
		// hostile patch subject as text), where a golden would pin
		// Chromium's serialisation; the page kci writes is golden
		// (TestGoldenEveryFormat).
		for _, s := range []string{"gtp: faster (gtp -30.0% [-30.1, -29.9], 3+3 boots; gtp/gtp_write -41.6%", "&lt;script&gt;alert(1)&lt;/script&gt;"} {
			if !strings.Contains(dom, s) {
				t.Errorf("DOM lacks %q", s)
			}
		}
		if strings.Contains(dom, "<script>alert(1)") {
			t.Errorf("a patch subject from run.json became markup")
		}
	}
}

// checkDOM: a figure for every row that ran and none for a program that
// never did, one dot per boot in each kernel's colour, every survival
// cell of both kernels, the flame graph link.
func checkDOM(t *testing.T, fixture string, run *results.Run, dom string) {
	t.Helper()
	figs := figureRE.FindAllStringSubmatch(dom, -1)
	want := map[string]bool{}
	for _, tree := range run.TreeNames() {
		for _, v := range reportOf(run, tree).Perf.Variants {
			want[v.Variant+" total"] = v.Total.Ran()
			for _, p := range v.Programs {
				want[v.Variant+"/"+p.Name] = p.Ran()
			}
		}
	}
	seen := map[string]bool{}
	for _, f := range figs {
		label, body := f[1], f[4]
		seen[label] = true
		if !want[label] {
			t.Errorf("%s: figure for %q, which never ran", fixture, label)
		}
		n := map[string]int{}
		for _, d := range dotRE.FindAllStringSubmatch(body, -1) {
			n[strings.ToLower(d[1])]++
		}
		if fmt.Sprint(n[hexColor(baseColor)]) != f[2] || fmt.Sprint(n[hexColor(patchedColor)]) != f[3] {
			t.Errorf("%s: %s: %d base and %d patched dots, want %s and %s (one per boot)", fixture, label, n[hexColor(baseColor)], n[hexColor(patchedColor)], f[2], f[3])
		}
	}
	for label, ran := range want {
		if ran && !seen[label] {
			t.Errorf("%s: no figure for %s", fixture, label)
		}
	}
	cells := 0
	for _, tree := range run.TreeNames() {
		for _, r := range reportOf(run, tree).Survival {
			for _, c := range []*verdict.CellState{r.Base, r.Patched} {
				if c != nil {
					cells++
				}
			}
		}
	}
	if n := strings.Count(dom, `<td class="cell ok">`) + strings.Count(dom, `<td class="cell fail">`); n != cells {
		t.Errorf("%s: %d survival cells in the DOM, want %d", fixture, n, cells)
	}
	// A fact, targeted: the link to the flame graph beside the page.
	if !strings.Contains(dom, `href="profiles/gtp-patched-rep1-gtp.svg"`) {
		t.Errorf("%s: no flame graph link", fixture)
	}
}

// The browser draws the dots: the screenshot has pixels of both kernels'
// colours. With KCI_SCREENSHOT set, it is kept there.
func TestHTMLScreenshot(t *testing.T) {
	bin := chromium(t)
	dir, _ := writeDemoHTML(t)
	shot := filepath.Join(dir, "shot.png")
	runChromium(t, bin, filepath.Join(dir, HTMLFile), "--screenshot="+shot, "--window-size=1200,2000", "--hide-scrollbars")
	b, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if r := img.Bounds(); r.Dx() != 1200 || r.Dy() != 2000 {
		t.Errorf("screenshot is %v, want 1200x2000", r)
	}
	count := map[color.RGBA]int{}
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := color.RGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(bl >> 8), A: 0xff}
			if c == baseColor || c == patchedColor {
				count[c]++
			}
		}
	}
	if count[baseColor] < 100 || count[patchedColor] < 100 {
		t.Errorf("screenshot has %d base-coloured and %d patched-coloured pixels: the charts were not drawn", count[baseColor], count[patchedColor])
	}
	if keep := os.Getenv("KCI_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The page is self-contained: no script, nothing fetched.
func TestHTMLSelfContained(t *testing.T) {
	_, run := writeDemoHTML(t)
	var b bytes.Buffer
	if err := HTML(&b, verdict.AnalyzeRun(run), ""); err != nil {
		t.Fatal(err)
	}
	// SVG's namespace names are identifiers, never fetched.
	page := strings.NewReplacer(`xmlns="http://www.w3.org/2000/svg"`, "", `xmlns:xlink="http://www.w3.org/1999/xlink"`, "").Replace(b.String())
	// A property of the whole page, not of its words: targeted, since a
	// golden rewritten by -update would take a fetch in.
	for _, bad := range []string{"<script", "http://", "https://", "@import", "url(", "src="} {
		if strings.Contains(page, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
}
