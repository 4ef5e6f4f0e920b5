package job

import (
	"context"
	"errors"
)

// preparer is a Booter with work that needs no kernel: VMBooter's
// initramfs. Started beside the kernel builds, it takes the CPU they leave
// idle (the import's single-threaded decompression and each vmlinux's
// link, minutes on a cold run), where it used to wait for them: a cold
// initramfs is a Go build of a minute or more.
type preparer interface {
	Prepare(ctx context.Context) error
}

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
	go func() { done <- p.Prepare(ctx) }()
	return func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			e.logf("kci: initramfs, prepared beside the kernel builds: %v", err)
		}
	}
}

// Prepare builds (or finds) the initramfs ahead of the first boot.
func (b *VMBooter) Prepare(ctx context.Context) error {
	_, err := b.Image(ctx)
	return err
}

// Prepare is the inner booter's, when it has one.
func (c *cachedBooter) Prepare(ctx context.Context) error {
	if p, ok := c.inner.(preparer); ok {
		return p.Prepare(ctx)
	}
	return nil
}
