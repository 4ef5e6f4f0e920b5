package vm

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// maxStretch bounds how far a deadline stretches for a starved machine:
// at most this many times its bound in wall time.
const maxStretch = 10

// runClock measures a deadline in the time a machine could run. On a
// loaded host QEMU's threads wait for a CPU that other processes hold;
// the guest makes no progress then, so that wait is given back to the
// deadline rather than called a hang. A guest that hangs idle waits for
// no CPU and times out on the wall clock.
type runClock struct {
	waits func() map[int]time.Duration // per thread, since the thread started
	start time.Time
	base  map[int]time.Duration
	bound time.Duration
}

// newRunClock starts a deadline of bound now.
func newRunClock(waits func() map[int]time.Duration, bound time.Duration) *runClock {
	return &runClock{waits: waits, start: time.Now(), base: waits(), bound: bound}
}

// waited is the longest any one thread has waited for a CPU since the
// deadline started: the guest stalls on its slowest needed thread.
func (c *runClock) waited() time.Duration {
	var most time.Duration
	for tid, w := range c.waits() {
		if d := w - c.base[tid]; d > most {
			most = d
		}
	}
	return most
}

// remaining is how much longer the deadline runs once its timer fired at
// now: zero when the machine has had its bound of run time, or when the
// wall clock has run maxStretch times the bound.
func (c *runClock) remaining(now time.Time) (left, waited time.Duration) {
	wall := now.Sub(c.start)
	waited = c.waited()
	if wall >= maxStretch*c.bound {
		return 0, waited
	}
	left = c.bound - (wall - waited)
	if limit := maxStretch*c.bound - wall; left > limit {
		left = limit
	}
	if left < 0 {
		left = 0
	}
	return left, waited
}

// threadWaits reads how long each of pid's threads has been runnable
// without a CPU (schedstat's run_delay). Without schedstat (a kernel
// without CONFIG_SCHED_INFO) it reads nothing, and deadlines are wall
// time.
func threadWaits(pid int) map[int]time.Duration {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	tids, err := threadIDs(pid)
	if err != nil {
		return nil
	}
	out := make(map[int]time.Duration, len(tids))
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(tid), "schedstat"))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			out[tid] = time.Duration(ns)
		}
	}
	return out
}
