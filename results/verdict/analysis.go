package verdict

import "github.com/kci-dev/kci/results"

// Analysis is what one run record says: every tree's report, computed
// once by AnalyzeRun where the run is finished or loaded. The renderers,
// kci test's exit code, the PR comment and the check run all read this
// one value; none of them analyses the run on its own, and none changes
// it.
type Analysis struct {
	// Run is the record the analysis is of.
	Run *results.Run
	// Trees are the reports of the run's trees, in its order
	// (results.Run.TreeNames).
	Trees []TreeReport
}

// AnalyzeRun analyses run: each tree's samples compared once, the
// deterministic trees' rows decided as one Holm family, the exact counts'
// functions tested as one family (Where), and each tree concluded, with
// its brief.
func AnalyzeRun(run *results.Run) *Analysis {
	names := run.TreeNames()
	perf := compareTrees(run, names)
	where := whereTrees(run, names)
	a := &Analysis{Run: run, Trees: make([]TreeReport, 0, len(names))}
	for _, n := range names {
		a.Trees = append(a.Trees, treeReport(run, n, perf[n], where[n]))
	}
	return a
}

// Tree is the named tree's report; false if the run has no such tree.
func (a *Analysis) Tree(name string) (TreeReport, bool) {
	for _, tr := range a.Trees {
		if tr.Tree == name {
			return tr, true
		}
	}
	return TreeReport{}, false
}

// Select is the reports of the named trees, in the order named (every
// tree's when names is empty); a name the run does not have is left out.
func (a *Analysis) Select(names []string) []TreeReport {
	if len(names) == 0 {
		return a.Trees
	}
	var out []TreeReport
	for _, n := range names {
		if tr, ok := a.Tree(n); ok {
			out = append(out, tr)
		}
	}
	return out
}
