package kernel

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A build tool left working in a tree by a killed run is killed with its
// group; the tree's other processes (not build tools) are left alone.
func TestKillStragglers(t *testing.T) {
	tree := t.TempDir()
	sub := filepath.Join(tree, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// sh runs sleep in its group, as git's checkout child runs in the
	// dead kci's child's group.
	orphan := exec.Command("sh", "-c", "sleep 30; true")
	orphan.Dir = sub
	orphan.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	other := exec.Command("sleep", "30") // not a build tool
	other.Dir = tree
	for _, c := range []*exec.Cmd{orphan, other} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	sleepPid := waitForSleep(t, orphan.Process.Pid)
	if n := killStragglers(tree); n != 1 {
		t.Errorf("killStragglers = %d, want 1 (the sh)", n)
	}
	done := make(chan error, 1)
	go func() { done <- orphan.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("the straggler still runs 2 s after killStragglers")
	}
	// Its sleep is killed too: gone, or a zombie waiting for init.
	stat, err := os.ReadFile("/proc/" + sleepPid + "/stat")
	if err == nil && !strings.Contains(string(stat), ") Z ") {
		t.Errorf("the straggler's group survived: %s", stat)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a process that is not a build tool was killed: %v", err)
	}
}

// waitForSleep waits until sh's child has become sleep and returns its
// pid. Until its exec the forked child is a second sh, a build tool in
// the tree: a loaded CI host once caught it there.
func waitForSleep(t *testing.T, sh int) string {
	t.Helper()
	var kids []byte
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		kids, err = os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", sh, sh))
		if err != nil {
			break
		}
		if f := strings.Fields(string(kids)); len(f) == 1 {
			comm, _ := os.ReadFile("/proc/" + f[0] + "/comm")
			if strings.TrimSpace(string(comm)) == "sleep" {
				return f[0]
			}
		}
	}
	t.Fatalf("sh's children never became one sleep: %q, %v", kids, err)
	return ""
}
