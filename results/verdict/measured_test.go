package verdict

import (
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

// Boots of one seed that differ say so, and name the boots whose QEMU
// main loop ran unfenced, the cause kci knows of.
func TestMeasuredTitleDiffer(t *testing.T) {
	for _, c := range []struct {
		name, mainLoop, want string
		differ               bool
	}{
		{"agree", "fenced on host CPU 1", "identical in every program's", false},
		{"differ, fenced", "fenced on host CPU 1", "boots of one seed differ (cnt/cnt_egress: boot 1", true},
		{"differ, unfenced", "not fenced: sched_setattr: operation not permitted", "QEMU's main loop ran unfenced in 2 boots", true},
	} {
		run := runtest.MkRun(results.AccelTCG, results.ClockICount, 2, 0, []runtest.VarSpec{{Name: "cnt", Progs: []string{"cnt_egress"}}},
			func(role string, rep int, v, p string) float64 {
				if c.differ && rep == 2 {
					return 71
				}
				return 70
			})
		run.Tree("gtp").Patched = nil
		for i := range run.Boots {
			run.Boots[i].Seed, run.Boots[i].MainLoop = 1, c.mainLoop
		}
		got := measuredTitle(run, "gtp")
		if !strings.Contains(got, c.want) || c.mainLoop != "" && !c.differ && strings.Contains(got, "unfenced") {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if c.differ && strings.HasPrefix(c.mainLoop, "fenced") && strings.Contains(got, "unfenced") {
			t.Errorf("%s: %q names fenced boots unfenced", c.name, got)
		}
	}
}
