// Package runtest builds synthetic run records for the results packages' tests.
package runtest

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/kci-dev/kci/results"
)

// refCnt is the packet count of synthetic measurements: the largest
// sched_cls run_cnt.
const RefCnt = 1_000_000

// pc is one program of a synthetic measurement, with its cost in ns/pkt.
type Pc struct {
	Name string
	Ns   float64
	Typ  string // "" = sched_cls
}

// vr builds a valid variant result whose programs cost exactly the given
// ns/pkt under the user's rule. The first sched_cls program carries the
// reference count, the others a little less; tracing programs run a little
// more often than packets (reapers) and must not become the reference.
func Vr(variant string, progs ...Pc) results.VariantResult {
	v := results.VariantResult{Variant: variant, Valid: true}
	for i, p := range progs {
		typ := p.Typ
		if typ == "" {
			typ = "sched_cls"
		}
		cnt := uint64(RefCnt)
		switch {
		case typ != "sched_cls":
			cnt = RefCnt + 77
		case i > 0:
			cnt = RefCnt - 13
		}
		if p.Ns == 0 {
			cnt = 0
		}
		v.Programs = append(v.Programs, results.ProgStat{
			Name: p.Name, Type: typ, RunCnt: cnt,
			RunTimeNs: uint64(math.Round(p.Ns * RefCnt)),
		})
	}
	return v
}

// normal draws n values around mean with relative sd, deterministically.
func Normal(seed uint64, n int, mean, relSD float64) []float64 {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	out := make([]float64, n)
	for i := range out {
		out[i] = mean * (1 + relSD*r.NormFloat64())
	}
	return out
}

// abRun builds a run of one tree with one single-program variant: base and
// patched boots interleaved (ABAB…), one boot per sample.
func AbRun(tree, accel string, base, patched []float64) *results.Run {
	r := &results.Run{
		Schema: results.SchemaVersion, ID: "test0001",
		Start: time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC),
		Host:  results.Host{Hostname: "bench", CPUModel: "Test CPU", NProc: 8, Accel: accel},
		Trees: []results.Tree{{
			Name:    tree,
			Base:    &results.Kernel{Key: "basekey0123456789", Release: "6.12.117"},
			Patched: &results.Kernel{Key: "patchkey987654321", Release: "6.12.117", Patches: []string{"bpf: rhash: keep min_size"}},
		}},
	}
	n := max(len(base), len(patched))
	for i := 0; i < n; i++ {
		if i < len(base) {
			r.Boots = append(r.Boots, results.Boot{Seq: len(r.Boots) + 1, Tree: tree, Role: results.RoleBase, Rep: i + 1, Accel: accel,
				Variants: []results.VariantResult{Vr(tree+"-x", Pc{Name: "x_prog", Ns: base[i]})}})
		}
		if i < len(patched) {
			r.Boots = append(r.Boots, results.Boot{Seq: len(r.Boots) + 1, Tree: tree, Role: results.RolePatched, Rep: i + 1, Accel: accel,
				Variants: []results.VariantResult{Vr(tree+"-x", Pc{Name: "x_prog", Ns: patched[i]})}})
		}
	}
	return r
}

// varSpec is one variant of a synthetic run and its programs.
type VarSpec struct {
	Name  string
	Progs []string
}

// costFunc gives a program's ns/pkt in one boot.
type costFunc func(role string, rep int, variant, prog string) float64

// mkRun builds a one-tree run of nb base and np patched boots in ABBA
// order, every boot running every variant, with the given accelerator
// and clock ("" = unrecorded).
func MkRun(accel, clock string, nb, np int, vars []VarSpec, cost costFunc) *results.Run {
	r := AbRun("gtp", accel, nil, nil)
	for rep := 1; rep <= max(nb, np); rep++ {
		roles := []string{results.RoleBase, results.RolePatched}
		if rep%2 == 0 {
			roles = []string{results.RolePatched, results.RoleBase}
		}
		for _, role := range roles {
			if role == results.RoleBase && rep > nb || role == results.RolePatched && rep > np {
				continue
			}
			b := results.Boot{Seq: len(r.Boots) + 1, Tree: "gtp", Role: role, Rep: rep, Accel: accel, Clock: clock}
			for _, v := range vars {
				var ps []Pc
				for _, p := range v.Progs {
					ps = append(ps, Pc{Name: p, Ns: cost(role, rep, v.Name, p)})
				}
				b.Variants = append(b.Variants, Vr(v.Name, ps...))
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
func IcountRun(t *testing.T, bump func(variant, prog string) float64) *results.Run {
	return IcountRunN(t, 3, bump)
}

// icountRunN is icountRun with n boots a side, the fixture's three
// values taken in turn.
func IcountRunN(t *testing.T, n int, bump func(variant, prog string) float64) *results.Run {
	t.Helper()
	b, err := os.ReadFile("../testdata/decision/icount-stock-3boots.json")
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var vars []VarSpec
	vals := map[string][]float64{}
	for _, v := range f.Variants {
		vs := VarSpec{Name: v.Variant}
		for _, p := range v.Programs {
			vs.Progs = append(vs.Progs, p.Name)
			vals[v.Variant+"/"+p.Name] = p.NS
		}
		vars = append(vars, vs)
	}
	perm := []int{2, 0, 1}
	return MkRun(results.AccelTCG, results.ClockICount, n, n, vars, func(role string, rep int, v, p string) float64 {
		xs := vals[v+"/"+p]
		if role == results.RoleBase {
			return xs[(rep-1)%3]
		}
		return xs[perm[(rep-1)%3]] * bump(v, p)
	})
}

// WithExact gives every variant of every boot of run exact counts at 1000
// packets: funcs(role, seed) are instructions per packet by function. A
// boot without a seed gets its repetition as one.
func WithExact(run *results.Run, funcs func(role string, seed uint64) map[string]float64) *results.Run {
	for i := range run.Boots {
		b := &run.Boots[i]
		if b.Seed == 0 {
			b.Seed = uint64(b.Rep)
		}
		for j := range b.Variants {
			e := &results.Exact{Packets: 1000}
			for name, per := range funcs(b.Role, b.Seed) {
				n := uint64(math.Round(per * 1000))
				e.Funcs = append(e.Funcs, results.FuncCount{Name: name, Insns: n})
				e.Insns += n
			}
			b.Variants[j].Exact = e
		}
	}
	return run
}
