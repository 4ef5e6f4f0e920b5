// Package benchtab builds kci bench's tables once from records: the
// user's aggregate table (AggTable: per set, per program, the mail's
// layout, from run directories or his own bpftool JSON sets) and the
// bench table around it (BenchTable: each variant's cost rows per set,
// the design ratios with their intervals), and the user's own hardware
// sets beside it (HardwareTable: his bpf_stats by kci's, the ratios with
// kci's model error per unit). Its numbers come from the
// verdict's cost rules (results/verdict: PathCostOf); drawing the tables
// is results/render's.
package benchtab
