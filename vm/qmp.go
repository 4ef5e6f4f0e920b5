package vm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/digitalocean/go-qemu/qmp"
	"github.com/digitalocean/go-qemu/qmp/raw"
)

// qmpTimeout bounds one QMP command; QEMU answers in microseconds unless
// it is wedged.
const qmpTimeout = 5 * time.Second

// monitor is QEMU's QMP socket, through go-qemu.
type monitor struct {
	sock *qmp.SocketMonitor
	raw  *raw.Monitor
	// onCall runs before each command (the fence's end, after the start).
	onCall func()
}

// dialQMP connects once QEMU listens on the socket, giving up when ctx
// ends or QEMU exits.
func dialQMP(ctx context.Context, path string, exited <-chan struct{}) (*monitor, error) {
	var sock *qmp.SocketMonitor
	err := retryDial(ctx, path, exited, func() (err error) {
		sock, err = qmp.NewSocketMonitor("unix", path, qmpTimeout)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("qmp dial: %w", err)
	}
	m := &monitor{sock: sock, raw: raw.NewMonitor(sock)}
	if err := m.call(ctx, func() error { return sock.Connect() }); err != nil {
		return nil, fmt.Errorf("qmp handshake: %w", err)
	}
	return m, nil
}

// socketTimeout bounds waiting for QEMU to listen on its QMP socket.
const socketTimeout = 30 * time.Second

// retryDial calls dial until it succeeds: QEMU creates the socket file
// (bind) a moment before it accepts connections (listen).
func retryDial(ctx context.Context, path string, exited <-chan struct{}, dial func() error) error {
	ctx, cancel := context.WithTimeout(ctx, socketTimeout)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		err := os.ErrNotExist
		if fi, serr := os.Stat(path); serr == nil && fi.Mode()&os.ModeSocket != 0 {
			if err = dial(); err == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %v)", path, ctx.Err(), err)
		case <-exited:
			return errors.New("qemu exited before listening on " + path)
		case <-tick.C:
		}
	}
}

// call runs f with a deadline. go-qemu has none, so on timeout the
// connection is closed, which makes f return.
func (m *monitor) call(ctx context.Context, f func() error) error {
	return m.callWithin(ctx, qmpTimeout, f)
}

func (m *monitor) callWithin(ctx context.Context, d time.Duration, f func() error) error {
	if m.onCall != nil {
		m.onCall()
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- f() }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		_ = m.sock.Disconnect()
		<-errc //nolint:errcheck // the reader stops on the closed socket: the cancel is the news
		return fmt.Errorf("qmp: %w", ctx.Err())
	}
}

func (m *monitor) status(ctx context.Context) (string, error) {
	var st raw.StatusInfo
	err := m.call(ctx, func() (err error) {
		st, err = m.raw.QueryStatus()
		return err
	})
	if err != nil {
		return "", fmt.Errorf("qmp query-status: %w", err)
	}
	return st.Status.String(), nil
}

// cont starts the guest, waiting up to d for QEMU's answer: a fenced
// QEMU gives it once its vCPU thread first blocks (fence.go), about a
// second into the firmware.
func (m *monitor) cont(ctx context.Context, d time.Duration) error {
	if err := m.callWithin(ctx, d, m.raw.Cont); err != nil {
		return fmt.Errorf("qmp cont: %w", err)
	}
	return nil
}

func (m *monitor) quit(ctx context.Context) error {
	if err := m.call(ctx, m.raw.Quit); err != nil {
		return fmt.Errorf("qmp quit: %w", err)
	}
	return nil
}

// vcpuThreads returns the host thread id of each vCPU, in vCPU order.
// go-qemu's generated API lacks query-cpus-fast, so it goes raw.
func (m *monitor) vcpuThreads(ctx context.Context) ([]int, error) {
	var out []byte
	err := m.call(ctx, func() (err error) {
		out, err = m.sock.Run([]byte(`{"execute":"query-cpus-fast"}`))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("qmp query-cpus-fast: %w", err)
	}
	return parseCPUsFast(out)
}

func parseCPUsFast(b []byte) ([]int, error) {
	var r struct {
		Return []struct {
			Index  int `json:"cpu-index"`
			Thread int `json:"thread-id"`
		} `json:"return"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("query-cpus-fast: %w", err)
	}
	if len(r.Return) == 0 {
		return nil, errors.New("query-cpus-fast: no vCPUs")
	}
	tids := make([]int, len(r.Return))
	seen := make([]bool, len(r.Return))
	for _, c := range r.Return {
		if c.Index < 0 || c.Index >= len(tids) || seen[c.Index] || c.Thread <= 0 {
			return nil, fmt.Errorf("query-cpus-fast: bad entry cpu-index %d thread-id %d", c.Index, c.Thread)
		}
		tids[c.Index], seen[c.Index] = c.Thread, true
	}
	return tids, nil
}

func (m *monitor) close() { _ = m.sock.Disconnect() }
