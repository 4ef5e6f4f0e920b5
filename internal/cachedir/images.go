package cachedir

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// The images under initramfs/ (vmimage's) are locked, published and
// pruned here, by file rather than by directory.

// LockFile serialises the writers of dir/<key> across processes with a
// blocking flock on dir/<key>.lock (vmimage's images, whose builders
// take no context); a crashed holder releases the flock implicitly, so
// there are no stale locks. what names the writer in errors.
func LockFile(what, dir, key string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s: cache: %w", what, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, key+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: cache lock: %w", what, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: cache lock: %w", what, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// PublishFile writes path, read-only, through a temporary file in the
// same directory and renames it into place, so readers see all of it or
// nothing.
func PublishFile(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // no-op after the rename
	if err := write(tmp); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o444); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Old images are pruned: every edit of the agent's sources makes a new
// one (about 10 MB). An image is kept if it is among the newest keepImages
// or was used within keepAge; vmimage.Build refreshes the time of an
// image it hands out (MarkUsed), and callers copy it (Compose) right away.
const (
	keepImages = 4
	keepAge    = 24 * time.Hour
)

// PruneImages removes the stale files matching pattern, each with its
// lock beside it (<name>.lock); errors are ignored, a file left behind is
// only disk space.
func PruneImages(pattern string, now time.Time) {
	paths, _ := filepath.Glob(pattern)
	type entry struct {
		path string
		mod  time.Time
	}
	var es []entry
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			es = append(es, entry{p, fi.ModTime()})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return b.mod.Compare(a.mod) })
	for i, e := range es {
		if i >= keepImages && now.Sub(e.mod) > keepAge {
			_ = os.Remove(e.path)
			_ = os.Remove(e.path[:len(e.path)-len(filepath.Ext(e.path))] + ".lock")
		}
	}
}
