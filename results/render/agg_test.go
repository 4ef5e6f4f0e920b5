package render

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/internal/golden"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/benchtab"
	"github.com/kci-dev/kci/results/internal/runtest"
)

func diffLines(t *testing.T, got, want string) {
	t.Helper()
	g := strings.Split(got, "\n")
	w := strings.Split(want, "\n")
	for i := 0; i < max(len(g), len(w)); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			t.Errorf("line %d:\n got: %q\nwant: %q", i+1, gl, wl)
		}
	}
}

func TestPerPacketUsesLargestSchedClsCount(t *testing.T) {
	progs := []results.ProgStat{
		{Name: "w", Type: "sched_cls", RunTimeNs: 9000, RunCnt: 90},
		{Name: "r", Type: "sched_cls", RunTimeNs: 2000, RunCnt: 100},
		{Name: "reaper", Type: "tracing", RunTimeNs: 5000, RunCnt: 1000},
		{Name: "idle", Type: "tracing"},
	}
	costs, ref := results.PerPacket(progs)
	if ref != 100 {
		t.Fatalf("ref_cnt = %d, want 100 (largest sched_cls run_cnt, not the tracing one)", ref)
	}
	want := map[string]float64{"w": 90, "r": 20, "reaper": 50, "idle": 0}
	if len(costs) != len(want) {
		t.Fatalf("got %d programs, want %d (a program that never ran is still listed)", len(costs), len(want))
	}
	for _, c := range costs {
		if c.NsPerPkt != want[c.Name] {
			t.Errorf("%s: %v ns/pkt, want %v", c.Name, c.NsPerPkt, want[c.Name])
		}
	}
	if got := results.Total(costs); got != 160 {
		t.Errorf("total %v, want 160", got)
	}
	// Without any sched_cls program there is no packet count: all cost 0.
	costs, ref = results.PerPacket(progs[2:])
	if ref != 0 || results.Total(costs) != 0 {
		t.Errorf("no sched_cls: ref %d total %v, want 0 and 0", ref, results.Total(costs))
	}
}

// mailSets holds, per variant and program, the ns/pkt of the mail's three
// sets, each within ±0.05 of the printed number and chosen so that the
// totals' mean and spread also print as in the mail (the printed per-set
// numbers alone would give e.g. 263.9 instead of 263.8 for ext-ext).
var mailSets = []struct {
	variant string
	progs   []struct {
		name, typ string
		ns        [3]float64
	}
}{
	{"ext-cnt", progsOf("cnt_ingress", "sched_cls", 35.92, 35.64, 35.54, "cnt_egress", "sched_cls", 70.3, 73.5, 69.2)},
	{"ext-ext", progsOf("ext_write", "sched_cls", 199.26, 198.86, 202.96, "ext_read", "sched_cls", 63.1, 64.1, 63.2)},
	{"gtp-cnt", progsOf("cnt_ingress", "sched_cls", 34.36, 34.26, 34.59, "cnt_egress", "sched_cls", 59.9, 58.1, 62.7)},
	{"gtp-gtp", progsOf("gtp_write", "sched_cls", 531.03, 555.86, 567.16, "gtp_read", "sched_cls", 85.1, 87.5, 91.2,
		"gtp_skb_free", "tracing", 267.1, 283.9, 293.9)},
	{"gtp-gtpchurn", progsOf("gtp_write", "sched_cls", 784.87, 782.56, 830.64, "gtp_read", "sched_cls", 82.5, 82.3, 88.6,
		"gtp_skb_free", "tracing", 297.5, 294.7, 328.7)},
	{"gtp-gtplru", progsOf("gtplru_write", "sched_cls", 394.86, 391.86, 394.46, "gtplru_read", "sched_cls", 48.2, 49.4, 48.9,
		"gtplru_skb_free", "tracing", 99.9, 100.4, 100.5)},
}

func progsOf(a ...any) []struct {
	name, typ string
	ns        [3]float64
} {
	var out []struct {
		name, typ string
		ns        [3]float64
	}
	for i := 0; i < len(a); i += 5 {
		out = append(out, struct {
			name, typ string
			ns        [3]float64
		}{a[i].(string), a[i+1].(string), [3]float64{a[i+2].(float64), a[i+3].(float64), a[i+4].(float64)}})
	}
	return out
}

// writeBpftool writes a dump the way `bpftool -j prog show` prints it,
// with the kernel's preloaded iterators first and a comment line on top.
// The reference count differs per set, like real windows of different
// length; the last sched_cls program gets it and the others ran a few times
// less, so only the user's rule gives the intended numbers.
func writeMailSet(t *testing.T, dir string, set int) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ref := uint64(34_056_986 + 51_000*set)
	for _, v := range mailSets {
		progs := []map[string]any{
			{"id": 2, "type": "tracing", "name": "dump_bpf_map", "tag": "4aded48f24d7289c", "gpl_compatible": true, "loaded_at": 1790883472, "uid": 0, "orphaned": false, "bytes_xlated": 280, "jited": true, "bytes_jited": 179, "bytes_memlock": 4096, "map_ids": []int{2}, "btf_id": 2},
			{"id": 3, "type": "tracing", "name": "dump_bpf_prog", "tag": "f14155123df5c9f9", "gpl_compatible": true, "loaded_at": 1790883472, "uid": 0, "orphaned": false, "bytes_xlated": 520, "jited": true, "bytes_jited": 749, "bytes_memlock": 4096, "map_ids": []int{2}, "btf_id": 2},
		}
		lastCls := 0
		for i, p := range v.progs {
			if p.typ == "sched_cls" {
				lastCls = i
			}
		}
		for i, p := range v.progs {
			cnt := ref - 72
			switch {
			case p.typ == "tracing":
				cnt = ref + 108 // reapers run on every freed skb, more than packets
			case i == lastCls:
				cnt = ref
			}
			progs = append(progs, map[string]any{
				"id": 8 + i, "type": p.typ, "name": p.name, "tag": fmt.Sprintf("%016x", i+1), "gpl_compatible": true,
				"run_time_ns": uint64(math.Round(p.ns[set] * float64(ref))), "run_cnt": cnt,
				"loaded_at": 1790883473, "uid": 0, "orphaned": false, "bytes_xlated": 168, "jited": true, "bytes_jited": 114,
				"bytes_memlock": 4096, "map_ids": []int{3}, "btf_id": 14,
			})
		}
		b, err := json.Marshal(progs)
		if err != nil {
			t.Fatal(err)
		}
		body := "# 2026-10-01T21:39:03+02:00 bpf prog stats (run_time_ns / run_cnt)\n" + string(b) + "\n"
		if err := os.WriteFile(filepath.Join(dir, v.variant+results.BpfstatsExt), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// hardwareDir holds the mail's three sets as bpftool dumps
// (testdata/hardware/README).
const hardwareDir = "../testdata/hardware"

func hardwareSets() []string {
	var dirs []string
	for i := 1; i <= 3; i++ {
		dirs = append(dirs, filepath.Join(hardwareDir, fmt.Sprintf("results-%d", i)))
	}
	return dirs
}

// The committed sets are writeMailSet's: the mail's numbers, nothing else.
func TestHardwareTestdataIsTheMail(t *testing.T) {
	for i, d := range hardwareSets() {
		tmp := t.TempDir()
		writeMailSet(t, tmp, i)
		ents, err := os.ReadDir(tmp)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			want, _ := os.ReadFile(filepath.Join(tmp, e.Name()))
			got, err := os.ReadFile(filepath.Join(d, e.Name()))
			if err != nil || string(got) != string(want) {
				t.Errorf("%s/%s is not what writeMailSet writes (err %v)", d, e.Name(), err)
			}
		}
	}
}

// The user's table from the mail, reproduced from raw bpftool dumps.
func TestAggReproducesMailTable(t *testing.T) {
	tables, err := benchtab.AggTrees(hardwareSets(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 {
		t.Fatalf("got %d tables, want 1", len(tables))
	}
	want, err := os.ReadFile("../testdata/mail-table.txt")
	if err != nil {
		t.Fatal(err)
	}
	diffLines(t, AggString(tables[0]), string(want))
}

func sp(n int) string { return strings.Repeat(" ", n) }

// A hand-made pair of sets; the expected table is worked out by hand in
// the comments of the testdata files: a program that never ran (counters
// zero or absent) is listed with 0, a variant missing from a set shows "-"
// there and its total is over the sets that have it, and the kernel's
// preloaded iterators are not listed.
func TestAggHandmadeSets(t *testing.T) {
	tables, err := benchtab.AggTrees([]string{"../testdata/agg/set-a", "../testdata/agg/set-b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"variant" + sp(10) + "prog" + sp(18) + "set-a" + sp(6) + "set-b" + sp(4) + "total mean ± spread",
		strings.Repeat("-", 80),
		"x-cnt" + sp(12) + "cnt_in" + sp(18) + "5.0" + sp(8) + "6.0" + sp(7) + "21.0 ± 1.0",
		sp(17) + "cnt_out" + sp(16) + "15.0" + sp(7) + "16.0",
		"",
		"x-rh" + sp(13) + "rh_write" + sp(14) + "100.0" + sp(6) + "110.0" + sp(6) + "147.5 ± 7.5",
		sp(17) + "rh_read" + sp(16) + "15.0" + sp(7) + "15.0",
		sp(17) + "rh_free" + sp(16) + "25.0" + sp(7) + "30.0",
		sp(17) + "rh_copy" + sp(17) + "0.0" + sp(8) + "0.0",
		"",
		"y-only" + sp(11) + "only_prog" + sp(17) + "-" + sp(8) + "7.0" + sp(8) + "7.0 ± 0.0",
		"",
		"",
	}, "\n")
	diffLines(t, AggString(tables[0]), want)
}

func TestAggLongSetNamesWidenColumns(t *testing.T) {
	tab := benchtab.BuildAgg("", []benchtab.AggSet{
		{Label: "a-long-set-name", Variants: []benchtab.AggEntry{{Variant: "v", Costs: []results.ProgCost{{Name: "p", NsPerPkt: 1.25}}}}},
	})
	lines := strings.Split(AggString(tab), "\n")
	// 16+1+16+1, then the label's own width 15 + 1, then the tail.
	if want := "variant" + sp(10) + "prog" + sp(13) + "a-long-set-name" + sp(4) + "total mean ± spread"; lines[0] != want {
		t.Errorf("header %q, want %q", lines[0], want)
	}
	if len(lines[1]) != 34+16+24 {
		t.Errorf("rule is %d wide, want %d", len(lines[1]), 34+16+24)
	}
	if want := "v" + sp(16) + "p" + sp(16) + sp(12) + "1.2" + sp(8) + "1.2 ± 0.0"; lines[2] != want {
		t.Errorf("row %q, want %q", lines[2], want)
	}
}

func TestAggErrors(t *testing.T) {
	empty := t.TempDir()
	if _, err := benchtab.AggTrees([]string{empty}, nil); err == nil || err.Error() != "results: agg: "+empty+": no .bpfstats files and no run.json" {
		t.Errorf("empty dir: err %v, want one naming the missing .bpfstats files", err)
	}
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, "v.bpfstats"), []byte("# c\n[{\"name\": \"x\","), 0o644)
	// A fact in the error, targeted: the file's name (the rest is the
	// JSON decoder's words).
	if _, err := benchtab.AggTrees([]string{d}, nil); err == nil || !strings.Contains(err.Error(), "v.bpfstats") {
		t.Errorf("bad JSON: err %v, want one naming the file", err)
	}
}

// kci's own run records feed the same table: each repetition is a set,
// base and patched kernels are separate tables, invalid results are left
// out and said so, and TCG numbers carry the label.
func TestAggRunDir(t *testing.T) {
	run := &results.Run{Schema: results.SchemaVersion, ID: "abcd1234", Host: results.Host{Accel: results.AccelTCG}}
	add := func(role string, rep int, vs ...results.VariantResult) {
		run.Boots = append(run.Boots, results.Boot{Seq: len(run.Boots) + 1, Tree: "gtp", Role: role, Rep: rep, Accel: results.AccelTCG, Variants: vs})
	}
	bad := runtest.Vr("gtp", runtest.Pc{Name: "gtp_write", Ns: 999})
	bad.Valid, bad.Invalid = false, "FREE_REAPED 10 != EGRESS 12"
	add(results.RoleBase, 1, runtest.Vr("cnt", runtest.Pc{Name: "cnt_ingress", Ns: 30}), runtest.Vr("gtp", runtest.Pc{Name: "gtp_write", Ns: 500}))
	add(results.RolePatched, 1, runtest.Vr("cnt", runtest.Pc{Name: "cnt_ingress", Ns: 31}), runtest.Vr("gtp", runtest.Pc{Name: "gtp_write", Ns: 400}))
	add(results.RoleBase, 2, runtest.Vr("cnt", runtest.Pc{Name: "cnt_ingress", Ns: 34}), runtest.Vr("gtp", runtest.Pc{Name: "gtp_write", Ns: 520}))
	add(results.RolePatched, 2, runtest.Vr("cnt", runtest.Pc{Name: "cnt_ingress", Ns: 33}), bad)
	dir := filepath.Join(t.TempDir(), "run") // the tables' titles name it
	if err := results.Save(dir, run); err != nil {
		t.Fatal(err)
	}
	tables, err := benchtab.AggTrees([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 2 {
		t.Fatalf("got %d tables, want base and patched", len(tables))
	}
	base, patched := tables[0], tables[1]
	if base.Metric != "emulated wall-time" || base.Unit != "ns/pkt" {
		t.Errorf("base table metric %q unit %q, want emulated wall-time ns/pkt", base.Metric, base.Unit)
	}
	if got := strings.Join(base.Sets, ","); got != "rep-1,rep-2" {
		t.Errorf("base sets %s, want rep-1,rep-2", got)
	}
	if base.Variants[0].Variant != "gtp-cnt" || base.Variants[1].Variant != "gtp-gtp" {
		t.Errorf("variants %q %q, want the user's <tree>-<object> names", base.Variants[0].Variant, base.Variants[1].Variant)
	}
	if m, s := base.Variants[1].Mean, base.Variants[1].Spread; math.Abs(m-510) > 1e-9 || math.Abs(s-10) > 1e-9 {
		t.Errorf("base gtp-gtp %v ± %v, want 510 ± 10", m, s)
	}
	// The invalid rep-2 result is not averaged: patched gtp-gtp is rep-1 only.
	pg := patched.Variants[1]
	if !math.IsNaN(pg.Totals[1]) || pg.Mean != 400 {
		t.Errorf("patched gtp-gtp totals %v mean %v: the invalid repetition must be left out", pg.Totals, pg.Mean)
	}
	if len(patched.Notes) != 1 {
		t.Errorf("patched notes %q, want the invalid repetition", patched.Notes)
	}
	// The titles (the role, the emulated label) and the invalid
	// repetition's note with its reason are the goldens
	// testdata/TestAggRunDir/.
	golden.Own(t, "base.txt", AggString(base))
	golden.Own(t, "patched.txt", AggString(patched))
}
