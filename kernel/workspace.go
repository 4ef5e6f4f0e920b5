package kernel

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/internal/proc"
)

// dirtyMark in a kept build tree names the leaf build that last used it:
// its sources and objects are then not the tree's own.
const dirtyMark = ".kci-dirty"

// TreeKept reports whether key's build tree is kept and built: later
// builds can then start from its objects.
func (c *Cache) TreeKept(key string) bool {
	_, err := os.Stat(filepath.Join(c.path(cachedir.Builds, key), objDirName, "vmlinux"))
	return err == nil
}

// parentCommit is the commit a kept build tree stands at when clean.
func parentCommit(src *Source, parent *Artifacts) string {
	if parent.Commit != "" {
		return parent.Commit
	}
	return src.Commit // published before commits were recorded: the bare base
}

// resetWorkspace puts a kept build tree's sources back to commit and marks
// it as used by key. Files a previous leaf build changed are rewritten now,
// so make rebuilds exactly their objects.
func resetWorkspace(ctx context.Context, tree, commit, key string) error {
	g := command{dir: tree, env: gitEnv, timeout: 5 * time.Minute}
	_, _ = g.run(ctx, "git", "am", "--abort") // an interrupted am leaves a session behind; none is the usual case
	for _, args := range [][]string{
		{"checkout", "-q", "-f", "--detach", commit},
		{"clean", "-q", "-f", "-d"}, // objects are ignored (info/exclude): kept
	} {
		if _, err := g.run(ctx, "git", args...); err != nil {
			return infra("reset build tree "+tree, err)
		}
	}
	return infra("mark build tree", os.WriteFile(filepath.Join(tree, dirtyMark), []byte(key+"\n"), 0o644))
}

// seed copies parent's objects into a fresh worktree at tree. When a leaf
// build last used the parent's tree, the objects of the files the leaf
// changed are the leaf's, newer than those (backdated) files here: those
// files are made newer than every copied object, so make rebuilds them
// and what depends on them. That is what restoring the parent's tree
// first would compile, without its extra vmlinux link.
func (c *Cache) seed(ctx context.Context, src *Source, parent *Artifacts, tree string) error {
	ws := c.path(cachedir.Builds, parent.Key)
	pobj := filepath.Join(ws, objDirName)
	if !c.TreeKept(parent.Key) {
		return nil // nothing to seed from: a full build (ccache still helps)
	}
	unlockSeed, err := c.lock(ctx, seedLock(parent.Key))
	if err != nil {
		return err
	}
	defer unlockSeed()
	unlock, err := c.lock(ctx, treeLock(parent.Key))
	if err != nil {
		return err
	}
	defer unlock()
	var stale []string
	if _, err := os.Stat(filepath.Join(ws, dirtyMark)); err == nil {
		if stale, err = changedFiles(ctx, ws, parentCommit(src, parent)); err != nil {
			return err
		}
	}
	// cp -a keeps mtimes: objects stay newer than the backdated sources.
	if _, err := (command{timeout: 10 * time.Minute}).run(ctx, "cp", "-a", "--reflink=auto", pobj, filepath.Join(tree, objDirName)); err != nil {
		return infra("seed build dir from "+parent.Key, err)
	}
	now := time.Now()
	for _, f := range stale {
		err := os.Chtimes(filepath.Join(tree, f), now, now)
		if err != nil && !errors.Is(err, fs.ErrNotExist) { // a file the leaf added is not here
			return infra("seed build dir: mark "+f+" for rebuild", err)
		}
	}
	return nil
}

// changedFiles lists the tracked files of the kept tree at dir that differ
// from commit: what a leaf build changed, committed or not.
func changedFiles(ctx context.Context, dir, commit string) ([]string, error) {
	// Stdout only: a warning of git's on stderr must not become part of
	// a name, or that file would go unmarked.
	out, err := proc.Cmd{Name: "git", Args: []string{"diff", "--name-only", "-z", "--no-renames", commit},
		Dir: dir, Env: gitEnv, Timeout: 5 * time.Minute, StdoutOnly: true}.Run(ctx)
	if err != nil {
		return nil, infra("files a leaf build changed in "+dir, err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, filepath.FromSlash(f))
		}
	}
	return files, nil
}

func sameStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// touchesKconfig reports whether patches change any Kconfig file, which
// could change the final config.
func touchesKconfig(patches []Patch) bool {
	for _, p := range patches {
		for _, l := range strings.Split(string(p.Data), "\n") {
			if m := diffFile.FindStringSubmatch(l); m != nil && strings.HasPrefix(filepath.Base(m[1]), "Kconfig") {
				return true
			}
		}
	}
	return false
}

// reuseConfig makes dst the parent's final config, rewriting it only when
// it differs.
func reuseConfig(parent *Artifacts, dst string, values *Values) error {
	want, err := os.ReadFile(parent.Config)
	if err != nil {
		return infra("parent config", err)
	}
	if have, err := os.ReadFile(dst); err != nil || !bytes.Equal(have, want) {
		if err := os.WriteFile(dst, want, 0o644); err != nil {
			return infra("config", err)
		}
	}
	*values = ParseValues(want)
	return nil
}
