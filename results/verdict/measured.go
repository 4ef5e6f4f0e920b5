package verdict

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kci-dev/kci/results"
)

// measuredOnly: the tree's kernel was booted without a patch (kci bench,
// kci test --tree T): its rows have no patched side, and "cannot decide"
// would read as if a comparison had failed.
func measuredOnly(run *results.Run, tree string) bool {
	t := run.Tree(tree)
	return t != nil && t.Base != nil && t.Patched == nil
}

// measuredTitle is a measured-only tree's headline. Boots that all had
// one seed under icount are kci's determinism check: they must agree to
// the count, the programs' and the whole-path's alike.
func measuredTitle(run *results.Run, tree string) string {
	boots := baseBootsOf(run, tree)
	s := fmt.Sprintf("%s: measured, no patch: %s of the base kernel", tree, results.Plural(len(boots), "boot"))
	seed, ok := sharedICountSeed(boots)
	if !ok || len(boots) < 2 {
		return s + ", nothing to compare (kci bench RUNDIR tabulates them)"
	}
	if d := firstDifference(boots); d != "" {
		return fmt.Sprintf("%s, all seed %d: boots of one seed differ (%s)%s", s, seed, d, unfenced(boots))
	}
	return fmt.Sprintf("%s, all seed %d: identical in every program's, whole-path and context count", s, seed)
}

// unfenced names the boots whose QEMU main loop ran unfenced (several
// vCPUs without the privilege for it), a cause of such a difference.
func unfenced(boots []results.Boot) string {
	n := 0
	for _, b := range boots {
		if strings.HasPrefix(b.MainLoop, "not fenced") {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; QEMU's main loop ran unfenced in %s (run.json main_loop)", results.Plural(n, "boot"))
}

func baseBootsOf(run *results.Run, tree string) []results.Boot {
	var out []results.Boot
	for _, b := range run.Boots {
		if b.Tree == tree && b.Role == results.RoleBase && b.Error == "" {
			out = append(out, b)
		}
	}
	return out
}

// sharedICountSeed is the seed every boot had, when they all ran under
// icount with one seed.
func sharedICountSeed(boots []results.Boot) (uint64, bool) {
	if len(boots) == 0 {
		return 0, false
	}
	for _, b := range boots {
		if b.Clock != results.ClockICount || b.Seed != boots[0].Seed {
			return 0, false
		}
	}
	return boots[0].Seed, true
}

// firstDifference names the first variant count in which a boot differs
// from the first boot ("" when none does).
func firstDifference(boots []results.Boot) string {
	want := countsOf(boots[0])
	for _, b := range boots[1:] {
		got := countsOf(b)
		for _, k := range slices.Sorted(maps.Keys(want)) {
			if v := want[k]; got[k] != v {
				return fmt.Sprintf("%s: boot %d %v, boot %d %v", k, boots[0].Rep, v, b.Rep, got[k])
			}
		}
		for _, k := range slices.Sorted(maps.Keys(got)) {
			if _, ok := want[k]; !ok {
				return fmt.Sprintf("%s: only in boot %d", k, b.Rep)
			}
		}
	}
	return ""
}

// countsOf is a boot's exact counts: each program's run time and runs,
// each variant's busy ns and packets, and its accountant's ns and
// entries per context.
func countsOf(b results.Boot) map[string][2]uint64 {
	out := map[string][2]uint64{}
	for _, v := range b.Variants {
		for _, p := range v.Programs {
			out[v.Variant+"/"+p.Name] = [2]uint64{p.RunTimeNs, p.RunCnt}
		}
		if v.Cost != nil {
			out[v.Variant+"/"+WholePathRow] = [2]uint64{v.Cost.BusyNs, v.Cost.Packets}
			for _, c := range v.Cost.Contexts {
				out[v.Variant+"/context "+c.Name] = [2]uint64{c.Ns, c.Entries}
			}
		}
	}
	return out
}
