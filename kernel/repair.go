package kernel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/kci-dev/kci/internal/cachedir"
)

// The cache is crash-only: a kci killed at any point (SIGKILL included)
// leaves at most a git worktree entry still locked ("initializing"), a
// half-made worktree, git lock files, and scratch directories of
// unfinished imports and publishes. Nothing of that is ever read as a
// result, but git refuses to add a worktree over a locked entry, and the
// rest takes disk. Repair clears what no live process holds: liveness is
// the cache's flocks, which the kernel releases when their holder dies.

// repaired holds the cache roots this process has repaired.
var repaired sync.Map

// repairOnce repairs the cache the first time this process uses it and
// says in one line what it fixed.
func (c *Cache) repairOnce(ctx context.Context) error {
	if _, done := repaired.LoadOrStore(c.Root, true); done {
		return nil
	}
	fixed, err := c.Repair(ctx)
	if len(fixed) > 0 {
		c.say("repaired what an interrupted run left: %s", summary(fixed))
	}
	return err
}

// Repair clears, in every base repository and build directory of the
// cache, what dead runs left: stale worktree entries and their git
// locks, half-made trees and half-written entries. It keeps kept trees and
// skips whatever a live kci process holds a lock on. fixed names each
// thing repaired.
func (c *Cache) Repair(ctx context.Context) (fixed []string, err error) {
	repos, err := filepath.Glob(c.path(cachedir.Base, "*", "src", ".git"))
	if err != nil {
		return nil, infra("cache repair", err)
	}
	registered := map[string]bool{}
	for _, g := range repos {
		if strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(g))), ".") {
			continue // an import's scratch (.tmp-*): repairScratch's
		}
		f, err := c.repairRepo(ctx, filepath.Dir(g), registered)
		fixed = append(fixed, f...)
		if err != nil {
			return fixed, infra("cache repair "+filepath.Dir(g), err)
		}
	}
	fixed = append(fixed, c.repairTrees(registered)...)
	fixed = append(fixed, c.repairScratch()...)
	return fixed, nil
}

// repairRepo turns automatic gc off in repo (repositories imported before
// kci did that at import) and repairs its worktree entries, recording
// each entry's tree in registered.
func (c *Cache) repairRepo(ctx context.Context, repo string, registered map[string]bool) ([]string, error) {
	var fixed []string
	name := filepath.Base(filepath.Dir(repo))
	if unlock, err := c.tryLock(cachedir.BaseLock(name)); err != nil {
		return nil, err
	} else if unlock != nil {
		// No import or fetch runs: a git lock file in the repository is a
		// dead git's.
		fixed = append(fixed, removeGitLocks(filepath.Join(repo, ".git"), "base/"+name)...)
		err := gcConfig(ctx, repo)
		unlock()
		if err != nil {
			return fixed, err
		}
	}
	ents, _ := os.ReadDir(filepath.Join(repo, ".git", "worktrees")) // none: nothing to repair
	prune := false
	for _, e := range ents {
		admin := filepath.Join(repo, ".git", "worktrees", e.Name())
		f, missing, err := c.repairEntry(admin, registered)
		if err != nil {
			return fixed, err
		}
		fixed, prune = append(fixed, f...), prune || missing
	}
	if prune {
		if _, err := (command{dir: repo}).run(ctx, "git", "worktree", "prune"); err != nil {
			return fixed, err
		}
	}
	return fixed, nil
}

// gcConfig sets gcOff in repo unless it is set.
func gcConfig(ctx context.Context, repo string) error {
	g := command{dir: repo}
	if out, err := g.run(ctx, "git", "config", "--get", "gc.auto"); err == nil && strings.TrimSpace(out) == "0" {
		return nil
	}
	for _, args := range gcOff {
		if _, err := g.run(ctx, "git", args...); err != nil {
			return err
		}
	}
	return nil
}

// repairEntry repairs the worktree entry admin (.git/worktrees/<name>) if
// no live build holds its tree: it unlocks it, drops its git locks, and
// trashes its tree unless that is a kept one. missing says the entry is
// left for git worktree prune.
func (c *Cache) repairEntry(admin string, registered map[string]bool) (fixed []string, missing bool, err error) {
	gitdir, err := os.ReadFile(filepath.Join(admin, "gitdir"))
	if err != nil {
		return nil, true, nil // half-made: prune drops it
	}
	tree := filepath.Dir(strings.TrimSpace(string(gitdir)))
	if filepath.Dir(tree) != c.path(cachedir.Builds) {
		return nil, false, nil // not a tree of this cache's
	}
	registered[tree] = true
	rel := "builds/" + filepath.Base(tree)
	unlock, err := c.dir().TryLocks(cachedir.TreeLocks(filepath.Base(tree)))
	if err != nil || unlock == nil {
		return nil, false, err // a live build's
	}
	defer unlock()
	if n := killStragglers(tree); n > 0 {
		fixed = append(fixed, fmt.Sprintf("%d process(es) of a killed run still in %s", n, rel))
	}
	if os.Remove(filepath.Join(admin, "locked")) == nil {
		fixed = append(fixed, "unlocked worktree "+rel)
	}
	fixed = append(fixed, removeGitLocks(admin, rel)...)
	if _, err := os.Lstat(tree); err != nil {
		return append(fixed, "stale worktree entry "+rel), true, nil
	}
	if c.keptTree(tree) {
		return fixed, false, nil
	}
	if err := c.toTrash(tree); err != nil {
		return fixed, false, err
	}
	return append(fixed, "half-made tree "+rel), true, nil
}

// keptTree: a build with Keep published from tree, which later builds
// start from.
func (c *Cache) keptTree(tree string) bool {
	name := filepath.Base(tree)
	return !strings.HasPrefix(name, "config-") && cachedir.Published(c.path(cachedir.Kernels, name))
}

// removeGitLocks deletes the lock files a killed git leaves in a git
// directory (or a worktree's admin directory) and that make every later
// git fail with "File exists"; the caller has made sure no git runs there.
func removeGitLocks(gitDir, what string) []string {
	var fixed []string
	locks, _ := filepath.Glob(filepath.Join(gitDir, "*.lock"))
	refs, _ := filepath.Glob(filepath.Join(gitDir, "refs", "*", "*.lock"))
	for _, l := range append(locks, refs...) {
		if os.Remove(l) == nil {
			rel, _ := filepath.Rel(gitDir, l)
			fixed = append(fixed, fmt.Sprintf("git lock %s in %s", rel, what))
		}
	}
	return fixed
}

// repairTrees trashes what is in builds/ and no worktree entry names: a
// tree whose entry a prune already dropped, or one a killed git never
// registered.
func (c *Cache) repairTrees(registered map[string]bool) []string {
	var fixed []string
	ents, _ := os.ReadDir(c.path(cachedir.Builds)) // none: nothing to repair
	for _, e := range ents {
		tree := c.path(cachedir.Builds, e.Name())
		if registered[tree] {
			continue
		}
		unlock, err := c.dir().TryLocks(cachedir.TreeLocks(e.Name()))
		if err != nil || unlock == nil {
			continue // a live build's, or unknowable now: tried again next run
		}
		if n := killStragglers(tree); n > 0 {
			fixed = append(fixed, fmt.Sprintf("%d process(es) of a killed run still in builds/%s", n, e.Name()))
		}
		if c.toTrash(tree) == nil {
			fixed = append(fixed, "stray tree builds/"+e.Name())
		}
		unlock()
	}
	return fixed
}

// repairScratch trashes the scratch directories (tempDir) of imports and
// publishes that died before their rename.
func (c *Cache) repairScratch() []string {
	var fixed []string
	scratch := map[string]func(string) string{
		cachedir.Base: cachedir.BaseLock, cachedir.Kernels: cachedir.BuildLock, cachedir.Configs: cachedir.ConfigLock,
	}
	for dir, lockOf := range scratch {
		tmps, _ := filepath.Glob(c.path(dir, ".tmp-*")) // none: nothing to repair
		for _, tmp := range tmps {
			// .tmp-<final>-<random>: the lock is the final entry's.
			final := strings.TrimPrefix(filepath.Base(tmp), ".tmp-")
			if i := strings.LastIndexByte(final, '-'); i > 0 {
				final = final[:i]
			}
			unlock, err := c.tryLock(lockOf(final))
			if err != nil || unlock == nil {
				continue // being written now
			}
			if c.toTrash(tmp) == nil {
				fixed = append(fixed, "half-written "+dir+"/"+final)
			}
			unlock()
		}
	}
	return fixed
}

// dropScratch trashes the scratch directories of final's earlier writers,
// which the caller's lock on final says are dead: a killed import's tar,
// still holding the lock when the next run's Repair looked, left its
// scratch behind.
func (c *Cache) dropScratch(final string) {
	tmps, _ := filepath.Glob(filepath.Join(filepath.Dir(final), ".tmp-"+filepath.Base(final)+"-*"))
	for _, tmp := range tmps {
		_ = c.toTrash(tmp) // best effort: Repair tries again
	}
}

// summary is fixed on one line: the first few and how many more.
func summary(fixed []string) string {
	const show = 3
	if len(fixed) <= show {
		return strings.Join(fixed, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(fixed[:show], "; "), len(fixed)-show)
}

// say reports one line through the meter: Say when it has one, else as a
// phase that ends at once.
func (c *Cache) say(format string, a ...any) {
	switch m := c.Meter.(type) {
	case nil:
	case interface{ Say(string, ...any) }:
		m.Say(format, a...)
	default:
		m.Begin(format, a...)
		m.End("done")
	}
}
