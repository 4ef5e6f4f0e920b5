// Package runtest builds synthetic run records for the results packages' tests.
package results

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"
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

// varSpec is one variant of a synthetic run and its programs.
type varSpec struct {
	name  string
	progs []string
}

// costFunc gives a program's ns/pkt in one boot.
type costFunc func(role string, rep int, variant, prog string) float64

// mkRun builds a one-tree run of nb base and np patched boots in ABBA
// order, every boot running every variant, with the given accelerator
// and clock ("" = unrecorded).
func mkRun(accel, clock string, nb, np int, vars []varSpec, cost costFunc) *Run {
	r := abRun("gtp", accel, nil, nil)
	for rep := 1; rep <= max(nb, np); rep++ {
		roles := []string{RoleBase, RolePatched}
		if rep%2 == 0 {
			roles = []string{RolePatched, RoleBase}
		}
		for _, role := range roles {
			if role == RoleBase && rep > nb || role == RolePatched && rep > np {
				continue
			}
			b := Boot{Seq: len(r.Boots) + 1, Tree: "gtp", Role: role, Rep: rep, Accel: accel, Clock: clock}
			for _, v := range vars {
				var ps []pc
				for _, p := range v.progs {
					ps = append(ps, pc{name: p, ns: cost(role, rep, v.name, p)})
				}
				b.Variants = append(b.Variants, vr(v.name, ps...))
			}
			r.Boots = append(r.Boots, b)
		}
	}
	return r
}

type fixture struct {
	Variants []struct {
		Variant  string `json:"variant"`
		Programs []struct {
			Name string    `json:"name"`
			NS   []float64 `json:"ns"`
		} `json:"programs"`
	} `json:"variants"`
}

// icountRun builds a deterministic-mode run from the measured
// icount numbers (3 boots of one kernel): base boots take them in order,
// patched boots in another order (the same kernel), scaled by bump.
func icountRun(t *testing.T, bump func(variant, prog string) float64) *Run {
	return icountRunN(t, 3, bump)
}

// icountRunN is icountRun with n boots a side, the fixture's three
// values taken in turn.
func icountRunN(t *testing.T, n int, bump func(variant, prog string) float64) *Run {
	t.Helper()
	b, err := os.ReadFile("testdata/decision/icount-stock-3boots.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var vars []varSpec
	vals := map[string][]float64{}
	for _, v := range f.Variants {
		vs := varSpec{name: v.Variant}
		for _, p := range v.Programs {
			vs.progs = append(vs.progs, p.Name)
			vals[v.Variant+"/"+p.Name] = p.NS
		}
		vars = append(vars, vs)
	}
	perm := []int{2, 0, 1}
	return mkRun(AccelTCG, ClockICount, n, n, vars, func(role string, rep int, v, p string) float64 {
		xs := vals[v+"/"+p]
		if role == RoleBase {
			return xs[(rep-1)%3]
		}
		return xs[perm[(rep-1)%3]] * bump(v, p)
	})
}
