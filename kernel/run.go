package kernel

import (
	"context"
	"io"
	"time"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/internal/proc"
)

// command runs name with args in dir under a deadline, killing the whole
// process group on cancel, and returns combined output inside the error
// (internal/proc does the work; this keeps the kernel stage's call sites
// short).
type command struct {
	dir     string
	env     []string
	timeout time.Duration
	out     io.Writer      // also receives output when set (build log)
	nice    int            // proc.Cmd.Nice: buildNice for make
	cpu     *time.Duration // proc.Cmd.CPU: make's, for the phase it runs in
}

// run returns the output also on failure; an exit status is an
// *exec.ExitError inside the error, a timeout or cancel ctx.Err().
func (c command) run(ctx context.Context, name string, args ...string) (string, error) {
	// The kernel tree is the PR's code: proc's default environment has
	// no secrets.
	out, err := proc.Cmd{Name: name, Args: args, Dir: c.dir, Env: c.env, Timeout: c.timeout, Tee: c.out, Nice: c.nice, CPU: c.cpu}.Run(ctx)
	return string(out), err
}

// buildNice is make's niceness: a kernel build takes the CPU that boots
// beside it leave (a second kci on the machine, CI's packages side by
// side), so a boot's wall time, its timeout and a KVM boot's numbers do
// not depend on how many compilers run next to it.
const buildNice = 10

// nice is make's niceness under o.
func (o Options) nice() int {
	if o.Foreground {
		return 0
	}
	return buildNice
}

func tail(s string, n int) string { return lines.Last(s, n) }
