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
	// Wait for sh to start its sleep: 100 ms was not enough on a loaded
	// CI host.
	var kids []byte
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		kids, err = os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", orphan.Process.Pid, orphan.Process.Pid))
		if err != nil || len(strings.Fields(string(kids))) > 0 {
			break
		}
	}
	if err != nil || len(strings.Fields(string(kids))) != 1 {
		t.Fatalf("sh's children: %q, %v", kids, err)
	}
	sleepPid := strings.Fields(string(kids))[0]
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
