package bench

import (
	"runtime"
	"runtime/debug"
	"testing"
)

var sink [][]byte

// TestQuiesceGCHoldsCollectorOff: no collection starts while the window
// allocates far past the heap goal, and the old setting comes back.
func TestQuiesceGCHoldsCollectorOff(t *testing.T) {
	old := debug.SetGCPercent(75)
	defer debug.SetGCPercent(old)

	restore := quiesceGC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	for range 4096 {
		sink = append(sink, make([]byte, 16<<10)) // 64 MiB, past any goal
	}
	runtime.ReadMemStats(&b)
	restore()
	sink = nil
	if b.NumGC != a.NumGC {
		t.Errorf("%d collections during the quiesced window, want 0", b.NumGC-a.NumGC)
	}
	if got := debug.SetGCPercent(75); got != 75 {
		t.Errorf("GC percent after restore = %d, want 75", got)
	}
}
