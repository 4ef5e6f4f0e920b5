package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/job/jobtest"
)

// TestInstalledBinary uses kci the way someone who installed it would: a
// binary built into a directory of its own, run from an empty directory
// with an empty HOME and a cache that does not exist yet. It must build
// its initramfs from the sources it carries and boot a real kernel.
// Go's own module and build caches are passed through (they are the
// toolchain's, not kci's), which keeps this test to a busybox compile.
func TestInstalledBinary(t *testing.T) {
	k := jobtest.Base(t) // skips under -short or without a kernel toolchain
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Skip("needs qemu-system-x86_64 (make deps installs it)")
	}
	bin := filepath.Join(t.TempDir(), "kci")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	home, work, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	cache := filepath.Join(home, "no-cache-yet")
	env := []string{"HOME=" + home, "KCI_CACHE=" + cache, "TMPDIR=" + tmp, "PATH=" + os.Getenv("PATH")}
	for _, v := range []string{"GOMODCACHE", "GOCACHE", "GOFLAGS", "GOTOOLCHAIN", "GOPROXY"} {
		if out, err := exec.Command("go", "env", v).Output(); err == nil && strings.TrimSpace(string(out)) != "" {
			env = append(env, v+"="+strings.TrimSpace(string(out)))
		}
	}
	run := func() (string, time.Duration) {
		t.Helper()
		cmd := exec.Command(bin, "run", "--kernel", k.BzImage, "--accel", "tcg", "--quiet", "--boot-timeout", "3m", "--", "uname", "-r")
		cmd.Dir, cmd.Env = work, env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("installed kci run from an empty directory: %v\n%s", err, out)
		}
		return string(out), time.Since(start)
	}
	first, d1 := run()
	if !strings.Contains(first, k.Release) {
		t.Fatalf("guest did not report release %s:\n%s", k.Release, first)
	}
	if !strings.Contains(first, "initramfs") || !strings.Contains(first, "(built in") {
		t.Fatalf("first run did not build its initramfs:\n%s", first)
	}
	warm, d2 := run()
	if !strings.Contains(warm, "(cached in") {
		t.Fatalf("second run rebuilt the initramfs:\n%s", warm)
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Fatalf("kci left files in the directory it was run from: %v", entries)
	}
	// Without --dir, each kci run keeps its console in a new directory
	// under TMPDIR (kept on purpose: a failed boot's log stays on disk).
	kept, err := filepath.Glob(filepath.Join(tmp, "kci-run-*", "console", "*.log"))
	if err != nil || len(kept) != 2 {
		t.Fatalf("want the two runs' consoles kept under TMPDIR, found %v (%v)", kept, err)
	}
	t.Logf("installed kci: first boot %s (initramfs built), warm %s", d1.Round(time.Millisecond), d2.Round(time.Millisecond))
}
