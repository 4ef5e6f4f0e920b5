package job

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
)

// gitBase is a small kernel-like git repository (a Makefile and a
// 40-line net/core/skbuff.c), the base kci imports.
func gitBase(t *testing.T) string {
	t.Helper()
	repo := filepath.Join(t.TempDir(), "linux")
	if err := os.MkdirAll(filepath.Join(repo, "net", "core"), 0o755); err != nil {
		t.Fatal(err)
	}
	var src strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&src, "line %d\n", i)
	}
	for name, text := range map[string]string{"Makefile": "VERSION = 6\nPATCHLEVEL = 12\n", "net/core/skbuff.c": src.String()} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=kci", "-c", "user.email=kci@example.org", "commit", "-qm", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo
}

// staleSecondHunk is a patch whose first hunk applies and whose second
// (at line 30) edits a line the base does not have.
const staleSecondHunk = `net: edit against stale context

--- a/net/core/skbuff.c
+++ b/net/core/skbuff.c
@@ -2,3 +2,3 @@
 line 2
-line 3
+line three
 line 4
@@ -30,3 +30,3 @@
 line 30
-line 31 (as in another tree)
+line thirty-one
 line 32
`

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A patch that does not apply is named with the tree, the file, the hunk
// and git's own message, from a check on the tree's source at its series'
// tip (the series applied in a scratch index first).
func TestAppliesNamesPatchTreeFileHunkAndGit(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	repo := gitBase(t)
	// The tree's series shifts the file by two lines: the patch's hunks
	// must be placed against the series' tip, not the bare base.
	series := writeFile(t, filepath.Join(dir, "series.patch"), "tree: two lines on top\n\n--- a/net/core/skbuff.c\n+++ b/net/core/skbuff.c\n@@ -1,2 +1,4 @@\n+tree 1\n+tree 2\n line 1\n line 2\n")
	if err := os.MkdirAll("patches", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join("patches", "x.patch"), staleSecondHunk)
	b := &Builder{Cache: &kernel.Cache{Root: filepath.Join(dir, "cache")}, Project: &project.File{Dir: dir, Base: kernel.Base{Git: repo}}}
	ps, err := kernel.LoadSeries("patches/x.patch")
	if err != nil {
		t.Fatal(err)
	}
	tree := &project.Tree{Name: "gtp", Series: []string{series}}
	ae, err := b.Applies(context.Background(), tree, ps)
	if err != nil {
		t.Fatal(err)
	}
	want := "patches/x.patch: does not apply to tree gtp: net/core/skbuff.c: hunk #2 at line 30: error: patch failed: net/core/skbuff.c:30"
	if ae == nil || ae.Error() != want {
		t.Fatalf("Applies = %v\nwant %s", ae, want)
	}
	good, err := kernel.LoadSeries(writeFile(t, filepath.Join(dir, "good.patch"), strings.Replace(staleSecondHunk, " (as in another tree)", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if ae, err := b.Applies(context.Background(), tree, good); ae != nil || err != nil {
		t.Errorf("a patch that applies: %v, %v", ae, err)
	}
}

// noBuilds is a real Builder whose builds fail the test: kci test must
// refuse a patch that does not apply before any kernel is built.
type noBuilds struct {
	*Builder
	t *testing.T
}

func (n noBuilds) Tree(context.Context, *project.Tree) (*kernel.Artifacts, error) {
	n.t.Error("the tree's kernel was built before the patch was checked")
	return nil, fmt.Errorf("no builds here")
}

func (n noBuilds) Patched(context.Context, *project.Tree, *kernel.Artifacts, []kernel.Patch) (*kernel.Artifacts, error) {
	n.t.Error("the patched kernel was built before the patch was checked")
	return nil, fmt.Errorf("no builds here")
}

// With --tree stock, a patch that does not apply used to be found only
// after the base kernel was built (~14 min cold).
func TestTestRefusesAPatchThatDoesNotApplyBeforeAnyBuild(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	repo := gitBase(t)
	if err := os.MkdirAll("patches", 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join("patches", "x.patch"), staleSecondHunk)
	proj := &project.File{Path: "kci.yaml", Dir: dir, Base: kernel.Base{Git: repo}, Trees: []project.Tree{{Name: "stock"}, {Name: "gtp"}}}
	b := noBuilds{&Builder{Cache: &kernel.Cache{Root: filepath.Join(dir, "cache")}, Project: proj}, t}
	for _, trees := range [][]string{{"stock"}, nil} {
		boots := &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(100)}}
		o := TestOptions{Patches: []string{"patches/x.patch"}, Trees: trees, Reps: 1, Out: filepath.Join(t.TempDir(), "run")}
		_, err := (&Tester{Kernels: b, Booter: boots, Project: proj}).Test(context.Background(), o)
		ee, ok := err.(*ExitError)
		want := "patches/x.patch: does not apply to tree stock: net/core/skbuff.c: hunk #2 at line 30: error: patch failed: net/core/skbuff.c:30"
		if !ok || ee.Code != ExitApply || !strings.Contains(err.Error(), want) {
			t.Errorf("--tree %v: %v, want exit %d with %q", trees, err, ExitApply, want)
		}
		if len(boots.reqs) != 0 {
			t.Errorf("--tree %v: %d boots", trees, len(boots.reqs))
		}
	}
}
