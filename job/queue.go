package job

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
)

// queued is one boot of a plan, as the engine's queue runs it.
type queued struct {
	// kernel names the kernel booted: boots of a kernel that failed are
	// cancelled together.
	kernel string
	// what names the boot in the cause its kernel's other boots are
	// cancelled with.
	what string
	// boot runs it under ctx, which is cancelled with errCancelledBeside
	// when another boot of the same kernel failed first.
	boot func(ctx context.Context) error
}

// runQueue runs the queue e.parallel boots at a time (one by default), in
// queue order: kci test's repetitions and looks, kci series' prefixes and
// seeds alike. After the first failure no further boot starts, and the
// failure is the job's error. Boots already running of another kernel
// (the base beside a crashed patched boot) are let finish, so their
// numbers are kept; boots of the kernel that failed are cancelled (they
// would only fail again) and recorded as cancelled, not as the machine's
// fault. Only the user's interrupt (e.ctx) cancels everything.
func (e *engine) runQueue(queue []queued) error {
	var g errgroup.Group
	g.SetLimit(max(e.parallel, 1))
	var (
		mu      sync.Mutex
		first   error
		kernels = map[string]context.Context{}
		cancels = map[string]context.CancelCauseFunc{}
	)
	stopped := func() bool { mu.Lock(); defer mu.Unlock(); return first != nil || e.ctx.Err() != nil }
	for _, q := range queue {
		if _, ok := kernels[q.kernel]; !ok {
			kernels[q.kernel], cancels[q.kernel] = context.WithCancelCause(e.ctx)
		}
	}
	defer func() {
		for _, c := range cancels {
			c(nil)
		}
	}()
	for _, q := range queue {
		if stopped() {
			break
		}
		g.Go(func() error {
			if stopped() {
				return nil // a boot failed while this one waited for its turn: not started
			}
			err := q.boot(kernels[q.kernel])
			if err == nil || errors.Is(err, errCancelledBeside) {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if first == nil {
				first = err
				cancels[q.kernel](fmt.Errorf("%w: %s failed first", errCancelledBeside, q.what))
			}
			return nil
		})
	}
	_ = g.Wait() // every Go returns nil: the first failure is in first
	if first == nil && e.ctx.Err() != nil {
		first = e.ctx.Err()
	}
	return first
}

// bootQueue runs kci test's slots through the engine's queue.
func (r *testRun) bootQueue(queue []bootSlot) error {
	q := make([]queued, len(queue))
	for i, s := range queue {
		q[i] = queued{kernel: s.j.tree.Name + "/" + s.role, what: fmt.Sprintf("%s %s rep %d", s.j.tree.Name, s.role, s.rep),
			boot: func(ctx context.Context) error { return r.boot(ctx, s) }}
	}
	return r.runQueue(q)
}

// errCancelledBeside is the cause of a boot cancelled because another boot
// of the same kernel failed first.
var errCancelledBeside = errors.New("cancelled")
