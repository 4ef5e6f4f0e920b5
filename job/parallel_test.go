package job

import (
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
)

// gate counts boots in flight and remembers the most seen at once.
type gate struct {
	mu       sync.Mutex
	now, max int
}

func (g *gate) wrap(b scriptedBoot, hold time.Duration) scriptedBoot {
	return func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
		g.mu.Lock()
		g.now++
		g.max = max(g.max, g.now)
		g.mu.Unlock()
		defer func() { g.mu.Lock(); g.now--; g.mu.Unlock() }()
		select {
		case <-time.After(hold):
		case <-ctx.Done():
			return &boot.BootResult{ErrorKind: failure.Infra}, ctx.Err()
		}
		return b(ctx, req)
	}
}

// Deterministic boots side by side: two at a time, never more, and every
// boot recorded with its repetition, role and seed as a sequential run
// records them; survival still only on each kernel's first boot.
func TestParallelBootsRecordedLikeSequential(t *testing.T) {
	g := &gate{}
	ok := g.wrap(bootOK(100), 30*time.Millisecond)
	boots := &fakeBooter{base: []scriptedBoot{ok}, patched: []scriptedBoot{ok}}
	r := runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{Survival: true, Reps: 3, Parallel: 2})
	r.want(t, ExitOK, "")
	if g.max != 2 {
		t.Errorf("at most %d boots at once, want 2", g.max)
	}
	if len(r.run.Boots) != 6 {
		t.Fatalf("%d boots recorded, want 6", len(r.run.Boots))
	}
	seen := map[string]bool{}
	for _, b := range r.run.Boots {
		key := b.Role + string(rune('0'+b.Rep))
		if seen[key] || b.Error != "" || b.Seed != uint64(b.Rep) {
			t.Errorf("boot %s rep %d: duplicate %v, error %q, seed %d (want %d)", b.Role, b.Rep, seen[key], b.Error, b.Seed, b.Rep)
		}
		seen[key] = true
	}
	for _, req := range boots.reqs {
		if first := strings.Contains(req.Label, "rep 1/"); req.Plan.Survival != first {
			t.Errorf("%s: survival %v, want %v", req.Label, req.Plan.Survival, first)
		}
	}
	ab := compareOf(r.run, "stock")
	if len(ab.Variants) != 1 || ab.Variants[0].Total.Base.N != 3 || ab.Variants[0].Total.Patched.N != 3 {
		t.Errorf("comparison %+v, want 3+3 samples", ab.Variants)
	}
}

// With one seed for every boot (--seed, the determinism check) every
// boot runs the same plan, the survival matrix included: a boot that
// alone ran it would start its benchmark from another history.
func TestFixedSeedBootsRunOnePlan(t *testing.T) {
	boots := &fakeBooter{base: []scriptedBoot{bootOK(100)}, patched: []scriptedBoot{bootOK(100)}}
	r := runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{Survival: true, Reps: 3, Seed: 7})
	r.want(t, ExitOK, "")
	if len(boots.reqs) != 6 {
		t.Fatalf("%d boots, want 6", len(boots.reqs))
	}
	for _, req := range boots.reqs {
		if !req.Plan.Survival {
			t.Errorf("%s: no survival matrix, want every boot's plan alike", req.Label)
		}
	}
}

// A failed boot starts no further boot, but the base boot already
// running beside it is let finish and its numbers are kept (it used to be
// cancelled and recorded as "infra: vm: survival: context canceled", the
// base half of the run lost and blamed on the machine).
func TestParallelFailureLetsTheBaseBesideFinish(t *testing.T) {
	g := &gate{}
	// The patched boot fails only once the base boot beside it has
	// started: on a loaded host the queue could otherwise see the failure
	// before it starts the second boot.
	baseStarted := make(chan struct{})
	var once sync.Once
	base := g.wrap(bootOK(100), 300*time.Millisecond)
	fails := bootFails("crash", "WARNING in veth_xmit")
	boots := &fakeBooter{
		base: []scriptedBoot{func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
			once.Do(func() { close(baseStarted) })
			return base(ctx, req)
		}},
		patched: []scriptedBoot{func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
			select {
			case <-baseStarted:
			case <-time.After(10 * time.Second):
			}
			return fails(ctx, req)
		}},
	}
	r := runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{Reps: 3, Parallel: 2})
	r.want(t, ExitBoot, "patched kernel of tree stock: WARNING in veth_xmit")
	if n := len(boots.reqs); n != 2 {
		t.Errorf("%d boots started, want 2 (none after the failure)", n)
	}
	var baseBoot *results.Boot
	for i, b := range r.run.Boots {
		if b.Role == results.RoleBase {
			baseBoot = &r.run.Boots[i]
		}
	}
	if baseBoot == nil || baseBoot.Error != "" || len(baseBoot.Variants) != 1 || baseBoot.Variants[0].Programs[0].RunCnt == 0 {
		t.Fatalf("base boot beside the failure: %+v, want it finished with its numbers", baseBoot)
	}
}

// Boots of the kernel that failed, running beside it, are cancelled (they
// would only fail again) and recorded as cancelled: not the machine's
// fault, not a failure of their own, not the job's error.
func TestParallelFailureCancelsTheSameKernel(t *testing.T) {
	hang := func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
		select {
		case <-ctx.Done():
			return &boot.BootResult{ErrorKind: failure.Infra}, ctx.Err()
		case <-time.After(10 * time.Second):
			return nil, nil
		}
	}
	g := &gate{}
	crash := func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
		time.Sleep(50 * time.Millisecond) // both patched boots are running
		return bootFails("crash", "Kernel panic - not syncing: boom")(ctx, req)
	}
	boots := &fakeBooter{base: []scriptedBoot{g.wrap(bootOK(100), 200*time.Millisecond)}, patched: []scriptedBoot{crash, hang}}
	start := time.Now()
	r := runTest(t, context.Background(), &fakeBuilder{}, boots, TestOptions{Reps: 2, Parallel: 4})
	r.want(t, ExitBoot, "patched kernel of tree stock: Kernel panic")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("job took %s: the hanging patched boot was not cancelled", took)
	}
	kinds := map[string][]string{}
	for _, b := range r.run.Boots {
		kinds[b.Role] = append(kinds[b.Role], b.ErrorKind)
		if b.ErrorKind == failure.Cancelled && !strings.Contains(b.Error, "stock patched rep") || strings.Contains(b.Error, "context canceled") {
			t.Errorf("boot %s rep %d recorded as %q", b.Role, b.Rep, b.Error)
		}
	}
	sort := func(s []string) string { slices.Sort(s); return strings.Join(s, ",") }
	if got := sort(kinds[results.RolePatched]); got != "cancelled,crash" {
		t.Errorf("patched boots' kinds %s, want cancelled,crash", got)
	}
	if got := sort(kinds[results.RoleBase]); got != "," {
		t.Errorf("base boots' kinds %q, want two clean boots", got)
	}
	ab := compareOf(r.run, "stock")
	for _, e := range ab.Excluded {
		if e.Kind == "infra" {
			t.Errorf("excluded %+v blamed on the machine", e)
		}
	}
}

// More than one boot at a time is refused where boots would measure each
// other, and the default follows the clock.
func TestResolveParallel(t *testing.T) {
	cases := []struct {
		accel, clock string
		asked        int
		want         int
		refused      bool
	}{
		{"kvm", "", 2, 0, true},
		{"tcg", results.ClockHost, 2, 0, true},
		{"kvm", "", 0, 1, false},
		{"tcg", results.ClockHost, 0, 1, false},
		{"tcg", results.ClockICount, 3, 3, false},
		{"tcg", results.ClockICount, 1, 1, false},
		{"", "", 2, 2, false}, // scripted booter: as asked
	}
	for _, c := range cases {
		r := &testRun{o: TestOptions{Parallel: c.asked, Clock: c.clock}}
		err := r.sizeParallel(c.accel, c.clock, c.asked)
		if (err != nil) != c.refused || (!c.refused && r.parallel != c.want) {
			t.Errorf("%s/%s --parallel %d: %d, %v; want %d, refused %v", c.accel, c.clock, c.asked, r.parallel, err, c.want, c.refused)
		}
	}
	r := &testRun{o: TestOptions{Clock: results.ClockICount}}
	if err := r.sizeParallel("tcg", results.ClockICount, 0); err != nil || r.parallel < 1 || r.parallel > 4 {
		t.Errorf("icount default: %d, %v; want the host's CPUs, 1..4", r.parallel, err)
	}
}

func newSeedBooter() *fakeBooter {
	return &fakeBooter{base: []scriptedBoot{seedBoot}, patched: []scriptedBoot{seedBoot}}
}

// clockedBooter reports its guest clock as VMBooter does.
type clockedBooter struct {
	icountBooter
	clock string
}

func (b clockedBooter) GuestClock() string { return b.clock }

// A run whose options name no clock takes the Booter's: an icount booter
// boots more than one at a time (on a host with more than one CPU), a
// host-clock one and a booter that reports none one at a time. Behind
// the result cache the inner booter's clock still counts.
func TestRunTakesTheBootersClock(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("needs a host with 2 or more CPUs: one CPU runs one boot at a time whatever the clock")
	}
	cases := []struct {
		name   string
		booter func() boot.Booter
		shared bool
	}{
		{"icount", func() boot.Booter { return clockedBooter{icountBooter{newSeedBooter()}, results.ClockICount} }, true},
		{"icount behind the cache", func() boot.Booter {
			return boot.WithResultCache(clockedBooter{icountBooter{newSeedBooter()}, results.ClockICount}, nil, nil)
		}, true},
		{"host", func() boot.Booter { return clockedBooter{icountBooter{newSeedBooter()}, results.ClockHost} }, false},
		{"none reported", func() boot.Booter { return icountBooter{newSeedBooter()} }, false},
	}
	for _, c := range cases {
		var log strings.Builder
		proj := &project.File{Path: "kci.yaml", Trees: []project.Tree{{Name: "stock"}}}
		o := TestOptions{Patches: []string{testPatch}, Out: filepath.Join(t.TempDir(), "run"), FailOnRegression: -1, Reps: 2,
			Variants: []string{"read"}, Log: &log}
		if _, err := (&Tester{Kernels: &fakeBuilder{}, Booter: c.booter(), Project: proj}).Test(context.Background(), o); err != nil {
			t.Fatalf("%s: kci test: %v", c.name, err)
		}
		if got := strings.Contains(log.String(), "boots at a time"); got != c.shared {
			t.Errorf("%s: boots shared the host: %v, want %v; log:\n%s", c.name, got, c.shared, log.String())
		}
	}
}
