package tcgplugin

import "sort"

// Func is the counts of one named piece of code in a window: a function,
// a BPF program, or a bucket.
type Func struct {
	Name               string
	Insns, Mem, Cycles uint64
	Coh                uint64 // cross-core events (PC.Coh)
}

// Fold says how ByName folds the little ones: names under MinPerPacket
// instructions per packet (over Packets; 0 packets folds nothing) go into
// one Func named Small, except bucket names, which start with '['.
type Fold struct {
	Packets      uint64
	MinPerPacket float64
	Small        string
}

// ByName sums w's per-block counts by the name name gives each block's
// address, folds the little ones as f says, and returns them largest
// first (by instructions, then name).
func (w *Window) ByName(name func(addr uint64) string, f Fold) []Func {
	by := map[string]*Func{}
	for _, pc := range w.PCs {
		n := name(pc.Addr)
		fc := by[n]
		if fc == nil {
			fc = &Func{Name: n}
			by[n] = fc
		}
		fc.add(Func{Insns: pc.Insns, Mem: pc.Mem, Cycles: pc.Cycles, Coh: pc.Coh})
	}
	small := Func{Name: f.Small}
	var out []Func
	for _, fc := range by {
		if f.Packets > 0 && float64(fc.Insns)/float64(f.Packets) < f.MinPerPacket && (fc.Name == "" || fc.Name[0] != '[') {
			small.add(*fc)
			continue
		}
		out = append(out, *fc)
	}
	if small.Insns > 0 {
		out = append(out, small)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Insns != out[j].Insns {
			return out[i].Insns > out[j].Insns
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func (f *Func) add(g Func) {
	f.Insns += g.Insns
	f.Mem += g.Mem
	f.Cycles += g.Cycles
	f.Coh += g.Coh
}
