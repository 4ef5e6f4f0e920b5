package kernel

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden .json files under testdata/")

// golden compares got (as JSON) with testdata file want, or rewrites it
// with -update.
func golden(t *testing.T, want string, got any) {
	t.Helper()
	js, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	js = append(js, '\n')
	if *update {
		if err := os.WriteFile(want, js, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	exp, err := os.ReadFile(want)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(exp) != string(js) {
		t.Errorf("%s differs (go test -update rewrites it):\ngot:\n%s\nwant:\n%s", want, js, exp)
	}
}

func TestParseMakeOutputGolden(t *testing.T) {
	logs, _ := filepath.Glob("testdata/warnings/*.log")
	if len(logs) == 0 {
		t.Fatal("no golden make outputs")
	}
	for _, l := range logs {
		t.Run(filepath.Base(l), func(t *testing.T) {
			o, err := ParseMakeLog(l)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(l, ".log")+".json", o)
		})
	}
}

func TestParseMakeOutputFields(t *testing.T) {
	o, err := ParseMakeLog("testdata/warnings/1-shifted.log")
	if err != nil {
		t.Fatal(err)
	}
	var w *Warning
	for i := range o.Warnings {
		if o.Warnings[i].File == "net/core/skbuff.c" {
			w = &o.Warnings[i]
		}
	}
	if w == nil {
		t.Fatalf("no warning for net/core/skbuff.c in %+v", o.Warnings)
	}
	// The path is relative to the source tree (make runs in O=.kci-o).
	if w.Line != 6179 || w.Function != "skb_scrub_packet" || w.Option != "-Wunused-variable" || w.Code != "int kci_unused;" {
		t.Errorf("warning = %+v", *w)
	}
	if got, want := w.String(), "net/core/skbuff.c:6179: unused variable 'kci_unused' [-Wunused-variable]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := strings.Join(o.Compiled, " "); got != "lib/string net/core/skbuff" {
		t.Errorf("compiled = %q", got)
	}
	// make's own chatter is not the code's.
	if o := ParseMakeOutput("make[2]: warning: jobserver unavailable: using -j1.  Add '+' to parent make rule.\n"); len(o.Warnings) != 0 {
		t.Errorf("make's warning taken for the code's: %+v", o.Warnings)
	}
	// An error is not a warning.
	b, _ := ParseMakeLog("testdata/warnings/broken.log")
	if len(b.Warnings) != 0 {
		t.Errorf("broken.log: warnings %+v, want none (its error is not one)", b.Warnings)
	}
}

// TestWarningSetNew walks prefixes: a warning whose line moved is not new,
// a new one is, an objtool address change is not, and a warning fixed by
// a recompile leaves the set while untouched files keep theirs.
func TestWarningSetNew(t *testing.T) {
	parse := func(name string) BuildOutput {
		o, err := ParseMakeLog(filepath.Join("testdata/warnings", name))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	set := WarningSet{}
	if n := set.Apply(parse("0-tree.log")); len(n) != 3 {
		t.Fatalf("tree build: %d new warnings, want all 3: %+v", len(n), n)
	}
	added := set.Apply(parse("1-shifted.log"))
	var got []string
	for _, w := range added {
		got = append(got, w.String())
	}
	want := []string{
		"net/core/skbuff.c:6179: unused variable 'kci_unused' [-Wunused-variable]",
		"ld: arch/x86/boot/compressed/vmlinux has a LOAD segment with RWX permissions",
	}
	if len(got) != 2 || got[0] != want[0] || !strings.Contains(got[1], "LOAD segment with RWX") {
		t.Errorf("new after prefix 1 = %q, want %q (lib/string.c moved 3 lines: not new; objtool offset changed: not new)", got, want)
	}
	if n := set.Apply(parse("2-fixed.log")); len(n) != 0 {
		t.Errorf("prefix 2 adds %+v, want nothing", n)
	}
	for _, w := range set {
		if w.File == "net/core/skbuff.c" {
			t.Errorf("skbuff.c recompiled without its warning, still in the set: %+v", w)
		}
	}
	found := false
	for _, w := range set {
		found = found || w.File == "lib/string.c"
	}
	if !found {
		t.Error("lib/string.c was not recompiled: its warning must stay in the set")
	}
	// Back again: the warning returns as new.
	if n := set.Apply(parse("1-shifted.log")); len(n) != 1 || n[0].File != "net/core/skbuff.c" {
		t.Errorf("re-adding the warning: new = %+v", n)
	}
}

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{
		"../net/core/skbuff.c":                            "net/core/skbuff.c",
		"/root/.cache/kci/builds/abc/.kci-o/lib/string.o": "lib/string.o",
		"/root/.cache/kci/builds/abc/.kci-o/../lib/x.c":   "lib/x.c",
		"net/core/skbuff":                                 "net/core/skbuff",
		"vmlinux.o":                                       "vmlinux.o",
	} {
		if got := cleanPath(in); got != want {
			t.Errorf("cleanPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCheckpatchGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/checkpatch/*.txt")
	if len(files) < 3 {
		t.Fatalf("want golden checkpatch outputs, have %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(f, ".txt")+".json", ParseCheckpatch(string(data)))
		})
	}
}

func TestParseCheckpatchCounts(t *testing.T) {
	data, err := os.ReadFile("testdata/checkpatch/0001.txt")
	if err != nil {
		t.Fatal(err)
	}
	c := ParseCheckpatch(string(data))
	if c.Errors != 1 || c.Warnings != 0 || c.Checks != 0 || len(c.Items) != 1 {
		t.Fatalf("0001: %+v", c)
	}
	if it := c.Items[0]; it.Level != "ERROR" || it.Type != "TRAILING_WHITESPACE" || it.Line != 23 || it.Message != "trailing whitespace" {
		t.Errorf("item = %+v", it)
	}
	// Without the total line (output cut short), items are counted.
	c = ParseCheckpatch("-:3: WARNING:LONG_LINE: too long\n-:4: CHECK: alignment\n")
	if c.Warnings != 1 || c.Checks != 1 || c.Items[1].Message != "alignment" {
		t.Errorf("no total line: %+v", c)
	}
}
