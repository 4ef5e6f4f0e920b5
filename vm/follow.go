package vm

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// A batch boot's guest→host channels (the serial console and the agent's
// port) are regular files QEMU writes and kci follows. A file write never
// returns EAGAIN. A pipe or a socket does once kci's reader falls behind
// (QEMU makes its chardevs non-blocking), and QEMU then retries from its
// main loop, at a host-scheduled moment: the guest's serial driver spins
// on the transmitter until then, or its port writes wait on the host, and
// on several vCPUs under icount that moved a boot's instruction counts
// (docs/internals.md, "What reaches the guest").

// followPoll is how long a follower sleeps at the end of its file.
const followPoll = 5 * time.Millisecond

// follower reads a file another process is still writing: at its end it
// waits and reads again, until writer is closed (QEMU exited; it then
// reads what is left and returns io.EOF) or stop is (at once io.EOF).
type follower struct {
	f      *os.File
	writer <-chan struct{}
	stop   <-chan struct{}
	last   bool
	t      *time.Timer
}

// openFollower creates path empty and opens it for following. kci
// creates it before QEMU starts, so the reader holds the file QEMU will
// write (QEMU's O_TRUNC of an empty file changes nothing).
func openFollower(path string) (*follower, error) {
	w, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &follower{f: f}, nil
}

// start names when the writer is gone and when to give up.
func (r *follower) start(writer, stop <-chan struct{}) {
	r.writer, r.stop = writer, stop
}

func (r *follower) Read(p []byte) (int, error) {
	for {
		n, err := r.f.Read(p)
		if n > 0 {
			return n, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("follow %s: %w", r.f.Name(), err)
		}
		if r.last {
			return 0, io.EOF
		}
		if r.t == nil {
			r.t = time.NewTimer(followPoll)
		} else {
			r.t.Reset(followPoll)
		}
		select {
		case <-r.stop:
			return 0, io.EOF
		case <-r.writer:
			r.last = true // one more read takes the writer's last bytes
		case <-r.t.C:
		}
	}
}

func (r *follower) Close() error { return r.f.Close() }
