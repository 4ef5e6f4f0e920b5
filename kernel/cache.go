package kernel

import (
	"context"
	"errors"
	"time"

	"github.com/kci-dev/kci/internal/cachedir"
)

// Cache is the kernel stage's part of kci's cache: imported bases, build
// trees, published kernels, configs and logs. The layout, the locks and
// publishing by rename are the cache room's (internal/cachedir); Cache
// asks it for them.
type Cache struct {
	Root string
	// Meter, when set, shows the one-time base import (tens of seconds
	// of tar and git with nothing else to show) as a phase.
	Meter Meter
}

// Meter shows a long phase: internal/progress.Meter.
type Meter interface {
	Begin(format string, a ...any)
	End(format string, a ...any)
}

// DefaultCache is the cache at $KCI_CACHE, or ~/.cache/kci, created if
// missing (cachedir.Default).
func DefaultCache() (*Cache, error) {
	d, err := cachedir.Default()
	if err != nil {
		return nil, infraOf(err)
	}
	return &Cache{Root: d.Root}, nil
}

// dir is the cache room's view of c: its layout, locks and trash.
func (c *Cache) dir() *cachedir.Cache { return &cachedir.Cache{Root: c.Root} }

func (c *Cache) path(elem ...string) string { return c.dir().Path(elem...) }

// lock takes name's lock in locks/, waiting until it is free or ctx ends
// (cachedir.Cache.Lock); the returned func releases it.
func (c *Cache) lock(ctx context.Context, name string) (func(), error) {
	unlock, err := c.dir().Lock(ctx, name)
	return unlock, infraOf(err)
}

// tryLock takes name's lock if it is free: (nil, nil) when a live process
// holds it.
func (c *Cache) tryLock(name string) (func(), error) {
	unlock, err := c.dir().TryLock(name)
	return unlock, infraOf(err)
}

// infraOf turns the cache room's errors into the kernel stage's
// InfraError, which its callers tell from the patch's faults.
func infraOf(err error) error {
	var e *cachedir.Error
	if errors.As(err, &e) {
		return infra(e.Op, e.Err)
	}
	return err
}

// lockTreeForLeaf takes the kept build tree of key for a leaf build, once
// no tree build waits to seed from it (seedLock). A leaf holds the tree for
// its whole build, a seed only for a copy: with the leaves of a patch
// series or of CI's tests queued on one tree, a tree built on it would
// otherwise wait behind all of them, by the luck of each poll.
func (c *Cache) lockTreeForLeaf(ctx context.Context, key string) (func(), error) {
	for {
		free, err := c.dir().Free(seedLock(key))
		if err != nil {
			return nil, infraOf(err)
		}
		if free {
			unlock, err := c.tryLock(treeLock(key))
			if err != nil || unlock != nil {
				return unlock, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, infra("cache lock "+treeLock(key), ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// lockPoll is how often a waiting lock looks again (cachedir.LockPoll).
const lockPoll = cachedir.LockPoll

// treeLock guards key's kept build tree; seedLock is held by a build
// that waits to copy the tree's objects, from before it waits.
func treeLock(key string) string { return cachedir.TreeLock(key) }
func seedLock(key string) string { return cachedir.SeedLock(key) }

// toTrash moves p into the cache's trash and deletes it in the background
// (cachedir.Cache.ToTrash).
func (c *Cache) toTrash(p string) error { return c.dir().ToTrash(p) }
