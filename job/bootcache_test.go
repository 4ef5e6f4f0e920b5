package job

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/rcache"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// keyedBooter is the scripted booter with a result-cache key: the kernel,
// the plan and the seed (what VMBooter adds, QEMU and the image, is one
// value here), exact unless inexact is set.
type keyedBooter struct {
	*fakeBooter
	inexact bool
}

// Boot stops after req.StopAfter variants, as VMBooter does.
func (k *keyedBooter) Boot(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
	res, err := k.fakeBooter.Boot(ctx, req)
	if err == nil && req.StopAfter > 0 && len(res.Variants) > req.StopAfter {
		res.Variants, res.Exact = res.Variants[:req.StopAfter], nil
	}
	return res, err
}

func (k *keyedBooter) CacheKey(_ context.Context, req boot.BootRequest) (rcache.Key, bool, error) {
	plan, _ := json.Marshal(req.Plan)
	return rcache.Key{Kernel: req.Kernel.Key, Release: req.Kernel.Release, Plan: string(plan), Clock: "tcg/icount", Seed: req.Seed}, !k.inexact, nil
}

// newPatch is the fake builder with another patch: the patched kernel is
// a new build, the base the same.
type newPatch struct{ *fakeBuilder }

func (n newPatch) Patched(_ context.Context, t *project.Tree, _ *kernel.Artifacts, _ []kernel.Patch) (*kernel.Artifacts, error) {
	return fakeKernel("patched-v2-" + t.Name), nil
}

// cachedRun runs one kci test (stock, 3 seeds, survival) through the
// result cache in store.
func cachedRun(t *testing.T, kb KernelBuilder, boots *keyedBooter, store *rcache.Store, log *syncBuffer) *results.Run {
	t.Helper()
	proj := &project.File{Path: "kci.yaml", Trees: []project.Tree{{Name: "stock"}}}
	o := TestOptions{Patches: []string{testPatch}, Reps: 3, Survival: true, Parallel: 2, Log: log, FailOnRegression: -1,
		Out: filepath.Join(t.TempDir(), "run")}
	res, err := (&Tester{Kernels: kb, Booter: boot.WithResultCache(boots, store, log), Project: proj}).Test(context.Background(), o)
	dir := res.Dir
	if err != nil {
		t.Fatalf("Test: %v\n%s", err, log)
	}
	run, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// cacheStates maps "role seed" to each boot's Boot.Cache.
// recheckedSeed is the one base seed whose cache state is state.
func recheckedSeed(t *testing.T, states map[string]string, state string) int {
	t.Helper()
	seed := 0
	for s := 1; s <= 3; s++ {
		if states[fmt.Sprintf("base %d", s)] == state {
			if seed != 0 {
				t.Errorf("cache states %v: more than one base seed %s", states, state)
			}
			seed = s
		}
	}
	if seed == 0 {
		t.Fatalf("cache states %v: no base seed %s", states, state)
	}
	return seed
}

func cacheStates(run *results.Run) map[string]string {
	out := map[string]string{}
	for _, b := range run.Boots {
		out[b.Role+" "+string(rune('0'+b.Seed))] = b.Cache
	}
	return out
}

// The second run on the same base boots only the patched kernel plus one
// base seed that re-checks the cache; the other base seeds come from it,
// are recorded as such, and compare exactly as booted ones did.
func TestSecondRunBootsOnlyThePatchedSideAndOneRecheck(t *testing.T) {
	store, err := rcache.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var log syncBuffer
	first := &keyedBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(110)}}}
	run1 := cachedRun(t, &fakeBuilder{}, first, store, &log)
	if n := len(first.reqs); n != 6 {
		t.Fatalf("first run booted %d times, want 6", n)
	}
	for k, c := range cacheStates(run1) {
		if c != results.CacheStored {
			t.Errorf("first run: %s cache %q, want stored", k, c)
		}
	}

	log.Reset()
	second := &keyedBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(120)}}}
	run2 := cachedRun(t, newPatch{&fakeBuilder{}}, second, store, &log)
	roles := second.roles()
	if len(roles) != 4 || strings.Count(strings.Join(roles, " "), "base") != 1 {
		t.Fatalf("second run booted %v, want the 3 patched seeds and 1 base re-check", roles)
	}
	// The re-check is the first base boot to reach the cache: with two
	// boots at a time that need not be seed 1.
	checked := recheckedSeed(t, cacheStates(run2), results.CacheChecked)
	want := map[string]string{"base 1": results.CacheHit, "base 2": results.CacheHit, "base 3": results.CacheHit,
		"patched 1": results.CacheStored, "patched 2": results.CacheStored, "patched 3": results.CacheStored}
	want[fmt.Sprintf("base %d", checked)] = results.CacheChecked
	if got := cacheStates(run2); !equalMaps(got, want) {
		t.Errorf("second run cache states %v, want %v", got, want)
	}
	if got := run2.BootsLine(""); got != "6 boots (2 from cache)" {
		t.Errorf("BootsLine %q", got)
	}
	var txt bytes.Buffer
	if err := render.Text(&txt, verdict.AnalyzeRun(run2), render.TextOptions{}); err != nil || !strings.Contains(txt.String(), "boots: 6 boots (2 from cache)") {
		t.Errorf("text report lacks the boot count (%v):\n%s", err, txt.String())
	}
	if !strings.Contains(log.String(), "from the result cache") || !strings.Contains(log.String(), "identical to entry") {
		t.Errorf("log does not say what the cache did:\n%s", log.String())
	}
	// A hit's phases are the stored boot's; the re-check's are its own.
	stored := map[uint64][]results.BootPhase{}
	for _, b := range run1.Boots {
		if b.Role == results.RoleBase {
			stored[b.Seed] = b.Phases
		}
	}
	for _, b := range run2.Boots {
		if b.Role != results.RoleBase {
			continue
		}
		if len(b.Phases) != 1 || len(stored[b.Seed]) != 1 {
			t.Errorf("base seed %d (%s): phases %v, the stored boot's %v: want one each", b.Seed, b.Cache, b.Phases, stored[b.Seed])
			continue
		}
		if same := b.Phases[0] == stored[b.Seed][0]; same != (b.Cache == results.CacheHit) {
			t.Errorf("base seed %d (%s): phases %v, the stored boot's %v", b.Seed, b.Cache, b.Phases, stored[b.Seed])
		}
	}
	// The cached boots carry the numbers and the survival cells of the
	// boots they stand for.
	for _, b := range run2.Boots {
		if b.Role != results.RoleBase {
			continue
		}
		if len(b.Variants) != 1 || len(b.Variants[0].Programs) != 1 || b.Variants[0].Programs[0].RunTimeNs != 100*1_000_000 {
			t.Errorf("base seed %d (%s): variants %+v", b.Seed, b.Cache, b.Variants)
		}
		if (b.Rep == 1) != (len(b.Cells) > 0) {
			t.Errorf("base seed %d: %d survival cells", b.Seed, len(b.Cells))
		}
	}
}

// A re-check that differs drops the entry loudly, naming the key and the
// first differing program, and no cached boot is used in that run.
func TestRecheckMismatchDropsTheEntryAndServesNothing(t *testing.T) {
	var warn syncBuffer
	store, _ := rcache.Open(t.TempDir(), &warn)
	var log syncBuffer
	cachedRun(t, &fakeBuilder{}, &keyedBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(110)}}}, store, &log)

	// Something outside the key changed: the same base now costs 101.
	log.Reset()
	second := &keyedBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{bootOK(101)}, patched: []scriptedBoot{bootOK(120)}}}
	run := cachedRun(t, newPatch{&fakeBuilder{}}, second, store, &log)
	if n := len(second.reqs); n != 6 {
		t.Errorf("after a failed re-check %d boots ran, want all 6", n)
	}
	states := cacheStates(run)
	seed := recheckedSeed(t, states, results.CacheMismatch)
	for s := 1; s <= 3; s++ {
		if s != seed && states[fmt.Sprintf("base %d", s)] != results.CacheStored {
			t.Errorf("cache states %v: want the other base seeds stored", states)
		}
	}
	w := warn.String()
	var req boot.BootRequest
	for _, q := range second.reqs {
		if q.Kernel.Key == "base-stock" && q.Seed == uint64(seed) {
			req = q
		}
	}
	plan, _ := json.Marshal(req.Plan)
	key := rcache.Key{Kernel: "base-stock", Release: "6.12.0-kci", Plan: string(plan), Clock: "tcg/icount", Seed: uint64(seed)}
	for _, s := range []string{"dropping entry " + key.ID(), "program x/x_prog", "cached 100.000", "now 101.000", "something outside the key"} {
		if !strings.Contains(w, s) {
			t.Errorf("warning lacks %q:\n%s", s, w)
		}
	}
	// The entry now holds what the machine measures today.
	hit, ok := store.Load(key)
	var p struct{ Result *boot.BootResult }
	if ok {
		_ = json.Unmarshal(hit.Payload, &p)
	}
	if p.Result == nil || p.Result.Variants[0].Programs[0].RunTimeNs != 101*1_000_000 {
		t.Errorf("entry after the mismatch: %v %+v", ok, p.Result)
	}
}

// twoWindows is a clean boot of two bench variants whose first costs ns.
func twoWindows(ns float64) scriptedBoot {
	return func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
		res, err := bootOK(ns)(ctx, req)
		y := res.Variants[0]
		y.Variant, y.Programs = "y", []wire.ProgStat{{Name: "y_prog", Type: "sched_cls", RunCnt: 1_000_000, RunTimeNs: 7_000_000}}
		res.Variants = append(res.Variants, y)
		return res, err
	}
}

// An entry of two windows is re-checked by a boot stopped after the
// first: identical, the entry is served whole; different, the entry is
// dropped and a whole boot is run, stored and used.
func TestRecheckByPrefix(t *testing.T) {
	var warn syncBuffer
	store, _ := rcache.Open(t.TempDir(), &warn)
	var log syncBuffer
	cachedRun(t, &fakeBuilder{}, &keyedBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{twoWindows(100)}, patched: []scriptedBoot{twoWindows(110)}}}, store, &log)

	same := &keyedBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{twoWindows(100)}, patched: []scriptedBoot{twoWindows(120)}}}
	run := cachedRun(t, newPatch{&fakeBuilder{}}, same, store, &log)
	var stops []int
	for _, q := range same.reqs {
		if q.Kernel.Key == "base-stock" {
			stops = append(stops, q.StopAfter)
		}
	}
	if !slices.Equal(stops, []int{1}) {
		t.Fatalf("base boots asked for with StopAfter %v, want one re-check stopped after its first window", stops)
	}
	for _, b := range run.Boots {
		if b.Role == results.RoleBase && (len(b.Variants) != 2 || b.Variants[1].Variant != "y") {
			t.Errorf("base seed %d (%s): %d variants served, want the entry's 2", b.Seed, b.Cache, len(b.Variants))
		}
	}

	// On another machine the first window costs 101: the prefix differs.
	warn.Reset()
	store, _ = rcache.Open(t.TempDir(), &warn)
	cachedRun(t, &fakeBuilder{}, &keyedBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{twoWindows(100)}, patched: []scriptedBoot{twoWindows(110)}}}, store, &log)
	differs := &keyedBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{twoWindows(101)}, patched: []scriptedBoot{twoWindows(120)}}}
	run = cachedRun(t, newPatch{&fakeBuilder{}}, differs, store, &log)
	stops = nil
	for _, q := range differs.reqs {
		if q.Kernel.Key == "base-stock" {
			stops = append(stops, q.StopAfter)
		}
	}
	if !slices.Equal(stops, []int{1, 0, 0, 0}) {
		t.Errorf("after a differing prefix, base boots asked for with StopAfter %v, want the re-check, then 3 whole boots", stops)
	}
	states := cacheStates(run)
	seed := recheckedSeed(t, states, results.CacheMismatch)
	if !strings.Contains(warn.String(), "program x/x_prog: cached 100.000") {
		t.Errorf("warning does not name the differing program:\n%s", warn.String())
	}
	for _, b := range run.Boots {
		if b.Role == results.RoleBase && b.Seed == uint64(seed) && (len(b.Variants) != 2 || b.Variants[0].Programs[0].RunTimeNs != 101*1_000_000) {
			t.Errorf("the mismatched seed carries %+v, want the whole boot's 2 windows at 101", b.Variants)
		}
	}
}

// Boots that are not exact (KVM, host clock) never touch the cache; nor
// does a failed boot get stored.
func TestInexactAndFailedBootsAreNotCached(t *testing.T) {
	store, _ := rcache.Open(t.TempDir(), nil)
	var log syncBuffer
	inexact := &keyedBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(110)}}, inexact: true}
	run := cachedRun(t, &fakeBuilder{}, inexact, store, &log)
	if list, _ := store.List(); len(list) != 0 {
		t.Errorf("%d entries stored from inexact boots", len(list))
	}
	for _, b := range run.Boots {
		if b.Cache != "" {
			t.Errorf("inexact boot recorded cache %q", b.Cache)
		}
	}
	cb := boot.WithResultCache(&keyedBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{bootFails(failure.Crash, "oops")}}}, store, &log)
	k := fakeKernel("base-stock")
	if _, err := cb.Boot(context.Background(), boot.BootRequest{Kernel: k, Seed: 1}); err == nil {
		t.Fatal("failed boot returned no error")
	}
	if list, _ := store.List(); len(list) != 0 {
		t.Errorf("a failed boot was stored")
	}
}

// Concurrent hits wait for the one re-check; none is served before it.
func TestHitsWaitForTheRecheck(t *testing.T) {
	store, _ := rcache.Open(t.TempDir(), nil)
	fb := &keyedBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{bootOK(100)}}}
	k := fakeKernel("base-stock")
	ctx := context.Background()
	warm := boot.WithResultCache(fb, store, nil)
	for seed := uint64(1); seed <= 4; seed++ {
		if _, err := warm.Boot(ctx, boot.BootRequest{Kernel: k, Seed: seed}); err != nil {
			t.Fatal(err)
		}
	}
	release := make(chan struct{})
	slow := &keyedBooter{fakeBooter: &fakeBooter{base: []scriptedBoot{func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
		<-release
		return bootOK(100)(ctx, req)
	}}}}
	cb := boot.WithResultCache(slow, store, nil)
	var wg sync.WaitGroup
	got := make([]string, 5)
	finished := make(chan int, 4)
	for seed := 1; seed <= 4; seed++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := cb.Boot(ctx, boot.BootRequest{Kernel: k, Seed: uint64(seed)})
			if err == nil {
				got[seed] = res.Cache
			}
			finished <- seed
		}()
	}
	// While the re-check boots, no hit is served.
	for n := 0; n == 0; {
		time.Sleep(10 * time.Millisecond)
		slow.mu.Lock()
		n = len(slow.reqs)
		slow.mu.Unlock()
	}
	time.Sleep(50 * time.Millisecond)
	select {
	case s := <-finished:
		t.Fatalf("seed %d returned before the re-check finished", s)
	default:
	}
	close(release)
	wg.Wait()
	checked, hits := 0, 0
	for _, c := range got[1:] {
		switch c {
		case results.CacheChecked:
			checked++
		case results.CacheHit:
			hits++
		}
	}
	if checked != 1 || hits != 3 || len(slow.reqs) != 1 {
		t.Errorf("states %v, %d boots: want 1 re-check boot and 3 hits", got[1:], len(slow.reqs))
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// syncBuffer is a log the boots side by side and the job share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}
