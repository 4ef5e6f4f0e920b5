// Package cachedir is kci's cache as a room of its own: the layout of
// everything under the cache root ($KCI_CACHE, else ~/.cache/kci), which
// stage writes each directory, the locks its writers take, publishing by
// rename, and the listing and pruning of every kind kci cache shows.
//
// The stages ask it for their directories and locks; what goes inside a
// directory (a kernel build, an initramfs, a result entry) stays theirs.
// It imports no stage: kernel, the first, sits on top of it.
package cachedir

import (
	"os"
	"path/filepath"
)

// The top-level directories of the cache, each with the stage that writes
// it. Every entry of the root that is none of these is of KindOther
// in kci cache's listing.
const (
	Base      = "base"      // kernel: base/<name>/src, an imported base repository (git)
	Builds    = "builds"    // kernel: builds/<key>, a kept build tree (a worktree of a base)
	Kernels   = "kernels"   // kernel: kernels/<key>, a published kernel (build.json, bzImage, vmlinux)
	Configs   = "configs"   // kernel: configs/<key>, a config resolved by kci config
	Logs      = "logs"      // kernel: logs/<key>.log, a build's log
	Bin       = "bin"       // kernel: bin/kci-cc, the compiler wrapper
	Fragments = "fragments" // kernel: fragments/<hash>/<name>, the embedded config fragments
	Initramfs = "initramfs" // vmimage: initramfs/<key>.cpio, layers/, <key>.lock
	AgentSrc  = "src"       // vmimage: src/, the guest agent's sources materialized
	Results   = "results"   // rcache: results/<id>.json, the boot result cache
	Plugins   = "plugins"   // vm/tcgplugin: plugins/kcicount-<hash>.so, the QEMU plugin
	Accel     = "accel"     // vm: accel/<host>.json, the KVM probe's choice per host
	Embedded  = "embedded"  // project: embedded/, the default project materialized
	Trash     = "trash"     // every writer: trash/<name>-<random>, what is being deleted
	Locks     = "locks"     // every writer: locks/<name>.lock, the flocks writers take
)

// Cache is the cache under Root.
type Cache struct {
	Root string
}

// DefaultRoot is $KCI_CACHE, or ~/.cache/kci; it may not exist yet.
func DefaultRoot() (string, error) {
	if d := os.Getenv("KCI_CACHE"); d != "" {
		return d, nil
	}
	u, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(u, "kci"), nil
}

// Default is the cache at DefaultRoot, created if missing: on a brand-new
// machine the first user (often several test processes at once) finds
// neither it nor ~/.cache.
func Default() (*Cache, error) {
	d, err := DefaultRoot()
	if err != nil {
		return nil, wrap("cache dir", err)
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		return nil, wrap("cache dir", err)
	}
	return &Cache{Root: d}, nil
}

// Path is elem joined under the root, e.g. Path(Kernels, key).
func (c *Cache) Path(elem ...string) string {
	return filepath.Join(append([]string{c.Root}, elem...)...)
}

// Published reports whether dir (kernels/<key>) holds a published kernel:
// its build.json is written last, inside the publishing rename.
func Published(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "build.json"))
	return err == nil
}

// Error is a failure of the cache's own machinery (a lock, a directory,
// a listing): the machine's, never the patch's.
type Error struct {
	Op  string
	Err error
}

func (e *Error) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Err: err}
}
