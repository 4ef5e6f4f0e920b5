// Package verdict decides what a run's record says, once per run
// (AnalyzeRun, analysis.go: one Analysis that every report, the exit
// code, the PR comment and the check read): per tree the A/B rows
// (ab.go), each compared and given its Verdict by the tree's rule
// (rule.go): noisy mode's Mann–Whitney test and Hodges–Lehmann shift
// with Holm over a tree's totals (ab.go, stats.go), deterministic mode's
// per-seed Welch test and its power (decide_det.go, power.go,
// sequential.go: Holm over every row of the run, adaptive seeds); the
// whole-path and marginal cost rows (cost.go); where the change went by
// function (where.go); the survival matrix's changes (survival.go); the
// tree's conclusion and its brief (conclude.go, brief.go); the series'
// decision and culprits through the test (seriesdecide.go, locate.go,
// seriesconclude.go, seriesperf.go) and by the noisy rule
// (seriesnoisy.go). It reads records (package results) and returns values; drawing them is
// results/render's.
package verdict
