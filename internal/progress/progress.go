// Package progress shows kci's long phases (kernel builds, the initramfs,
// boots): on a terminal a live line with what is running, the objects make
// has built and the elapsed time; elsewhere (CI logs) one plain line when a
// phase starts and one when it ends, never a stream of carriage returns.
package progress

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Meter reports one phase at a time. It is an io.Writer for make's output
// during a build: each compiled or linked object advances the count. A nil
// *Meter is valid and silent.
type Meter struct {
	w   io.Writer
	tty bool
	now func() time.Time

	mu      sync.Mutex
	what    string
	start   time.Time
	objects int
	last    string
	buf     []byte
	bar     *progressbar.ProgressBar
	shown   time.Time     // last redraw of the live line
	stop    chan struct{} // ends the ticker of the live line
}

// redraw is the live line's refresh limit: make prints far faster than a
// terminal needs.
const redraw = 200 * time.Millisecond

// New reports to w, live when w is a terminal.
func New(w io.Writer) *Meter {
	f, ok := w.(*os.File)
	return newMeter(w, ok && term.IsTerminal(int(f.Fd())))
}

func newMeter(w io.Writer, tty bool) *Meter {
	return &Meter{w: w, tty: tty, now: time.Now}
}

// Begin starts a phase, ending any still running.
func (m *Meter) Begin(format string, a ...any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.endLocked("")
	m.what, m.start, m.objects, m.last, m.buf = fmt.Sprintf(format, a...), m.now(), 0, "", nil
	if !m.tty {
		fmt.Fprintf(m.w, "kci: %s ...\n", m.what)
		return
	}
	m.bar = progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(m.w),
		progressbar.OptionSetDescription(m.what),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(redraw),
		progressbar.OptionClearOnFinish())
	// Boots print nothing for a minute at a time: keep the clock moving.
	m.stop = make(chan struct{})
	go m.tick(m.bar, m.stop)
}

func (m *Meter) tick(bar *progressbar.ProgressBar, stop chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			m.mu.Lock()
			if m.bar == bar {
				_ = bar.RenderBlank() // the only error is the terminal's
			}
			m.mu.Unlock()
		}
	}
}

// Note updates the live line with what the phase is doing now (a guest
// step, say); off a terminal it prints nothing.
func (m *Meter) Note(format string, a ...any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.last = fmt.Sprintf(format, a...)
	m.describeLocked()
}

// Say prints one line of news (a repair, say) without ending the phase;
// on a terminal it goes above the live line.
func (m *Meter) Say(format string, a ...any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bar != nil {
		_ = m.bar.Clear() // the terminal's error only
	}
	fmt.Fprintf(m.w, "kci: %s\n", fmt.Sprintf(format, a...))
	if m.bar != nil {
		_ = m.bar.RenderBlank() // redraws the live line; errors are the terminal's
	}
}

// End closes the phase with a one-line outcome and its elapsed time.
func (m *Meter) End(format string, a ...any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.endLocked(fmt.Sprintf(format, a...))
}

func (m *Meter) endLocked(outcome string) {
	if m.what == "" {
		return
	}
	if m.bar != nil {
		close(m.stop)
		_ = m.bar.Finish() // clears the live line; its error is the terminal's
		m.bar = nil
	}
	if outcome == "" {
		outcome = "stopped"
	}
	extra := ""
	if m.objects > 0 {
		extra = fmt.Sprintf(", %d objects", m.objects)
	}
	fmt.Fprintf(m.w, "kci: %s: %s (%s%s)\n", m.what, outcome, m.now().Sub(m.start).Round(time.Second), extra)
	m.what = ""
}

// Write takes make's output (V=0 lines like "  CC      net/core/skbuff.o").
func (m *Meter) Write(b []byte) (int, error) {
	if m == nil {
		return len(b), nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.buf = append(m.buf, b...)
	for {
		i := bytes.IndexByte(m.buf, '\n')
		if i < 0 {
			break
		}
		f := strings.Fields(string(m.buf[:i]))
		m.buf = m.buf[i+1:]
		if len(f) == 2 && isBuildStep(f[0]) {
			m.objects++
			m.last = f[0] + " " + f[1]
			m.describeLocked()
		}
	}
	return len(b), nil
}

func (m *Meter) describeLocked() {
	if m.bar == nil || m.now().Sub(m.shown) < redraw {
		return
	}
	m.shown = m.now()
	d := m.what
	if m.objects > 0 {
		d += fmt.Sprintf(": %d objects", m.objects)
	}
	if m.last != "" {
		d += ", " + m.last
	}
	m.bar.Describe(d)
	_ = m.bar.RenderBlank() // Describe alone draws the old text; errors are the terminal's
}

// isBuildStep: Kbuild's short-form verbs for one produced file.
func isBuildStep(v string) bool {
	switch v {
	case "CC", "AS", "LD", "AR", "BTF", "HOSTCC", "HOSTLD", "OBJCOPY", "GEN", "CHK", "UPD", "SYNC", "VDSO", "RELOCS", "ZOFFSET", "MKPIGGY":
		return true
	}
	return false
}
