package suite_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kci-dev/kci/job/jobtest"
	"github.com/kci-dev/kci/suite"
	"github.com/kci-dev/kci/vm"
	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/vmimage"
	"github.com/kci-dev/kci/wire"
)

// TestGuestStockKernel boots the default base kernel (stock 6.12, built by
// kci) in QEMU with 1 vCPU and runs the whole suite with test-sized
// windows: cnt, hash and lru must run and validate, ext and gtp* must be
// skipped naming what the kernel lacks, and every survival cell must
// match its expectation.
func TestGuestStockKernel(t *testing.T) {
	runGuest(t, "stock", suite.StockWant())
}

// TestGuestExtKernel: on the BPF skb extension tree, ext runs and
// validates (FOUND == INGRESS == EGRESS) and the extension survives every
// path of the matrix, the series' claim.
func TestGuestExtKernel(t *testing.T) {
	runGuest(t, "ext", suite.ExtWant())
}

// TestGuestGtpKernel: on the gated tracepoint tree, gtp, gtpchurn and
// gtplru run and validate (FREE_REAPED == EGRESS, a bound for the LRU).
func TestGuestGtpKernel(t *testing.T) {
	runGuest(t, "gtp", suite.GtpWant())
}

func runGuest(t *testing.T, tree string, want suite.RunWant) {
	if testing.Short() {
		t.Skip("boots a kernel in QEMU: skipped in -short mode")
	}
	// The three trees build and boot side by side: the ext and gtp trees
	// are each built on the stock kernel, in worktrees of their own.
	t.Parallel()
	k := jobtest.Tree(t, tree)
	ctx := context.Background()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-10*time.Second))
		defer cancel()
	}
	img, err := vmimage.Build(ctx, vmimage.Options{})
	if err != nil {
		t.Fatalf("initramfs: %v", err)
	}
	plan := suite.TestPlanSmall()
	b, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	initrd := filepath.Join(dir, "initrd.cpio")
	if err := img.Compose(initrd, vmimage.File{Path: wire.PlanPath[1:], Data: b}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var steps []string
	// One vCPU, the guest kci test boots under TCG (cmd/kci/vmflags.go
	// FitTCG), so under icount this boot also records the replay log as
	// kci test's do (vm.RecordsReplay). 2-vCPU icount guests, which kci
	// never boots, hung at the start of a step depending on the exact
	// agent binary (see 22853ff). vm.Run passes TCG guests the host TSC
	// rate.
	res, err := vm.Run(ctx, vm.Config{
		Kernel: k.BzImage, Initrd: initrd, CPUs: 1, MemoryMiB: 1024, Dir: dir,
	}, func(ev event.Event) {
		switch ev.Type {
		case event.StepBeg:
			var s event.StepData
			if ev.Decode(&s) == nil {
				steps = append(steps, s.Name+" at "+time.Since(start).Round(time.Millisecond).String())
			}
		case event.Log, event.Error:
			t.Logf("guest %s: %s", ev.Type, ev.Data)
		}
	})
	if res != nil {
		t.Logf("accel %s (%s), boot to ready %s, whole boot %s", res.Accel, res.AccelReason, res.BootToReady, res.Duration.Round(time.Millisecond))
		t.Logf("steps: %v", steps)
	}
	if err != nil {
		if res != nil && res.Console != "" {
			if con, rerr := os.ReadFile(res.Console); rerr == nil {
				t.Logf("console tail:\n%s", tail(string(con), 4000))
			}
		}
		t.Fatalf("guest run: %v", err)
	}
	if !res.Done || !res.OK {
		t.Fatalf("guest run ended without a successful done event (done %v, ok %v)", res.Done, res.OK)
	}
	for _, ev := range res.Events {
		if ev.Type == event.Sanity {
			t.Logf("sanity: %s", ev.Data)
		}
	}
	suite.CheckRun(t, res.Events, plan, want)
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
