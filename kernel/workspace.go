package kernel

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/fsutil"
)

// dirtyMark in a kept build tree names the leaf build that last used it:
// its sources and objects are then not the tree's own.
const dirtyMark = ".kci-dirty"

func published(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "build.json"))
	return err == nil
}

// TreeKept reports whether key's build tree is kept and built: later
// builds can then start from its objects.
func (c *Cache) TreeKept(key string) bool {
	_, err := os.Stat(filepath.Join(c.path("builds", key), objDirName, "vmlinux"))
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

// seed copies parent's objects into a fresh worktree at tree. A parent tree
// that a leaf build used is first rebuilt as itself, or the copy would hold
// the leaf's objects, newer than the (backdated) sources and never rebuilt.
func (c *Cache) seed(ctx context.Context, src *Source, parent *Artifacts, tree string) error {
	ws := c.path("builds", parent.Key)
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
	if _, err := os.Stat(filepath.Join(ws, dirtyMark)); err == nil {
		if err := resetWorkspace(ctx, ws, parentCommit(src, parent), "restore"); err != nil {
			return err
		}
		if err := fsutil.CopyFile(nil, parent.Config, nil, filepath.Join(pobj, ".config")); err != nil {
			return infra("restore parent config", err)
		}
		cc, err := c.compiler()
		if err != nil {
			return err
		}
		mk := makeCommand{Tree: ws, CC: cc, Release: "-kci"}
		if out, err := (command{dir: ws, env: mk.Env(), timeout: time.Hour, nice: buildNice}).run(ctx, "make", mk.Args("olddefconfig", "bzImage")...); err != nil {
			return infra("restore parent build "+parent.Key, fmt.Errorf("%w: %s", err, firstError(out)))
		}
		if err := os.Remove(filepath.Join(ws, dirtyMark)); err != nil {
			return infra("restore parent build", err)
		}
	}
	// cp -a keeps mtimes: objects stay newer than the backdated sources.
	if _, err := (command{timeout: 10 * time.Minute}).run(ctx, "cp", "-a", "--reflink=auto", pobj, filepath.Join(tree, objDirName)); err != nil {
		return infra("seed build dir from "+parent.Key, err)
	}
	return nil
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
