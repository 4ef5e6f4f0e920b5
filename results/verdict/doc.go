// Package verdict decides what a run's record says, once per run
// (AnalyzeRun, analysis.go: one Analysis that every report, the exit
// code, the PR comment and the check read): per tree the A/B
// rows (ab.go) with deterministic mode's per-seed test and its power
// (decide_det.go, power.go, sequential.go: Holm over every row of the run,
// adaptive seeds) and noisy mode's statistics (stats.go); the whole-path
// and marginal cost rows (cost.go); the survival matrix's changes; the
// tree's conclusion and its brief (conclude.go, brief.go); the series'
// culprits (locate.go, seriesconclude.go); the user's aggregate and
// design tables (agg.go, benchtable.go). It reads records (package
// results) and returns values; drawing them is results/render's.
package verdict
