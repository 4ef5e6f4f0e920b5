package cachedir

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// The names of the locks in locks/: a writer of an entry holds its lock
// for as long as it writes, and kci cache prune takes them before it
// removes the entry.
func BaseLock(name string) string  { return "base-" + name }  // importing or fetching base/<name>
func BuildLock(key string) string  { return "build-" + key }  // building kernels/<key> in builds/<key>
func ConfigLock(key string) string { return "config-" + key } // resolving configs/<key> (builds/config-<key>)
func TreeLock(key string) string   { return "ws-" + key }     // using builds/<key> as a kept tree
func SeedLock(key string) string   { return "seed-" + key }   // waiting to copy builds/<key>'s objects

// TreeLocks are the locks a live user of builds/<name> holds: its builder,
// or a leaf build or seed using it as a kept tree; a config-only tree's
// resolver.
func TreeLocks(name string) []string {
	if strings.HasPrefix(name, "config-") {
		return []string{name}
	}
	return []string{BuildLock(name), TreeLock(name)}
}

// LockPoll is how often a waiting lock looks again: a wait must end
// within it of a cancel (Ctrl-C), which a blocking flock would ignore.
const LockPoll = 100 * time.Millisecond

// Lock takes an exclusive flock on name, waiting until it is free or ctx
// ends; the returned func releases it. A dead holder's lock is released
// by the kernel, so no lock outlives its process.
func (c *Cache) Lock(ctx context.Context, name string) (func(), error) {
	for {
		unlock, err := c.TryLock(name)
		if err != nil || unlock != nil {
			return unlock, err
		}
		select {
		case <-ctx.Done():
			return nil, wrap("cache lock "+name, ctx.Err())
		case <-time.After(LockPoll):
		}
	}
}

// TryLock takes name's lock if it is free: (nil, nil) when a live process
// holds it.
func (c *Cache) TryLock(name string) (func(), error) {
	p := c.Path(Locks, name+".lock")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, wrap("cache lock", err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, wrap("cache lock", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close() // the failed lock is the news
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, nil
		}
		return nil, wrap("cache lock", err)
	}
	// Closing the file releases the lock whatever LOCK_UN said, and a
	// lock file's close loses nothing.
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
}

// Free reports whether name's lock is free now.
func (c *Cache) Free(name string) (bool, error) {
	unlock, err := c.TryLock(name)
	if unlock != nil {
		unlock()
	}
	return unlock != nil, err
}

// TryLocks takes all of names, or none when a live process holds one.
func (c *Cache) TryLocks(names []string) (func(), error) {
	var held []func()
	release := func() {
		for _, u := range held {
			u()
		}
	}
	for _, n := range names {
		unlock, err := c.TryLock(n)
		if err != nil || unlock == nil {
			release()
			return nil, err
		}
		held = append(held, unlock)
	}
	return release, nil
}

// lockNames are the names of the lock files in locks/ with one of prefixes.
func (c *Cache) lockNames(prefixes ...string) []string {
	ents, _ := os.ReadDir(c.Path(Locks)) // none: no lock to take
	var out []string
	for _, e := range ents {
		n, ok := strings.CutSuffix(e.Name(), ".lock")
		if ok && slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(n, p) }) {
			out = append(out, n)
		}
	}
	return out
}

// tryFlocks takes the flocks of files that exist (a lock never made is
// held by no one), or none and names the first a live process holds.
func tryFlocks(files []string) (func(), string, error) {
	var held []*os.File
	release := func() {
		for _, f := range held {
			_ = f.Close() // closing releases the flock; a lock file's close loses nothing
		}
	}
	for _, p := range files {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			release()
			return nil, "", err
		}
		held = append(held, f)
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			release()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, "a running kci holds " + filepath.Base(filepath.Dir(p)) + "/" + filepath.Base(p), nil
			}
			return nil, "", err
		}
	}
	return release, "", nil
}
