package render

import (
	"sort"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// htmlBrief is one tree's line in the answer box with the badge beside it.
type htmlBrief struct {
	verdict.Brief
	Badge, BadgeClass string
}

// badgeOf is the word beside a tree's headline. It says the numbers'
// outcome (Brief.PerfOutcome), so it never contradicts the headline: the
// check run's state did ("neutral" beside "gtp: faster" under emulated
// time). A tree decided by something else than its numbers gets a badge
// only when that fails it.
func badgeOf(b verdict.Brief) htmlBrief {
	hb := htmlBrief{Brief: b}
	switch {
	case b.Outcome != b.PerfOutcome:
		if b.State == verdict.Failure {
			hb.Badge, hb.BadgeClass = "failure", "failure"
		}
	case b.PerfOutcome == string(verdict.Faster):
		hb.Badge, hb.BadgeClass = b.PerfOutcome, "faster"
	case b.PerfOutcome == string(verdict.Slower), b.PerfOutcome == "slower and faster":
		hb.Badge, hb.BadgeClass = b.PerfOutcome, "slower"
	default:
		hb.Badge, hb.BadgeClass = b.PerfOutcome, "same"
	}
	return hb
}

// runCause is what the answer box says of a run that stopped: the cause
// run.json records (IncompleteReason: the job's first error line, or the
// recorder's "did not finish" when it died). With no tree measured it is
// the whole answer.
func runCause(run *results.Run, measured bool) (label, cause string) {
	if !run.Incomplete {
		if !measured {
			return "No result", "the run measured no tree"
		}
		return "", ""
	}
	cause = run.IncompleteReason
	if cause == "" {
		cause = "no cause recorded"
	}
	if !measured {
		return "Run failed", cause
	}
	return "Incomplete", cause
}

// changedFirst orders the trees (and their briefs alike) so that those with
// a changed row come first: the page opens on what moved, not on the
// charts of trees where nothing did.
func changedFirst(trees []htmlTree, briefs []htmlBrief) {
	idx := make([]int, len(trees))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		return len(trees[idx[a]].Rows) > 0 && len(trees[idx[b]].Rows) == 0
	})
	t2, b2 := make([]htmlTree, len(trees)), make([]htmlBrief, len(briefs))
	for i, j := range idx {
		t2[i], b2[i] = trees[j], briefs[j]
	}
	copy(trees, t2)
	copy(briefs, b2)
}
