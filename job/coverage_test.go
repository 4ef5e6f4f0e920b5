package job

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/vm/tcgplugin"
)

// A patch's hunks are mapped to a real ELF's code by its line table, and a
// boot's blocks say how often each ran: the hunk in one() as often as the
// block holding its code, the comment's hunk never (it has no code).
func TestCoverageRuns(t *testing.T) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skip("no gcc to compile the test program")
	}
	bin := filepath.Join(t.TempDir(), "vmlinux")
	src := "../kernel/testdata/linetable/prog.c"
	if out, err := exec.Command(gcc, "-O2", "-g", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	diff := `--- a/kernel/testdata/linetable/prog.c
+++ b/kernel/testdata/linetable/prog.c
@@ -6,3 +6,3 @@ __attribute__((noinline)) int one(void)
 {
-	return twice(&v);
+	return twice(&v) + 1;
 }
@@ -15,1 +15,1 @@ int two(void)
-/* A comment. */
+/* A comment: no code. */
`
	cov, err := newCoverage([]kernel.Patch{{File: "p.patch", Subject: "one more", Data: []byte(diff)}})
	if err != nil {
		t.Fatal(err)
	}
	k := &kernel.Artifacts{Vmlinux: bin, Release: "test"}
	hs, err := cov.records(k, k, allPatches)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]results.Hunk{}
	for _, h := range hs {
		if h.Side == results.RolePatched {
			byKey[h.Key] = h
		}
	}
	if h := byKey["1.1"]; h.Ranges == 0 || h.Bytes == 0 || h.NoCode != "" || h.Patch != "one more" {
		t.Errorf("hunk 1.1 %+v, want code", h)
	}
	if h := byKey["1.2"]; h.NoCode != kernel.NoCodeNone {
		t.Errorf("hunk 1.2 %+v, want %q", h, kernel.NoCodeNone)
	}
	code, _ := cov.codeFor(k, results.RolePatched, allPatches)
	r := code[0].Ranges[0]
	vs := []results.VariantResult{{Variant: "hash", Exact: &results.Exact{}}, {Variant: "cnt", Exact: &results.Exact{}}, {Variant: "kvm"}}
	ex := []boot.VariantExact{
		{Variant: "hash", ByContext: true, Blocks: tcgplugin.Blocks{
			{Addr: r.Lo, End: r.Hi, Execs: 1000, In: tcgplugin.ClassCounts{tcgplugin.ClassSyscall: 600, tcgplugin.ClassSoftIRQ: 300}, Prog: 600},
			{Addr: r.Hi + 64, End: r.Hi + 80, Execs: 5}}},
		{Variant: "cnt", Blocks: tcgplugin.Blocks{{Addr: r.Hi + 64, End: r.Hi + 80, Execs: 5}}},
	}
	if err := cov.runs(k, results.RolePatched, allPatches, vs, ex); err != nil {
		t.Fatal(err)
	}
	if got := vs[0].Exact.HunkRuns; got["1.1"] != 1000 || len(got) != 1 {
		t.Errorf("hash: runs %v, want 1.1 ran 1000 times and nothing for the hunk without code", got)
	}
	if got := vs[0].Exact.HunkIn; len(got) != 1 || len(got["1.1"]) != 4 || got["1.1"]["syscall"] != 600 || got["1.1"]["softirq"] != 300 ||
		got["1.1"][results.ContextOther] != 100 || got["1.1"][results.ContextBPF] != 600 {
		t.Errorf("hash: by context %v, want 1.1's 1000 runs as 600 in syscall, 300 in softirq, 100 other, 600 in BPF calls", got)
	}
	if got := vs[1].Exact.HunkRuns; got == nil || got["1.1"] != 0 {
		t.Errorf("cnt: runs %v, want 1.1 counted as never run", got)
	}
	if vs[1].Exact.HunkIn != nil {
		t.Errorf("cnt: by context %v from blocks not counted by context", vs[1].Exact.HunkIn)
	}
	if vs[2].Exact != nil {
		t.Errorf("a variant without blocks got counts")
	}
}
