package kernel

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// The example patch: one added line in rhtab_map_alloc.
func TestHunksOfTheExamplePatch(t *testing.T) {
	ps, err := LoadSeries("../patches/rht-no-shrink.patch")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := ps[0].Hunks()
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 {
		t.Fatalf("%d hunks, want 1", len(hs))
	}
	h := hs[0]
	if h.File != "kernel/bpf/hashtab.c" || h.OldFile != h.File || !reflect.DeepEqual(h.Added, []int{2976}) || len(h.Removed) != 0 {
		t.Errorf("hunk %+v", h)
	}
	if got, want := h.Name(), "hunk 1 (kernel/bpf/hashtab.c:2976 rhtab_map_alloc)"; got != want {
		t.Errorf("name %q, want %q", got, want)
	}
}

// Lines are numbered as the diff says, across files, with new files,
// deleted files, removal-only hunks and "\ No newline" markers.
func TestHunksNumberLines(t *testing.T) {
	diff := `diff --git a/net/core/dev.c b/net/core/dev.c
--- a/net/core/dev.c
+++ b/net/core/dev.c
@@ -10,4 +10,5 @@ static int enqueue(struct sk_buff *skb)
 	a();
-	b();
+	c();
+	d();
 	e();
 
@@ -40,3 +41,2 @@ void f(void)
 	x();
-	y();
 	z();
diff --git a/include/linux/new.h b/include/linux/new.h
new file mode 100644
--- /dev/null
+++ b/include/linux/new.h
@@ -0,0 +1,2 @@
+#define A 1
+#define B 2
\ No newline at end of file
diff --git a/old.c b/old.c
deleted file mode 100644
--- a/old.c
+++ /dev/null
@@ -1,1 +0,0 @@
-int gone;
`
	hs, err := Patch{File: "p.patch", Data: []byte(diff)}.Hunks()
	if err != nil {
		t.Fatal(err)
	}
	want := []Hunk{
		{Index: 1, File: "net/core/dev.c", OldFile: "net/core/dev.c", Header: "static int enqueue(struct sk_buff *skb)", OldLine: 10, NewLine: 10, Added: []int{11, 12}, Removed: []int{11}},
		{Index: 2, File: "net/core/dev.c", OldFile: "net/core/dev.c", Header: "void f(void)", OldLine: 40, NewLine: 41, Removed: []int{41}},
		{Index: 3, File: "include/linux/new.h", NewLine: 1, Added: []int{1, 2}},
		{Index: 4, OldFile: "old.c", OldLine: 1, Removed: []int{1}},
	}
	if !reflect.DeepEqual(hs, want) {
		t.Errorf("hunks:\n%+v\nwant\n%+v", hs, want)
	}
	names := []string{"hunk 1 (net/core/dev.c:11 enqueue)", "hunk 2 (net/core/dev.c:41 f)", "hunk 3 (include/linux/new.h:1)", "hunk 4 (old.c:1)"}
	for i, h := range hs {
		if h.Name() != names[i] {
			t.Errorf("name %q, want %q", h.Name(), names[i])
		}
	}
}

// A hunk whose body disagrees with its range names the patch and hunk.
func TestHunksMalformed(t *testing.T) {
	for name, diff := range map[string]string{
		"short":  "--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n a\n",
		"stray":  "--- a/f.c\n+++ b/f.c\n@@ -1,2 +1,2 @@\n a\n?b\n",
		"header": "--- a/f.c\n+++ b/f.c\n@@ -x +1 @@\n a\n",
	} {
		_, err := Patch{File: "bad.patch", Data: []byte(diff)}.Hunks()
		if err == nil || !strings.Contains(err.Error(), "bad.patch") || !strings.Contains(err.Error(), "@@") {
			t.Errorf("%s: err %v, want one naming the patch and the hunk", name, err)
		}
	}
	// Every patch of the trees' series reads.
	for _, dir := range []string{"../patches/gtp", "../patches/skb-ext"} {
		if _, err := os.Stat(dir); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		ps, err := LoadSeries(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			if hs, err := p.Hunks(); err != nil || len(hs) == 0 {
				t.Errorf("%s: %d hunks, %v", p.Name(), len(hs), err)
			}
		}
	}
}

// A diff made without -p names no function: the caller's (from the
// code's symbol) fills in, and the header's wins when there is one.
func TestHunkNameIn(t *testing.T) {
	h := Hunk{Index: 1, File: "kernel/bpf/hashtab.c", NewLine: 1207, Added: []int{1210}}
	if got := h.NameIn("htab_map_update_elem"); got != "hunk 1 (kernel/bpf/hashtab.c:1210 htab_map_update_elem)" {
		t.Errorf("NameIn %q", got)
	}
	h.Header = "__attribute__((noinline)) int one(void)"
	if got := h.NameIn("g"); got != "hunk 1 (kernel/bpf/hashtab.c:1210 one)" {
		t.Errorf("NameIn past an attribute %q", got)
	}
	h.Header = "static void f(void)"
	if got := h.NameIn("g"); got != "hunk 1 (kernel/bpf/hashtab.c:1210 f)" {
		t.Errorf("NameIn with a header %q", got)
	}
}
