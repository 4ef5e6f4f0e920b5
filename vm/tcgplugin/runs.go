package tcgplugin

// Runs is how many times the code in [lo, hi) ran in w: the most any
// block holding part of it was entered (a block runs straight through,
// so all of a block's part of the range ran each time it did). 0 when
// no block of the window touches the range. It needs the plugin's
// per-block entry counts (format 2).
func (w *Window) Runs(lo, hi uint64) uint64 {
	var n uint64
	for _, p := range w.PCs {
		if p.Addr < hi && p.End > lo && p.Execs > n {
			n = p.Execs
		}
	}
	return n
}
