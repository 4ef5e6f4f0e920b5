package cachedir

import (
	"context"
	"crypto/rand"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeCache is a cache holding every kind: a base repository with three
// worktrees (builds/old, locked by the git worktree add that made it as a
// killed kci leaves it; builds/new; builds/busy) and their kernels, a
// config, logs, images, results, trash, locks and a KVM verdict. sizes
// are the bytes of content written per kind.
type fakeCache struct {
	c     *Cache
	repo  string
	sizes map[Kind]int64
}

const kib = 1 << 10

func newFakeCache(t *testing.T) *fakeCache {
	t.Helper()
	f := &fakeCache{c: &Cache{Root: t.TempDir()}, sizes: map[Kind]int64{}}
	f.repo = f.c.path("base", "deb", "src")
	f.write(t, KindSource, "base/deb/src/Makefile", 256*kib)
	ctx := context.Background()
	g := command{dir: f.repo, env: gitEnv}
	for _, a := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "base"},
		{"worktree", "add", "-q", "--lock", "--detach", f.c.path("builds", "old")},
		{"worktree", "add", "-q", "--detach", f.c.path("builds", "new")},
		{"worktree", "add", "-q", "--detach", f.c.path("builds", "busy")}} {
		if _, err := g.run(ctx, "git", a...); err != nil {
			t.Fatal(err)
		}
	}
	// git's own files count as the source's; measured rather than known.
	f.sizes[KindSource] = 0
	f.sizes[KindBuilds] = 0
	for _, k := range []string{"old", "new", "busy"} {
		f.write(t, KindBuilds, "builds/"+k+"/vmlinux.o", 512*kib)
		f.write(t, KindKernels, "kernels/"+k+"/build.json", 4*kib)
		f.write(t, KindKernels, "kernels/"+k+"/bzImage", 128*kib)
		f.write(t, KindLogs, "logs/"+k+".log", 8*kib)
		f.write(t, KindLocks, "locks/build-"+k+".lock", 0)
	}
	// A published vmlinux is a hard link of the tree's: counted once.
	if err := os.Link(f.c.path("builds", "new", "vmlinux.o"), f.c.path("kernels", "new", "vmlinux")); err != nil {
		t.Fatal(err)
	}
	f.write(t, KindConfigs, "configs/cfg/config", 64*kib)
	f.write(t, KindImages, "initramfs/img.cpio", 96*kib)
	f.write(t, KindImages, "initramfs/layers/uroot-1.cpio", 64*kib)
	f.write(t, KindImages, "src/agent/main.go", 8*kib)
	f.write(t, KindLocks, "initramfs/img.lock", 0)
	f.write(t, KindResults, "results/aaaa.json", 16*kib)
	f.write(t, KindResults, "results/bbbb.json", 16*kib)
	f.write(t, KindTrash, "trash/old-123/x/big", 192*kib)
	f.write(t, KindOther, "accel/host.json", 4*kib)
	// What is old was last used 40 days ago; the rest now.
	long := time.Now().Add(-40 * 24 * time.Hour)
	for _, p := range []string{"builds/old", "builds/busy", "kernels/old", "kernels/busy", "logs/old.log",
		"results/aaaa.json", "trash/old-123", "locks/build-old.lock", "configs/cfg"} {
		age(t, f.c.path(p), long)
	}
	return f
}

// write makes a file of n random (incompressible) bytes as part of kind.
func (f *fakeCache) write(t *testing.T, kind Kind, rel string, n int) {
	t.Helper()
	p := f.c.path(rel)
	b := make([]byte, n)
	_, _ = rand.Read(b)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	f.sizes[kind] += int64(n)
}

// age sets the mtime of everything under p to when.
func age(t *testing.T, p string, when time.Time) {
	t.Helper()
	err := filepath.WalkDir(p, func(q string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(q, when, when)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func totalsByKind(items []Item) map[Kind]KindTotal {
	m := map[Kind]KindTotal{}
	for _, t := range Totals(items) {
		m[t.Kind] = t
	}
	return m
}

func TestUsageSizesEveryKind(t *testing.T) {
	f := newFakeCache(t)
	items, err := f.c.Usage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := totalsByKind(items)
	counts := map[Kind]int{KindSource: 1, KindBuilds: 3, KindKernels: 3, KindConfigs: 1, KindLogs: 3,
		KindImages: 3, KindResults: 2, KindTrash: 1, KindLocks: 4, KindOther: 1}
	for _, k := range Kinds {
		if got[k].Count != counts[k] {
			t.Errorf("%s: %d items, want %d", k, got[k].Count, counts[k])
		}
		// On disk: the content, plus at most a block per file and directory
		// and git's metadata.
		want, slack := f.sizes[k], int64(64*kib)
		switch k {
		case KindSource:
			want, slack = 2*256*kib, 1<<20 // the file and its blob; git's samples
		case KindBuilds:
			want = 3*512*kib + 3*256*kib // each tree's checkout of the Makefile
		}
		if got[k].Size < want || got[k].Size > want+slack {
			t.Errorf("%s: %d bytes, want %d..%d", k, got[k].Size, want, want+slack)
		}
	}
	i := slices.IndexFunc(items, func(it Item) bool { return it.Name == "builds/new" })
	if i < 0 || !slices.Equal(items[i].Needs, []string{"base/deb", "kernels/new"}) {
		t.Errorf("builds/new needs: %+v", items[i])
	}
}

// worktrees is git worktree list --porcelain of the fake source.
func (f *fakeCache) worktrees(t *testing.T) string {
	t.Helper()
	out, err := (command{dir: f.repo, env: gitEnv}).run(context.Background(), "git", "worktree", "list", "--porcelain")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func names(items []Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Name)
	}
	slices.Sort(out)
	return out
}

func TestPruneByAgeSparesTheNewAndTheLocked(t *testing.T) {
	f := newFakeCache(t)
	unlock, err := f.c.tryLock("ws-busy") // a running kci uses builds/busy
	if err != nil || unlock == nil {
		t.Fatal(err)
	}
	defer unlock()
	r, err := f.c.Prune(context.Background(), PruneOptions{Before: time.Now().Add(-7 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"builds/old", "configs/cfg", "kernels/old", "locks/build-old.lock", "logs/old.log",
		"results/aaaa.json", "trash/old-123"}
	if got := names(r.Removed); !slices.Equal(got, want) {
		t.Errorf("removed %v\nwant %v", got, want)
	}
	for _, p := range want {
		if _, err := os.Lstat(f.c.path(p)); err == nil {
			t.Errorf("%s is still there", p)
		}
	}
	why := map[string]string{}
	for _, k := range r.Kept {
		why[k.Item.Name] = k.Why
	}
	if !strings.Contains(why["builds/busy"], "a running kci holds locks/ws-busy.lock") {
		t.Errorf("builds/busy kept because %q", why["builds/busy"])
	}
	if !strings.Contains(why["kernels/busy"], "builds/busy, which needs it, is in use") {
		t.Errorf("kernels/busy kept because %q", why["kernels/busy"])
	}
	if r.Freed() < 512*kib+132*kib {
		t.Errorf("freed %d bytes", r.Freed())
	}
	wt := f.worktrees(t)
	if strings.Contains(wt, "builds/old") || strings.Contains(wt, "prunable") || !strings.Contains(wt, "builds/new") {
		t.Errorf("git worktree list after the prune:\n%s", wt)
	}
}

func TestPruneByKind(t *testing.T) {
	f := newFakeCache(t)
	ctx := context.Background()
	r, err := f.c.Prune(ctx, PruneOptions{Kinds: []Kind{KindResults, KindTrash}})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r.Removed); !slices.Equal(got, []string{"results/aaaa.json", "results/bbbb.json", "trash/old-123"}) {
		t.Errorf("removed %v", got)
	}
	// A source takes its trees along; their kernels stay.
	r, err = f.c.Prune(ctx, PruneOptions{Kinds: []Kind{KindSource}})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r.Removed); !slices.Equal(got, []string{"base/deb", "builds/busy", "builds/new", "builds/old"}) {
		t.Errorf("removed %v", got)
	}
	if _, err := os.Stat(f.c.path("kernels", "new", "bzImage")); err != nil {
		t.Errorf("kernel gone with the source: %v", err)
	}
}

func TestPruneKeepsASourceANewTreeNeeds(t *testing.T) {
	f := newFakeCache(t)
	age(t, f.c.path("base"), time.Now().Add(-40*24*time.Hour))
	r, err := f.c.Prune(context.Background(), PruneOptions{Kinds: []Kind{KindSource}, Before: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Removed) != 0 || len(r.Kept) != 1 || !strings.Contains(r.Kept[0].Why, "builds/new needs it") {
		t.Errorf("removed %v, kept %+v", names(r.Removed), r.Kept)
	}
}

func TestPruneLeavesASourceWhileABuildRuns(t *testing.T) {
	f := newFakeCache(t)
	unlock, err := f.c.tryLock("build-somethingelse")
	if err != nil || unlock == nil {
		t.Fatal(err)
	}
	defer unlock()
	r, err := f.c.Prune(context.Background(), PruneOptions{Kinds: []Kind{KindSource}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.repo); err != nil {
		t.Errorf("source removed under a running build: %v", err)
	}
	found := slices.ContainsFunc(r.Kept, func(k Kept) bool {
		return k.Item.Name == "base/deb" && strings.Contains(k.Why, "build-somethingelse.lock")
	})
	if !found {
		t.Errorf("kept %+v", r.Kept)
	}
}
