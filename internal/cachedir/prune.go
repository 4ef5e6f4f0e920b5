package cachedir

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/kci-dev/kci/internal/proc"
)

// PruneOptions say what kci cache prune and clear remove.
type PruneOptions struct {
	// Kinds to remove; empty: every kind but other (KVM probe choices and the
	// materialized defaults are small, and in use by every run).
	Kinds []Kind
	// Before, when set, keeps what was used since: prune's age. Zero is
	// clear. Trash is garbage whatever its age.
	Before time.Time
}

// Kept is an item prune left, and why.
type Kept struct {
	Item Item
	Why  string
}

// PruneReport is what a prune did.
type PruneReport struct {
	Removed []Item
	Kept    []Kept // selected but left: in use, or needed by what stays
}

// Freed is the bytes of what was removed.
func (r *PruneReport) Freed() int64 {
	var n int64
	for _, it := range r.Removed {
		n += it.Size
	}
	return n
}

// ParseKind reads a kind's name as kci cache takes it.
func ParseKind(s string) (Kind, error) {
	if slices.Contains(Kinds, Kind(s)) {
		return Kind(s), nil
	}
	names := make([]string, len(Kinds))
	for i, k := range Kinds {
		names[i] = string(k)
	}
	return "", fmt.Errorf("%q: want one of %s", s, strings.Join(names, ", "))
}

// removeOrder is the order kinds go in: a tree before the source it is a
// worktree of and the kernel it is kept for, so neither is removed while
// a tree that needs it stays.
var removeOrder = []Kind{KindBuilds, KindConfigs, KindLogs, KindKernels, KindSource,
	KindImages, KindResults, KindTrash, KindLocks, KindOther}

// Prune removes what o selects, never what a running kci holds a lock
// on. A source or kernel takes the build trees that need it along, unless
// one of them was used since o.Before or is in use: then it stays, saying
// which. A removed tree's worktree entry is pruned from its source.
func (c *Cache) Prune(ctx context.Context, o PruneOptions) (*PruneReport, error) {
	items, err := c.Usage(ctx)
	if err != nil {
		return nil, err
	}
	sel, kept := selectItems(items, o, func(it Item) string {
		unlock, why, err := c.itemLocks(it)
		if err == nil && why == "" {
			unlock()
		}
		return why // an error shows again when it is removed
	})
	r := &PruneReport{Kept: kept}
	blocked := map[string]string{} // item -> why a tree that needs it stays
	for _, k := range removeOrder {
		for _, it := range items {
			if it.Kind != k || !sel[it.Name] {
				continue
			}
			if why := blocked[it.Name]; why != "" {
				r.Kept = append(r.Kept, Kept{it, why})
				continue
			}
			why, err := c.removeItem(ctx, it)
			switch {
			case err != nil:
				return r, wrap("cache prune "+it.Name, err)
			case why != "":
				r.Kept = append(r.Kept, Kept{it, why})
				for _, n := range it.Needs {
					blocked[n] = it.Name + ", which needs it, is in use"
				}
			default:
				r.Removed = append(r.Removed, it)
			}
		}
	}
	return r, nil
}

// selectItems picks what o asks for and the trees that need a picked
// source or kernel; kept are the picked ones a newer tree still needs, or
// that busy says a running kci holds (checked before their trees go:
// a tree is not removed for a source that then stays).
func selectItems(items []Item, o PruneOptions, busy func(Item) string) (map[string]bool, []Kept) {
	kinds := o.Kinds
	if len(kinds) == 0 {
		kinds = slices.DeleteFunc(slices.Clone(Kinds), func(k Kind) bool { return k == KindOther })
	}
	old := func(it Item) bool {
		return o.Before.IsZero() || it.Kind == KindTrash || it.Used.Before(o.Before)
	}
	sel, byName := map[string]bool{}, map[string]Item{}
	for _, it := range items {
		sel[it.Name], byName[it.Name] = slices.Contains(kinds, it.Kind) && old(it), it
	}
	var kept []Kept
	for _, it := range items {
		for _, n := range it.Needs {
			if !sel[n] || sel[it.Name] {
				continue
			}
			why := busy(byName[n])
			if !old(it) {
				why = fmt.Sprintf("%s needs it and was used %s", it.Name, humanize.Time(it.Used))
			}
			if why != "" {
				sel[n] = false
				kept = append(kept, Kept{byName[n], why})
			}
		}
	}
	for _, it := range items {
		if slices.ContainsFunc(it.Needs, func(n string) bool { return sel[n] }) {
			sel[it.Name] = true // useless without what it needs
		}
	}
	return sel, kept
}

// removeItem removes it under the locks its writers and users take; why
// says what holds it when a running kci does.
func (c *Cache) removeItem(ctx context.Context, it Item) (why string, err error) {
	unlock, why, err := c.itemLocks(it)
	if err != nil || why != "" {
		return why, err
	}
	defer unlock()
	switch it.Kind {
	case KindBuilds:
		return "", c.removeTree(ctx, it)
	case KindTrash:
		return "", os.RemoveAll(it.Path)
	case KindLocks, KindResults, KindLogs:
		if err := os.Remove(it.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		return "", nil
	}
	return "", c.discard(it.Path)
}

// itemLocks takes the locks that guard it, or says which one a live
// process holds.
//
// A lock file is removed only while held, so its holder-to-be either has
// it open already (and waits for this process) or makes a new one: two
// holders of one key can then meet only in publish, which keeps the
// first entry.
func (c *Cache) itemLocks(it Item) (func(), string, error) {
	base := filepath.Base(it.Name)
	var names, files []string
	switch it.Kind {
	case KindBuilds:
		names = TreeLocks(base)
	case KindKernels:
		names = []string{BuildLock(base), TreeLock(base)}
	case KindConfigs:
		names = []string{ConfigLock(base)}
	case KindLogs:
		key, _, _ := strings.Cut(base, ".")
		names = []string{BuildLock(key), ConfigLock(key)}
	case KindSource:
		// Every build may be about to add a worktree from it: no build at
		// all may run while it goes.
		names = append([]string{BaseLock(base)}, c.lockNames(BuildLock(""), TreeLock(""), ConfigLock(""))...)
	case KindImages:
		files, _ = filepath.Glob(c.Path(Initramfs, "*.lock")) // a builder of any image uses every layer
	case KindLocks:
		files = []string{it.Path}
	}
	for _, n := range names {
		files = append(files, c.Path(Locks, n+".lock"))
	}
	return tryFlocks(files)
}

// removeTree removes a build tree and then its worktree entry, so that
// git worktree list in the source names no tree that is gone. The entry
// may still be locked by the git worktree add that made it.
func (c *Cache) removeTree(ctx context.Context, it Item) error {
	b, _ := os.ReadFile(filepath.Join(it.Path, ".git")) // no .git: a tree git never registered
	admin, _ := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if err := c.discard(it.Path); err != nil {
		return err
	}
	if admin == "" || !strings.HasPrefix(admin, c.Path(Base)+string(filepath.Separator)) {
		return nil
	}
	if err := os.Remove(filepath.Join(admin, "locked")); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	repo := filepath.Dir(filepath.Dir(filepath.Dir(admin))) // <repo>/.git/worktrees/<entry>
	if _, err := (proc.Cmd{Name: "git", Args: []string{"worktree", "prune"}, Dir: repo, Timeout: time.Minute}).Run(ctx); err != nil {
		return fmt.Errorf("git worktree prune in %s: %w", repo, err)
	}
	return nil
}
