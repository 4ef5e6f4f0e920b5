package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
)

// mailSets are the user's three hardware sets (results/testdata/hardware).
func mailSets(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, s := range []string{"results-1", "results-2", "results-3"} {
		d, err := filepath.Abs(filepath.Join("..", "..", "results", "testdata", "hardware", s))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// recordedRun copies a recorded kci test run (the demo patch on gtp) into
// a run directory of its own.
func recordedRun(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "results", "testdata", "recorded-gtp", results.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "demo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, results.RunFile), string(b))
	return dir
}

// kci bench --hardware results-1 results-2 results-3 RUNDIR: the sets
// after the flag are sets, the run directory a RUNDIR; the table and the
// hardware beside it, nothing booted.
func TestBenchHardwareFromRunDir(t *testing.T) {
	sets, run := mailSets(t), recordedRun(t)
	args := append([]string{"bench", "--hardware"}, sets...)
	code, out := kci(t, append(args, run, "--hardware-tree", "gtp=gtp+patched")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, want := range []string{"kci bench: tree kernels", "kci beside the hardware sets results-1, results-2, results-3",
		"gtp+patched-gtp / gtp+patched-gtplru       1.70×", "hardware variants no kci row matches: ext-cnt, ext-ext"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	assertWidth(t, out)
	// Less bpf_stats' floor (30 ns a call): his gtp over gtplru is
	// (920.9 - 90) / (542.8 - 90) = 1.83x, and the unit and a note say so.
	code, out = kci(t, append(args, run, "--hardware-tree", "gtp=gtp+patched", "--hardware-floor", "30")...)
	if code != 0 {
		t.Fatalf("--hardware-floor 30: exit %d: %s", code, out)
	}
	flat := strings.Join(strings.Fields(out), " ") // the text is folded at its width
	for _, want := range []string{"(bpf_stats less its floor, 30.0 ns a call)", "gtp+patched-gtp / gtp+patched-gtplru 1.83×",
		"the hardware's rows are less bpf_stats' floor, 30.0 ns a call (--hardware-floor)"} {
		if !strings.Contains(flat, want) {
			t.Errorf("--hardware-floor 30: output lacks %q", want)
		}
	}
	assertWidth(t, out)
}

// Every kind of bad hardware input is refused first, naming it: exit 64,
// one line, nothing booted, built or created (badInput.check).
func TestBenchHardwareBadInput(t *testing.T) {
	fakeMeminfo(t, 23*1024*1024)
	top := t.TempDir()
	sets, run := mailSets(t), recordedRun(t)
	missing, empty := filepath.Join(top, "results-9"), filepath.Join(top, "empty")
	bad, nopkts := filepath.Join(top, "bad"), filepath.Join(top, "nopkts")
	for _, d := range []string{empty, bad, nopkts} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(bad, "ext-cnt.bpfstats"), "# bpftool -j prog show\n[{\"name\": \"cnt_ingress\", \"run_cnt\": 12,\n")
	write(t, filepath.Join(nopkts, "ext-cnt.bpfstats"), `[{"name":"cnt_ingress","type":"sched_cls"}]`)
	agg := filepath.Join("..", "..", "results", "testdata", "agg", "set-a") // x-cnt, x-rh: no tree of kci's
	aggAbs, err := filepath.Abs(agg)
	if err != nil {
		t.Fatal(err)
	}
	stock := "base:\n  git: " + devCheckout(t) + "\ntrees:\n  - name: stock\n"
	for _, tc := range []badInput{
		{args: []string{"bench", "--hardware", missing}, want: "--hardware " + missing + ": no such directory"},
		{args: []string{"bench", "--hardware", sets[0], missing}, want: "--hardware " + missing + ": no such directory"},
		{args: []string{"bench", "--hardware", empty}, want: "--hardware " + empty + ": no .bpfstats files"},
		{args: []string{"bench", "--hardware", bad}, want: "--hardware " + filepath.Join(bad, "ext-cnt.bpfstats") + ": not a complete bpftool JSON dump"},
		{args: []string{"bench", "--hardware", nopkts}, want: "--hardware " + filepath.Join(nopkts, "ext-cnt.bpfstats") + ": no sched_cls program with a run count"},
		{args: []string{"bench", "--hardware", run}, want: "--hardware " + run + ": a kci run directory"},
		{args: []string{"bench", "--hardware-tree", "gtp=gtp+patched"}, want: "--hardware-tree maps the names of --hardware's sets"},
		{args: []string{"bench", "--hardware", sets[0], "--hardware-tree", "gtp"}, want: `--hardware-tree "gtp": want HWTREE=TREE`},
		{args: []string{"bench", "--hardware-floor", "30"}, want: "--hardware-floor is taken off --hardware's sets: give --hardware too"},
		{args: []string{"bench", "--hardware", sets[0], "--hardware-floor", "-1"}, want: "--hardware-floor -1: want the ns a call"},
		{args: []string{"bench", "--hardware", sets[0], "--hardware-floor", "NaN"}, want: "--hardware-floor NaN: want the ns a call"},
		{args: []string{"bench", "--hardware", sets[0], run, "--hardware-floor", "40"},
			want: "--hardware " + filepath.Join(sets[0], "ext-cnt.bpfstats") + ": program cnt_ingress averages 35.9 ns a call, under the floor of 40.0"},
		{args: []string{"bench", "--hardware", sets[0], "--hardware-tree", "xyz=gtp"}, want: "--hardware-tree xyz=gtp: the sets have no xyz-* variant (their trees: ext, gtp)"},
		{args: []string{"bench", "--hardware", sets[0], run, "--hardware-tree", "gtp=abc"}, want: "--hardware-tree gtp=abc: kci's table has no tree abc (its trees: gtp, gtp+patched)"},
		// Variants kci has no row for: of a run directory, and of the
		// boots kci bench would make (before any build or boot).
		{args: []string{"bench", "--hardware", aggAbs, run}, want: "--hardware: no variant of the sets (x-cnt, x-rh) is a row of kci's table (gtp-none, gtp-cnt"},
		{args: []string{"bench", "--hardware", sets[0], "--variants", "cnt,ext"}, yaml: stock,
			want: "--hardware: no variant of the sets (ext-cnt, ext-ext, gtp-cnt, gtp-gtp, gtp-gtpchurn, gtp-gtplru) is a row of kci's table (stock-none, stock-cnt, stock-ext)"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) { tc.check(t) })
	}
}
