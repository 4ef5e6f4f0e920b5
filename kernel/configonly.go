package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"time"

	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/internal/fsutil"
)

// ResolveConfig is the final .config req's kernel would be built with, made
// with the kconfig tools alone: the same base config, fragment merge,
// olddefconfig and policy check as Build, in a worktree of its own, and no
// compile (only the host kconfig programs are built). A published kernel's
// config is taken as it is; a config resolved once is kept under
// configs/<key>. The Artifacts returned describe the config only: Key,
// the base, Fragments, Config, ConfigHash, Log (the kconfig log) and
// Phases; there is no bzImage or vmlinux.
func (c *Cache) ResolveConfig(ctx context.Context, req Request, opt Options) (*Artifacts, error) {
	// The key ignores Parent and Keep; a config needs no objects to start
	// from, and Parent would make configure reuse the parent's config.
	req.Parent, req.Keep = nil, false
	b := &buildRun{c: c, ctx: ctx, req: req, opt: opt, logSuffix: ".config"}
	defer b.exit()
	if err := b.resolve(); err != nil {
		return nil, err
	}
	if a := b.cached(); a != nil {
		return a, nil
	}
	dir := c.path(cachedir.Configs, b.key)
	if a, ok := b.resolvedConfig(dir); ok {
		return a, nil
	}
	unlock, err := c.lock(ctx, cachedir.ConfigLock(b.key))
	if err != nil {
		return nil, err
	}
	b.onExit(unlock)
	if a, ok := b.resolvedConfig(dir); ok { // another kci config won
		return a, nil
	}
	if err := b.configTree(); err != nil {
		return nil, err
	}
	if err := b.publishConfig(dir); err != nil {
		return nil, err
	}
	a, ok := b.resolvedConfig(dir)
	if !ok {
		return nil, infra("publish config", os.ErrNotExist)
	}
	a.Phases = b.phases
	return a, nil
}

// configTree checks out the base, applies the series and configures it in
// builds/config-<key>, a tree no Build uses, removed when done.
func (b *buildRun) configTree() error {
	b.tree = b.c.path(cachedir.Builds, "config-"+b.key)
	b.onExit(b.dropConfigTree)
	removeWorktree(b.src, b.tree) // a leftover of an interrupted run
	// What repair put in the trash (a killed kci config's half-made tree,
	// 1.3 GiB) goes now: kci config runs no build, whose sweep it awaits.
	b.c.sweepTrash()
	if err := b.timed("worktree", func() error { return worktree(b.ctx, b.src, b.tree) }); err != nil {
		return err
	}
	b.obj = filepath.Join(b.tree, objDirName)
	b.apply = b.req.Patches
	if err := b.applyPatches(); err != nil {
		return err
	}
	if err := b.openLog(); err != nil {
		return err
	}
	return b.configure()
}

// dropConfigTree deletes the config tree before kci config exits: the
// background delete removeWorktree starts would die with the process and
// leave a kernel tree's worth of files in the trash.
func (b *buildRun) dropConfigTree() {
	if err := os.RemoveAll(b.tree); err != nil {
		removeWorktree(b.src, b.tree) // into the trash: the next build sweeps it
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Best effort: a stale worktree entry is pruned by the next removal too.
	_, _ = command{dir: b.src.Dir}.run(ctx, "git", "worktree", "prune")
}

// publishConfig renames the resolved .config and its log into dir at once.
func (b *buildRun) publishConfig(dir string) error {
	if err := b.logf.Close(); err != nil {
		return infra("config log", err)
	}
	tmp, err := cachedir.TempDir(dir)
	if err != nil {
		return infra("publish config", err)
	}
	b.onExit(func() { _ = os.RemoveAll(tmp) }) // gone once renamed; a leftover .tmp- is never read
	for _, f := range [][2]string{{filepath.Join(b.obj, ".config"), "config"}, {b.logPath, "build.log"}} {
		if err := fsutil.CopyFile(nil, f[0], nil, filepath.Join(tmp, f[1])); err != nil {
			return infra("publish config", err)
		}
	}
	return infra("publish config", cachedir.Publish(tmp, dir))
}

// resolvedConfig describes the config published in dir, if there is one.
func (b *buildRun) resolvedConfig(dir string) (*Artifacts, bool) {
	cfg := filepath.Join(dir, "config")
	data, err := os.ReadFile(cfg)
	if err != nil {
		return nil, false
	}
	sum := sha256.Sum256(data)
	a := &Artifacts{
		Key: b.key, Dir: dir, Config: cfg, Log: filepath.Join(dir, "build.log"),
		BaseID: b.src.ID, BaseOrigin: b.src.Origin, Version: b.src.Version,
		Fragments: b.req.Fragments, ConfigHash: hex.EncodeToString(sum[:]),
	}
	for _, p := range b.req.Patches {
		a.Patches = append(a.Patches, p.Subject)
	}
	return a, true
}
