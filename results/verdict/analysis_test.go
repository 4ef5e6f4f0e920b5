package verdict

import (
	"github.com/kci-dev/kci/results"
)

// reportOf is tree's report in run, as AnalyzeRun makes it.
func reportOf(run *results.Run, tree string) TreeReport {
	tr, _ := AnalyzeRun(run).Tree(tree)
	return tr
}

// compareOf is tree's comparison in run.
func compareOf(run *results.Run, tree string) TreeAB { return reportOf(run, tree).Perf }

// concludeOf is tree's conclusion in run.
func concludeOf(run *results.Run, tree string) Conclusion { return reportOf(run, tree).Conclusion }

// whereIn is tree's Where in run.
func whereIn(run *results.Run, tree string) *Where { return reportOf(run, tree).Where }
