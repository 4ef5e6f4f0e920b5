package kernel_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/internal/kconfig"
	"github.com/kci-dev/kci/job/jobtest"
	"github.com/kci-dev/kci/kernel"
)

func TestBuildStockVerifiedAndCached(t *testing.T) {
	a := jobtest.Base(t)
	for _, f := range []string{a.BzImage, a.Vmlinux, a.Config, a.Log} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("artifact %s missing or empty: %v", f, err)
		}
	}
	if !strings.Contains(a.Release, "-kci") || a.BuildID == "" || len(a.ConfigHash) != 64 {
		t.Errorf("identity incomplete: release %q build id %q config hash %q", a.Release, a.BuildID, a.ConfigHash)
	}
	vals, err := kernel.ReadConfigFile(context.Background(), a.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range kconfig.Forbidden {
		if vals.Get(n) != "n" {
			t.Errorf("forbidden CONFIG_%s=%s in the published config", n, vals.Get(n))
		}
	}
	for _, n := range []string{"BPF_SYSCALL", "DEBUG_INFO_BTF", "NET_CLS_BPF", "NET_SCH_INGRESS", "VETH", "IKCONFIG_PROC"} {
		if vals.Get(n) != "y" {
			t.Errorf("CONFIG_%s=%s, want y (built in)", n, vals.Get(n))
		}
	}
	// Every performance-relevant difference from Debian's kernel must be
	// one kci makes on purpose, with the reason written down.
	if _, err := os.Stat(kernel.DebianProductionConfig); err == nil {
		drift, err := kernel.ProductionDrift(context.Background(), a.Config, kernel.DebianProductionConfig)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range drift {
			if d.Why == "" {
				t.Errorf("undeliberate drift from production: %s", d)
			}
		}
	}
	var phases []string
	for _, p := range a.Phases {
		phases = append(phases, p.Name+"="+p.Duration.String())
	}
	t.Logf("phases of the build that published it: %s", strings.Join(phases, " "))

	again := jobtest.Base(t)
	if !again.CacheHit || again.Key != a.Key {
		t.Errorf("second build: cache hit %v key %s, want a hit on %s", again.CacheHit, again.Key, a.Key)
	}
}

// The patched build starts from a copy of the base build: a one-file
// change must recompile a handful of objects, not the kernel.
func TestIncrementalOneFilePatch(t *testing.T) {
	a := jobtest.Patched(t, "testdata/one-file.patch")
	if len(a.Patches) != 1 || a.Parent == "" {
		t.Fatalf("patched build: patches %q parent %q", a.Patches, a.Parent)
	}
	if a.CacheHit {
		t.Log("cache hit: incremental behaviour was checked when it was built")
		return
	}
	log, err := os.ReadFile(a.Log)
	if err != nil {
		t.Fatal(err)
	}
	var cc []string
	for _, l := range strings.Split(string(log), "\n") {
		// Host tools (objtool, resolve_btfids) log absolute paths: count
		// kernel objects only.
		if f := strings.Fields(l); len(f) == 2 && f[0] == "CC" && !filepath.IsAbs(f[1]) {
			cc = append(cc, f[1])
		}
	}
	if len(cc) > 10 {
		t.Errorf("incremental build compiled %d objects (want only what the patch touches): %v", len(cc), cc)
	}
	found := false
	for _, o := range cc {
		found = found || o == "net/core/skbuff.o"
	}
	if !found {
		t.Errorf("net/core/skbuff.o was not rebuilt: %v", cc)
	}
	for _, p := range a.Phases {
		t.Logf("phase %s: %s", p.Name, p.Duration)
	}
}

// assertClean checks that the failed build of key left nothing published
// or half-built in the cache, and the imported base tree untouched.
func assertClean(t *testing.T, root, key string) {
	t.Helper()
	for _, d := range []string{"kernels", "builds"} {
		if _, err := os.Stat(filepath.Join(root, d, key)); err == nil {
			t.Errorf("failed build left %s/%s in the cache", d, key)
		}
	}
	srcs, _ := filepath.Glob(filepath.Join(root, "base", "*", "src"))
	for _, s := range srcs {
		out, err := exec.Command("git", "-C", s, "status", "--porcelain").Output()
		if err != nil || len(out) > 0 {
			t.Errorf("base tree %s not clean: %v %s", s, err, out)
		}
		wt, _ := exec.Command("git", "-C", s, "worktree", "list", "--porcelain").Output()
		if strings.Contains(string(wt), key) {
			t.Errorf("failed build's worktree still registered:\n%s", wt)
		}
	}
}

func faultBuild(t *testing.T, patches []string, fragment string) error {
	t.Helper()
	b := jobtest.Builder(t)
	base := jobtest.Base(t)
	tr, _ := b.Project.Tree("stock")
	if fragment != "" {
		abs, _ := filepath.Abs(fragment)
		b.Project.Config.Fragments = append(b.Project.Config.Fragments, abs)
	}
	ps, err := kernel.LoadSeries(patches...)
	if err != nil {
		t.Fatal(err)
	}
	req, err := b.PatchedRequest(tr, base, ps)
	if err != nil {
		t.Fatal(err)
	}
	key, err := b.Cache.Key(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Cache.Build(context.Background(), req, b.Opts)
	if err == nil {
		t.Fatal("build succeeded, want a failure")
	}
	assertClean(t, b.Cache.Root, key)
	return err
}

func TestFaultPatchDoesNotApply(t *testing.T) {
	err := faultBuild(t, []string{"testdata/does-not-apply.diff"}, "")
	var ae *kernel.ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("got %T %v, want *kernel.ApplyError", err, err)
	}
	msg := err.Error()
	for _, w := range []string{"does-not-apply.diff", "stale context", "net/core/skbuff.c", "@@ -6166,7"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q lacks %q", msg, w)
		}
	}
}

func TestFaultPatchBreaksBuild(t *testing.T) {
	err := faultBuild(t, []string{"testdata/breaks-build.diff"}, "")
	var be *kernel.BuildError
	if !errors.As(err, &be) {
		t.Fatalf("got %T %v, want *kernel.BuildError", err, err)
	}
	if !strings.Contains(be.First, "skbuff.c") || !strings.Contains(be.First, "error:") {
		t.Errorf("first error line %q does not point at skbuff.c", be.First)
	}
	if _, err := os.Stat(be.Log); err != nil {
		t.Errorf("build log %s not kept: %v", be.Log, err)
	}
}

func TestFaultFragmentProveLocking(t *testing.T) {
	err := faultBuild(t, nil, "testdata/prove-locking.config")
	var ce *kernel.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %T %v, want *kernel.ConfigError", err, err)
	}
	msg := err.Error()
	for _, w := range []string{"CONFIG_PROVE_LOCKING=y", "prove-locking.config:2", "CONFIG_LOCKDEP=y", "CONFIG_DEBUG_LOCK_ALLOC=y"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
}

func TestFaultFragmentMissingDependency(t *testing.T) {
	err := faultBuild(t, nil, "testdata/missing-dep.config")
	var ce *kernel.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %T %v, want *kernel.ConfigError", err, err)
	}
	msg := err.Error()
	for _, w := range []string{"CONFIG_BPF_LSM=n", "missing-dep.config:2", "SECURITY"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q:\n%s", w, msg)
		}
	}
}

// The Debian tarball's import is a clean commit of every file (its
// top-level .gitignore of /* hides nothing) whose id is its tree hash.
// That the id does not depend on when or where the import ran is
// TestImportTarballIdentity's, on a small tarball with the same traits:
// a second import of 145 MiB here cost two minutes of a CI's CPU.
func TestImportDebianTarballClean(t *testing.T) {
	b := jobtest.Builder(t) // skips without the tarball or in -short mode
	ctx := context.Background()
	src, err := b.Cache.Import(ctx, kernel.Base{Tarball: kernel.DebianTarball})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(src.Version, "6.12.") || !strings.Contains(src.Origin, "linux-source-6.12") {
		t.Errorf("version %q origin %q", src.Version, src.Origin)
	}
	out, err := exec.Command("git", "-C", src.Dir, "status", "--porcelain").Output()
	if err != nil || len(out) > 0 {
		t.Errorf("imported tree not clean (the tarball's .gitignore hides files from a plain add?): %v %.200s", err, out)
	}
	tree, err := exec.Command("git", "-C", src.Dir, "rev-parse", "HEAD^{tree}").Output()
	if err != nil || strings.TrimSpace(string(tree)) != src.ID {
		t.Errorf("base id %s, the commit's tree %s (%v)", src.ID, tree, err)
	}
}
