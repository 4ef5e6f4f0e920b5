package job_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
	"github.com/kci-dev/kci/vm"
)

// A guest of two vCPUs under icount, through the whole pipeline: the
// client on vCPU 1, the server on vCPU 0, the coherent cache model, the
// comment-only patch of TestNullPatchNoSignificantChange (its kernel is
// in the cache by then: no new build). Boots with one seed must count the
// same instructions and cycles, per vCPU and per function, with no replay
// log to make them; each vCPU must have run part of each window; and the
// variant is decided on the plugin's rows, its bpf_stats and time rows
// left out. kci queries QEMU every millisecond while the guests run:
// unfenced, that moved the counts of three boots in four (vm/fence.go).
func TestTwoVCPUsRepeatExactly(t *testing.T) {
	requireFIFO(t)
	tr := icountTester(t)
	b := tr.Booter.(*boot.VMBooter)
	b.VM.CPUs, b.CacheModel = 2, true
	b.VM.MainLoopStress = time.Millisecond
	r := runTest(t, tr, job.TestOptions{Patches: []string{"../kernel/testdata/one-file.patch"}, Trees: []string{"stock"},
		Reps: 2, Seed: 1, Variants: []string{"cnt"}})
	if r.err != nil {
		t.Fatal(r.err)
	}
	first := map[string]*results.Exact{}
	for _, bt := range r.run.Boots {
		if !strings.HasPrefix(bt.MainLoop, "fenced on host CPU") {
			t.Errorf("boot %d %s: main loop %q: want it fenced", bt.Rep, bt.Role, bt.MainLoop)
		}
		for _, v := range bt.Variants {
			e := v.Exact
			if e == nil || len(e.VCPUs) != 2 || e.VCPUs[0].Insns == 0 || e.VCPUs[1].Insns == 0 || !strings.Contains(e.Model, "coherent") {
				t.Fatalf("boot %d %s %s: exact %+v: want both vCPUs counted under the coherent model", bt.Rep, bt.Role, v.Variant, e)
			}
			t.Logf("boot %d %s %s: %d packets, per vCPU %+v, quantum %d", bt.Rep, bt.Role, v.Variant, e.Packets, e.VCPUs, e.Quantum)
			checkPacketsAtMarkers(t, bt.Role, e)
			k := bt.Role + "/" + v.Variant
			if f, ok := first[k]; !ok {
				first[k] = e
			} else if !reflect.DeepEqual(e, f) {
				t.Errorf("%s: boots of seed 1 counted differently: %d vs %d insns, per vCPU %+v vs %+v", k, e.Insns, f.Insns, e.VCPUs, f.VCPUs)
			}
		}
	}
	if len(first) != 2 || len(r.run.Boots) != 4 {
		t.Fatalf("%d boots of %d kernel/variant pairs, want 4 of 2", len(r.run.Boots), len(first))
	}
	rows := abRows(r.run, "stock")
	logRows(t, rows)
	ins, ok := rows["cnt/"+verdict.InsnsRow]
	if !ok {
		t.Fatalf("no cnt/%s row: an interleaved variant is decided on the plugin's instructions", verdict.InsnsRow)
	}
	if ins.Verdict == verdict.Slower || ins.Verdict == verdict.Faster {
		t.Errorf("cnt/%s: %s for a comment-only patch", verdict.InsnsRow, ins.Verdict)
	}
	for i := 0; i < 2; i++ {
		if name := "cnt/" + verdict.VCPURow(i, verdict.CallCyclesSuffix); rows[name].Verdict == "" {
			t.Errorf("no %s row: each vCPU's share is decided too", name)
		}
	}
	for name := range rows {
		if strings.HasPrefix(name, "cnt/cnt_") || name == "cnt/"+verdict.WholePathRow {
			t.Errorf("row %s: bpf_stats and time rows of two vCPUs count the other vCPU's turns and must be left out", name)
		}
	}
	if h := r.run.Host; !strings.Contains(h.GuestCPU, "i7-13800H") {
		t.Errorf("guest CPU %q: want the default identity", h.GuestCPU)
	}
}

// checkPacketsAtMarkers: every datagram passes cnt_egress once, in its
// write, so the egress calls the plugin counted inside its window are the
// datagrams its per-packet rows divide by, to the one or two writes on
// the other vCPU that straddle a marker. The accountant's wider window
// read 6 more on two vCPUs and 49–59 more on six.
func checkPacketsAtMarkers(t *testing.T, role string, e *results.Exact) {
	t.Helper()
	for _, c := range e.Calls {
		if c.Name != results.CallPrefix+"bpf:cnt_egress" {
			continue
		}
		if d := int64(e.Packets) - int64(c.Calls); d < -2 || d > 2 {
			t.Errorf("%s: %d packets against %d cnt_egress calls in the plugin's window: its rows divide by another window's packets", role, e.Packets, c.Calls)
		}
		return
	}
	t.Errorf("%s: no call:bpf:cnt_egress among the window's calls", role)
}

// requireFIFO skips, before any build or boot, where kci cannot fence
// QEMU's main loop (SCHED_FIFO needs root or CAP_SYS_NICE, and a spare
// host CPU).
func requireFIFO(t *testing.T) {
	t.Helper()
	if err := vm.FenceCheck(nil); err != nil {
		t.Skipf("needs QEMU's main loop fenced: %v", err)
	}
}
