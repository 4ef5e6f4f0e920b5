package cachedir

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Kind is what a cache item is, for kci cache and kci doctor.
type Kind string

// The kinds, in the order kci cache lists them. The layout they map from
// is kind(): every top-level entry of the cache is some kind, so the
// listing's total is all the cache holds.
const (
	KindSource  Kind = "source"  // base/<name>: an imported base repository
	KindBuilds  Kind = "builds"  // builds/<key>: a kept build tree (worktree of a source)
	KindKernels Kind = "kernels" // kernels/<key>: a published kernel
	KindConfigs Kind = "configs" // configs/<key>: a config resolved by kci config
	KindLogs    Kind = "logs"    // logs/<key>.log: a build's log
	KindImages  Kind = "images"  // initramfs/ (u-root and agent layers), src/ (agent source)
	KindResults Kind = "results" // results/<id>.json: the boot result cache
	KindTrash   Kind = "trash"   // trash/: what a run moved away and did not finish deleting
	KindLocks   Kind = "locks"   // locks/*.lock, initramfs/*.lock
	KindOther   Kind = "other"   // KVM probe choices, materialized defaults, anything unknown
)

// Kinds lists every kind in listing order.
var Kinds = []Kind{KindSource, KindBuilds, KindKernels, KindConfigs, KindLogs, KindImages,
	KindResults, KindTrash, KindLocks, KindOther}

// Item is one thing the cache holds.
type Item struct {
	Kind Kind
	Name string // the path under the cache root, e.g. builds/0e38b975f295db0499da6591
	Path string
	Size int64     // bytes on disk, du-like: each inode once, symlinks not followed
	Used time.Time // the newest modification inside: the last build, publish or use
	// Needs names the items this one cannot outlive: a build tree needs
	// the source it is a worktree of and the kernel that makes it a kept
	// tree (Repair trashes a tree without one).
	Needs []string
}

// topKinds maps the top-level directories whose every entry is an item
// of one kind (the layout: layout.go); initramfs/ holds images and their
// locks, and the rest of the root is KindOther.
var topKinds = map[string]Kind{
	Base: KindSource, Builds: KindBuilds, Kernels: KindKernels, Configs: KindConfigs,
	Logs: KindLogs, Results: KindResults, Trash: KindTrash, Locks: KindLocks,
	AgentSrc: KindImages,
}

// Usage lists everything the cache holds, sized. It reads only: a live
// run's half-written entries are listed as what they are on disk.
func (c *Cache) Usage(ctx context.Context) ([]Item, error) {
	var items []Item
	tops, err := os.ReadDir(c.Root)
	if err != nil {
		return nil, wrap("cache usage", err)
	}
	for _, top := range tops {
		switch kind, ok := topKinds[top.Name()]; {
		case ok && top.IsDir():
			items = append(items, c.childItems(top.Name(), kind, nil)...)
		case top.Name() == Initramfs && top.IsDir():
			items = append(items, c.childItems(Initramfs, KindImages, func(name string) Kind {
				if strings.HasSuffix(name, ".lock") {
					return KindLocks
				}
				return KindImages
			})...)
		default:
			items = append(items, Item{Kind: KindOther, Name: top.Name(), Path: c.Path(top.Name())})
		}
	}
	w := newWalker()
	for i := range items {
		if err := ctx.Err(); err != nil {
			return nil, wrap("cache usage", err)
		}
		items[i].Size, items[i].Used = w.size(items[i].Path)
	}
	for i := range items {
		items[i].Needs = c.needs(items[i])
	}
	return items, nil
}

// childItems is one item per entry of dir; kindOf, when set, decides
// each entry's kind by its name.
func (c *Cache) childItems(dir string, kind Kind, kindOf func(string) Kind) []Item {
	ents, _ := os.ReadDir(c.Path(dir)) // unreadable: listed as the empty dir it looks like
	var items []Item
	for _, e := range ents {
		k := kind
		if kindOf != nil {
			k = kindOf(e.Name())
		}
		items = append(items, Item{Kind: k, Name: dir + "/" + e.Name(), Path: c.Path(dir, e.Name())})
	}
	return items
}

// needs names what it depends on: for a build tree, its source (from the
// worktree's .git file) and, unless a config-only tree, its kernel.
func (c *Cache) needs(it Item) []string {
	if it.Kind != KindBuilds {
		return nil
	}
	var out []string
	if src := c.treeSource(it.Path); src != "" {
		out = append(out, src)
	}
	name := filepath.Base(it.Path)
	if !strings.HasPrefix(name, "config-") && Published(c.Path(Kernels, name)) {
		out = append(out, Kernels+"/"+name)
	}
	return out
}

// treeSource is the item name (base/<name>) of the repository tree is a
// worktree of, "" when it is none of this cache's.
func (c *Cache) treeSource(tree string) string {
	b, err := os.ReadFile(filepath.Join(tree, ".git"))
	if err != nil {
		return ""
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return ""
	}
	// <root>/base/<name>/src/.git/worktrees/<entry>
	rel, err := filepath.Rel(c.Root, gitdir)
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if err != nil || len(parts) < 3 || parts[0] != Base {
		return ""
	}
	return Base + "/" + parts[1]
}

// walkers bounds the walk's concurrent directory reads: the walk waits on
// the disk, not the CPU, so more than the 2 cores of a small machine.
const walkers = 16

// walker sizes trees the way du does: st_blocks of every inode once
// (hard links counted at their first sight), symlinks not followed.
type walker struct {
	mu   sync.Mutex
	seen map[[2]uint64]bool // (dev, ino) of multiply-linked files
	sem  chan struct{}
}

func newWalker() *walker {
	return &walker{seen: map[[2]uint64]bool{}, sem: make(chan struct{}, walkers)}
}

// size is p's disk use and its newest mtime; what cannot be read counts
// as nothing (a live run may delete it under the walk).
func (w *walker) size(p string) (int64, time.Time) {
	fi, err := os.Lstat(p)
	if err != nil {
		return 0, time.Time{}
	}
	n, used := w.inode(fi), fi.ModTime()
	if !fi.IsDir() {
		return n, used
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return n, used
	}
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	add := func(s int64, t time.Time) {
		mu.Lock()
		n += s
		if t.After(used) {
			used = t
		}
		mu.Unlock()
	}
	for _, e := range ents {
		child := filepath.Join(p, e.Name())
		if !e.IsDir() {
			add(w.size(child))
			continue
		}
		select {
		case w.sem <- struct{}{}: // a free walker: read the subtree beside this one
			wg.Add(1)
			go func() {
				defer wg.Done()
				add(w.size(child))
				<-w.sem
			}()
		default: // all busy: read it here rather than queue without bound
			add(w.size(child))
		}
	}
	wg.Wait()
	return n, used
}

// inode is fi's blocks on disk, zero for a multiply-linked file already
// counted.
func (w *walker) inode(fi os.FileInfo) int64 {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi.Size()
	}
	if st.Nlink > 1 && !fi.IsDir() {
		id := [2]uint64{uint64(st.Dev), st.Ino}
		w.mu.Lock()
		dup := w.seen[id]
		w.seen[id] = true
		w.mu.Unlock()
		if dup {
			return 0
		}
	}
	return st.Blocks * 512
}

// KindTotal is one kind's share of the cache.
type KindTotal struct {
	Kind  Kind
	Count int
	Size  int64
	Used  time.Time // the newest use among its items
}

// Totals sums items by kind, every kind present (a zero row says the
// cache holds none of it), in listing order.
func Totals(items []Item) []KindTotal {
	by := map[Kind]*KindTotal{}
	out := make([]KindTotal, len(Kinds))
	for i, k := range Kinds {
		out[i].Kind = k
		by[k] = &out[i]
	}
	for _, it := range items {
		t := by[it.Kind]
		t.Count++
		t.Size += it.Size
		if it.Used.After(t.Used) {
			t.Used = it.Used
		}
	}
	return out
}

// SortItems orders items by kind, then the most recently used first.
func SortItems(items []Item) {
	rank := map[Kind]int{}
	for i, k := range Kinds {
		rank[k] = i
	}
	sort.SliceStable(items, func(i, j int) bool {
		if rank[items[i].Kind] != rank[items[j].Kind] {
			return rank[items[i].Kind] < rank[items[j].Kind]
		}
		return items[i].Used.After(items[j].Used)
	})
}
