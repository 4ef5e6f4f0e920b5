package render

import (
	"fmt"
	"time"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results"
)

// bootPhasesText is one line per boot phase: its median host wall time
// over the run's booted boots. Cache hits are left out, since their
// phases are the stored boot's time, not this run's. A per-boot table
// would grow by a column per variant; the median says where a typical
// boot's time goes in a fixed width. "" when no booted boot has phases.
func bootPhasesText(run *results.Run) string {
	var order []string
	byName := map[string][]time.Duration{}
	booted := 0
	for _, b := range run.Boots {
		if b.Cache == results.CacheHit || len(b.Phases) == 0 {
			continue
		}
		booted++
		for _, p := range b.Phases {
			if _, ok := byName[p.Name]; !ok {
				order = append(order, p.Name)
			}
			byName[p.Name] = append(byName[p.Name], p.Duration)
		}
	}
	if booted == 0 {
		return ""
	}
	t := &table{header: []string{"boot phase", "median", "boots"}, right: []bool{false, true, true}}
	for _, name := range order {
		ds := byName[name]
		t.add(name, fmtDuration(medianDuration(ds)), fmt.Sprint(len(ds)))
	}
	return fmt.Sprintf("\nboot phases (host wall time, median of %d booted boots; cache hits left out):\n", booted) + t.text("  ")
}

// medianDuration is stats.Median of ds (not empty), truncated to the
// nanosecond: exact, as durations below 2⁵³ ns are exact float64s.
func medianDuration(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(stats.Median(xs))
}
