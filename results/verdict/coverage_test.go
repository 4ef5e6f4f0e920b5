package verdict

import (
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

// coverageRun: an icount run whose patch has three hunks: 1.1 runs once
// per packet in hash (its patched side), in softirq inside the BPF
// program's call, and never in cnt, 1.2 never runs, 1.3 compiles to no code; 1.1 also
// removes a line that ran twice a packet on the base kernel, in three
// contexts.
func coverageRun(ran bool) *results.Run {
	run := runtest.MkRun(results.AccelTCG, results.ClockICount, 3, 3,
		[]runtest.VarSpec{{Name: "cnt", Progs: []string{"cnt_egress"}}, {Name: "hash", Progs: []string{"hash_write"}}},
		func(string, int, string, string) float64 { return 100 })
	run.Trees = []results.Tree{{Name: "gtp", Hunks: []results.Hunk{
		{Key: "1.1", Name: "hunk 1 (kernel/bpf/hashtab.c:1200 htab_map_update_elem)", Side: results.RolePatched, Lines: 2, Ranges: 1, Bytes: 17},
		{Key: "1.2", Name: "hunk 2 (net/socket.c:1300 sock_ioctl)", Side: results.RolePatched, Lines: 1, Ranges: 1, Bytes: 9},
		{Key: "1.3", Name: "hunk 3 (kernel/bpf/hashtab.c:10)", Side: results.RolePatched, Lines: 1, NoCode: "compiles to no code"},
		{Key: "1.1", Name: "hunk 1 (kernel/bpf/hashtab.c:1200 htab_map_update_elem)", Side: results.RoleBase, Lines: 1, Ranges: 1, Bytes: 5},
	}}}
	for i := range run.Boots {
		b := &run.Boots[i]
		for j := range b.Variants {
			v := &b.Variants[j]
			runs := map[string]uint64{"1.1": 0, "1.2": 0}
			var in map[string]map[string]uint64
			if v.Variant == "hash" && ran {
				runs["1.1"] = 1000
				in = map[string]map[string]uint64{"1.1": {"softirq": 1000, results.ContextBPF: 1000}}
				if b.Role == results.RoleBase {
					runs["1.1"] = 2000
					in["1.1"] = map[string]uint64{"syscall": 1000, "softirq": 500, results.ContextOther: 500}
				}
			}
			if b.Role == results.RoleBase {
				delete(runs, "1.2")
			}
			v.Exact = &results.Exact{Packets: 1000, Insns: 1, HunkRuns: runs, HunkIn: in}
		}
	}
	return run
}

func TestCoverageLines(t *testing.T) {
	tr := AnalyzeRun(coverageRun(true)).Trees[0]
	c := tr.Coverage
	if c == nil || c.Unmeasured != "" || !c.Ran() {
		t.Fatalf("coverage %+v", c)
	}
	want := []string{
		"hunk 1 (kernel/bpf/hashtab.c:1200 htab_map_update_elem): ran 1.00×/pkt in hash (softirq; 1.00 in a BPF program's call); never in cnt (3 boots)",
		"hunk 2 (net/socket.c:1300 sock_ioctl): never ran in a measured window (cnt, hash; 3 boots)",
		"hunk 3 (kernel/bpf/hashtab.c:10): compiles to no code",
		"hunk 1 (kernel/bpf/hashtab.c:1200 htab_map_update_elem), its removed lines (in the kernel before the patch): ran 2.00×/pkt in hash (softirq 0.50, syscall 1.00, other 0.50); never in cnt (3 boots)",
	}
	got := c.Lines()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got, want := tr.Brief.Covers, "coverage: hunk 1.1 ran in the windows; hunk 1.2 never ran in any window; hunk 1.3 compiled to no code"; got != want {
		t.Errorf("covers %q, want %q", got, want)
	}
}

// A "no change" over code no window ran says the rows do not cover it.
func TestCoverageNoChangeOverCodeNeverRun(t *testing.T) {
	tr := AnalyzeRun(coverageRun(false)).Trees[0]
	if tr.Brief.PerfOutcome != "no change" {
		t.Fatalf("outcome %q", tr.Brief.PerfOutcome)
	}
	if want := "coverage: no window ran the patch's code, so these rows do not cover it (hunk 1.1, hunk 1.2 never ran in any window; hunk 1.3 compiled to no code)"; tr.Brief.Covers != want {
		t.Errorf("covers %q, want %q", tr.Brief.Covers, want)
	}
	// A change measured over code no window ran came through what that
	// code did outside them.
	moved := coverageRun(false)
	for i := range moved.Boots {
		if moved.Boots[i].Role == results.RolePatched {
			for j := range moved.Boots[i].Variants {
				moved.Boots[i].Variants[j].Programs[0].RunTimeNs *= 2
			}
		}
	}
	if b := AnalyzeRun(moved).Trees[0].Brief; b.PerfOutcome == "no change" || !strings.Contains(b.Covers, "outside the windows") {
		t.Errorf("outcome %q, covers %q", b.PerfOutcome, b.Covers)
	}
	// Without blocks (KVM, the host clock) nothing is counted, and said.
	run := coverageRun(false)
	for i := range run.Boots {
		for j := range run.Boots[i].Variants {
			run.Boots[i].Variants[j].Exact = nil
		}
	}
	c := AnalyzeRun(run).Trees[0].Coverage
	if c == nil || c.Unmeasured == "" || AnalyzeRun(run).Trees[0].Brief.Covers != "" {
		t.Errorf("uncounted coverage %+v", c)
	}
	// A patch whose every hunk compiles to no code needs no count to say so.
	run.Trees[0].Hunks = run.Trees[0].Hunks[2:3]
	tr = AnalyzeRun(run).Trees[0]
	if tr.Coverage.Unmeasured != "" || tr.Brief.Covers != "coverage: hunk 1.3 compiled to no code" {
		t.Errorf("no-code coverage %+v, brief %q", tr.Coverage, tr.Brief.Covers)
	}
}

// In a series, a patch's added lines are counted over its own prefix's
// boots and its removed ones over the previous prefix's; the findings
// (series.txt, series.md) say so per patch.
func TestPatchCoverageInASeries(t *testing.T) {
	boot := func(prefix int, runs map[string]uint64) results.SeriesBoot {
		in := map[string]map[string]uint64{}
		if runs["1.1"] > 0 { // patch 1's code ran in syscalls, inside the BPF program's call
			in["1.1"] = map[string]uint64{"syscall": runs["1.1"], results.ContextBPF: runs["1.1"]}
		}
		return results.SeriesBoot{Prefix: prefix, Bench: true, Boot: results.Boot{Variants: []results.VariantResult{
			{Variant: "hash", Exact: &results.Exact{Packets: 100, HunkRuns: runs, HunkIn: in}}}}}
	}
	tree := results.SeriesTree{Tree: "stock",
		Patches: []results.PatchResult{
			{Index: 1, Of: 2, Hunks: []results.Hunk{{Key: "1.1", Name: "hunk 1 (a.c:5 f)", Side: results.RolePatched, Lines: 1, Ranges: 1}}},
			{Index: 2, Of: 2, Hunks: []results.Hunk{
				{Key: "2.1", Name: "hunk 1 (b.c:9 g)", Side: results.RolePatched, Lines: 1, Ranges: 1},
				{Key: "2.1", Name: "hunk 1 (b.c:9 g)", Side: results.RoleBase, Lines: 1, Ranges: 1}}},
		},
		Boots: []results.SeriesBoot{
			boot(0, map[string]uint64{"1.1": 0}),               // the tree's kernel: patch 1 removes nothing
			boot(1, map[string]uint64{"1.1": 100, "2.1": 300}), // patch 1's code, and the code patch 2 removes
			boot(2, map[string]uint64{"2.1": 0}),               // patch 2's code never ran
		}}
	got := strings.Join(Findings(tree), "\n")
	for _, want := range []string{
		"patch 1/2 coverage: hunk 1 (a.c:5 f): ran 1.00×/pkt in hash (syscall; 1.00 in a BPF program's call) (1 boot)",
		"patch 2/2 coverage: hunk 1 (b.c:9 g): never ran in a measured window (hash; 1 boot)",
		"patch 2/2 coverage: hunk 1 (b.c:9 g), its removed lines (in the kernel before the patch): ran 3.00×/pkt in hash (1 boot)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("findings lack %q:\n%s", want, got)
		}
	}
}
