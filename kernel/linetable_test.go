package kernel

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// A program compiled with gcc -g: the header's inline line has a copy in
// each caller, a comment has no code, a file not compiled in is not built.
func TestLinesCode(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to compile the test program")
	}
	bin := filepath.Join(t.TempDir(), "prog")
	src := filepath.Join("testdata", "linetable")
	if out, err := exec.Command(gcc, "-O2", "-g", "-fno-inline-functions-called-once", "-o", bin, filepath.Join(src, "prog.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	got, err := LinesCode(bin, []LineSet{
		{File: "testdata/linetable/inl.h", Lines: []int{4}},   // return *x * 2: inlined into one() and two()
		{File: "testdata/linetable/prog.c", Lines: []int{7}},  // one()'s return
		{File: "testdata/linetable/prog.c", Lines: []int{15}}, // a comment
		{File: "net/core/dev.c", Lines: []int{1}},             // not in this program
		{File: "testdata/linetable/prog.c", Lines: []int{23}}, // three(): only an inlined call
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got[0].Ranges); n < 2 {
		t.Errorf("inline line: %d ranges %v, want a copy in each of its two callers", n, got[0].Ranges)
	}
	if len(got[1].Ranges) == 0 || got[1].NoCode != "" {
		t.Errorf("one()'s line: %+v, want code", got[1])
	}
	if got[2].NoCode != NoCodeNone || len(got[2].Ranges) != 0 {
		t.Errorf("comment: %+v, want %q", got[2], NoCodeNone)
	}
	if got[3].NoCode != NoCodeNotBuilt {
		t.Errorf("other file: %+v, want %q", got[3], NoCodeNotBuilt)
	}
	// three()'s line holds the inline's load and multiply, found through
	// the call site, as well as whatever the line table gives the line.
	if len(got[4].Ranges) == 0 || got[4].Ranges[len(got[4].Ranges)-1].Hi-got[4].Ranges[0].Lo < 4 {
		t.Errorf("inlined call's line: %+v, want the inline's code", got[4])
	}
	for _, lc := range got {
		for _, r := range lc.Ranges {
			if r.Hi <= r.Lo {
				t.Errorf("%s: empty range %v", lc.File, r)
			}
		}
	}
	if _, err := LinesCode(filepath.Join(src, "prog.c"), nil); err == nil {
		t.Error("a file that is no ELF: want an error")
	}
}
