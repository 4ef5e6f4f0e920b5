// Package vmimage builds the initramfs kci boots: u-root's init and a few
// core commands for debugging (built into one busybox with u-root's
// mkuimage), plus kci's guest agent as u-root's uinit.
//
// The image is three concatenated cpio archives, which the kernel unpacks
// in order:
//
//	u-root layer   cached by u-root version, command set, Go version
//	agent layer    cached by a hash of the agent's sources
//	run layer      per run (the plan), a few hundred bytes
//
// The first two are cached together as initramfs/<key>.cpio under the kci
// cache; the agent layer is separate so that editing the guest code costs
// one ordinary `go build`, not a busybox rebuild.
package vmimage

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/kci-dev/kci/internal/cachedir"
)

// AgentPackage is the guest agent's import path.
const AgentPackage = "github.com/kci-dev/kci/cmd/kci-guest"

// AgentPath is where the agent lives in the image; /bin/uinit points to it.
const AgentPath = "bin/kci-guest"

// DefaultCommands are the u-root core commands in every image: init and a
// shell, plus what one reaches for when debugging a kernel by hand.
func DefaultCommands() []string {
	return []string{
		"init", "gosh",
		"cat", "chmod", "cp", "cpio", "df", "dmesg", "echo", "false", "find",
		"free", "grep", "head", "hexdump", "ip", "kill", "ln", "ls", "mkdir",
		"mknod", "more", "mount", "mv", "poweroff", "ps", "pwd", "rm",
		"shutdown", "sleep", "strace", "sync", "tail", "true", "umount",
		"uname", "uptime", "wc",
	}
}

// Options say where the sources and the cache are.
type Options struct {
	// SourceDir is the root of the kci module, which provides the agent's
	// sources and the module context u-root's commands are resolved in.
	// Empty: $KCI_SRC, else the sources embedded in this binary
	// (kci.AgentSource), written once into the cache.
	SourceDir string
	// CacheDir is kci's cache root. Empty: $KCI_CACHE, else ~/.cache/kci.
	CacheDir string
	// Commands are u-root core command names; nil means DefaultCommands.
	// "init" must be among them.
	Commands []string
	// Log receives build progress; nil discards it.
	Log io.Writer
}

// Image is a published, read-only initramfs (u-root + agent layers).
type Image struct {
	Path     string        // initramfs/<key>.cpio in the cache
	Key      string        // hash of both layers' inputs
	Layers   []string      // the u-root and agent layers Path concatenates
	Cached   bool          // true when nothing had to be built
	Duration time.Duration // time Build took
}

// Build returns the cached image for the current sources, building what
// is missing.
func Build(ctx context.Context, o Options) (*Image, error) {
	start := time.Now()
	o, err := o.resolve(ctx)
	if err != nil {
		return nil, err
	}
	env, err := goEnv(ctx, o.SourceDir)
	if err != nil {
		return nil, err
	}
	ukey := urootKey(env, o.Commands)
	akey, err := agentKey(ctx, env, o.SourceDir)
	if err != nil {
		return nil, err
	}
	key := hashStrings("image/v1", ukey, akey)[:24]
	dir := filepath.Join(o.CacheDir, cachedir.Initramfs)
	upath := filepath.Join(dir, "layers", "uroot-"+ukey[:24]+".cpio")
	apath := filepath.Join(dir, "layers", "agent-"+akey[:24]+".cpio")
	img := &Image{Path: filepath.Join(dir, key+".cpio"), Key: key, Layers: []string{upath, apath}}
	if _, err := os.Stat(img.Path); err == nil {
		cachedir.MarkUsed(img.Path)
		img.Cached, img.Duration = true, time.Since(start)
		return img, nil
	}

	unlock, err := cachedir.LockFile("vmimage", dir, key)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Stat(img.Path); err == nil { // built while we waited
		img.Cached, img.Duration = true, time.Since(start)
		return img, nil
	}
	if err := buildURootLayer(ctx, o, env, upath); err != nil {
		return nil, err
	}
	if err := buildAgentLayer(ctx, o, env, akey, apath); err != nil {
		return nil, err
	}
	if err := cachedir.PublishFile(img.Path, func(w io.Writer) error {
		return concatFiles(w, upath, apath)
	}); err != nil {
		return nil, fmt.Errorf("vmimage: %w", err)
	}
	now := time.Now()
	cachedir.PruneImages(filepath.Join(dir, "*.cpio"), now)
	cachedir.PruneImages(filepath.Join(dir, "layers", "agent-*.cpio"), now)
	img.Duration = time.Since(start)
	return img, nil
}

func (o Options) resolve(ctx context.Context) (Options, error) {
	if o.Commands == nil {
		o.Commands = DefaultCommands()
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.CacheDir == "" {
		d, err := cachedir.DefaultRoot()
		if err != nil {
			return o, fmt.Errorf("vmimage: cache dir: %w", err)
		}
		o.CacheDir = d
	}
	if o.SourceDir == "" {
		d, err := findSource(o.CacheDir)
		if err != nil {
			return o, err
		}
		o.SourceDir = d
	}
	return o, nil
}
