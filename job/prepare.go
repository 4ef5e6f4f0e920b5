package job

import (
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/internal/progress"
)

// preparer is a Booter with work that needs no kernel: VMBooter's
// initramfs. Started beside the kernel builds, it takes the CPU they leave
// idle (the import's single-threaded decompression and each vmlinux's
// link, minutes on a cold run), where it used to wait for them: a cold
// initramfs is a Go build of a minute or more.
// What it prints goes to log, line by line.
type preparer = boot.Preparer

// prepare starts the Booter's preparation beside the kernel builds. stop
// cancels what is still running (the run no longer needs it) and waits,
// so nothing it started outlives the run; an error other than that
// cancellation is logged (a boot that needed the image got it too).
func (e *engine) prepare() (stop func()) {
	p, ok := e.booter.(preparer)
	if !ok {
		return func() {}
	}
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	var log io.Writer // the booter's own
	if e.meter != nil {
		log = &sayWriter{m: e.meter} // above the builds' live line
	}
	go func() { done <- p.Prepare(ctx, log) }()
	return func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			e.logf("kci: initramfs, prepared beside the kernel builds: %v", err)
		}
	}
}

// sayWriter prints each whole line written to it with the meter's Say,
// which on a terminal keeps it off the live line of a build beside it.
type sayWriter struct {
	m   *progress.Meter
	buf []byte
}

func (w *sayWriter) Write(b []byte) (int, error) {
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(b), nil
		}
		w.m.Say("%s", w.buf[:i])
		w.buf = w.buf[i+1:]
	}
}
