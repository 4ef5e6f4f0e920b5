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
