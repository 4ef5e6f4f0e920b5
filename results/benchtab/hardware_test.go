package benchtab

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
	"github.com/kci-dev/kci/results/verdict"
)

// mailSets are the user's three sets from his mail, as bpftool dumps
// (testdata/hardware/README).
func mailSets() []string {
	var dirs []string
	for i := 1; i <= 3; i++ {
		dirs = append(dirs, filepath.Join("../testdata/hardware", fmt.Sprintf("results-%d", i)))
	}
	return dirs
}

// near: x prints as the mail's one-decimal number want.
func near(x, want float64) bool { return math.Abs(x-want) < 0.05+1e-9 }

// The sets read as his bpfstats.py --agg reads them: every variant's
// total mean ± spread is the mail's, and so is each program per set.
func TestHardwareReadsTheMail(t *testing.T) {
	hw, err := ReadHardware(mailSets(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(hw.Sets, " "); got != "results-1 results-2 results-3" {
		t.Errorf("sets %q", got)
	}
	want := map[string][2]float64{ // the mail's "total mean ± spread"
		"ext-cnt": {106.7, 2.2}, "ext-ext": {263.8, 1.9}, "gtp-cnt": {94.6, 2.5},
		"gtp-gtp": {920.9, 34.5}, "gtp-gtpchurn": {1190.8, 44.2}, "gtp-gtplru": {542.8, 1.1},
	}
	if len(hw.Variants) != len(want) {
		t.Errorf("%d variants, want %d (the .json and .log files beside the dumps are not variants)", len(hw.Variants), len(want))
	}
	for _, v := range hw.Variants {
		w, ok := want[v.Variant]
		if !ok || !near(v.Mean, w[0]) || !near(v.Spread, w[1]) {
			t.Errorf("%s: %.2f ± %.2f, want %.1f ± %.1f", v.Variant, v.Mean, v.Spread, w[0], w[1])
		}
	}
	// One program, per set: the mail's ext-cnt cnt_egress 70.3 73.5 69.2.
	for i, x := range progValues(hw.Variants[aggIndex(hw, "ext-cnt")], "cnt_egress") {
		if !near(x, []float64{70.3, 73.5, 69.2}[i]) {
			t.Errorf("ext-cnt cnt_egress in set %d: %.2f", i+1, x)
		}
	}
}

// bpfTotals are a kci record's BPF totals of a variant on one kernel,
// per boot, worked out from run.json's counters by the user's rule.
func bpfTotals(run *results.Run, role, variant string) []float64 {
	var out []float64
	for _, b := range run.Boots {
		for _, v := range b.Variants {
			if b.Role == role && b.Error == "" && v.Variant == variant && v.Valid && v.Skipped == "" {
				costs, _ := results.PerPacket(v.Programs)
				out = append(out, results.Total(costs))
			}
		}
	}
	return out
}

// The mail's sets beside a recorded kci run (the demo patch on gtp):
// his gtp kernel had the patch, so his gtp-* are the run's patched
// kernel (gtp+patched). The hardware's numbers are the mail's, kci's are
// the record's, and a ratio's model error is kci's over his, minus one.
func TestHardwareBesideRecord(t *testing.T) {
	hw, err := ReadHardware(mailSets(), 0)
	if err != nil {
		t.Fatal(err)
	}
	run, err := results.Load("../testdata/recorded-gtp")
	if err != nil {
		t.Fatal(err)
	}
	ht := BuildHardware(BuildBench(run), hw, map[string]string{"gtp": "gtp+patched"}, 0)
	if got := strings.Join(ht.OnlyHardware, ","); got != "ext-cnt,ext-ext" {
		t.Errorf("hardware alone: %s, want ext-cnt,ext-ext (the record has no ext tree)", got)
	}
	if !strings.Contains(strings.Join(ht.OnlyKCI, ","), "gtp-gtp,") {
		t.Errorf("kci alone: %v, want the base kernel's gtp-gtp among them", ht.OnlyKCI)
	}
	var total *HardwareRow
	for i, r := range ht.Rows {
		if r.Variant == "gtp+patched-gtp" && r.Program == verdict.TotalRow {
			total = &ht.Rows[i]
		}
	}
	kgtp, klru := bpfTotals(run, results.RolePatched, "gtp"), bpfTotals(run, results.RolePatched, "gtplru")
	mean := func(xs []float64) float64 { m, _ := stats.MeanVar(xs); return m }
	switch {
	case total == nil:
		t.Fatal("no gtp+patched-gtp total row")
	case total.Hardware != "gtp-gtp" || !near(total.HW.Mean, 920.9) || !near(total.HW.Spread, 34.5) || total.HW.N != 3:
		t.Errorf("gtp+patched-gtp total: %s %.2f ± %.2f (%d sets), want gtp-gtp 920.9 ± 34.5 (3)", total.Hardware, total.HW.Mean, total.HW.Spread, total.HW.N)
	case len(total.KCI) != 1 || total.KCI[0].Unit != results.InstructionTimeLabel || math.Abs(total.KCI[0].Mean-mean(kgtp)) > 1e-9:
		t.Errorf("gtp+patched-gtp total, kci: %+v, want %.3f %s", total.KCI, mean(kgtp), results.InstructionTimeLabel)
	}
	r := findRatio(t, ht, "gtp+patched-gtp", "gtp+patched-gtplru")
	if !near(r.HW, 1.70) {
		t.Errorf("hardware gtp/gtplru %.3f, want the mail's 1.70", r.HW)
	}
	bpf := unitRatio(t, r, "bpf")
	wantErr := (mean(kgtp)/mean(klru))/(hw.Variants[aggIndex(hw, "gtp-gtp")].Mean/hw.Variants[aggIndex(hw, "gtp-gtplru")].Mean)*100 - 100
	if math.Abs(bpf.ErrPct-wantErr) > 1e-9 || bpf.ErrPct > -30 {
		t.Errorf("gtp/gtplru bpf: kci %.3f, error %+.2f%%, want %+.2f%% (kci's 1.09× against his 1.70×)", bpf.Ratio, bpf.ErrPct, wantErr)
	}
	if m := unitRatio(t, r, verdict.MarginalRow); m.Unit != results.InstructionTimeLabel || m.N != 6 {
		t.Errorf("gtp/gtplru marginal: %+v, want instruction-time over 6 seeds", m)
	}
	// Turned as the mail's: gtpchurn over gtp (1.29×), not gtp over gtpchurn.
	if r := findRatio(t, ht, "gtp+patched-gtpchurn", "gtp+patched-gtp"); !near(r.HW, 1.29) {
		t.Errorf("hardware gtpchurn/gtp %.3f, want 1.29", r.HW)
	}
}

// A run of four trees, ext and gtp each with and without a patch, with
// two of them matched to the hardware: the designs of the matched trees
// are compared across trees, as with two trees, though each design ran on
// two trees of the run.
func TestHardwareRatiosOfMatchedTrees(t *testing.T) {
	var bt BenchTable
	for _, v := range []string{"extb-cnt", "extb-ext", "extu-cnt", "extu-ext", "gtpb-gtp", "gtpu-cnt", "gtpu-gtp", "gtpu-gtplru"} {
		bt.Agg.Variants = append(bt.Agg.Variants, AggVariant{Variant: v})
	}
	pairs := [][2]string{{"extu-cnt", "ext-cnt"}, {"extu-ext", "ext-ext"}, {"gtpu-cnt", "gtp-cnt"}, {"gtpu-gtp", "gtp-gtp"}, {"gtpu-gtplru", "gtp-gtplru"}}
	var got []string
	for _, ij := range ratioPairs(bt, pairs) {
		got = append(got, bt.Agg.Variants[ij[0]].Variant+"/"+bt.Agg.Variants[ij[1]].Variant)
	}
	want := "extu-cnt/extu-ext extu-ext/gtpu-gtp extu-ext/gtpu-gtplru gtpu-cnt/gtpu-gtp gtpu-cnt/gtpu-gtplru gtpu-gtp/gtpu-gtplru"
	if strings.Join(got, " ") != want {
		t.Errorf("pairs compared:\n%s\nwant\n%s", strings.Join(got, " "), want)
	}
}

func findRatio(t *testing.T, ht HardwareTable, a, b string) HardwareRatio {
	t.Helper()
	for _, r := range ht.Ratios {
		if r.A == a && r.B == b {
			return r
		}
	}
	t.Fatalf("no ratio %s / %s among %d", a, b, len(ht.Ratios))
	return HardwareRatio{}
}

func unitRatio(t *testing.T, r HardwareRatio, metric string) UnitRatio {
	t.Helper()
	for _, k := range r.KCI {
		if k.Metric == metric {
			return k
		}
	}
	t.Fatalf("%s / %s: no %s ratio among %+v", r.A, r.B, metric, r.KCI)
	return UnitRatio{}
}

// cyclesBench is a cache model's bench of tree ext (one-vCPU guests,
// seeds 1-3): ext costs 900 modelled cycles per packet more than none, cnt
// 300, their BPF totals are 200 and 100 instruction-time ns, and their
// programs' calls 400 and 100 modelled cycles.
func cyclesBench(cpus int) BenchTable { return callsBench(cpus, true) }

// callsBench is cyclesBench's run, with the cache model's counts or
// without (the plugin's instructions alone).
func callsBench(cpus int, model bool) BenchTable {
	run := runtest.MkRun(results.AccelTCG, results.ClockICount, 3, 0,
		[]runtest.VarSpec{{Name: "none"}, {Name: "cnt", Progs: []string{"cnt_ingress"}}, {Name: "ext", Progs: []string{"ext_write"}}},
		func(_ string, _ int, v, _ string) float64 { return map[string]float64{"cnt": 100, "ext": 200}[v] })
	for i := range run.Boots {
		b := &run.Boots[i]
		b.Tree, b.Seed, b.Sanity = "ext", uint64(b.Rep), &results.Sanity{NumCPU: cpus}
		for j := range b.Variants {
			v := &b.Variants[j]
			cycles := map[string]float64{"none": 5000, "cnt": 5300, "ext": 5900}[v.Variant] + float64(b.Rep)
			v.Cost = &results.Cost{Packets: 1000, BusyNs: 3_000_000, ResolutionNs: 1}
			v.Exact = &results.Exact{Packets: 1000, Insns: 3_000_000, Cycles: uint64(cycles * 1000), Model: "test model"}
			if calls := map[string]uint64{"cnt": 100, "ext": 400}[v.Variant]; calls > 0 {
				prog := v.Programs[0].Name
				v.Exact.Calls = []results.CallCount{{Name: "call:bpf:" + prog, Calls: 1000, Insns: 50_000, Cycles: calls * 1000}}
			}
			if !model {
				v.Exact.Cycles, v.Exact.Model = 0, ""
				for k := range v.Exact.Calls {
					v.Exact.Calls[k].Cycles = 0
				}
			}
		}
	}
	return BuildBench(run)
}

// The cache model's ratio is its own unit, named by the guest's cores:
// a model of another core count is another unit (a row of its own beside
// the hardware), never averaged with it.
func TestHardwareCyclesUnit(t *testing.T) {
	hw := BuildAgg("", []AggSet{
		{Label: "s1", Variants: []AggEntry{{Variant: "ext-cnt", Costs: []results.ProgCost{{Name: "cnt_ingress", NsPerPkt: 100}}},
			{Variant: "ext-ext", Costs: []results.ProgCost{{Name: "ext_write", NsPerPkt: 250}}}}},
	})
	for _, c := range []struct {
		cpus int
		unit string
	}{{1, "modelled cycles/pkt, one core"}, {4, "modelled cycles/pkt, 4 cores"}} {
		ht := BuildHardware(cyclesBench(c.cpus), hw, nil, 0)
		r := findRatio(t, ht, "ext-ext", "ext-cnt")
		cyc := unitRatio(t, r, verdict.CyclesMarginalRow)
		// 900/300 modelled, 250/100 on the hardware: +20 %.
		if cyc.Unit != c.unit || math.Abs(cyc.Ratio-3) > 1e-9 || math.Abs(cyc.ErrPct-20) > 1e-9 {
			t.Errorf("%d cpus: cycles-marginal %+v, want 3.00× in %q, +20.0%%", c.cpus, cyc, c.unit)
		}
		if bpf := unitRatio(t, r, "bpf"); math.Abs(bpf.ErrPct+20) > 1e-9 { // 2× against 2.5×
			t.Errorf("bpf %+v, want -20.0%%", bpf)
		}
		// Each row has its calls in modelled cycles beside the
		// hardware's: the program's, and the total's (every program's).
		for _, row := range ht.Rows {
			if row.Variant != "ext-ext" {
				continue
			}
			var got []string
			for _, v := range row.KCI {
				got = append(got, fmt.Sprintf("%s=%.0f", v.Unit, v.Mean))
			}
			if want := c.unit + ", the programs' calls=400"; !slices.Contains(got, want) {
				t.Errorf("%d cpus: row %s/%s: kci %v, want %q among them", c.cpus, row.Variant, row.Program, got, want)
			}
		}
		// The programs' calls, bpf_stats' scope in modelled cycles:
		// 400/100 against 2.5×, +60 %.
		if calls := unitRatio(t, r, verdict.CallsCyclesRow); calls.Unit != c.unit+", the programs' calls" || math.Abs(calls.Ratio-4) > 1e-9 || math.Abs(calls.ErrPct-60) > 1e-9 {
			t.Errorf("%d cpus: %s %+v, want 4.00× in %q, +60.0%%", c.cpus, verdict.CallsCyclesRow, calls, c.unit+", the programs' calls")
		}
	}
}

// What kci bench --hardware refuses names the directory or the file, and
// what is wrong with it.
func TestHardwareBadSets(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, files map[string]string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for f, body := range files {
			if err := os.WriteFile(filepath.Join(d, f), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	good := `[{"name":"p","type":"sched_cls","run_time_ns":100,"run_cnt":10}]`
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	if err := results.Save(runDir, &results.Run{Schema: results.SchemaVersion, ID: "r"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		dirs       []string
		path, what string
	}{
		{[]string{filepath.Join(dir, "nope")}, filepath.Join(dir, "nope"), "no such directory"},
		{[]string{plain}, plain, "not a directory"},
		{[]string{runDir}, runDir, "a kci run directory"},
		{[]string{mk("empty", map[string]string{"a.json": "{}"})}, filepath.Join(dir, "empty"), "no .bpfstats files"},
		{[]string{mk("syntax", map[string]string{"x-a.bpfstats": "# bpftool\n[{\"name\": \"p\",,}]\n"})},
			filepath.Join(dir, "syntax", "x-a.bpfstats"), "line 2, column 15: not valid JSON"},
		{[]string{mk("cut", map[string]string{"x-a.bpfstats": "[{\"name\": \"p\""})}, filepath.Join(dir, "cut", "x-a.bpfstats"), "not a complete bpftool JSON dump"},
		{[]string{mk("kind", map[string]string{"x-a.bpfstats": `[{"name":"p","run_cnt":"10"}]`})},
			filepath.Join(dir, "kind", "x-a.bpfstats"), `"run_cnt" holds a JSON string, where bpftool writes a whole number`},
		{[]string{mk("object", map[string]string{"x-a.bpfstats": `7`})}, filepath.Join(dir, "object", "x-a.bpfstats"), "holds a JSON number"},
		{[]string{mk("comments", map[string]string{"x-a.bpfstats": "# only\n"})}, filepath.Join(dir, "comments", "x-a.bpfstats"), "no bpftool JSON in it"},
		{[]string{mk("nopkts", map[string]string{"x-a.bpfstats": `[{"name":"p","type":"tracing","run_time_ns":5,"run_cnt":1}]`})},
			filepath.Join(dir, "nopkts", "x-a.bpfstats"), "no sched_cls program with a run count"},
		{[]string{mk("ok", map[string]string{"x-a.bpfstats": good}), filepath.Join(dir, "ok")}, filepath.Join(dir, "ok"), "given twice"},
		{[]string{mk("a/s", map[string]string{"x-a.bpfstats": good}), mk("b/s", map[string]string{"x-a.bpfstats": good})},
			filepath.Join(dir, "b", "s"), "a second set named s"},
	} {
		_, err := ReadHardware(c.dirs, 0)
		var he *HardwareError
		if !errors.As(err, &he) || he.Path != c.path || !strings.Contains(he.What, c.what) {
			t.Errorf("%v: %v, want %s: ...%s...", c.dirs, err, c.path, c.what)
		}
	}
}

// --hardware-floor takes bpf_stats' floor off every call: each variant's
// total drops by the floor times its programs' calls a packet (one each
// but the tracing programs', which see a few more skbs), the unit says
// so, and the ratios of variants with fewer programs rise.
func TestHardwareFloor(t *testing.T) {
	raw, err := ReadHardware(mailSets(), 0)
	if err != nil {
		t.Fatal(err)
	}
	hw, err := ReadHardware(mailSets(), 20)
	if err != nil {
		t.Fatal(err)
	}
	if hw.Unit != HardwareFloorUnit(20) || !strings.Contains(hw.Unit, "20.0 ns a call") {
		t.Errorf("unit %q", hw.Unit)
	}
	for i, v := range hw.Variants {
		progs := float64(len(v.Programs))
		if d := raw.Variants[i].Mean - v.Mean; math.Abs(d-20*progs) > 0.5 {
			t.Errorf("%s: %.1f → %.1f, %.1f less; want about %.0f (20 ns a call, %.0f programs)", v.Variant, raw.Variants[i].Mean, v.Mean, d, 20*progs, progs)
		}
	}
	ext, cnt := hw.Variants[aggIndex(hw, "ext-ext")].Mean, hw.Variants[aggIndex(hw, "ext-cnt")].Mean
	if r := ext / cnt; !near(r, 3.36) {
		t.Errorf("ext-ext / ext-cnt less the floor: %.2f×, want (263.8-40)/(106.7-40) = 3.36×", r)
	}
	ht := BuildHardware(BuildBench(&results.Run{Schema: results.SchemaVersion, ID: "r"}), hw, nil, 20)
	if ht.Unit != hw.Unit || ht.FloorNs != 20 {
		t.Errorf("the table's unit %q and floor %v, want the sets' %q and 20", ht.Unit, ht.FloorNs, hw.Unit)
	}
}

// Without the cache model the programs still get the hardware's
// instructions a ns (the plugin counts the calls' instructions anyway),
// and no cycles, median or unit: cnt_ingress and ext_write ran 50
// instructions a packet, in 100 and 250 ns.
func TestHardwareProgramInsnsWithoutModel(t *testing.T) {
	bt := callsBench(2, false)
	hw := BuildAgg("", []AggSet{
		{Label: "s1", Variants: []AggEntry{{Variant: "ext-cnt", Costs: []results.ProgCost{{Name: "cnt_ingress", NsPerPkt: 100}}},
			{Variant: "ext-ext", Costs: []results.ProgCost{{Name: "ext_write", NsPerPkt: 250}}}}},
	})
	ht := BuildHardware(bt, hw, nil, 0)
	want := map[string]float64{"cnt_ingress": 0.5, "ext_write": 0.2}
	if len(ht.Clocks) != 2 || ht.ClockUnit != "" || ht.ClockMedian != 0 {
		t.Fatalf("clocks %+v in %q, median %v: want two programs, no cycles' unit or median", ht.Clocks, ht.ClockUnit, ht.ClockMedian)
	}
	for _, c := range ht.Clocks {
		if math.Abs(c.InsnsPerNs-want[c.Program]) > 1e-9 || c.CyclesPerNs != 0 || c.CyclesPerInsn != 0 {
			t.Errorf("%s: %+v, want %.1f insns/ns and no cycles", c.Program, c, want[c.Program])
		}
	}
}

// Each program's modelled cycles per the hardware's ns, against the
// programs' median: cnt_ingress 100 cycles for 100 ns, ext_write 400 for
// 250 (1.0 and 1.6, median 1.3: ∓23.1 %). A program the hardware read at
// 10 ns or less is mostly floor and left out, and with no program left
// the table has no clocks (and still encodes: no NaN median).
func TestHardwareProgramClocks(t *testing.T) {
	hwOf := func(cntNs float64) AggTable {
		return BuildAgg("", []AggSet{
			{Label: "s1", Variants: []AggEntry{{Variant: "ext-cnt", Costs: []results.ProgCost{{Name: "cnt_ingress", NsPerPkt: cntNs}}},
				{Variant: "ext-ext", Costs: []results.ProgCost{{Name: "ext_write", NsPerPkt: 250}}}}},
		})
	}
	ht := BuildHardware(cyclesBench(2), hwOf(100), nil, 0)
	want := map[string][2]float64{"cnt_ingress": {1.0, -100.0 * 0.3 / 1.3}, "ext_write": {1.6, 100.0 * 0.3 / 1.3}}
	if len(ht.Clocks) != 2 || math.Abs(ht.ClockMedian-1.3) > 1e-9 || ht.ClockUnit != "modelled cycles/pkt, 2 cores, the programs' calls" {
		t.Fatalf("clocks %+v, median %v in %q: want two programs, median 1.30, in the calls' unit", ht.Clocks, ht.ClockMedian, ht.ClockUnit)
	}
	// Both programs' calls ran 50 instructions a packet: 0.5 and 0.2 a
	// hardware ns, charged 2 and 8 cycles each.
	factors := map[string][2]float64{"cnt_ingress": {0.5, 2}, "ext_write": {0.2, 8}}
	for _, c := range ht.Clocks {
		w, f := want[c.Program], factors[c.Program]
		if math.Abs(c.CyclesPerNs-w[0]) > 1e-9 || math.Abs(c.ErrPct-w[1]) > 1e-9 {
			t.Errorf("%s/%s: %.3f cycles/ns, %+.2f%%; want %.3f, %+.2f%%", c.Variant, c.Program, c.CyclesPerNs, c.ErrPct, w[0], w[1])
		}
		if math.Abs(c.InsnsPerNs-f[0]) > 1e-9 || math.Abs(c.CyclesPerInsn-f[1]) > 1e-9 {
			t.Errorf("%s/%s: %.3f insns/ns, %.3f cycles/insn; want %.3f, %.3f", c.Variant, c.Program, c.InsnsPerNs, c.CyclesPerInsn, f[0], f[1])
		}
	}
	ht = BuildHardware(cyclesBench(2), hwOf(8), nil, 0)
	if len(ht.Clocks) != 1 || ht.Clocks[0].Program != "ext_write" || ht.Clocks[0].ErrPct != 0 {
		t.Errorf("cnt_ingress at 8 ns: clocks %+v, want ext_write alone at the median", ht.Clocks)
	}
	hw := BuildAgg("", []AggSet{{Label: "s1", Variants: []AggEntry{{Variant: "ext-cnt", Costs: []results.ProgCost{{Name: "cnt_ingress", NsPerPkt: 8}}}}}})
	ht = BuildHardware(cyclesBench(2), hw, nil, 0)
	if ht.Clocks != nil {
		t.Errorf("every program under the floor: clocks %+v, want none", ht.Clocks)
	}
	if _, err := json.Marshal(ht); err != nil {
		t.Errorf("a table without clocks does not encode: %v", err)
	}
}
