package kernel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// Cache is kci's content-addressed store: imported bases, build trees,
// published kernels. Everything is published by atomic rename; writers
// of one key serialise on a lock file.
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

// DefaultCache is $KCI_CACHE, or ~/.cache/kci, created if missing: on a
// brand-new machine the first user (often several test processes at
// once) finds neither it nor ~/.cache.
func DefaultCache() (*Cache, error) {
	d := os.Getenv("KCI_CACHE")
	if d == "" {
		u, err := os.UserCacheDir()
		if err != nil {
			return nil, infra("cache dir", err)
		}
		d = filepath.Join(u, "kci")
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, infra("cache dir", err)
	}
	return &Cache{Root: d}, nil
}

func (c *Cache) path(elem ...string) string {
	return filepath.Join(append([]string{c.Root}, elem...)...)
}

// lockPoll is how often a waiting lock looks again: a wait must end
// within it of a cancel (Ctrl-C), which a blocking flock would ignore.
const lockPoll = 100 * time.Millisecond

// lock takes an exclusive flock on name, waiting until it is free or ctx
// ends; the returned func releases it. A dead holder's lock is released
// by the kernel, so no lock outlives its process.
func (c *Cache) lock(ctx context.Context, name string) (func(), error) {
	for {
		unlock, err := c.tryLock(name)
		if err != nil || unlock != nil {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, infra("cache lock "+name, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// tryLock takes name's lock if it is free: (nil, nil) when a live process
// holds it.
func (c *Cache) tryLock(name string) (func(), error) {
	p := c.path("locks", name+".lock")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, infra("cache lock", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, infra("cache lock", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close() // the failed lock is the news
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, infra("cache lock", err)
	}
	// Closing the file releases the lock whatever LOCK_UN said, and a
	// lock file's close loses nothing.
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
}

// lockTreeForLeaf takes the kept build tree of key for a leaf build, once
// no tree build waits to seed from it (seedLock). A leaf holds the tree for
// its whole build, a seed only for a copy: with the leaves of a patch
// series or of CI's tests queued on one tree, a tree built on it would
// otherwise wait behind all of them, by the luck of each poll.
func (c *Cache) lockTreeForLeaf(ctx context.Context, key string) (func(), error) {
	for {
		free, err := c.free(seedLock(key))
		if err != nil {
			return nil, err
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

// free reports whether name's lock is free now.
func (c *Cache) free(name string) (bool, error) {
	unlock, err := c.tryLock(name)
	if unlock != nil {
		unlock()
	}
	return unlock != nil, err
}

// treeLock guards key's kept build tree; seedLock is held by a build
// that waits to copy the tree's objects, from before it waits.
func treeLock(key string) string { return "ws-" + key }
func seedLock(key string) string { return "seed-" + key }

// toTrash moves p into the cache's trash at once (a rename) and deletes it
// in the background: deleting a kernel tree can take a minute on a busy
// disk, which an interrupted or failing run must not wait for. What the
// process does not finish deleting is swept by a later build.
func (c *Cache) toTrash(p string) error {
	t, err := c.intoTrash(p)
	if err == nil && t != "" {
		go func() { _ = os.RemoveAll(t) }()
	}
	return err
}

// intoTrash renames p into a new directory of the trash and returns that
// directory ("" when p does not exist).
func (c *Cache) intoTrash(p string) (string, error) {
	if _, err := os.Lstat(p); err != nil {
		return "", nil // nothing there (published, gone meanwhile, or never made)
	}
	if err := os.MkdirAll(c.path("trash"), 0o755); err != nil {
		return "", err
	}
	t, err := os.MkdirTemp(c.path("trash"), filepath.Base(p)+"-")
	if err != nil {
		return "", err
	}
	if err := os.Rename(p, filepath.Join(t, "x")); err != nil {
		_ = os.Remove(t) // empty: nothing lost
		return "", err
	}
	return t, nil
}

// tempDir makes a private directory next to final, so the publishing
// rename stays on one filesystem.
func tempDir(final string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(filepath.Dir(final), ".tmp-"+filepath.Base(final)+"-")
}

// publish renames tmp to final atomically. If final appeared meanwhile
// (another process won), tmp is dropped and final kept.
func publish(tmp, final string) error {
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(final); serr == nil {
			_ = os.RemoveAll(tmp) // the loser's copy: a leftover is never read
			return nil
		}
		return fmt.Errorf("publish %s: %w", final, err)
	}
	return nil
}
