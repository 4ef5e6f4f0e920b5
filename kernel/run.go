package kernel

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/kci-dev/kci/internal/childenv"
)

// command runs name with args in dir under a deadline, killing the whole
// process group on cancel, and returns combined output inside the error.
type command struct {
	dir     string
	env     []string
	timeout time.Duration
	out     io.Writer // also receives output when set (build log)
}

func (c command) run(ctx context.Context, name string, args ...string) (string, error) {
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = c.dir
	cmd.Env = childenv.Environ(c.env...) // the kernel tree is the PR's code: no secrets
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	var w io.Writer = &buf
	if c.out != nil {
		w = io.MultiWriter(&buf, c.out)
	}
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	out := buf.String()
	if err != nil {
		if ctx.Err() != nil {
			return out, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), ctx.Err())
		}
		return out, fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, tail(out, 20))
	}
	return out, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
