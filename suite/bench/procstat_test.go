package bench

import (
	"math"
	"testing"

	"github.com/kci-dev/kci/wire"
)

const statA = `cpu  100 0 100 800 0 0 0 0 0 0
cpu0 50 0 50 400 0 0 0 0 0 0
cpu1 50 0 50 400 0 0 0 0 0 0
intr 1234
ctxt 99
`

// Over 100 ticks: cpu0 spent 30 in user, 20 in system, 10 in softirq, 40
// idle; cpu1 was idle but for 5 iowait ticks (not busy).
const statB = `cpu  130 0 120 935 5 0 10 0 0 0
cpu0 80 0 70 440 0 0 10 0 0 0
cpu1 50 0 50 495 5 0 0 0 0 0
intr 2345
`

func TestCPUDelta(t *testing.T) {
	a, err := parseProcStat([]byte(statA))
	if err != nil {
		t.Fatal(err)
	}
	b, err := parseProcStat([]byte(statB))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 2 {
		t.Fatalf("parsed %d CPUs, want 2 (the aggregate line is not a CPU)", len(a))
	}
	d := cpuDelta(a, b)
	want := []wire.CPUStat{{CPU: 0, Busy: 60, Sys: 20, Soft: 10}, {CPU: 1, Busy: 0, Sys: 0, Soft: 0}}
	if len(d) != len(want) {
		t.Fatalf("cpuDelta = %+v", d)
	}
	for i := range want {
		g, w := d[i], want[i]
		if g.CPU != w.CPU || math.Abs(g.Busy-w.Busy) > 1e-9 || math.Abs(g.Sys-w.Sys) > 1e-9 || math.Abs(g.Soft-w.Soft) > 1e-9 {
			t.Errorf("cpu%d: %+v, want %+v", w.CPU, g, w)
		}
	}
}

func TestParseProcStatErrors(t *testing.T) {
	if _, err := parseProcStat([]byte("intr 1\n")); err == nil {
		t.Error("no per-CPU lines: no error")
	}
	if _, err := parseProcStat([]byte("cpu0 1 2 x 4 5 6 7 8\n")); err == nil {
		t.Error("bad field: no error")
	}
}
