package bpf

import (
	"errors"
	"os"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
)

// BenchmarkStatsFloor measures, on the machine it runs on, bpf_stats'
// floor: what run_time_ns / run_cnt reads for a program that does
// nothing (r0 = 0), its own clock reads around the call, beside a
// program that only reads the clock (bpf_ktime_get_ns, as every write
// program of the benchmark does once a packet) and cnt's 29-instruction
// cnt_ingress, each run by BPF_PROG_TEST_RUN in a loop with bpf_stats off
// and on. Its bpf_stats-ns/call of "empty/stats-on" is the number kci
// bench --hardware-floor takes off the hardware's rows; ns/op with stats
// on against off is what bpf_stats costs a call; ktime's reading over
// empty's is what one clock read costs inside a program.
// It needs root (CAP_BPF to load, CAP_SYS_ADMIN for BPF_ENABLE_STATS):
//
//	go test -run '^$' -bench StatsFloor -benchtime 2000000x ./bpf
func BenchmarkStatsFloor(b *testing.B) {
	spec, err := Spec("cnt")
	if err != nil {
		b.Fatal(err)
	}
	coll, err := ebpf.NewCollection(spec)
	if errors.Is(err, os.ErrPermission) {
		b.Skipf("loading BPF needs CAP_BPF (root): %v", err)
	} else if err != nil {
		b.Fatal(err)
	}
	defer coll.Close()
	empty, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "empty", Type: ebpf.SchedCLS, License: "GPL",
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	if err != nil {
		b.Fatal(err)
	}
	defer empty.Close()
	ktime, err := ebpf.NewProgram(&ebpf.ProgramSpec{Name: "ktime", Type: ebpf.SchedCLS, License: "GPL",
		Instructions: asm.Instructions{asm.FnKtimeGetNs.Call(), asm.Mov.Imm(asm.R0, 0), asm.Return()}})
	if err != nil {
		b.Fatal(err)
	}
	defer ktime.Close()
	for _, p := range []struct {
		name string
		prog *ebpf.Program
	}{{"empty", empty}, {"ktime", ktime}, {"cnt_ingress", coll.Programs["cnt_ingress"]}} {
		b.Run(p.name+"/stats-off", func(b *testing.B) { floorRun(b, p.prog, false) })
		b.Run(p.name+"/stats-on", func(b *testing.B) { floorRun(b, p.prog, true) })
	}
}

// floorRun runs prog b.N times in one BPF_PROG_TEST_RUN and reports
// bpf_stats' reading a call when on.
func floorRun(b *testing.B, prog *ebpf.Program, on bool) {
	if on {
		st, err := ebpf.EnableStats(0) // BPF_STATS_RUN_TIME
		if err != nil {
			b.Skipf("BPF_ENABLE_STATS needs CAP_SYS_ADMIN: %v", err)
		}
		defer st.Close()
	}
	before, err := prog.Stats()
	if err != nil {
		b.Fatal(err)
	}
	pkt := make([]byte, 64) // an Ethernet frame's worth: tc programs want 14 bytes at least
	if _, _, err := prog.Benchmark(pkt, b.N, b.ResetTimer); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	after, err := prog.Stats()
	if err != nil {
		b.Fatal(err)
	}
	if on {
		calls := after.RunCount - before.RunCount
		if calls == 0 {
			b.Fatalf("bpf_stats on, but %d calls counted none", b.N)
		}
		b.ReportMetric(float64(after.Runtime-before.Runtime)/float64(calls), "bpf_stats-ns/call")
	}
}
