package render

import (
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
)

// reportOf is tree's report in run, as verdict.AnalyzeRun makes it.
func reportOf(run *results.Run, tree string) verdict.TreeReport {
	tr, _ := verdict.AnalyzeRun(run).Tree(tree)
	return tr
}

// compareOf is tree's comparison in run.
func compareOf(run *results.Run, tree string) verdict.TreeAB { return reportOf(run, tree).Perf }

// concludeOf is tree's conclusion in run.
func concludeOf(run *results.Run, tree string) verdict.Conclusion {
	return reportOf(run, tree).Conclusion
}
