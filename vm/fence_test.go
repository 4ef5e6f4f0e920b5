package vm

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Host CPUs are handed out one fenced QEMU each, across processes (the
// locks are files), and waited for when all are taken.
func TestTakeHostCPU(t *testing.T) {
	dir := t.TempDir()
	pool := []int{5, 7}
	a, err := takeHostCPU(context.Background(), dir, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := takeHostCPU(context.Background(), dir, pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.cpu != 5 || b.cpu != 7 {
		t.Fatalf("took CPUs %d and %d, want 5 and 7", a.cpu, b.cpu)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if c, err := takeHostCPU(ctx, dir, pool, nil); err == nil || !strings.Contains(err.Error(), "held by another fenced QEMU") {
		t.Fatalf("a third QEMU on two CPUs: %+v, %v; want it to wait and give up", c, err)
	}
	got := make(chan *hostCPU)
	go func() {
		c, _ := takeHostCPU(context.Background(), dir, pool, nil)
		got <- c
	}()
	time.Sleep(100 * time.Millisecond)
	a.release()
	select {
	case c := <-got:
		if c == nil || c.cpu != 5 {
			t.Fatalf("after CPU 5's release the waiter took %+v", c)
		}
		c.release()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not take the released CPU")
	}
	b.release()
}

func TestFencePool(t *testing.T) {
	if p, err := fencePool([]int{3}); err != nil || len(p) != 1 || p[0] != 3 {
		t.Errorf("fencePool([3]) = %v, %v: want the pin list", p, err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	p, err := fencePool(nil)
	if set.Count() < 2 {
		if err == nil {
			t.Errorf("one host CPU: pool %v, want a refusal", p)
		}
		return
	}
	want := set.Count() - 1 // the first is left to the rest of the machine
	if err != nil || len(p) != want {
		t.Errorf("fencePool(nil) = %v, %v: want %d of the %d CPUs kci may use", p, err, want, set.Count())
	}
	for _, c := range p {
		if !set.IsSet(c) {
			t.Errorf("pool CPU %d is not one kci may run on", c)
		}
		if c == firstCPU(set) {
			t.Errorf("pool %v holds CPU %d, the first kci may run on", p, c)
		}
	}
}

func firstCPU(set unix.CPUSet) int {
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			return c
		}
	}
	return -1
}

// fenceThreads sets every thread of a running process, and
// unfenceThreads takes the priority back (the affinity stays).
func TestFenceThreads(t *testing.T) {
	// A fake QEMU whose guest says nothing: a Go process, several threads.
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-qmp", "unix:"+filepath.Join(dir, "q")+",server=on",
		"-chardev", "file,id=kci,path="+filepath.Join(dir, "e"), "-chardev", "file,id=con,path="+filepath.Join(dir, "c"))
	cmd.Env = append(os.Environ(), "KCI_FAKE_QEMU=silent")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	time.Sleep(200 * time.Millisecond)
	err := fenceThreads(pid, 0)
	if errors.Is(err, unix.EPERM) {
		t.Skip("needs root or CAP_SYS_NICE to set SCHED_FIFO")
	}
	if err != nil {
		t.Fatal(err)
	}
	tids, err := threadIDs(pid)
	if err != nil || len(tids) < 2 {
		t.Fatalf("threads %v, %v: want a multi-threaded child", tids, err)
	}
	check := func(policy uint32) {
		t.Helper()
		for _, tid := range tids {
			a, err := unix.SchedGetAttr(tid, 0)
			var set unix.CPUSet
			if err == nil {
				err = unix.SchedGetaffinity(tid, &set)
			}
			if err != nil {
				t.Fatalf("thread %d: %v", tid, err)
			}
			if a.Policy != policy || set.Count() != 1 || !set.IsSet(0) {
				t.Errorf("thread %d: policy %d on %d CPUs (CPU 0: %v), want policy %d on CPU 0 alone", tid, a.Policy, set.Count(), set.IsSet(0), policy)
			}
		}
	}
	check(unix.SCHED_FIFO)
	if err := unfenceThreads(pid); err != nil {
		t.Fatal(err)
	}
	check(unix.SCHED_NORMAL)
}

// A batch guest of two vCPUs runs fenced: every thread of its QEMU on
// the host CPU kci took, at SCHED_FIFO, from the start; the CPU is free
// again once QEMU is gone.
func TestFakeFenced(t *testing.T) {
	res, err := fakeRun(t, context.Background(), "fenced", func(c *Config) { c.CPUs = 2 })
	if err != nil {
		t.Fatal(err)
	}
	ml := res.MainLoop
	if ml == nil {
		t.Fatal("no main-loop record for two vCPUs under icount")
	}
	if !ml.Fenced {
		if !strings.Contains(ml.Why, "CAP_SYS_NICE") {
			t.Fatalf("not fenced: %q", ml.Why)
		}
		t.Skip("needs root or CAP_SYS_NICE: " + ml.Why)
	}
	b, err := os.ReadFile(res.Console)
	if err != nil {
		t.Fatal(err)
	}
	want := "kci-fake: policy 1 cpus [" + strconv.Itoa(ml.HostCPU) + "]"
	if !strings.Contains(string(b), want) {
		t.Errorf("console %q: want %q", b, want)
	}
	if ml.String() != "fenced on host CPU "+strconv.Itoa(ml.HostCPU) {
		t.Errorf("record %q", ml.String())
	}
	h, err := tryHostCPU(fenceLockDir, ml.HostCPU)
	if h == nil || err != nil {
		t.Errorf("host CPU %d still held after QEMU exited: %v", ml.HostCPU, err)
	}
	h.release()
}

// A boot whose host CPUs another fenced QEMU holds waits for one, and its
// first phase says how long.
func TestFakeFenceWaits(t *testing.T) {
	if err := FenceCheck(nil); err != nil {
		t.Skip("cannot fence here: " + err.Error())
	}
	pool, err := fencePool(nil)
	if err != nil {
		t.Fatal(err)
	}
	pin := pool[len(pool)-1:]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	held, err := takeHostCPU(ctx, fenceLockDir, pin, nil)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	const hold = 300 * time.Millisecond
	time.AfterFunc(hold, held.release)
	var mu sync.Mutex
	var notes []string
	res, err := fakeRun(t, context.Background(), "fenced", func(c *Config) {
		c.CPUs, c.Pin = 2, pin
		c.Note = func(m string) { mu.Lock(); notes = append(notes, m); mu.Unlock() }
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	cpu := strconv.Itoa(pin[0])
	if len(notes) != 2 || notes[0] != "waiting for a host CPU to fence QEMU on: CPU "+cpu+" is held by another fenced QEMU (of this kci or another)" ||
		!strings.HasPrefix(notes[1], "fenced on host CPU "+cpu+" after waiting ") || !strings.HasSuffix(notes[1], " s") {
		t.Errorf("notes %q: want the wait's start, then its end", notes)
	}
	if len(res.Phases) < 2 || res.Phases[0].Name != PhaseFence || res.Phases[1].Name != PhaseQEMU {
		t.Fatalf("phases %v: want fence, then qemu", res.Phases)
	}
	if w := res.Phases[0].Duration; w < hold-10*time.Millisecond {
		t.Errorf("fence phase %v, want the %v another QEMU held the CPU", w, hold)
	}
	if !res.MainLoop.fenced() || res.MainLoop.HostCPU != pin[0] {
		t.Errorf("main loop %v, want fenced on %d", res.MainLoop, pin[0])
	}
}

// FenceCheck agrees with fenceThreads on whether this host lets kci
// fence, and leaves no thread of kci's at real-time priority.
func TestFenceCheck(t *testing.T) {
	err := FenceCheck([]int{0})
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	ferr := fenceThreads(cmd.Process.Pid, 0)
	if (err == nil) != (ferr == nil) {
		t.Fatalf("FenceCheck: %v, but fencing a process: %v", err, ferr)
	}
	if err != nil && !strings.Contains(err.Error(), "CAP_SYS_NICE") {
		t.Errorf("FenceCheck: %q: want the privilege named", err)
	}
	tids, _ := threadIDs(os.Getpid())
	for _, tid := range tids {
		if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy != unix.SCHED_NORMAL {
			t.Errorf("kci's thread %d left at policy %d", tid, a.Policy)
		}
	}
}
