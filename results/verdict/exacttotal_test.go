package verdict

import (
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

// A variant total of exact programs is exact: three programs whose seeds
// each differ by under half an instruction (an interrupt in one boot's
// windows) sum to a total that differs by more, and that total must not
// read as a row with seed spread, untested before 6 seeds, asking for
// seeds no program needs. It moves exactly when a program does.
func TestTotalOfExactProgramsIsExact(t *testing.T) {
	for _, c := range []struct {
		name  string
		shift float64 // ns on hash_write, patched
		want  Verdict
	}{
		{"null", 0, NoChange},
		{"hash_write +10 ns", 10, Slower},
	} {
		run := runtest.MkRun(results.AccelTCG, results.ClockICount, 3, 3, []runtest.VarSpec{{Name: "hash", Progs: []string{"hash_write", "hash_read", "hash_consume"}}},
			func(role string, rep int, v, p string) float64 {
				x := map[string]float64{"hash_write": 475, "hash_read": 204, "hash_consume": 333}[p]
				if rep == 2 && role == results.RoleBase || rep == 3 && role == results.RolePatched {
					x += 0.45 // every program hit in one boot: the total moves 1.35
				}
				if p == "hash_write" && role == results.RolePatched {
					x += c.shift
				}
				return x
			})
		ab := compareOf(run, "gtp")
		total := ab.Variants[0].Total
		if !total.exact || total.Untested() || total.undecided(results.DefaultMinEffectPct) {
			t.Errorf("%s: total exact %v, untested %v, undecided %v; want an exact, decided row", c.name, total.exact, total.Untested(), total.undecided(results.DefaultMinEffectPct))
		}
		if total.Verdict != c.want {
			t.Errorf("%s: total %s (%+.2f%%), want %s", c.name, total.Verdict, total.DeltaPct, c.want)
		}
		if need, _ := needMore(run, 20); len(need) != 0 {
			t.Errorf("%s: asks for more seeds for %v, want none: every row is exact", c.name, need)
		}
	}
}

// The rhash variants' costs fall in lumps by seed (wire.SeedSpread): a
// null patch whose three base seeds landed in one lump and its three
// patched seeds in the other reads as two exact sides a whole lump apart.
// Such rows are tested as rows with seed spread, untested at 3 seeds;
// the same numbers in a variant without seed spread are a change.
func TestSeedSpreadVariantIsNeverExact(t *testing.T) {
	for _, c := range []struct {
		variant string
		spread  bool
	}{
		{"gtp", true},
		{"gtpchurn", true},
		{"hash", false},
	} {
		run := runtest.MkRun(results.AccelTCG, results.ClockICount, 3, 3, []runtest.VarSpec{{Name: c.variant, Progs: []string{"w"}}},
			func(role string, rep int, _, _ string) float64 {
				x := 807.0 + 0.2*float64(rep) // one lump: three seeds within 0.4 ns
				if role == results.RolePatched {
					x += 5.5 // the other lump (gtp_write's, 0.7 % up)
				}
				return x
			})
		va := compareOf(run, "gtp").Variants[0]
		for _, r := range []Row{va.Total, va.Programs[0]} {
			if r.exact == c.spread {
				t.Errorf("%s/%s: exact %v, want %v", c.variant, r.Name, r.exact, !c.spread)
			}
		}
		switch total := va.Total; {
		case c.spread && (!total.Untested() || total.Verdict.moved()):
			t.Errorf("%s: total %s (%+.2f%%), untested %v; want untested at 3 seeds", c.variant, total.Verdict, total.DeltaPct, total.Untested())
		case !c.spread && total.Verdict != Slower:
			t.Errorf("%s: total %s (%+.2f%%), want slower", c.variant, total.Verdict, total.DeltaPct)
		}
	}
}
