package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/internal/cachedir"
)

// fakeMakefile stands in for Kbuild: the config targets write a .config
// into O=, bzImage writes what Build collects (vmlinux is a copy of an ELF
// with a GNU build id, bzImage one that boots it). No compiler runs.
const fakeMakefile = `VERSION = 6
PATCHLEVEL = 1
SUBLEVEL = 0
EXTRAVERSION =
O ?= .
tinyconfig x86_64_defconfig:
	mkdir -p $(O) && printf 'CONFIG_FAKE=y\n' > $(O)/.config
olddefconfig:
	@test -f $(O)/.config
bzImage:
	mkdir -p $(O)/include/config $(O)/arch/x86/boot
	echo 6.1.0$(LOCALVERSION) > $(O)/include/config/kernel.release
	cp $(ELF) $(O)/vmlinux
	cp $(BZ) $(O)/arch/x86/boot/bzImage
	@i=0; while [ $$i -lt 100000 ]; do i=$$((i+1)); done
`

// An ELF with a GNU build-id note, for elfBuildID.
const fakeELF = "/bin/true"

// fakeMake is fakeMakefile with its ELF and a bzImage of it in place.
func fakeMake(t *testing.T) string {
	t.Helper()
	elfData, err := os.ReadFile(fakeELF)
	if err != nil {
		t.Skipf("needs an ELF with a build id at %s: %v", fakeELF, err)
	}
	bz := filepath.Join(t.TempDir(), "bzImage")
	if err := os.WriteFile(bz, fakeBzImage(t, elfData), 0o644); err != nil {
		t.Fatal(err)
	}
	return strings.NewReplacer("$(ELF)", fakeELF, "$(BZ)", bz).Replace(fakeMakefile)
}

// fakeBase makes a tiny git "kernel tree" and a cache; Build imports the
// tree as a git base like any other.
func fakeBase(t *testing.T) (*Cache, Base) {
	t.Helper()
	for _, tool := range []string{"git", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skip("needs " + tool)
		}
	}
	if id, err := elfBuildID(fakeELF); err != nil || id == "" {
		t.Skipf("needs an ELF with a build id at %s: %v", fakeELF, err)
	}
	dir := t.TempDir()
	mk := fakeMake(t)
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello.c"), []byte("int a;\nint b;\nint c;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g := command{dir: dir, env: gitEnv}
	for _, a := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "base"}} {
		if _, err := g.run(ctx, "git", a...); err != nil {
			t.Fatal(err)
		}
	}
	c := &Cache{Root: t.TempDir()}
	// Build deletes thrown-away trees in the background: let that finish
	// before the temp dir goes.
	t.Cleanup(func() { waitTrash(c) })
	return c, Base{Git: dir}
}

func waitTrash(c *Cache) {
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if ents, err := os.ReadDir(c.path("trash")); err != nil || len(ents) == 0 {
			return
		}
	}
}

func diffPatch(name, subject, body string) Patch {
	return Patch{File: name, Subject: subject, Data: []byte(body)}
}

// Changes hello.c's "int b;" line.
const helloPatch = `--- a/hello.c
+++ b/hello.c
@@ -1,3 +1,3 @@
 int a;
-int b;
+int b2;
 int c;
`

// Makes bzImage fail the way a compiler error does.
const brokenPatch = `--- a/Makefile
+++ b/Makefile
@@ -10,4 +10,5 @@ olddefconfig:
 bzImage:
+	@echo "../hello.c:2:5: error: expected expression" && false
 	mkdir -p $(O)/include/config $(O)/arch/x86/boot
 	echo 6.1.0$(LOCALVERSION) > $(O)/include/config/kernel.release
 	cp /bin/true $(O)/vmlinux
`

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func phaseNames(a *Artifacts) []string {
	var n []string
	for _, p := range a.Phases {
		n = append(n, p.Name)
	}
	return n
}

// A full Build against the fake tree: what it publishes, where, and what
// it throws away.
func TestBuildFakeTreePublishes(t *testing.T) {
	c, base := fakeBase(t)
	ctx := context.Background()
	req := Request{Base: base, Patches: []Patch{diffPatch("hello.patch", "hello: rename b", helloPatch)}}
	a, err := c.Build(ctx, req, Options{Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	key, err := c.Key(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	final := c.path("kernels", key)
	if a.Key != key || a.Dir != final || a.CacheHit {
		t.Fatalf("key %s dir %s hit %v, want %s %s false", a.Key, a.Dir, a.CacheHit, key, final)
	}
	for _, f := range []string{"bzImage", "vmlinux", "config", "build.log", "build.json"} {
		if !exists(filepath.Join(final, f)) {
			t.Errorf("%s not published", f)
		}
	}
	if want := []string{"import", "worktree", "apply", "config", "build", "verify", "publish"}; !reflect.DeepEqual(phaseNames(a), want) {
		t.Errorf("phases %q, want %q", phaseNames(a), want)
	}
	assertBuildCPU(t, a)
	want, _ := elfBuildID(fakeELF)
	if a.Release != "6.1.0-kci" || a.BuildID != want || a.Version != "6.1.0" {
		t.Errorf("release %q build id %q version %q", a.Release, a.BuildID, a.Version)
	}
	if len(a.ConfigHash) != 64 || a.Commit == "" || !reflect.DeepEqual(a.Patches, []string{"hello: rename b"}) {
		t.Errorf("config hash %q commit %q patches %q", a.ConfigHash, a.Commit, a.Patches)
	}
	log, err := os.ReadFile(a.Log)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"$ make O=.kci-o ARCH=x86_64 -j1", "LOCALVERSION=-kci tinyconfig\n", " olddefconfig\n", " bzImage\n"} {
		if !strings.Contains(string(log), w) {
			t.Errorf("build log lacks %q:\n%s", w, log)
		}
	}
	if exists(c.path("builds", key)) {
		t.Error("a build without Keep left its tree behind")
	}
	// The same request again is a cache hit.
	b, err := c.Build(ctx, req, Options{})
	if err != nil || !b.CacheHit || b.BuildID != a.BuildID {
		t.Fatalf("second build: hit %v err %v", b != nil && b.CacheHit, err)
	}
}

// assertBuildCPU checks that the build phase carries make's CPU (the fake
// bzImage rule's busy loop, in a shell make forks) within what its wall
// time allows, and that phases make does not run in carry none.
func assertBuildCPU(t *testing.T, a *Artifacts) {
	t.Helper()
	for _, p := range a.Phases {
		switch {
		case p.Name == "build" && (p.CPU < 10*time.Millisecond || p.CPU > p.Duration*time.Duration(runtime.NumCPU())):
			t.Errorf("build phase: CPU %v in %v of wall time", p.CPU, p.Duration)
		case p.Name != "build" && p.Name != "config" && p.CPU != 0:
			t.Errorf("%s phase: CPU %v, but make does not run in it", p.Name, p.CPU)
		}
	}
	data, err := os.ReadFile(filepath.Join(a.Dir, "build.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"cpu_ns"`) {
		t.Errorf("build.json records no CPU:\n%s", data)
	}
}

// A published build.json is all a cache hit reads: no tree, no make.
func TestBuildCacheHitPrepopulated(t *testing.T) {
	c, base := fakeBase(t)
	ctx := context.Background()
	req := Request{Base: base}
	key, err := c.Key(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	final := c.path("kernels", key)
	if err := os.MkdirAll(final, 0o755); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(Artifacts{Key: key, Dir: "/moved/elsewhere", Release: "6.1.0-cached", BuildID: "feed"})
	if err := os.WriteFile(filepath.Join(final, "build.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := c.Build(ctx, req, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !a.CacheHit || a.Release != "6.1.0-cached" || a.BuildID != "feed" {
		t.Fatalf("cache hit %v release %q build id %q", a.CacheHit, a.Release, a.BuildID)
	}
	if a.Dir != final || a.BzImage != filepath.Join(final, "bzImage") {
		t.Errorf("paths not rebased onto the cache: dir %s bzImage %s", a.Dir, a.BzImage)
	}
	for _, d := range []string{"builds", "logs"} {
		if exists(c.path(d)) {
			t.Errorf("a cache hit made %s/", d)
		}
	}
}

// A patch that does not apply is the patch's fault (*ApplyError, exit 2),
// and its worktree is thrown away, nothing published.
func TestBuildApplyFailureIsPatchsAndCleansUp(t *testing.T) {
	c, base := fakeBase(t)
	ctx := context.Background()
	stale := strings.Replace(helloPatch, "-int b;", "-int x;", 1)
	req := Request{Base: base, Patches: []Patch{diffPatch("stale.diff", "stale", stale)}, Keep: true}
	_, err := c.Build(ctx, req, Options{})
	var ae *ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("got %v (%T), want *ApplyError", err, err)
	}
	if ae.Patch != "stale.diff" || ae.File != "hello.c" {
		t.Errorf("apply error names %q file %q", ae.Patch, ae.File)
	}
	var ie *InfraError
	if errors.As(err, &ie) {
		t.Errorf("apply failure also classified as the machine's: %v", err)
	}
	key, _ := c.Key(ctx, req)
	if exists(c.path("builds", key)) || exists(c.path("kernels", key)) {
		t.Error("failed build left its tree or a published kernel")
	}
	assertUnlocked(t, c, "build-"+key)
}

// assertUnlocked fails unless the cache lock name is free: a failed build
// must not leave later builds of its key waiting forever.
func assertUnlocked(t *testing.T, c *Cache, name string) {
	t.Helper()
	got := make(chan error, 1)
	go func() {
		unlock, err := c.lock(context.Background(), name)
		if err == nil {
			unlock()
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("lock %s: %v", name, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("lock %s still held after Build returned", name)
	}
}

// A compiler error in make is the patch's (*BuildError with the first error
// line and the log), not the machine's; the tree goes, the log stays.
func TestBuildMakeFailureIsBuildError(t *testing.T) {
	c, base := fakeBase(t)
	ctx := context.Background()
	req := Request{Base: base, Patches: []Patch{diffPatch("broken.diff", "break it", brokenPatch)}}
	_, err := c.Build(ctx, req, Options{})
	var be *BuildError
	if !errors.As(err, &be) {
		t.Fatalf("got %v (%T), want *BuildError", err, err)
	}
	key, _ := c.Key(ctx, req)
	if be.First != "../hello.c:2:5: error: expected expression" || be.Log != c.path("logs", key+".log") {
		t.Errorf("first %q log %q", be.First, be.Log)
	}
	if !exists(be.Log) {
		t.Error("build log of a failed build not kept")
	}
	if exists(c.path("builds", key)) || exists(c.path("kernels", key)) {
		t.Error("failed build left its tree or a published kernel")
	}
}

// Makes olddefconfig exit the way a Kconfig syntax error does, or kills
// make there (a deadline's SIGKILL, the OOM killer).
const (
	kconfigErrPatch = `--- a/Makefile
+++ b/Makefile
@@ -8,3 +8,4 @@
 olddefconfig:
+	@echo "Kconfig:3: syntax error" && false
 	@test -f $(O)/.config
 bzImage:
`
	killedConfigPatch = `--- a/Makefile
+++ b/Makefile
@@ -8,3 +8,4 @@
 olddefconfig:
+	@kill -KILL $$PPID
 	@test -f $(O)/.config
 bzImage:
`
)

// olddefconfig's exit status is the patch's (a Kconfig it broke); make
// killed there is the machine's, never blamed on the patch.
func TestOlddefconfigFailureByWhoseFault(t *testing.T) {
	c, base := fakeBase(t)
	ctx := context.Background()
	frag := writeConfig(t, "CONFIG_FAKE=y\n")
	build := func(patch string) error {
		req := Request{Base: base, Fragments: []string{frag}, Patches: []Patch{diffPatch("cfg.diff", "cfg", patch)}}
		_, err := c.Build(ctx, req, Options{})
		return err
	}
	var be *BuildError
	if err := build(kconfigErrPatch); !errors.As(err, &be) {
		t.Errorf("Kconfig error: got %v (%T), want *BuildError", err, err)
	}
	err := build(killedConfigPatch)
	var ie *InfraError
	if !errors.As(err, &ie) || errors.As(err, &be) || !strings.Contains(err.Error(), "olddefconfig") {
		t.Errorf("make killed in olddefconfig: got %v (%T), want *InfraError naming the step", err, err)
	}
}

// A requested option the final config lacks is a *ConfigError naming it.
func TestBuildConfigViolation(t *testing.T) {
	c, base := fakeBase(t)
	frag := writeConfig(t, "CONFIG_FAKE=y\n")
	// A forbidden option from the base config survives the fake olddefconfig.
	_, err := c.Build(context.Background(), Request{Base: base, Fragments: []string{frag}, BaseConfig: writeConfig(t, "CONFIG_LOCKDEP=y\n")}, Options{})
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v (%T), want *ConfigError", err, err)
	}
	if len(ce.Violations) != 1 || ce.Violations[0].Option != "LOCKDEP" {
		t.Errorf("violations %v, want LOCKDEP only", ce.Violations)
	}
}

func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "base.config")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Keep leaves the tree for later builds; a leaf build on top of it then
// works in that tree (marked dirty with its key) instead of a new one, and
// reuses the parent's config.
func TestBuildKeepThenLeafInPlace(t *testing.T) {
	c, base := fakeBase(t)
	ctx := context.Background()
	parent, err := c.Build(ctx, Request{Base: base, Keep: true}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws := c.path("builds", parent.Key)
	if !exists(filepath.Join(ws, objDirName, "vmlinux")) {
		t.Fatal("Keep did not keep the build tree")
	}
	req := Request{Base: base, Parent: parent, Patches: []Patch{diffPatch("hello.patch", "hello", helloPatch)}}
	leaf, err := c.Build(ctx, req, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"import", "reset", "apply", "config", "build", "verify", "publish"}; !reflect.DeepEqual(phaseNames(leaf), want) {
		t.Errorf("leaf phases %q, want %q", phaseNames(leaf), want)
	}
	mark, err := os.ReadFile(filepath.Join(ws, dirtyMark))
	if err != nil || strings.TrimSpace(string(mark)) != leaf.Key {
		t.Errorf("dirty mark %q (%v), want %s", mark, err, leaf.Key)
	}
	if exists(c.path("builds", leaf.Key)) {
		t.Error("leaf build made its own tree")
	}
	if leaf.Parent != parent.Key || leaf.ConfigHash != parent.ConfigHash {
		t.Errorf("leaf parent %s config %s, want %s %s", leaf.Parent, leaf.ConfigHash, parent.Key, parent.ConfigHash)
	}
	src, err := os.ReadFile(filepath.Join(ws, "hello.c"))
	if err != nil || !strings.Contains(string(src), "int b2;") {
		t.Errorf("patch not applied in the kept tree: %q %v", src, err)
	}
	// Same fragments, no Kconfig change: the parent's config as is.
	if log, err := os.ReadFile(leaf.Log); err != nil || strings.Contains(string(log), "olddefconfig") {
		t.Errorf("leaf build re-ran the config (%v):\n%s", err, log)
	}
	assertUnlocked(t, c, "ws-"+parent.Key)
}

// Cleanups run last-registered first, like the defers they replace: the
// tree goes before the build lock is released.
func TestBuildRunExitOrder(t *testing.T) {
	var b buildRun
	var got []string
	for _, n := range []string{"unlock", "remove tree", "close log"} {
		b.onExit(func() { got = append(got, n) })
	}
	b.exit()
	if want := []string{"close log", "remove tree", "unlock"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("exit order %q, want %q", got, want)
	}
}

// Only a leaf over a kept, built parent tree builds in place; a kept build
// or a parent without objects gets a fresh tree.
func TestLeafInPlaceNeedsKeptParent(t *testing.T) {
	c := &Cache{Root: t.TempDir()}
	parent := &Artifacts{Key: "p", Patches: []string{"one"}}
	one := []Patch{{Subject: "one"}, {Subject: "two"}}
	for _, tc := range []struct {
		name string
		req  Request
	}{
		{"no parent", Request{Patches: one}},
		{"kept leaf", Request{Patches: one, Parent: parent, Keep: true}},
		{"shorter than parent", Request{Parent: parent}},
		{"parent tree not built", Request{Patches: one, Parent: parent}},
	} {
		b := &buildRun{c: c, ctx: context.Background(), req: tc.req}
		ok, err := b.leafInPlace()
		if ok || err != nil || b.inPlace || b.tree != "" {
			t.Errorf("%s: in place %v err %v tree %q", tc.name, ok, err, b.tree)
		}
		b.exit()
	}
}

// A kept kernel whose tree kci cache prune took is built again when it is
// asked for with Keep, so its children seed from it instead of each
// building cold; the published kernel and its log stay as they were.
func TestBuildKeepRegrowsAPrunedTree(t *testing.T) {
	c, base := fakeBase(t)
	ctx := context.Background()
	req := Request{Base: base, Keep: true}
	first, err := c.Build(ctx, req, Options{})
	if err != nil {
		t.Fatal(err)
	}
	log, _ := os.ReadFile(first.Log)
	if _, err := c.dir().Prune(ctx, cachedir.PruneOptions{Kinds: []cachedir.Kind{cachedir.KindBuilds}}); err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(c.path("builds", first.Key), objDirName, "vmlinux")
	if exists(ws) {
		t.Fatal("prune left the kept tree")
	}
	again, err := c.Build(ctx, req, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !again.CacheHit || again.Key != first.Key || again.BuildID != first.BuildID {
		t.Errorf("second build: hit %v key %s id %s, want the published %s %s", again.CacheHit, again.Key, again.BuildID, first.Key, first.BuildID)
	}
	if !exists(ws) || again.Regrown == nil {
		t.Fatalf("tree not rebuilt: %s exists %v, phases %v", ws, exists(ws), again.Regrown)
	}
	if after, _ := os.ReadFile(again.Log); string(after) != string(log) {
		t.Errorf("the published build log changed:\n%s", after)
	}
	third, err := c.Build(ctx, req, Options{})
	if err != nil || third.Regrown != nil {
		t.Errorf("third build rebuilt a tree it has (%v): %v", err, third.Regrown)
	}
	child, err := c.Build(ctx, Request{Base: base, Parent: again, Keep: true, Patches: []Patch{diffPatch("hello.patch", "hello", helloPatch)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(phaseNames(child), "seed") {
		t.Errorf("child phases %q: not seeded from the rebuilt tree", phaseNames(child))
	}
	assertUnlocked(t, c, "build-"+first.Key)
}

// Makes the fake bzImage depend on an object of hello.c, rebuilt by mtime
// as Kbuild rebuilds: a copy of the source.
const objPatch = `--- a/Makefile
+++ b/Makefile
@@ -8,5 +8,7 @@
 olddefconfig:
 	@test -f $(O)/.config
-bzImage:
+$(O)/hello.o: hello.c
+	mkdir -p $(O) && cp hello.c $@
+bzImage: $(O)/hello.o
 	mkdir -p $(O)/include/config $(O)/arch/x86/boot
 	echo 6.1.0$(LOCALVERSION) > $(O)/include/config/kernel.release
`

// Adds a file: a tree's own series on top of the parent.
const treePatch = `--- /dev/null
+++ b/tree.txt
@@ -0,0 +1 @@
+tree
`

// A tree seeded from a parent tree that a leaf build used last gets the
// parent's objects, not the leaf's: hello.o is rebuilt from the tree's
// hello.c, and the parent's tree is left as the leaf left it (no extra
// build there).
func TestSeedFromLeafUsedParent(t *testing.T) {
	c, base := fakeBase(t)
	ctx := context.Background()
	obj := diffPatch("obj.patch", "hello.o", objPatch)
	parent, err := c.Build(ctx, Request{Base: base, Keep: true, Patches: []Patch{obj}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ws := c.path("builds", parent.Key)
	if _, err := c.Build(ctx, Request{Base: base, Parent: parent, Patches: []Patch{obj, diffPatch("hello.patch", "hello", helloPatch)}}, Options{}); err != nil {
		t.Fatal(err)
	}
	if o, err := os.ReadFile(filepath.Join(ws, objDirName, "hello.o")); err != nil || !strings.Contains(string(o), "int b2;") {
		t.Fatalf("the leaf's object in the parent's tree: %q %v", o, err)
	}
	tree, err := c.Build(ctx, Request{Base: base, Parent: parent, Keep: true, Patches: []Patch{obj, diffPatch("tree.patch", "tree", treePatch)}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(phaseNames(tree), "seed") {
		t.Fatalf("tree phases %q: not seeded", phaseNames(tree))
	}
	o, err := os.ReadFile(filepath.Join(c.path("builds", tree.Key), objDirName, "hello.o"))
	if err != nil || string(o) != "int a;\nint b;\nint c;\n" {
		t.Errorf("tree's hello.o %q (%v): want the object of its own hello.c, not the leaf's", o, err)
	}
	if !exists(filepath.Join(ws, dirtyMark)) {
		t.Error("the parent's tree was rebuilt as itself before the copy")
	}
	assertUnlocked(t, c, "ws-"+parent.Key)
}
