package kernel

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killStragglers kills the processes working inside dir, which no live kci
// holds a lock on: the grandchildren of a killed kci. Pdeathsig reaches
// kci's own children only, and `git worktree add` runs its checkout in a
// child that goes on writing the tree (and its index) for seconds after
// kci and its direct child are gone. It returns how many it killed, once
// they are gone or after 2 s.
func killStragglers(dir string) int {
	pids := procsIn(dir)
	own := syscall.Getpgrp()
	for _, pid := range pids {
		// The group is the dead kci's child's (proc.Cmd starts each child
		// as a group leader): killing it takes the checkout's helpers too.
		if pg, err := syscall.Getpgid(pid); err == nil && pg != own && pg > 1 {
			_ = syscall.Kill(-pg, syscall.SIGKILL) // gone already: nothing to do
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	for end := time.Now().Add(2 * time.Second); len(pids) > 0 && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
		if len(procsIn(dir)) == 0 {
			break
		}
	}
	return len(pids)
}

// buildTools are the programs kci's steps run in a tree. Only these are
// killed: a user's shell or editor that happens to sit in the tree is not
// kci's to end.
var buildTools = map[string]bool{
	"git": true, "make": true, "sh": true, "tar": true, "cp": true, "xz": true,
	"gcc": true, "cc": true, "cc1": true, "as": true, "ld": true, "objtool": true, "pahole": true,
}

// procsIn lists the build tools whose working directory is dir or below
// it (not this process).
func procsIn(dir string) []int {
	ents, _ := os.ReadDir("/proc") // no /proc: nothing can be found, nothing killed
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil {
			continue // exited, or not ours to see
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || !buildTools[strings.TrimSpace(string(comm))] {
			continue
		}
		if cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			pids = append(pids, pid)
		}
	}
	return pids
}
