package verdict

import (
	"math"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

// whereRun is an icount run of one variant with seeds seeds per kernel
// whose boots carry exact counts from funcs (runtest.WithExact).
func whereRun(seeds int, funcs func(role string, seed uint64) map[string]float64) *results.Run {
	run := runtest.MkRun(results.AccelTCG, results.ClockICount, seeds, seeds, []runtest.VarSpec{{Name: "hash", Progs: []string{"hash_write"}}},
		func(string, int, string, string) float64 { return 100 })
	return runtest.WithExact(run, funcs)
}

func TestWhereNamesExactChangesOnly(t *testing.T) {
	run := whereRun(3, func(role string, seed uint64) map[string]float64 {
		f := map[string]float64{"htab_map_update_elem": 112, "__htab_map_lookup_elem": 40, "[user]": 300, "ip_rcv": 80}
		if role == results.RolePatched {
			f["htab_map_update_elem"] += 5 // the patch: +5 exact on every seed
			if seed == 2 {
				f["__htab_map_lookup_elem"] -= 4.3 // one seed's other path: not a change
			}
		}
		f["[user]"] += float64(seed%3) * 7 // seed spread on both sides alike
		f["ip_rcv"] += 0.2                 // below WhereMin on both sides: never named
		return f
	})
	w := whereIn(run, "gtp")
	if w.Note != "" {
		t.Fatalf("note %q, want rows", w.Note)
	}
	if len(w.Rows) != 1 {
		t.Fatalf("rows %+v, want htab_map_update_elem only", w.Rows)
	}
	r := w.Rows[0]
	if r.Func != "htab_map_update_elem" || !r.Insns.Exact || !r.Insns.Changed || math.Abs(r.Insns.Delta-5) > 1e-9 || r.Seeds != 3 {
		t.Errorf("row %+v, want htab_map_update_elem +5 exact over 3 seeds", r)
	}
	if w.Family != 2 {
		t.Errorf("family %d, want the 2 functions with seed spread ([user], __htab_map_lookup_elem)", w.Family)
	}
}

// A function with seed spread that moves far more than its spread is a
// change; one that moves within it is not.
func TestWhereSpreadRows(t *testing.T) {
	run := whereRun(6, func(role string, seed uint64) map[string]float64 {
		jitter := float64(seed%3) * 2
		f := map[string]float64{"skb_ext_put": 50 + jitter, "ktime_get": 30 + jitter}
		if role == results.RolePatched {
			f["skb_ext_put"] += 100
			f["ktime_get"] += 1
		}
		return f
	})
	w := whereIn(run, "gtp")
	if len(w.Rows) != 1 || w.Rows[0].Func != "skb_ext_put" || w.Rows[0].Insns.Exact {
		t.Fatalf("rows %+v, want skb_ext_put only, not exact", w.Rows)
	}
}

// The rhash variants' function counts fall in lumps by seed as their
// programs' do: three seeds a side, each side in one lump, name no
// function there; the same counts in another variant are an exact change.
func TestWhereSeedSpreadVariant(t *testing.T) {
	for _, c := range []struct {
		variant string
		rows    int
	}{{"gtp", 0}, {"gtpchurn", 0}, {"hash", 1}} {
		run := runtest.MkRun(results.AccelTCG, results.ClockICount, 3, 3, []runtest.VarSpec{{Name: c.variant, Progs: []string{"w"}}},
			func(string, int, string, string) float64 { return 100 })
		run = runtest.WithExact(run, func(role string, seed uint64) map[string]float64 {
			f := map[string]float64{"rhashtable_insert_slow": 60 + 0.1*float64(seed)}
			if role == results.RolePatched {
				f["rhashtable_insert_slow"] += 4 // the other lump
			}
			return f
		})
		w := whereIn(run, "gtp")
		if len(w.Rows) != c.rows {
			t.Errorf("%s: rows %+v, want %d", c.variant, w.Rows, c.rows)
		}
	}
}

func TestWhereNotes(t *testing.T) {
	run := runtest.MkRun(results.AccelTCG, results.ClockICount, 3, 3, []runtest.VarSpec{{Name: "hash", Progs: []string{"hash_write"}}},
		func(string, int, string, string) float64 { return 100 })
	if w := whereIn(run, "gtp"); w.Note != whereNoCounts {
		t.Errorf("no counts: note %q", w.Note)
	}
	kvm := runtest.MkRun(results.AccelKVM, "", 3, 3, []runtest.VarSpec{{Name: "hash", Progs: []string{"hash_write"}}},
		func(string, int, string, string) float64 { return 100 })
	if w := whereIn(kvm, "gtp"); w.Note != whereNeedsICount {
		t.Errorf("kvm: note %q", w.Note)
	}
	// One seed a side (kci test --seed): counts there, too few seeds.
	one := whereRun(1, func(role string, seed uint64) map[string]float64 {
		return map[string]float64{"htab_map_update_elem": 100}
	})
	if w := whereIn(one, "gtp"); w.Note != whereFewSeeds || len(w.Rows) != 0 {
		t.Errorf("one seed: note %q, rows %+v; want %q", w.Note, w.Rows, whereFewSeeds)
	}
	// One kernel only (kci bench): counts there, nothing to compare; not
	// "the plugin was not loaded".
	bench := whereRun(3, func(string, uint64) map[string]float64 {
		return map[string]float64{"htab_map_update_elem": 100}
	})
	var base []results.Boot
	for _, b := range bench.Boots {
		if b.Role == results.RoleBase {
			base = append(base, b)
		}
	}
	bench.Boots = base
	if w := whereIn(bench, "gtp"); w.Note != whereOneSide || len(w.Rows) != 0 {
		t.Errorf("base only: note %q, rows %+v; want %q", w.Note, w.Rows, whereOneSide)
	}
}

// Under the coherent model (several vCPUs), a function whose cross-core
// events moved is named though its instructions and cycles did not:
// the shared-line fixture's shape. One vCPU's counts have no such metric.
func TestWhereCrossCore(t *testing.T) {
	for _, vcpus := range []int{1, 2} {
		run := whereRun(3, func(string, uint64) map[string]float64 {
			return map[string]float64{"udp_send_skb": 120, "ip_output": 80}
		})
		for i := range run.Boots {
			b := &run.Boots[i]
			for j := range b.Variants {
				e := b.Variants[j].Exact
				e.Model = "xeon-platinum-8180-coherent"
				e.VCPUs = make([]results.VCPUCount, vcpus)
				for k := range e.Funcs {
					f := &e.Funcs[k]
					f.Cycles = f.Insns * 2
					if f.Name == "udp_send_skb" && b.Role == results.RolePatched {
						f.CrossCore = 1000 // one line moved a packet
					}
				}
			}
		}
		w := whereIn(run, "gtp")
		if vcpus == 1 {
			if len(w.Rows) != 0 {
				t.Errorf("one vCPU: rows %+v, want none (no cross-core metric)", w.Rows)
			}
			continue
		}
		if len(w.Rows) != 1 || w.Rows[0].Func != "udp_send_skb" {
			t.Fatalf("rows %+v, want udp_send_skb", w.Rows)
		}
		r := w.Rows[0]
		if r.Insns.Changed || r.Cycles.Changed || r.CrossCore == nil || !r.CrossCore.Changed || !r.CrossCore.Exact || r.CrossCore.Delta != 1 {
			t.Errorf("row %+v %+v %+v, want only cross-core called, +1 exact", r.Insns, r.Cycles, r.CrossCore)
		}
	}
}
