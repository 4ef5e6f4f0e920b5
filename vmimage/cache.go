package vmimage

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// lockKey serialises builders of one key across processes; a crashed
// holder releases the flock implicitly, so there are no stale locks.
func lockKey(dir, key string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("vmimage: cache: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, key+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("vmimage: cache lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("vmimage: cache lock: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}

// publishFile writes path through a temporary file in the same directory
// and renames it into place, so readers see all of it or nothing.
func publishFile(path string, write func(io.Writer) error) error {
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

// concatFiles appends cpio archives, each padded to 4 bytes: the kernel
// only recognises the next archive's header at an aligned offset.
func concatFiles(w io.Writer, paths ...string) error {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		n, err := io.Copy(w, f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("copy %s: %w", p, err)
		}
		if pad := (4 - n%4) % 4; pad > 0 {
			if _, err := w.Write(make([]byte, pad)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Compose writes the initrd for one run to dst: the image followed by a
// small cpio holding files (e.g. the plan at wire.PlanPath). Later
// archives override earlier ones when the kernel unpacks them.
func (img *Image) Compose(dst string, files ...File) error {
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("vmimage: run image: %w", err)
	}
	err = concatFiles(f, img.Path)
	if err == nil && len(files) > 0 {
		err = writeCPIO(f, files)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("vmimage: run image %s: %w", dst, err)
	}
	return nil
}

// Old images are pruned: every edit of the agent's sources makes a new
// one (about 10 MB). An image is kept if it is among the newest keepImages
// or was used within keepAge; Build refreshes the time of an image it
// hands out, and callers copy it (Compose) right away.
const (
	keepImages = 4
	keepAge    = 24 * time.Hour
)

func touch(path string) {
	now := time.Now()
	_ = os.Chtimes(path, now, now)
}

// prune removes stale files matching pattern; errors are ignored, a file
// left behind is only disk space.
func prune(pattern string, now time.Time) {
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
