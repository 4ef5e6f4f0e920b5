package results

import (
	"math"
	"math/rand/v2"
	"time"
)

// refCnt is the packet count of synthetic measurements: the largest
// sched_cls run_cnt.
const refCnt = 1_000_000

// pc is one program of a synthetic measurement, with its cost in ns/pkt.
type pc struct {
	name string
	ns   float64
	typ  string // "" = sched_cls
}

// vr builds a valid variant result whose programs cost exactly the given
// ns/pkt under the user's rule. The first sched_cls program carries the
// reference count, the others a little less; tracing programs run a little
// more often than packets (reapers) and must not become the reference.
func vr(variant string, progs ...pc) VariantResult {
	v := VariantResult{Variant: variant, Valid: true}
	for i, p := range progs {
		typ := p.typ
		if typ == "" {
			typ = "sched_cls"
		}
		cnt := uint64(refCnt)
		switch {
		case typ != "sched_cls":
			cnt = refCnt + 77
		case i > 0:
			cnt = refCnt - 13
		}
		if p.ns == 0 {
			cnt = 0
		}
		v.Programs = append(v.Programs, ProgStat{
			Name: p.name, Type: typ, RunCnt: cnt,
			RunTimeNs: uint64(math.Round(p.ns * refCnt)),
		})
	}
	return v
}

// normal draws n values around mean with relative sd, deterministically.
func normal(seed uint64, n int, mean, relSD float64) []float64 {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]float64, n)
	for i := range out {
		out[i] = mean * (1 + relSD*r.NormFloat64())
	}
	return out
}

// abRun builds a run of one tree with one single-program variant: base and
// patched boots interleaved (ABAB…), one boot per sample.
func abRun(tree, accel string, base, patched []float64) *Run {
	r := &Run{
		Schema: SchemaVersion, ID: "test0001",
		Start: time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC),
		Host:  Host{Hostname: "bench", CPUModel: "Test CPU", NProc: 8, Accel: accel},
		Trees: []Tree{{
			Name:    tree,
			Base:    &Kernel{Key: "basekey0123456789", Release: "6.12.117"},
			Patched: &Kernel{Key: "patchkey987654321", Release: "6.12.117", Patches: []string{"bpf: rhash: keep min_size"}},
		}},
	}
	n := max(len(base), len(patched))
	for i := 0; i < n; i++ {
		if i < len(base) {
			r.Boots = append(r.Boots, Boot{Seq: len(r.Boots) + 1, Tree: tree, Role: RoleBase, Rep: i + 1, Accel: accel,
				Variants: []VariantResult{vr(tree+"-x", pc{name: "x_prog", ns: base[i]})}})
		}
		if i < len(patched) {
			r.Boots = append(r.Boots, Boot{Seq: len(r.Boots) + 1, Tree: tree, Role: RolePatched, Rep: i + 1, Accel: accel,
				Variants: []VariantResult{vr(tree+"-x", pc{name: "x_prog", ns: patched[i]})}})
		}
	}
	return r
}
