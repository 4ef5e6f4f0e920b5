package cachedir

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// ToTrash moves p into the cache's trash at once (a rename) and deletes it
// in the background: deleting a kernel tree can take a minute on a busy
// disk, which an interrupted or failing run must not wait for. What the
// process does not finish deleting is swept by a later build.
func (c *Cache) ToTrash(p string) error {
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
	if err := os.MkdirAll(c.Path(Trash), 0o755); err != nil {
		return "", err
	}
	t, err := os.MkdirTemp(c.Path(Trash), filepath.Base(p)+"-")
	if err != nil {
		return "", err
	}
	if err := os.Rename(p, filepath.Join(t, "x")); err != nil {
		_ = os.Remove(t) // empty: nothing lost
		return "", err
	}
	return t, nil
}

// discard renames p into the trash at once, so no reader finds it half
// deleted, then deletes it before returning: kci cache prune is asked to
// free the space now, not by some later run.
func (c *Cache) discard(p string) error {
	t, err := c.intoTrash(p)
	if err != nil || t == "" {
		return err
	}
	return os.RemoveAll(t)
}

// TempDir makes a private directory next to final, so the publishing
// rename stays on one filesystem.
func TempDir(final string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(filepath.Dir(final), ".tmp-"+filepath.Base(final)+"-")
}

// Publish renames tmp to final atomically. If final appeared meanwhile
// (another process won), tmp is dropped and final kept.
func Publish(tmp, final string) error {
	if err := os.Rename(tmp, final); err != nil {
		if _, serr := os.Stat(final); serr == nil {
			_ = os.RemoveAll(tmp) // the loser's copy: a leftover is never read
			return nil
		}
		return fmt.Errorf("publish %s: %w", final, err)
	}
	return nil
}

// MarkUsed sets p's mtime to now: a published kernel or an image is only
// read when reused, and kci cache prune (and vmimage's own pruning) ages
// items by their newest mtime. A failed touch only ages it.
func MarkUsed(p string) {
	now := time.Now()
	_ = os.Chtimes(p, now, now)
}
