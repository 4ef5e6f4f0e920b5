package job_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// leftoverQEMU, which every booting test here ends with, names a QEMU of
// this test (its command line names the test's scratch directory) and no
// QEMU of another test's directory.
func TestLeftoverQEMUIsThisTestsOnly(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("needs sh")
	}
	// A shell under QEMU's name, waiting on a pipe this test holds.
	bin := filepath.Join(t.TempDir(), "qemu-system-x86_64")
	data, err := os.ReadFile(sh)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	mine, sibling := t.TempDir(), t.TempDir()
	cmd := exec.Command(bin, "-c", "read x", filepath.Join(mine, "kci-boot-1", "initrd.cpio"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	if got := leftoverQEMU(mine); !slices.Equal(got, []string{pid}) {
		t.Errorf("leftoverQEMU(this test's dir) = %v, want [%s]", got, pid)
	}
	if got := leftoverQEMU(sibling); len(got) != 0 {
		t.Errorf("leftoverQEMU(a sibling's dir) = %v, want none", got)
	}
}
