package job

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
)

// bootQueue runs the queue r.parallel boots at a time (one by default),
// in queue order. After the first failure no further boot starts, and the
// failure is the job's error. Boots already running of another kernel
// (the base beside a crashed patched boot) are let finish, so their
// numbers are kept; boots of the kernel that failed are cancelled (they
// would only fail again) and recorded as cancelled, not as the machine's
// fault. Only the user's interrupt (r.ctx) cancels everything.
func (r *testRun) bootQueue(queue []bootSlot) error {
	var g errgroup.Group
	g.SetLimit(max(r.parallel, 1))
	var (
		mu      sync.Mutex
		first   error
		kernels = map[string]context.Context{}
		cancels = map[string]context.CancelCauseFunc{}
	)
	stopped := func() bool { mu.Lock(); defer mu.Unlock(); return first != nil || r.ctx.Err() != nil }
	for _, s := range queue {
		key := s.j.tree.Name + "/" + s.role
		if _, ok := kernels[key]; !ok {
			kernels[key], cancels[key] = context.WithCancelCause(r.ctx)
		}
	}
	defer func() {
		for _, c := range cancels {
			c(nil)
		}
	}()
	for _, s := range queue {
		if stopped() {
			break
		}
		key := s.j.tree.Name + "/" + s.role
		g.Go(func() error {
			if stopped() {
				return nil // a boot failed while this one waited for its turn: not started
			}
			err := r.boot(kernels[key], s)
			if err == nil || errors.Is(err, errCancelledBeside) {
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if first == nil {
				first = err
				cancels[key](fmt.Errorf("%w: %s %s rep %d failed first", errCancelledBeside, s.j.tree.Name, s.role, s.rep))
			}
			return nil
		})
	}
	_ = g.Wait() // every Go returns nil: the first failure is in first
	if first == nil && r.ctx.Err() != nil {
		first = r.ctx.Err()
	}
	return first
}

// errCancelledBeside is the cause of a boot cancelled because another boot
// of the same kernel failed first.
var errCancelledBeside = errors.New("cancelled")
