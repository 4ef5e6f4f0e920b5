package kernel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// blockScript stops a first run at a point: a git filter (import: git add
// runs the clean filter; worktree: the checkout of git worktree add runs
// the smudge filter) or a make recipe (config, build) calls it with the
// point's name. Elsewhere it passes its input through. Blocked, it writes
// to stderr like make does, so it dies of SIGPIPE once kci has gone.
const blockScript = `[ "$KCI_BLOCK" = "$1" ] || exec cat
touch "$KCI_MARK"
while :; do echo "blocked at $1" >&2; sleep 0.1; done
`

// interruptTarball is a fake kernel tarball whose steps can block, and
// the global git config defining its filter.
func interruptTarball(t *testing.T) (tarball, gitConfig string) {
	t.Helper()
	dir := t.TempDir()
	block := filepath.Join(dir, "block.sh")
	mk := fakeMake(t)
	mk = strings.Replace(mk, "tinyconfig x86_64_defconfig:\n", "tinyconfig x86_64_defconfig:\n\tsh "+block+" config </dev/null\n", 1)
	mk = strings.Replace(mk, "bzImage:\n", "bzImage:\n\tsh "+block+" build </dev/null\n", 1)
	files := map[string]string{
		"block.sh":                       blockScript,
		"linux-fake/Makefile":            mk,
		"linux-fake/hello.c":             "int a;\n",
		"linux-fake/.gitattributes":      "hello.c filter=kciblock\n",
		"gitconfig":                      fmt.Sprintf("[filter \"kciblock\"]\n\tclean = sh %s import\n\tsmudge = sh %s worktree\n", block, block),
		"linux-fake/include/placeholder": "",
	}
	writeFiles(t, dir, files)
	tarball = filepath.Join(dir, "linux-fake.tar.gz")
	if out, err := exec.Command("tar", "czf", tarball, "-C", dir, "linux-fake").CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	return tarball, filepath.Join(dir, "gitconfig")
}

// TestHelperInterruptedBuild is not a test: the interruption test runs it
// in a child process, a first run of Build that it then signals.
func TestHelperInterruptedBuild(t *testing.T) {
	if os.Getenv("KCI_INTERRUPT_CHILD") == "" {
		t.Skip("helper process only")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if os.Getenv("KCI_BLOCK") == "publish" {
		testHookPublish = func(ctx context.Context) {
			_ = os.WriteFile(os.Getenv("KCI_MARK"), nil, 0o644)
			<-ctx.Done()
		}
	}
	c := &Cache{Root: os.Getenv("KCI_ROOT")}
	_, err := c.Build(ctx, Request{Base: Base{Tarball: os.Getenv("KCI_TARBALL")}}, Options{Jobs: 1})
	switch {
	case err == nil:
		os.Exit(10) // exit 0 is the test framework's "os.Exit(0) during a test"
	case errors.Is(err, context.Canceled):
		os.Exit(130)
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// A first run interrupted at each point by each signal leaves nothing that
// breaks the next run, which repairs what is left and says so in a line;
// SIGINT and SIGTERM end the run within 2 s; nothing it started survives.
func TestInterruptAnyPointNextRunCompletes(t *testing.T) {
	for _, tool := range []string{"git", "make", "tar"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("needs " + tool)
		}
	}
	tarball, gitConfig := interruptTarball(t)
	var rows []string
	for _, point := range []string{"import", "worktree", "config", "build", "publish"} {
		for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
			rows = append(rows, interruptOnce(t, tarball, gitConfig, point, sig))
		}
	}
	t.Logf("point     signal   first run's exit         survivors  next run\n%s", strings.Join(rows, "\n"))
}

// interruptOnce runs a first Build in a child, signals it at point, checks
// how it ended and that the next Build completes; it returns the row.
func interruptOnce(t *testing.T, tarball, gitConfig, point string, sig syscall.Signal) string {
	t.Helper()
	root, mark := t.TempDir(), filepath.Join(t.TempDir(), "mark")
	id := fmt.Sprintf("%s-%d-%d", point, sig, time.Now().UnixNano())
	child := exec.Command(os.Args[0], "-test.run=^TestHelperInterruptedBuild$")
	child.Env = append(os.Environ(), "KCI_INTERRUPT_CHILD=1", "KCI_ROOT="+root, "KCI_TARBALL="+tarball,
		"KCI_BLOCK="+point, "KCI_MARK="+mark, "GIT_CONFIG_GLOBAL="+gitConfig, "KCI_RUN_ID="+id)
	var stderr strings.Builder
	child.Stderr = &stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	for end := time.Now().Add(30 * time.Second); !exists(mark); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			_ = child.Process.Kill()
			<-done
			t.Fatalf("%s: the first run never reached it: %s", point, stderr.String())
		}
	}
	_ = child.Process.Signal(sig)
	signalled := time.Now()
	var exit string
	select {
	case err := <-done:
		exit = fmt.Sprintf("%v after %v", exitOf(err), time.Since(signalled).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		_ = child.Process.Kill()
		<-done
		exit = "still running 10 s on"
	}
	if sig != syscall.SIGKILL && time.Since(signalled) > 2*time.Second {
		t.Errorf("%s, %v: the first run took %v to end (%s)", point, sig, time.Since(signalled), exit)
	}
	survivors := waitNoProcess(id, 2*time.Second)
	if survivors > 0 {
		t.Errorf("%s, %v: %d processes of the first run outlived it by 2 s", point, sig, survivors)
	}
	return fmt.Sprintf("%-9s %-8s %-24s %-10d %s", point, sigName(sig), exit, survivors, nextRun(t, root, tarball, point, sig))
}

// nextRun builds again in root, as a later kci would, and says how it went.
func nextRun(t *testing.T, root, tarball, point string, sig syscall.Signal) string {
	t.Helper()
	m := &lineMeter{}
	c := &Cache{Root: root, Meter: m}
	t.Cleanup(func() { waitTrash(c) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	a, err := c.Build(ctx, Request{Base: Base{Tarball: tarball}}, Options{Jobs: 1})
	if err != nil {
		t.Errorf("%s, %v: the next run failed: %v", point, sig, err)
		return "FAILED: " + err.Error()
	}
	var said []string
	for _, l := range m.lines {
		if strings.Contains(l, "repaired") {
			said = append(said, strings.TrimPrefix(l, "begin "))
		}
	}
	if len(said) > 1 {
		t.Errorf("%s, %v: the repair took %d lines: %q", point, sig, len(said), said)
	}
	if ents, _ := os.ReadDir(c.path("builds")); len(ents) > 0 {
		t.Errorf("%s, %v: trees left in builds/ after the next run: %v", point, sig, ents)
	}
	for _, dir := range []string{"base", "kernels"} {
		if tmps, _ := filepath.Glob(c.path(dir, ".tmp-*")); len(tmps) > 0 {
			t.Errorf("%s, %v: half-written entries left after the next run: %v", point, sig, tmps)
		}
	}
	hit := ""
	if a.CacheHit {
		hit = " (cache hit: the first run published)"
	}
	return fmt.Sprintf("ok in %v%s; %s", time.Since(start).Round(10*time.Millisecond), hit, strings.Join(append(said, "")[:1], ""))
}

func exitOf(err error) string {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return fmt.Sprint(err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed (" + sigName(ws.Signal()) + ")"
	}
	return fmt.Sprintf("exit %d", ee.ExitCode())
}

func sigName(s syscall.Signal) string {
	return map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGKILL: "SIGKILL"}[s]
}

// waitNoProcess waits up to d for no process to carry KCI_RUN_ID=id in
// its environment, and returns how many still do.
func waitNoProcess(id string, d time.Duration) int {
	for end := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		n := 0
		envs, _ := filepath.Glob("/proc/[0-9]*/environ")
		for _, e := range envs {
			if b, err := os.ReadFile(e); err == nil && strings.Contains(string(b), "KCI_RUN_ID="+id+"\x00") {
				n++
			}
		}
		if n == 0 || time.Now().After(end) {
			return n
		}
	}
}
