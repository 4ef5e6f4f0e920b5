package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func sh(script string) Cmd { return Cmd{Name: "sh", Args: []string{"-c", script}} }

func TestFailureCarriesCommandAndOutputTail(t *testing.T) {
	out, err := sh("for i in $(seq 1 30); do echo line$i; done; exit 3").Run(context.Background())
	if err == nil {
		t.Fatal("exit 3 returned no error")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "sh -c for i in") || !strings.Contains(msg, "exit status 3") {
		t.Errorf("error does not name the command and its status: %q", msg)
	}
	if !strings.HasSuffix(msg, "\nline11\nline12\nline13\nline14\nline15\nline16\nline17\nline18\nline19\nline20\n"+
		"line21\nline22\nline23\nline24\nline25\nline26\nline27\nline28\nline29\nline30") || strings.Contains(msg, "line10\n") {
		t.Errorf("error does not end with exactly the last %d lines:\n%s", TailLines, msg)
	}
	if !strings.HasPrefix(string(out), "line1\nline2\n") {
		t.Errorf("output not returned whole on failure: %.40q", out)
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Errorf("error %T does not wrap *exec.ExitError", err)
	}
}

func TestExitCodeTellsExitFromKillAndStart(t *testing.T) {
	if code, ok := ExitCode(nil); code != 0 || !ok {
		t.Errorf("ExitCode(nil) = %d, %v; want 0, true", code, ok)
	}
	_, err := sh("exit 1").Run(context.Background())
	if code, ok := ExitCode(err); code != 1 || !ok {
		t.Errorf("exit 1: ExitCode = %d, %v; want 1, true", code, ok)
	}
	_, err = Cmd{Name: "kci-no-such-command"}.Run(context.Background())
	var pe *Error
	if !errors.As(err, &pe) || pe.Command != "kci-no-such-command" {
		t.Errorf("missing command: error %v is not a *proc.Error naming it", err)
	}
	if _, ok := ExitCode(err); ok {
		t.Errorf("missing command reported as an exit status: %v", err)
	}
	c := sh("sleep 5")
	c.Timeout = 50 * time.Millisecond
	_, err = c.Run(context.Background())
	if _, ok := ExitCode(err); ok {
		t.Errorf("timeout reported as an exit status: %v", err)
	}
	_, err = sh("kill -9 $$").Run(context.Background())
	if _, ok := ExitCode(err); ok || err == nil {
		t.Errorf("killed by a signal reported as an exit status: %v", err)
	}
}

// A timeout kills the whole group: sh's background sleep, which holds the
// output pipe, dies too, so Run returns at the deadline and not after the
// (here long) WaitDelay.
func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "grandchild")
	c := sh("sleep 60 & echo $! > " + pidFile + "; sleep 60")
	c.Timeout, c.WaitDelay = 300*time.Millisecond, 30*time.Second
	start := time.Now()
	_, err := c.Run(context.Background())
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("returned after %v: the grandchild outlived the timeout", d)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), "sh -c sleep 60 &") {
		t.Errorf("timeout error = %v, want the command and context.DeadlineExceeded", err)
	}
	var te *TimeoutError
	if !errors.As(err, &te) || te.After != c.Timeout || !strings.HasSuffix(err.Error(), ": did not finish within 300ms, killed") {
		t.Errorf("timeout error = %v, want a *TimeoutError saying it had 300ms", err)
	}
	b, rerr := os.ReadFile(pidFile)
	if rerr != nil {
		t.Fatal(rerr)
	}
	pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if perr != nil {
		t.Fatal(perr)
	}
	for deadline := time.Now().Add(3 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still running after the timeout", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive: the process exists and is not a zombie waiting for its reaper.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}

func TestCancelReportsContextCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := sh("sleep 60").Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancel: error = %v, want context.Canceled", err)
	}
}

// The caller's deadline is the caller's to word: the command's own
// Timeout (longer here) did not pass, so no TimeoutError claims it did.
func TestCallersDeadlineIsNotTheCommandsTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	c := sh("sleep 60")
	c.Timeout = time.Minute
	_, err := c.Run(ctx)
	var te *TimeoutError
	if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &te) {
		t.Errorf("caller's deadline: error = %v, want context.DeadlineExceeded and no *TimeoutError", err)
	}
}

func TestEnvironmentDropsSecretsUnlessFull(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghs_secret")
	t.Setenv("KCI_PROC_TEST", "kept")
	c := sh(`printf '%s|%s|%s' "$GITHUB_TOKEN" "$KCI_PROC_TEST" "$EXTRA"`)
	c.Env = []string{"EXTRA=added"}
	out, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "|kept|added" {
		t.Errorf("child environment gave %q, want %q", out, "|kept|added")
	}
	c.FullEnv = true
	out, err = c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "ghs_secret|kept|added" {
		t.Errorf("FullEnv gave %q, want %q", out, "ghs_secret|kept|added")
	}
}

func TestStdoutOnlyKeepsStderrForTheErrorAndTee(t *testing.T) {
	var tee bytes.Buffer
	c := sh("echo data; echo why >&2; exit 2")
	c.StdoutOnly, c.Tee = true, &tee
	out, err := c.Run(context.Background())
	if string(out) != "data\n" {
		t.Errorf("output = %q, want stdout alone", out)
	}
	if err == nil || !strings.HasSuffix(err.Error(), "exit status 2\nwhy") {
		t.Errorf("error = %v, want stderr's tail", err)
	}
	if got := tee.String(); !strings.Contains(got, "data\n") || !strings.Contains(got, "why\n") {
		t.Errorf("tee got %q, want both streams", got)
	}
}

func TestDirStdinTee(t *testing.T) {
	dir := t.TempDir()
	var tee bytes.Buffer
	c := sh("pwd; cat")
	c.Dir, c.Stdin, c.Tee = dir, strings.NewReader("from stdin\n"), &tee
	out, err := c.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := dir + "\nfrom stdin\n"
	if string(out) != want || tee.String() != want {
		t.Errorf("output %q, tee %q; want %q", out, tee.String(), want)
	}
}

// Start leaves the caller the pid, which leads its own process group.
func TestStartLeadsItsOwnGroup(t *testing.T) {
	p, err := sh(`read _ _ _ _ pgrp _ < /proc/$$/stat; echo $pgrp`).Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != strconv.Itoa(p.Pid()) {
		t.Errorf("process group %s, want the child's own pid %d", got, p.Pid())
	}
}

// A child outlives the thread that asked for it: Pdeathsig follows the
// forking thread, and a goroutine that returns locked to its thread ends
// that thread.
func TestChildSurvivesItsCallersThread(t *testing.T) {
	// Several at once: one may run on the main thread, which Go never ends.
	const n = 4
	started := make(chan *Process, n)
	for range n {
		go func() {
			runtime.LockOSThread() // never unlocked: the runtime ends this thread
			p, err := sh("sleep 1").Start(context.Background())
			if err != nil {
				t.Error(err)
			}
			started <- p
		}()
	}
	for range n {
		if p := <-started; p != nil {
			if _, err := p.Wait(); err != nil {
				t.Errorf("the child died with its caller's thread: %v", err)
			}
		}
	}
}

// TestHelperHoldsChild is not a test: TestChildDiesWithKCI runs it in a
// child test binary, which starts a shell that starts a long sleep in the
// background (as make starts its compilers), writes both pids and waits to
// be killed.
func TestHelperHoldsChild(t *testing.T) {
	out := os.Getenv("KCI_PROC_HELPER")
	if out == "" {
		t.Skip("helper process only")
	}
	p, err := sh("sleep 60 & echo $! >" + out + ".grandchild; wait").Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte(strconv.Itoa(p.Pid())), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Minute)
}

// SIGKILL gives kci no chance to cancel anything: the kernel must kill
// its children, and the reaper their children.
func TestChildDiesWithKCI(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperHoldsChild$")
	helper.Env = append(os.Environ(), "KCI_PROC_HELPER="+pidFile)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var pid, grandchild int
	for end := time.Now().Add(10 * time.Second); (pid == 0 || grandchild == 0) && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		pid, grandchild = readPid(pidFile), readPid(pidFile+".grandchild")
	}
	if pid == 0 || grandchild == 0 {
		_ = helper.Process.Kill()
		t.Fatal("helper never started its child and grandchild")
	}
	_ = helper.Process.Kill()
	_ = helper.Wait()
	for name, pid := range map[string]int{"child": pid, "grandchild": grandchild} {
		if !goneWithin(pid, 2*time.Second) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("%s %d outlived its SIGKILLed kci by 2 s", name, pid)
		}
	}
}

// A child's background job outlives neither the child's end nor kci.
func TestLeftoverOfAnEndedChildIsKilled(t *testing.T) {
	out, err := sh("sleep 60 >/dev/null 2>&1 & echo $!").Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	if pid == 0 || !goneWithin(pid, 2*time.Second) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("background job %q outlived its ended parent", out)
	}
}

func readPid(file string) int {
	b, _ := os.ReadFile(file)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// goneWithin says whether pid has exited within d: no such process, or a
// zombie its new parent (init) has not reaped yet.
func goneWithin(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		if s := string(b); strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z") {
			return true
		}
	}
	return false
}

// niceOf reads the niceness field (19) of /proc/PID/stat lines in out,
// which follows the ")" that ends the command name.
func niceOf(t *testing.T, stat string) int {
	t.Helper()
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+2:])
	n, err := strconv.Atoi(f[16]) // field 19 of stat, 17th after the name
	if err != nil {
		t.Fatalf("stat %q: %v", stat, err)
	}
	return n
}

func TestNiceReachesGrandchildrenAndLeavesOthers(t *testing.T) {
	own := niceOf(t, readStat(t, "self"))
	want := max(own, 7)
	// The shell reports itself and a child it forks: make's compilers
	// must run at the niceness too.
	out, err := Cmd{Name: "sh", Args: []string{"-c", "cat /proc/$$/stat; cat /proc/self/stat"}, Nice: 7}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if got := niceOf(t, l); got != want {
			t.Errorf("niceness %d, want %d: %s", got, want, l)
		}
	}
	// A Cmd without Nice, started after, is not lowered with it.
	out, err = sh("cat /proc/self/stat").Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := niceOf(t, string(out)); got != own {
		t.Errorf("plain child niceness %d, want kci's own %d", got, own)
	}
}

func readStat(t *testing.T, pid string) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCPUCountsReapedGrandchildren(t *testing.T) {
	// The shell only waits; its child burns the CPU, as make's compilers
	// do. CPU must be the same as what this process's children-usage
	// grew by (no other child runs: these tests are sequential).
	before := childrenCPU(t)
	cpu := time.Second // added to, not overwritten
	c := sh(`sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'`)
	c.CPU = &cpu
	if _, err := c.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, want := cpu-time.Second, childrenCPU(t)-before
	if got < 20*time.Millisecond {
		t.Errorf("CPU %v for a busy loop in a grandchild: its time was not counted", got)
	}
	if d := got - want; d < -10*time.Millisecond || d > 10*time.Millisecond {
		t.Errorf("CPU %v, but the children's usage grew by %v", got, want)
	}
}

func childrenCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
