package vm

import (
	"os"
	"testing"
	"time"
)

func TestRunClockRemaining(t *testing.T) {
	const bound = 10 * time.Second
	for _, tc := range []struct {
		name               string
		wall               time.Duration
		waits              map[int]time.Duration // on top of the base
		wantLeft, wantWait time.Duration
	}{
		{"idle machine: wall time", bound, nil, 0, 0},
		{"early check", 4 * time.Second, nil, 6 * time.Second, 0},
		{"the slowest thread counts", bound, map[int]time.Duration{1: 2 * time.Second, 2: 7 * time.Second}, 7 * time.Second, 7 * time.Second},
		{"a new thread's whole wait counts", bound, map[int]time.Duration{3: 3 * time.Second}, 3 * time.Second, 3 * time.Second},
		{"run time spent", 30 * time.Second, map[int]time.Duration{1: 20 * time.Second}, 0, 20 * time.Second},
		{"stretch capped", 95 * time.Second, map[int]time.Duration{1: 94 * time.Second}, 5 * time.Second, 94 * time.Second},
		{"past the cap", maxStretch * bound, map[int]time.Duration{1: maxStretch * bound}, 0, maxStretch * bound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := map[int]time.Duration{1: time.Minute, 2: time.Hour}
			now := map[int]time.Duration{}
			for tid, w := range base {
				now[tid] = w + tc.waits[tid]
			}
			for tid, w := range tc.waits {
				if _, ok := base[tid]; !ok {
					now[tid] = w
				}
			}
			c := &runClock{waits: func() map[int]time.Duration { return now }, start: time.Unix(0, 0), base: base, bound: bound}
			left, waited := c.remaining(time.Unix(0, 0).Add(tc.wall))
			if left != tc.wantLeft || waited != tc.wantWait {
				t.Errorf("remaining after %v = %v, waited %v; want %v, %v", tc.wall, left, waited, tc.wantLeft, tc.wantWait)
			}
		})
	}
}

// TestThreadWaits reads this process's own threads: at least the calling
// one, none negative.
func TestThreadWaits(t *testing.T) {
	w := threadWaits(os.Getpid())
	if _, err := os.Stat("/proc/self/schedstat"); err != nil {
		if len(w) != 0 {
			t.Errorf("no schedstat, yet read %v", w)
		}
		t.Skip("needs schedstat (CONFIG_SCHED_INFO)")
	}
	if len(w) == 0 {
		t.Fatal("read no thread of this process")
	}
	for tid, d := range w {
		if d < 0 {
			t.Errorf("thread %d waited %v", tid, d)
		}
	}
}
