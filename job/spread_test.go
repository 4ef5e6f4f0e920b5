package job_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/rcache"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// userBench is kci.yaml's traffic under TCG: the user's three pairs, at
// the emulated rate and window.
func userBench() wire.BenchParams {
	p := wire.DefaultBench()
	p.RateMbit = 0.5
	p.ServerLead, p.Warmup, p.Window = time.Second, time.Second, 2*time.Second
	return p
}

// The write programs' cost must not depend on the guest's seed: with
// three clients on one vCPU, each client's own sleep timer used to fire
// inside another client's egress programs at a seed-dependent phase, and
// hash_write read 515.8..527.9 over seeds 1-10 (2.3 %; lru_write
// 523.2..532.8), which no verdict at 3 seeds could test. On the clients'
// common wake-up grid they are exact, like the read programs, on most
// seeds of a kernel build; but bpf_stats count an interrupt that lands
// inside a program run, and one such (about 24,000 instructions) moved
// hash_write to 477.4 on seed 2 of one CI build (475.0 on seeds 1 and 3;
// the CI runs before it saw none), and which seed meets one differs from
// one kernel build to the next. The bound is 1 %: under half the old
// traffic's spread, over one stray interrupt's.
func TestWriteProgramsExactAcrossSeeds(t *testing.T) {
	tr := icountTester(t)
	// Its boots are stored, and checkReplay runs it again from the cache.
	store, err := rcache.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tr.Booter = boot.WithResultCache(tr.Booter, store, nil)
	o := job.TestOptions{Trees: []string{"stock"}, Reps: 3, Variants: []string{"hash", "lru"}, Bench: userBench()}
	r := runTest(t, tr, o)
	if r.err != nil {
		t.Fatal(r.err)
	}
	per := map[string]map[uint64]float64{} // program → seed → ns/pkt
	for _, b := range r.run.Boots {
		for _, v := range b.Variants {
			for _, p := range v.Programs {
				if per[p.Name] == nil {
					per[p.Name] = map[uint64]float64{}
				}
				per[p.Name][b.Seed] = p.NsPerPkt
			}
		}
	}
	for _, name := range []string{"hash_write", "lru_write", "hash_read", "lru_read"} {
		seeds := per[name]
		if len(seeds) != 3 {
			t.Errorf("%s measured on %d seeds, want 3: %v", name, len(seeds), seeds)
			continue
		}
		lo, hi := 1e18, 0.0
		for _, ns := range seeds {
			lo, hi = min(lo, ns), max(hi, ns)
		}
		t.Logf("%s: %.1f..%.1f instruction-time ns/pkt over seeds %v", name, lo, hi, seeds)
		if hi-lo > 0.01*lo {
			t.Errorf("%s: %.1f..%.1f over seeds 1-3 (%.2f %%), want within 1 %%", name, lo, hi, (hi-lo)/lo*100)
		}
	}
	checkReplay(t, tr, o, r.run)
}

// checkReplay runs o again on tr, whose result cache holds first's boots:
// every boot is served, one after a re-check boot that stops after its
// first window (its phases end there), and each carries first's numbers.
// Under icount the stopped boot is the same execution as the whole one
// up to its stop, which the re-check relies on.
func checkReplay(t *testing.T, tr *job.Tester, o job.TestOptions, first *results.Run) {
	t.Helper()
	o.Out = ""
	r := runTest(t, tr, o)
	if r.err != nil {
		t.Fatalf("replay: %v", r.err)
	}
	if !r.run.Replayed("") {
		t.Errorf("replay: %s, want every boot from the cache but one re-check", r.run.BootsLine(""))
	}
	byRep := map[int]results.Boot{}
	for _, b := range first.Boots {
		byRep[b.Rep] = b
	}
	for _, b := range r.run.Boots {
		if a := byRep[b.Rep]; !reflect.DeepEqual(a.Variants, b.Variants) || !reflect.DeepEqual(a.Cells, b.Cells) {
			t.Errorf("replay rep %d (%s): numbers differ from the first run's", b.Rep, b.Cache)
		}
		if b.Cache != results.CacheChecked {
			continue
		}
		var names []string
		for _, p := range b.Phases {
			names = append(names, p.Name)
		}
		t.Logf("re-check boot (rep %d) phases: %v", b.Rep, names)
		if len(names) == 0 || names[len(names)-1] != "bench/hash" {
			t.Errorf("re-check boot phases %v: want them to end with its first window, bench/hash", names)
		}
	}
}
