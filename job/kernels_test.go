package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
)

// kci.yaml's config.production is the drift report's reference; without
// it, Debian's config is.
func TestDriftHonoursConfigProduction(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	final := write("config", "CONFIG_HZ=1000\nCONFIG_PREEMPT_NONE=y\n")
	write("prod.config", "CONFIG_HZ=250\nCONFIG_PREEMPT_NONE=y\n")
	b := &Builder{Project: &project.File{Dir: dir, Config: project.Config{Production: "prod.config"}}}

	if got := b.Production(); got != filepath.Join(dir, "prod.config") {
		t.Errorf("Production() = %q, want kci.yaml's, relative to its directory", got)
	}
	a, err := b.withDrift(context.Background(), &kernel.Artifacts{Config: final, Release: "6.12.0-kci"}, "kernel 6.12.0-kci")
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Drift) != 1 || a.Drift[0].Option != "HZ" || a.Drift[0].Here != "1000" || a.Drift[0].Production != "250" {
		t.Errorf("drift %+v, want only HZ: here 1000, production 250", a.Drift)
	}

	// An unreadable reference is an error naming it, never "no drift".
	b.Project.Config.Production = "missing.config"
	if _, err := b.withDrift(context.Background(), &kernel.Artifacts{Config: final}, "kernel"); err == nil || !strings.Contains(err.Error(), "missing.config") {
		t.Errorf("missing production config: err %v, want one naming it", err)
	} else if ee := Classify("build", err).(*ExitError); ee.Code != ExitInternal {
		t.Errorf("missing production config blamed with exit %d, want the machine's (%d)", ee.Code, ExitInternal)
	}

	b.Project.Config.Production = ""
	if got := b.Production(); got != kernel.DebianProductionConfig {
		t.Errorf("Production() without config.production = %q, want Debian's %q", got, kernel.DebianProductionConfig)
	}
}

// Only git apply's own "does not apply" skips a tree; a patch git cannot
// even read, or a git that cannot run, is an error.
func TestAppliesToTellsDoesNotApplyFromFailure(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "linux")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"Makefile": "VERSION = 6\nPATCHLEVEL = 12\n", "f": "a\nb\nc\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=kci", "-c", "user.email=kci@example.org", "commit", "-qm", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	b := &Builder{Cache: &kernel.Cache{Root: filepath.Join(dir, "cache")}, Project: &project.File{Dir: dir, Base: kernel.Base{Git: repo}}}
	tree := &project.Tree{Name: "stock"}
	patch := func(body string) []kernel.Patch {
		return []kernel.Patch{{File: "p.patch", Index: 1, Data: []byte("--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n" + body)}}
	}
	ctx := context.Background()

	if ok, err := b.AppliesTo(ctx, tree, patch(" a\n-b\n+B\n c\n")); !ok || err != nil {
		t.Errorf("matching patch: AppliesTo = %v, %v; want true, nil", ok, err)
	}
	if ok, err := b.AppliesTo(ctx, tree, patch(" x\n-y\n+Y\n c\n")); ok || err != nil {
		t.Errorf("patch against other lines: AppliesTo = %v, %v; want false, nil", ok, err)
	}
	// A corrupt patch is the patch's fault (exit 2), named with git's reason.
	ok, err := b.AppliesTo(ctx, tree, patch(" a\ngarbage\n"))
	var ae *kernel.ApplyError
	if ok || !errors.As(err, &ae) || !strings.Contains(err.Error(), "p.patch") || !strings.Contains(err.Error(), "corrupt patch") {
		t.Errorf("corrupt patch: AppliesTo = %v, %v; want an ApplyError naming the patch and git's reason", ok, err)
	}
	if code := Classify("patch", err).(*ExitError).Code; code != ExitApply {
		t.Errorf("corrupt patch: exit %d, want %d (the patch's fault)", code, ExitApply)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if ok, err := b.AppliesTo(canceled, tree, patch(" a\n-b\n+B\n c\n")); ok || !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: AppliesTo = %v, %v; want context.Canceled", ok, err)
	}
}

// A tree's build starts from the stock kernel only when stock is built,
// with its build tree, already (or StockFirst asks for it): a first run of a gtp patch builds
// one kernel, not stock and then gtp on it. A cached tree needs neither.
func TestTreeParent(t *testing.T) {
	dir := t.TempDir()
	repo := gitBase(t)
	prod := filepath.Join(dir, "prod.config")
	if err := os.WriteFile(prod, []byte("CONFIG_HZ=250\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := &kernel.Cache{Root: filepath.Join(dir, "cache")}
	b := &Builder{Cache: cache, Project: &project.File{Dir: dir, Base: kernel.Base{Git: repo}, Config: project.Config{Production: prod}}}
	ctx := context.Background()
	tree := b.baseRequest()
	var err error
	if tree.Fragments, err = b.fragments(nil); err != nil {
		t.Fatal(err)
	}
	tree.Patches = []kernel.Patch{{File: "gtp.patch", Index: 1, Data: []byte("--- a/f\n+++ b/f\n")}}
	publish := func(req kernel.Request) string { return publishFake(t, cache, req) }

	if p, err := b.treeParent(ctx, tree); p != nil || err != nil {
		t.Errorf("nothing cached: parent %v, %v; want none (the tree builds cold)", p, err)
	}
	if ents, _ := os.ReadDir(filepath.Join(cache.Root, "builds")); len(ents) != 0 {
		t.Errorf("nothing cached: %d builds started, want none", len(ents))
	}
	stock, err := b.stockRequest()
	if err != nil {
		t.Fatal(err)
	}
	stockKey := publish(stock)
	if p, err := b.treeParent(ctx, tree); p != nil || err != nil {
		t.Errorf("stock cached without its build tree: parent %v, %v; want none (rebuilding stock's tree is a build too)", p, err)
	}
	obj := filepath.Join(cache.Root, "builds", stockKey, ".kci-o")
	if err := os.MkdirAll(obj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(obj, "vmlinux"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := b.treeParent(ctx, tree); err != nil || p == nil || p.Key != stockKey || !p.CacheHit || p.Regrown != nil {
		t.Errorf("stock cached with its tree: parent %+v, %v; want the cached stock kernel %s", p, err, stockKey)
	}
	if err := os.RemoveAll(filepath.Join(cache.Root, "kernels", stockKey)); err != nil {
		t.Fatal(err)
	}
	publish(tree)
	if p, err := b.treeParent(ctx, tree); p != nil || err != nil {
		t.Errorf("tree cached, stock not: parent %v, %v; want none (no stock build for a cache hit)", p, err)
	}
}

// Observe sees each kernel the builder hands out, cache hits included:
// make test's ledger counts the waits on another package's build.
func TestBuilderObserve(t *testing.T) {
	dir := t.TempDir()
	prod := filepath.Join(dir, "prod.config")
	if err := os.WriteFile(prod, []byte("CONFIG_HZ=250\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := &kernel.Cache{Root: filepath.Join(dir, "cache")}
	var seen []string
	b := &Builder{Cache: cache, Project: &project.File{Dir: dir, Base: kernel.Base{Git: gitBase(t)}, Config: project.Config{Production: prod}},
		Observe: func(a *kernel.Artifacts, took time.Duration) {
			if took <= 0 {
				t.Errorf("observed %s after %v", a.Key, took)
			}
			seen = append(seen, fmt.Sprintf("%s hit=%v", a.Key, a.CacheHit))
		}}
	ctx := context.Background()
	stock, err := b.stockRequest()
	if err != nil {
		t.Fatal(err)
	}
	key := publishFake(t, cache, stock)
	// Stock keeps its build tree: without one, the hit would regrow it.
	obj := filepath.Join(cache.Root, "builds", key, ".kci-o")
	if err := os.MkdirAll(obj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(obj, "vmlinux"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := b.Stock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{key + " hit=true", key + " hit=true"}; strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Errorf("observed %q, want %q", seen, want)
	}
}

// publishFake puts a kernel for req in the cache as a finished build
// would, and returns its key.
func publishFake(t *testing.T, cache *kernel.Cache, req kernel.Request) string {
	t.Helper()
	key, err := cache.Key(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	d := filepath.Join(cache.Root, "kernels", key)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"build.json": `{"key":"` + key + `","release":"6.12.0-kci"}`, "config": "CONFIG_HZ=1000\n"} {
		if err := os.WriteFile(filepath.Join(d, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return key
}
