package verdict

import (
	"fmt"
	"github.com/kci-dev/kci/internal/golden"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

// The simulation behind docs/decision.md's table: whole runs of the real
// decision code (Compare, needMore, PlanLook) with simulated per-seed
// values, as the developers measured them under icount: each seed gives
// a program an exact cost, write programs a different one per seed
// (σ 0.8 % and 2.5 %), read and cnt programs the same one (with a rare
// +0.39 ns interrupt artefact); a patched kernel is a fresh draw of every
// seed's cost, plus the patch's shift.

type simProg struct {
	variant, name string
	ns, sd        float64 // sd relative; 0 = no seed spread
	// lumpy: the seed picks one of two costs 2.5 sd apart (70:30) with
	// little else: a far-from-normal seed distribution.
	lumpy bool
}

type simTree struct {
	name  string
	progs []simProg
	// exact are variants' rows from the QEMU plugin (simexact_test.go):
	// each boot's Exact record (and, for whole-path, Cost) drawn per seed.
	exact []simExactVariant
}

// simTrees: two trees, 15 rows (5 variant totals, 10 programs).
var simTrees = []simTree{
	{name: "stock", progs: []simProg{
		{"cnt", "cnt_ingress", 73, 0, false}, {"cnt", "cnt_egress", 73, 0, false},
		{"hash", "hash_read", 210, 0, false}, {"hash", "hash_write", 500, 0.008, false}, {"hash", "hash_consume", 333, 0, false},
		{"lru", "lru_read", 200, 0, false}, {"lru", "lru_write", 520, 0.025, false},
	}},
	{name: "gtp", progs: []simProg{
		{"gtp", "gtp_read", 150, 0, false}, {"gtp", "gtp_write", 540, 0.008, false},
		{"gtplru", "gtplru_write", 500, 0.025, false},
	}},
}

// simOutcome is one simulated run.
type simOutcome struct {
	flagged map[string]bool // tree/variant/row called slower or faster
	first   map[string]bool // the same at the first look
	boots   int
	seeds   map[string]int     // tree/variant/row: seeds per side at the end
	bound   map[string]float64 // its 90 % bound when a no change
	stop    string
	family  int // rows in the deterministic family at the last look
}

// simulate runs one adaptive run; shift maps tree/variant/prog to a
// relative shift (+0.01 = +1 %) or, with ns true, to instruction-time ns.
func simulate(rng *rand.Rand, trees []simTree, shift map[string]float64, ns bool, maxBoots int) simOutcome {
	run := &results.Run{Schema: results.SchemaVersion, ID: "sim", Sequential: &results.Sequential{Looks: len(LookSeeds), MaxBoots: maxBoots}}
	for _, t := range trees {
		run.Trees = append(run.Trees, results.Tree{Name: t.name, Base: &results.Kernel{Key: "b"}, Patched: &results.Kernel{Key: "p"}})
	}
	boot := func(t simTree, role string, rep int, variants map[string]bool) {
		b := results.Boot{Seq: len(run.Boots) + 1, Tree: t.name, Role: role, Rep: rep, Seed: uint64(rep), Accel: results.AccelTCG, Clock: results.ClockICount}
		byVar := map[string][]runtest.Pc{}
		var order []string
		for _, p := range t.progs {
			if variants != nil && !variants[p.variant] {
				continue
			}
			x := p.ns * (1 + p.sd*rng.NormFloat64())
			if p.lumpy {
				hi := 0.0
				if rng.Float64() < 0.3 {
					hi = 2.5
				}
				x = p.ns * (1 + p.sd*(hi-0.75+0.2*rng.NormFloat64()))
			}
			if p.sd == 0 && rng.Float64() < 0.1 {
				x += 0.99 * rng.Float64() // an interrupt in one boot's windows (0.6 seen)
			}
			if role == results.RolePatched {
				if s, ok := shift[t.name+"/"+p.variant+"/"+p.name]; ok {
					if ns {
						x += s
					} else {
						x *= 1 + s
					}
				}
			}
			if byVar[p.variant] == nil {
				order = append(order, p.variant)
			}
			byVar[p.variant] = append(byVar[p.variant], runtest.Pc{Name: p.name, Ns: x})
		}
		for _, v := range order {
			b.Variants = append(b.Variants, runtest.Vr(v, byVar[v]...))
		}
		for _, ev := range t.exact {
			if variants != nil && !variants[ev.variant] {
				continue
			}
			ev.attach(rng, &b, func(row string, x float64) float64 {
				s, ok := shift[t.name+"/"+ev.variant+"/"+row]
				switch {
				case role != results.RolePatched || !ok:
					return x
				case ns:
					return x + s
				}
				return x * (1 + s)
			})
		}
		run.Boots = append(run.Boots, b)
	}
	for rep := 1; rep <= LookSeeds[0]; rep++ {
		for _, t := range trees {
			boot(t, results.RoleBase, rep, nil)
			boot(t, results.RolePatched, rep, nil)
		}
	}
	out := simOutcome{flagged: map[string]bool{}, first: map[string]bool{}, seeds: map[string]int{}, bound: map[string]float64{}}
	flagged := func(into map[string]bool) {
		for _, t := range trees {
			ab := compareOf(run, t.name)
			out.family = ab.Family
			for k, r := range rowsOf(ab) {
				if r.Verdict == Slower || r.Verdict == Faster {
					into[t.name+"/"+k] = true
				}
				out.seeds[t.name+"/"+k] = r.Seeds
				out.bound[t.name+"/"+k] = r.Detectable
			}
		}
	}
	if len(shift) > 0 {
		flagged(out.first)
	}
	sq := run.Sequential
	sq.Done, sq.Stop = 1, results.StopDecided
	for look := 2; ; look++ {
		plan, stop := PlanLook(run, look, maxBoots-len(run.Boots))
		if len(plan) == 0 {
			sq.Stop = stop
			break
		}
		sq.Done = look
		for _, lp := range plan {
			vs := map[string]bool{}
			for _, v := range lp.Variants {
				vs[v] = true
			}
			for _, t := range trees {
				if t.name != lp.Tree {
					continue
				}
				for rep := lp.From; rep <= lp.To; rep++ {
					boot(t, results.RoleBase, rep, vs)
					boot(t, results.RolePatched, rep, vs)
				}
			}
		}
	}
	out.boots, out.stop = len(run.Boots), sq.Stop
	flagged(out.flagged)
	return out
}

// simCell is one line of the simulated table.
type simCell struct {
	name     string
	trees    []simTree
	shift    map[string]float64
	ns       bool
	target   string   // the row the shift is on ("" = null)
	affected []string // rows the shift may legitimately move
	boundRow string   // the row whose stated bound the table shows ("" = stock's hash_write)
}

// lumpyTrees: stock with its write programs' seed costs in two lumps.
var lumpyTrees = []simTree{{name: "stock", progs: []simProg{
	{"cnt", "cnt_ingress", 73, 0, false}, {"cnt", "cnt_egress", 73, 0, false},
	{"hash", "hash_read", 210, 0, false}, {"hash", "hash_write", 500, 0.008, true}, {"hash", "hash_consume", 333, 0, false},
	{"lru", "lru_read", 200, 0, false}, {"lru", "lru_write", 520, 0.025, true},
}}}

// gridTrees are the rows as measured on seeds 1-10 of both kernels with
// the 0.5 s emulated warm-up (2026-12-05): every program exact but the
// rhash design's, whose map draws its hash seed and skb addresses from
// the seed. gtp_write's seeds fall in two lumps 0.6 % apart (807 and
// 812.5, 4:6), gtpchurn's in two 2.5 % apart (807.7 and 828, 5:5): lumpy,
// the lumps 2.5 sd apart as in the lumpy model (whose 70:30 split is the
// harder one for a test at 3 seeds).
var gridTrees = []simTree{
	{name: "stock", progs: []simProg{
		{"cnt", "cnt_ingress", 71, 0, false}, {"cnt", "cnt_egress", 73, 0, false},
		{"hash", "hash_read", 204, 0, false}, {"hash", "hash_write", 475, 0, false}, {"hash", "hash_consume", 333, 0, false},
		{"lru", "lru_read", 220, 0, false}, {"lru", "lru_write", 491, 0, false},
	}},
	{name: "gtp", progs: []simProg{
		// gtp_read and gtp_skb_free keep the rhash's own seed spread, under
		// a nanosecond (225.9..226.4; 621.6..622.3 but one seed's 626.6,
		// left out: an outlier would only keep a side from looking exact):
		// three seeds of them usually agree within an instruction.
		{"gtp", "gtp_read", 226, 0.0006, false}, {"gtp", "gtp_skb_free", 622, 0.0003, false}, {"gtp", "gtp_write", 810, 0.0025, true},
		{"gtpchurn", "gtp_write", 818, 0.01, true},
		{"gtplru", "gtplru_write", 499, 0, false},
	}},
}

var simCells = []simCell{
	{name: "null patch, stock and gtp (15 rows)", trees: simTrees},
	{name: "null patch, stock (10 rows)"},
	{name: "null patch, stock, write costs in two lumps", trees: lumpyTrees},
	{name: "hash_write +1 % (σ 0.8 %)", shift: map[string]float64{"stock/hash/hash_write": 0.01}, target: "stock/hash/hash_write", affected: []string{"stock/hash/total"}},
	{name: "hash_write +2 % (σ 0.8 %)", shift: map[string]float64{"stock/hash/hash_write": 0.02}, target: "stock/hash/hash_write", affected: []string{"stock/hash/total"}},
	{name: "hash_write +5 % (σ 0.8 %)", shift: map[string]float64{"stock/hash/hash_write": 0.05}, target: "stock/hash/hash_write", affected: []string{"stock/hash/total"}},
	{name: "lru_write +5 % (σ 2.5 %)", shift: map[string]float64{"stock/lru/lru_write": 0.05}, target: "stock/lru/lru_write", affected: []string{"stock/lru/total"}},
	{name: "grid: null patch, stock and gtp (18 rows; gtp_write's bound)", trees: gridTrees, boundRow: "gtp/gtp/gtp_write"},
	{name: "grid: hash_write +5 ns (+1 %, exact)", trees: gridTrees, shift: map[string]float64{"stock/hash/hash_write": 5}, ns: true, target: "stock/hash/hash_write", affected: []string{"stock/hash/total"}},
	{name: "grid: gtp_write +2 % (lumps 0.6 % apart)", trees: gridTrees, shift: map[string]float64{"gtp/gtp/gtp_write": 0.02}, target: "gtp/gtp/gtp_write", affected: []string{"gtp/gtp/total"}},
	{name: "grid: gtp_write +5 % (lumps 0.6 % apart)", trees: gridTrees, shift: map[string]float64{"gtp/gtp/gtp_write": 0.05}, target: "gtp/gtp/gtp_write", affected: []string{"gtp/gtp/total"}},
	{name: "hash_read +2 ns (no spread)", shift: map[string]float64{"stock/hash/hash_read": 2}, ns: true, target: "stock/hash/hash_read", affected: []string{"stock/hash/total"}},
}

type simResult struct {
	runs, falseRuns, hits, firstHits int
	boots, seeds                     []int
	bound                            []float64 // hash_write's stated 90 % bound
	budget                           int
	family                           int
}

func runCell(c simCell, runs int, seed uint64) simResult {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	var res simResult
	for range runs {
		trees := c.trees
		if trees == nil {
			trees = simTrees[:1]
		}
		o := simulate(rng, trees, c.shift, c.ns, DefaultMaxBoots)
		res.runs++
		false1 := false
		for k := range o.flagged {
			if k != c.target && !contains(c.affected, k) {
				false1 = true
			}
		}
		if false1 {
			res.falseRuns++
		}
		if c.target != "" && o.flagged[c.target] {
			res.hits++
		}
		if c.target != "" && o.first[c.target] {
			res.firstHits++
		}
		res.boots = append(res.boots, o.boots)
		res.family = max(res.family, o.family)
		if c.target != "" {
			res.seeds = append(res.seeds, o.seeds[c.target])
		}
		row := c.boundRow
		if row == "" {
			row = "stock/hash/hash_write"
		}
		if b := o.bound[row]; b > 0 {
			res.bound = append(res.bound, b)
		}
		if o.stop == results.StopBudget {
			res.budget++
		}
	}
	return res
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func medianInt(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int(nil), xs...)
	sort.Ints(s)
	return s[len(s)/2]
}

func simRuns(t testing.TB) int {
	if testing.Short() {
		return 300
	}
	return 2000
}

// TestSequentialRuleFalseAlarmsAndPower: across every row of both trees
// a null patch calls something in at most 1 % of runs; a +5 % change on
// a σ 0.8 % write row is found in >= 90 %; a +2 ns change on a read row
// is found at the first look (3 seeds) every time; today's +1 % on that
// row is stated, not hidden.
func TestSequentialRuleFalseAlarmsAndPower(t *testing.T) {
	n := simRuns(t)
	var table []string
	for i, c := range simCells {
		r := runCell(c, n, uint64(100+i))
		fa := float64(r.falseRuns) / float64(r.runs)
		pw := float64(r.hits) / float64(r.runs)
		table = append(table, fmt.Sprintf("| %s | %.1f %% | %.1f %% | %.2f %% | %d | %d | %d %% | ±%.1f %% |", c.name, pw*100,
			float64(r.firstHits)*100/float64(r.runs), fa*100, medianInt(r.seeds), medianInt(r.boots), r.budget*100/r.runs, stats.Median(r.bound)))
		switch {
		case fa > DetAlpha:
			t.Errorf("%s: a row without a change flagged in %.2f %% of %d runs, want <= %.0f %%", c.name, fa*100, r.runs, DetAlpha*100)
		case c.target == "stock/hash/hash_write" && !c.ns && c.shift[c.target] >= 0.05 && pw < 0.9,
			c.target == "stock/lru/lru_write" && pw < 0.25,
			c.target == "gtp/gtp/gtp_write" && c.shift[c.target] >= 0.05 && pw < 0.9,
			c.ns && pw < 1:
			t.Errorf("%s: found in %.1f %% of %d runs", c.name, pw*100, r.runs)
		}
		// Exact rows decide at the first look: the read rows, and on the
		// grid the write rows too.
		if c.ns && r.firstHits != r.runs {
			t.Errorf("%s: found at the first look (%d seeds) in %d of %d runs, want all", c.name, LookSeeds[0], r.firstHits, r.runs)
		}
	}
	t.Logf("%d runs per cell, --max-boots %d, one tree (stock) unless said:\n| change | found | found at 3 seeds | runs with a false alarm | seeds of the row (median) | boots (median) | budget hit | hash_write's stated 90 %% bound (median) |\n%s", n, DefaultMaxBoots, strings.Join(table, "\n"))
}

// BenchmarkSequentialRule runs the simulated table with more runs per
// cell (2000 each) and reports each cell's detection and false-alarm
// rates: go test -v -run X -bench SequentialRule -benchtime 1x ./results/verdict/
func BenchmarkSequentialRule(b *testing.B) {
	for range b.N {
		// One table; run with -v: without it the testing package cuts a
		// benchmark's log after ten lines.
		var table []string
		for i, c := range simCells {
			r := runCell(c, 2000, uint64(1000+i))
			table = append(table, fmt.Sprintf("| %s | %.1f %% | %.1f %% | %.2f %% | %d | %d | ±%.1f %% |", c.name, float64(r.hits)*100/float64(r.runs),
				float64(r.firstHits)*100/float64(r.runs), float64(r.falseRuns)*100/float64(r.runs), medianInt(r.seeds), medianInt(r.boots), stats.Median(r.bound)))
		}
		b.Log("\n" + strings.Join(table, "\n"))
	}
}

// --seed N with a patch boots both kernels with one seed: the write rows
// cannot be compared (a code change moves them like a seed change does),
// so nothing is called and the tree reads as a determinism check.
func TestOneSeedIsADeterminismCheck(t *testing.T) {
	run := runtest.MkRun(results.AccelTCG, results.ClockICount, 3, 3, []runtest.VarSpec{{Name: "hash", Progs: []string{"hash_write", "hash_read"}}}, func(role string, rep int, v, p string) float64 {
		if p == "hash_read" {
			return 204
		}
		if role == results.RolePatched {
			return 530 // another build: another draw, same on every boot of seed 7
		}
		return 520
	})
	for i := range run.Boots {
		run.Boots[i].Seed = 7
	}
	ab := compareOf(run, "gtp")
	if !ab.DeterminismCheck {
		t.Fatalf("one seed per kernel: not labelled a determinism check")
	}
	for k, r := range rowsOf(ab) {
		if r.Verdict == Slower || r.Verdict == Faster || r.Note != NoteOneSeed {
			t.Errorf("%s: %s (%s), want no comparison from one seed", k, r.Verdict, r.Note)
		}
	}
	// The conclusions' words (a determinism check whose boots agree
	// exactly, then differ) are the golden testdata/<test>/conclusions.txt.
	var w conclusionWords
	c := concludeOf(run, "gtp")
	if c.State != Neutral {
		t.Errorf("conclusion %+v, want neutral", c)
	}
	w.add("seed 7 on both kernels", c)
	run.Boots[2].Variants = []results.VariantResult{runtest.Vr("hash", runtest.Pc{Name: "hash_write", Ns: 531}, runtest.Pc{Name: "hash_read", Ns: 204})}
	w.add("seed 7, one base boot off", concludeOf(run, "gtp"))
	golden.Own(t, "conclusions.txt", w.String())
}
