package vm

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kci-dev/kci/internal/childenv"
	"github.com/kci-dev/kci/vm/event"
)

// reapTimeout bounds how long a killed QEMU may take to be reaped.
const reapTimeout = 10 * time.Second

// machine is a running QEMU process.
type machine struct {
	cmd     *exec.Cmd
	group   bool          // QEMU leads its own process group
	exited  chan struct{} // closed once QEMU has been reaped
	waitErr error         // valid after exited is closed
	stderr  *tailBuffer
	once    sync.Once
}

// startMachine starts QEMU. Batch runs get their own process group so a
// kill takes anything QEMU spawned with it; interactive runs stay in the
// terminal's foreground group so QEMU can read the terminal.
func startMachine(qemu string, args []string, interactive bool) (*machine, error) {
	path, err := exec.LookPath(qemu)
	if err != nil {
		return nil, infra("qemu", err)
	}
	m := &machine{exited: make(chan struct{}), stderr: &tailBuffer{max: 16 << 10}, group: !interactive}
	m.cmd = exec.Command(path, args...)
	m.cmd.Env = childenv.Environ() // QEMU needs no credentials kci holds
	// A batch QEMU's console is a file: anything on its stdout is QEMU's
	// own words, kept with its stderr for the error.
	m.cmd.Stdout, m.cmd.Stderr = m.stderr, m.stderr
	if interactive {
		m.cmd.Stdin, m.cmd.Stdout = os.Stdin, os.Stdout
		m.cmd.Stderr = io.MultiWriter(os.Stderr, m.stderr)
	}
	// Pdeathsig: should kci itself be killed outright, QEMU follows.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: m.group, Pdeathsig: syscall.SIGKILL}
	if err := m.cmd.Start(); err != nil {
		return nil, infra("start qemu", err)
	}
	go func() {
		m.waitErr = m.cmd.Wait()
		close(m.exited)
	}()
	return m, nil
}

func (m *machine) pid() int { return m.cmd.Process.Pid }

func (m *machine) signal(sig syscall.Signal) {
	if m.group {
		_ = syscall.Kill(-m.pid(), sig)
	} else {
		_ = syscall.Kill(m.pid(), sig)
	}
}

// kill stops QEMU and reaps it. Interactive QEMU gets SIGTERM first so it
// can restore the terminal.
func (m *machine) kill() error {
	var err error
	m.once.Do(func() {
		select {
		case <-m.exited:
			return
		default:
		}
		if !m.group {
			m.signal(syscall.SIGTERM)
			select {
			case <-m.exited:
				return
			case <-time.After(3 * time.Second):
			}
		}
		m.signal(syscall.SIGKILL)
		select {
		case <-m.exited:
		case <-time.After(reapTimeout):
			err = infra("kill qemu", fmt.Errorf("pid %d not reaped after %v", m.pid(), reapTimeout))
		}
	})
	return err
}

// exitStatus describes how QEMU ended, once it has.
func (m *machine) exitStatus() string {
	if m.waitErr == nil {
		return "exit status 0"
	}
	return m.waitErr.Error()
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

// readConsole copies QEMU's console to tee as it comes, and sends
// complete lines to lines (until stop is closed), which it closes at EOF.
func readConsole(r io.Reader, tee io.Writer, lines chan<- string, stop <-chan struct{}) {
	defer close(lines)
	send := func(l string) {
		select {
		case lines <- l:
		case <-stop:
		}
	}
	buf := make([]byte, 32<<10)
	var partial []byte
	for {
		n, err := r.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			if tee != nil {
				_, _ = tee.Write(chunk)
			}
			partial = append(partial, chunk...)
			for {
				i := strings.IndexByte(string(partial), '\n')
				if i < 0 {
					break
				}
				send(string(partial[:i]))
				partial = partial[i+1:]
			}
		}
		if err != nil {
			if len(partial) > 0 {
				send(string(partial))
			}
			return
		}
	}
}

// agentMsg is one line from the agent's port: an event, or why the line
// could not be read.
type agentMsg struct {
	ev  event.Event
	err error
}

// maxEventLine bounds one JSON line (folded profiles are the biggest).
const maxEventLine = 64 << 20

// readEvents decodes the agent's lines into out (until stop is closed),
// which it closes at EOF.
func readEvents(c io.Reader, out chan<- agentMsg, stop <-chan struct{}) {
	defer close(out)
	send := func(m agentMsg) bool {
		select {
		case out <- m:
			return true
		case <-stop:
			return false
		}
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 64<<10), maxEventLine)
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var m agentMsg
		if err := json.Unmarshal(line, &m.ev); err != nil {
			m = agentMsg{err: fmt.Errorf("bad event line %.200q: %w", line, err)}
		}
		if !send(m) {
			return
		}
	}
	if err := sc.Err(); err != nil {
		send(agentMsg{err: err})
	}
}

// consoleTail keeps the last lines of the console for boot and timeout
// errors.
type consoleTail struct {
	lines []string
	max   int
}

func (t *consoleTail) add(l string) {
	t.lines = append(t.lines, strings.TrimRight(l, "\r"))
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

func (t *consoleTail) String() string { return strings.Join(t.lines, "\n") }
