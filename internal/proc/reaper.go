package proc

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
)

// reaperScript is the reaper: a shell that reads "+PGID" for each group
// kci starts and "-PGID" for each it has reaped, and when its input ends
// kills every group still listed. Its input is a pipe only kci holds, so
// it ends when kci does, however it dies: the kernel closes a SIGKILLed
// process's files. Pdeathsig kills a child only; its own children (git's
// helpers, make's compilers) are in its group, and the reaper ends them.
const reaperScript = `g=' '
while read -r l; do
	case $l in
	+*) g="$g${l#+} " ;;
	-*) p=${l#-}
		case $g in *" $p "*) g="${g%% $p *} ${g#* $p }" ;; esac ;;
	esac
done
for p in $g; do kill -KILL -"$p" 2>/dev/null; done
`

// reaper is kci's one reaper, started with the first child.
var reaper struct {
	once sync.Once
	mu   sync.Mutex
	w    *os.File // kci's end of the reaper's input
	err  error
}

// startReaper starts the reaper once. It leads its own process group, so
// a ^C to kci's terminal group does not end it before kci's children.
// Nothing waits for it but a goroutine: it lives as long as kci.
func startReaper() error {
	reaper.once.Do(func() {
		r, w, err := os.Pipe() // close-on-exec: no other child holds w
		if err != nil {
			reaper.err = fmt.Errorf("reaper: %w", err)
			return
		}
		defer func() { _ = r.Close() }() // the reaper holds its own copy
		cmd := exec.Command("/bin/sh", "-c", reaperScript)
		cmd.Stdin = r
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			_ = w.Close() // nothing was started to read it
			reaper.err = fmt.Errorf("reaper: %w", err)
			return
		}
		go func() { _ = cmd.Wait() }()
		reaper.w = w
	})
	return reaper.err
}

// reaperTell tells the reaper that group pgid began (+) or is over (-).
// A reaper that is gone cannot be told: the child still has Pdeathsig.
func reaperTell(op byte, pgid int) {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	if reaper.w != nil {
		_, _ = reaper.w.Write([]byte(string(op) + strconv.Itoa(pgid) + "\n"))
	}
}

// endGroup kills what is left of a reaped child's group (a background job
// it left behind) and tells the reaper the group is over. The leader was
// reaped, but its pid is not reused while its group has members, so the
// kill reaches only them.
func endGroup(pgid int) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // ESRCH: nothing was left
	reaperTell('-', pgid)
}
