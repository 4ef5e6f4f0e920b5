package verdict

import (
	"fmt"
	"math"
	"strings"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results"
)

// scaleTolerance is how far a boot's tsc_khz may be from its siblings'
// before it is flagged (a fraction).
const scaleTolerance = 0.001

// scaleWarnings flags boots of a tree whose guest time scale differs from
// the others': tsc_khz more than 0.1 % off the tree's median, or another
// clocksource than most boots chose. Failed boots are out of the numbers
// and not looked at.
func scaleWarnings(run *results.Run, tree string) []string {
	var boots []results.Boot
	for _, b := range SortedBoots(run) {
		if b.Tree == tree && b.Error == "" {
			boots = append(boots, b)
		}
	}
	name := func(b results.Boot) string { return fmt.Sprintf("boot %d (%s rep %d)", b.Seq, b.Role, b.Rep) }
	var out []string
	var khz []float64
	for _, b := range boots {
		if b.TSCkHz > 0 {
			khz = append(khz, float64(b.TSCkHz))
		}
	}
	if len(khz) >= 2 {
		ref := stats.Median(khz)
		var odd []string
		for _, b := range boots {
			if b.TSCkHz > 0 && math.Abs(float64(b.TSCkHz)/ref-1) > scaleTolerance {
				odd = append(odd, fmt.Sprintf("%s %d kHz (%+.2f%%)", name(b), b.TSCkHz, (float64(b.TSCkHz)/ref-1)*100))
			}
		}
		if len(odd) > 0 {
			out = append(out, fmt.Sprintf("guest tsc_khz differs by more than %.1f%% from the tree's median %.0f kHz: %s: its ns are on another scale",
				scaleTolerance*100, ref, strings.Join(odd, ", ")))
		}
	}
	count := map[string]int{}
	var sources []string
	for _, b := range boots {
		if b.Clocksource != "" {
			if count[b.Clocksource] == 0 {
				sources = append(sources, b.Clocksource)
			}
			count[b.Clocksource]++
		}
	}
	if len(sources) > 1 {
		common := sources[0]
		for _, s := range sources {
			if count[s] > count[common] {
				common = s
			}
		}
		var odd []string
		for _, b := range boots {
			if b.Clocksource != "" && b.Clocksource != common {
				odd = append(odd, fmt.Sprintf("%s %q", name(b), b.Clocksource))
			}
		}
		out = append(out, fmt.Sprintf("guest clocksource differs from the other boots' %q: %s", common, strings.Join(odd, ", ")))
	}
	return out
}
