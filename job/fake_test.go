package job

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/wire"
)

// fakeBuilder hands out kernels without building any: the job's unit tests
// run under -short through the same KernelBuilder seam as *Builder.
type fakeBuilder struct {
	notApplies map[string]bool // trees the patch does not apply to
	treeErr    error           // Tree fails with it
	patchedErr error           // Patched fails with it
}

func (f *fakeBuilder) Tree(_ context.Context, t *project.Tree) (*kernel.Artifacts, error) {
	if f.treeErr != nil {
		return nil, f.treeErr
	}
	return fakeKernel("base-" + t.Name), nil
}

func (f *fakeBuilder) Patched(_ context.Context, t *project.Tree, _ *kernel.Artifacts, _ []kernel.Patch) (*kernel.Artifacts, error) {
	if f.patchedErr != nil {
		return nil, f.patchedErr
	}
	return fakeKernel("patched-" + t.Name), nil
}

func (f *fakeBuilder) AppliesTo(_ context.Context, t *project.Tree, _ []kernel.Patch) (bool, error) {
	return !f.notApplies[t.Name], nil
}

func fakeKernel(key string) *kernel.Artifacts {
	return &kernel.Artifacts{Key: key, Release: "6.12.0-kci", ConfigHash: strings.Repeat("c", 64), CacheHit: true}
}

// boot is one scripted boot's outcome.
type scriptedBoot func(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error)

// fakeBooter plays a script per kernel role: base and patched each have a
// list of outcomes, one per boot, the last repeating. It records every
// request.
type fakeBooter struct {
	mu      sync.Mutex
	base    []scriptedBoot
	patched []scriptedBoot
	reqs    []boot.BootRequest
}

func (f *fakeBooter) Boot(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
	f.mu.Lock()
	script, n := f.base, 0
	if strings.HasPrefix(req.Kernel.Key, "patched-") {
		script = f.patched
	}
	for _, r := range f.reqs {
		if r.Kernel.Key == req.Kernel.Key {
			n++
		}
	}
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return script[min(n, len(script)-1)](ctx, req)
}

// roles is the role of each boot asked for, in order.
func (f *fakeBooter) roles() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.reqs {
		role, _, _ := strings.Cut(r.Kernel.Key, "-")
		out = append(out, role)
	}
	return out
}

// bootOK is a clean boot under the deterministic clock: the variant's one
// program costs ns per packet, and every survival cell observes survives.
// fakeBootSeq numbers the fake boots, for their phases.
var fakeBootSeq atomic.Int64

func bootOK(ns float64) scriptedBoot {
	return measured(ns, "", "survives")
}

// measured is a boot whose variant is invalid when invalid is set, and
// whose survival cell observes what observed says.
func measured(ns float64, invalid, observed string) scriptedBoot {
	return func(_ context.Context, req boot.BootRequest) (*boot.BootResult, error) {
		res := &boot.BootResult{Accel: results.AccelTCG, Clock: results.ClockICount}
		const pkts = 1_000_000
		v := wire.VariantResult{Variant: "x", Valid: invalid == "", Invalid: invalid,
			Programs: []wire.ProgStat{{Name: "x_prog", Type: "sched_cls", RunCnt: pkts, RunTimeNs: uint64(ns * pkts)}}}
		res.Variants = []wire.VariantResult{v}
		if req.Plan.Survival {
			res.Cells = []wire.Cell{{Carrier: "skb_ext", Path: "veth", Expected: "survives", Observed: observed, Pass: observed == "survives"}}
		}
		// Unique per boot: a boot's phases show which boot they came from.
		res.Phases = []results.BootPhase{{Name: "bench/x", Duration: time.Duration(fakeBootSeq.Add(1))}}
		return res, nil
	}
}

// bootFails is a boot that fails with kind: what VMBooter returns for a
// crash, a hang, or qemu itself failing.
func bootFails(kind, msg string) scriptedBoot {
	return func(context.Context, boot.BootRequest) (*boot.BootResult, error) {
		return &boot.BootResult{Accel: results.AccelTCG, ErrorKind: kind}, errors.New(msg)
	}
}
