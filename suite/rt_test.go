package suite

import (
	"errors"
	"os"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLiftAgent: every thread of the process runs SCHED_FIFO at agentPrio
// while lifted, and every one is back to SCHED_NORMAL after restore, the
// threads started in between included.
func TestLiftAgent(t *testing.T) {
	restore, err := liftAgent()
	if errors.Is(err, unix.EPERM) {
		t.Skip("needs CAP_SYS_NICE to set real-time priorities")
	}
	if err != nil {
		t.Fatal(err)
	}
	checkThreads(t, unix.SCHED_FIFO, agentPrio)
	started := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		// A thread of its own, created while lifted.
		lockThread()
		close(started)
		<-stop
	}()
	<-started
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	checkThreads(t, unix.SCHED_NORMAL, 0)
	close(stop)
}

func checkThreads(t *testing.T, policy, prio uint32) {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		tid, _ := strconv.Atoi(task.Name())
		a, err := unix.SchedGetAttr(tid, 0)
		if errors.Is(err, unix.ESRCH) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if a.Policy != policy || a.Priority != prio {
			t.Errorf("thread %d: policy %d priority %d, want %d %d", tid, a.Policy, a.Priority, policy, prio)
		}
	}
}

// lockThread gives the calling goroutine a thread of its own for good.
func lockThread() { runtime.LockOSThread() }
