package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/internal/fsutil"
	"github.com/kci-dev/kci/internal/proc"
)

// The steps of Cache.Build, in the order it calls them. Each returns its
// error as the code that knows the cause typed it (ApplyError, ConfigError,
// BuildError: the patch's; InfraError, VerifyError: the machine's), with
// the step named in it, and never re-wraps it: job.Classify and the exit
// messages read those types and texts.

// buildRun is one Build in progress: what each step leaves for the next.
type buildRun struct {
	c   *Cache
	ctx context.Context
	req Request
	opt Options

	src   *Source
	key   string
	frags []Fragment
	final string // the published directory: kernels/<key>

	tree    string  // where make runs
	obj     string  // tree's build directory
	inPlace bool    // a leaf build in its parent's kept tree
	apply   []Patch // what still has to be applied in tree

	logPath   string
	logSuffix string // ".config" for ResolveConfig: a build's log is not overwritten
	logf      *os.File
	logw      io.Writer // the log, and opt.Progress when set
	mk        makeCommand

	phases []Phase
	cpu    time.Duration // make's CPU so far: each phase records what it added
	exits  []func()      // cleanups, run last first when Build returns
}

// onExit registers f to run when Build returns, like a defer in Build.
func (b *buildRun) onExit(f func()) { b.exits = append(b.exits, f) }

func (b *buildRun) exit() {
	for i := len(b.exits) - 1; i >= 0; i-- {
		b.exits[i]()
	}
}

// timed runs f and records how long it took as phase name.
func (b *buildRun) timed(name string, f func() error) error {
	t, cpu := time.Now(), b.cpu
	err := f()
	b.phases = append(b.phases, Phase{Name: name, Duration: time.Since(t), CPU: b.cpu - cpu})
	return err
}

// resolve imports the base and computes the cache key.
func (b *buildRun) resolve() error {
	if err := b.timed("import", func() (err error) { b.src, err = b.c.Import(b.ctx, b.req.Base); return }); err != nil {
		return err
	}
	var err error
	if b.key, b.frags, err = b.c.key(b.src, b.req); err != nil {
		return err
	}
	b.final = b.c.path(cachedir.Kernels, b.key)
	return nil
}

// cached is the published kernel, if there is one.
func (b *buildRun) cached() *Artifacts {
	a, err := loadArtifacts(b.final)
	if err != nil {
		return nil // not published (yet): build it
	}
	a.CacheHit = true
	cachedir.MarkUsed(b.final)
	return a
}

// treeLost: a kept kernel is published but its build tree is gone (kci
// cache prune took it, or it was never copied along). Later builds seed
// from that tree, so it is built again, once, rather than every child
// building cold.
func (b *buildRun) treeLost() bool {
	if !b.req.Keep || b.c.TreeKept(b.key) {
		return false
	}
	b.logSuffix = ".regrow" // the published build's log stays as it was
	return true
}

// regrown ends a build that only remade hit's kept tree: the kernel stays
// as published, the tree is kept (freshTree's exit keeps a published
// key's tree) and the log is closed.
func (b *buildRun) regrown(hit *Artifacts) (*Artifacts, error) {
	if err := b.logf.Close(); err != nil {
		return nil, infra("build log", err)
	}
	hit.Regrown = b.phases
	return hit, nil
}

// lock serialises the builders of one key until Build returns.
func (b *buildRun) lock() error {
	unlock, err := b.c.lock(b.ctx, cachedir.BuildLock(b.key))
	if err != nil {
		return err
	}
	b.onExit(unlock)
	return nil
}

// prepareTree decides where to build. A leaf build (a patch on top of a
// kept tree) works in the parent's own tree, as a developer would: reset
// the sources to the parent, apply the patch, make — only what differs
// from the last build there recompiles. Any other build gets a fresh
// worktree, seeded with a copy of its parent's objects when it has one.
func (b *buildRun) prepareTree() error {
	if ok, err := b.leafInPlace(); ok || err != nil {
		return err
	}
	return b.freshTree()
}

// leafInPlace takes the parent's kept tree when the build can use it,
// reporting whether it did.
func (b *buildRun) leafInPlace() (bool, error) {
	p := b.req.Parent
	if p == nil || b.req.Keep || len(b.req.Patches) < len(p.Patches) {
		return false, nil
	}
	if !b.c.TreeKept(p.Key) {
		return false, nil // nothing kept there: build afresh
	}
	ws := b.c.path(cachedir.Builds, p.Key)
	b.inPlace, b.tree = true, ws
	unlockWS, err := b.c.lockTreeForLeaf(b.ctx, p.Key)
	if err != nil {
		return true, err
	}
	b.onExit(unlockWS)
	if err := b.timed("reset", func() error { return resetWorkspace(b.ctx, ws, parentCommit(b.src, p), b.key) }); err != nil {
		return true, err
	}
	b.apply = b.req.Patches[len(p.Patches):]
	return true, nil
}

// freshTree makes a new worktree for the key. It is removed when Build
// returns, unless the build asked to be kept and was published.
func (b *buildRun) freshTree() error {
	b.tree = b.c.path(cachedir.Builds, b.key)
	b.onExit(func() {
		if !b.req.Keep || !cachedir.Published(b.final) {
			removeWorktree(b.src, b.tree)
		}
	})
	// A leftover tree is from an interrupted run: start over.
	removeWorktree(b.src, b.tree)
	if err := b.timed("worktree", func() error { return worktree(b.ctx, b.src, b.tree) }); err != nil {
		return err
	}
	b.apply = b.req.Patches
	if b.req.Parent == nil {
		return nil
	}
	return b.timed("seed", func() error { return b.c.seed(b.ctx, b.src, b.req.Parent, b.tree) })
}

// applyPatches applies what the tree lacks of the series.
func (b *buildRun) applyPatches() error {
	return b.timed("apply", func() error { return applySeries(b.ctx, b.tree, b.apply) })
}

// openLog creates the build directory and the build log make writes to.
func (b *buildRun) openLog() error {
	if err := os.MkdirAll(b.obj, 0o755); err != nil {
		return infra("build dir", err)
	}
	b.logPath = b.c.path(cachedir.Logs, b.key+b.logSuffix+".log")
	if err := os.MkdirAll(filepath.Dir(b.logPath), 0o755); err != nil {
		return infra("build log", err)
	}
	f, err := os.Create(b.logPath)
	if err != nil {
		return infra("build log", err)
	}
	// Closed (and checked) before the log is published; this is for the
	// early returns, where the build's own error is the news.
	b.onExit(func() { _ = f.Close() })
	b.logf, b.logw = f, f
	if b.opt.Progress != nil {
		b.logw = io.MultiWriter(f, b.opt.Progress)
	}
	cc, err := b.c.compiler()
	if err != nil {
		return err
	}
	b.mk = makeCommand{Tree: b.tree, Jobs: b.opt.Jobs, CC: cc, Release: "-kci"}
	return nil
}

// make runs make for targets in the tree, logging the command line first.
func (b *buildRun) make(timeout time.Duration, targets ...string) (string, error) {
	args := b.mk.Args(targets...)
	fmt.Fprintf(b.logf, "$ make %s\n", strings.Join(args, " "))
	return command{dir: b.tree, env: b.mk.Env(), timeout: timeout, out: b.logw, nice: b.opt.nice(), cpu: &b.cpu}.run(b.ctx, "make", args...)
}

// configure makes the final .config and checks it against the policy.
// The drift from production is not part of the build: job.Builder
// reports it against the project's production config, cached or not.
func (b *buildRun) configure() error {
	return b.timed("config", func() error {
		if b.inPlace && sameStrings(b.req.Fragments, b.req.Parent.Fragments) && !touchesKconfig(b.apply) {
			// Same fragments, no Kconfig change: the parent's verified
			// config is this build's. Leaving an identical .config alone
			// also spares make its config sync.
			var values Values
			return reuseConfig(b.req.Parent, filepath.Join(b.obj, ".config"), &values)
		}
		if err := b.baseConfig(); err != nil {
			return err
		}
		return b.mergeAndVerify()
	})
}

// configTimeout is a hang guard for the config steps, not a speed
// expectation. Each parses every Kconfig file and runs the compiler for
// every cc-option test in it: 10-40 s of CPU. make runs at buildNice, so
// beside a busy machine's full-priority work it gets a few percent of a
// CPU: on two CPUs under a test run's builds and linters, a tinyconfig
// outlived the 5 minutes this once was.
const configTimeout = 30 * time.Minute

// baseConfig puts the starting .config in place: the parent's for a leaf
// build, else tinyconfig, defconfig or the given file.
func (b *buildRun) baseConfig() error {
	dst := filepath.Join(b.obj, ".config")
	base := b.req.BaseConfig
	switch {
	case b.inPlace:
		return infra("parent config", fsutil.CopyFile(nil, b.req.Parent.Config, nil, dst))
	case base == "" || base == "tinyconfig" || base == "defconfig":
		target := "tinyconfig"
		if base == "defconfig" {
			target = "x86_64_defconfig"
		}
		if _, err := b.make(configTimeout, target); err != nil {
			return infra("make "+target, err)
		}
		return nil
	}
	return infra("base config", fsutil.CopyFile(nil, base, nil, dst))
}

// mergeAndVerify merges the fragments in, lets Kconfig settle the rest and
// checks every requested and forbidden option.
func (b *buildRun) mergeAndVerify() error {
	cfg := filepath.Join(b.obj, ".config")
	cur, err := os.ReadFile(cfg)
	if err != nil {
		return infra("config", err)
	}
	if err := os.WriteFile(cfg, mergeInto(cur, b.frags), 0o644); err != nil {
		return infra("config", err)
	}
	if out, err := b.make(configTimeout, "olddefconfig"); err != nil {
		if _, exited := proc.ExitCode(err); !exited {
			// Killed at the deadline, or never started: the machine's.
			return infra("make olddefconfig", err)
		}
		// A Kconfig syntax error is the patch's.
		return &BuildError{First: firstError(out), Log: b.logPath, Tail: tail(out, 20)}
	}
	data, err := os.ReadFile(cfg)
	if err != nil {
		return infra("config", err)
	}
	if vs := Verify(ParseValues(data), b.frags, kconfigDeps(b.tree)); len(vs) > 0 {
		return &ConfigError{Violations: vs}
	}
	return nil
}

// compile makes bzImage. make's exit status is the patch's; make killed
// or failing to run at all is the machine's.
func (b *buildRun) compile() error {
	return b.timed("build", func() error {
		to := b.opt.Timeout
		if to == 0 {
			to = 2 * time.Hour
		}
		out, err := b.make(to, "bzImage")
		if err == nil {
			return nil
		}
		if b.ctx.Err() != nil {
			return b.ctx.Err()
		}
		if _, exited := proc.ExitCode(err); exited {
			return &BuildError{First: firstError(out), Log: b.logPath, Tail: tail(out, 20)}
		}
		// Killed (its deadline, a signal) or never started.
		return infra("make", err)
	})
}

// describe is what the request and the tree say about the kernel built.
func (b *buildRun) describe() *Artifacts {
	a := &Artifacts{
		Key: b.key, BaseID: b.src.ID, BaseOrigin: b.src.Origin, Version: b.src.Version,
		Fragments: b.req.Fragments,
	}
	// Best effort: an unknown commit is recorded as none.
	if out, err := (command{dir: b.tree}).run(b.ctx, "git", "rev-parse", "HEAD"); err == nil {
		a.Commit = strings.TrimSpace(out)
	}
	for _, p := range b.req.Patches {
		a.Patches = append(a.Patches, p.Subject)
	}
	if b.req.Parent != nil {
		a.Parent = b.req.Parent.Key
	}
	return a
}

// collect reads what the built objects say (release, build id) into a and
// checks vmlinux carries what the series adds.
func (b *buildRun) collect(a *Artifacts) error {
	return b.timed("verify", func() error {
		rel, err := os.ReadFile(filepath.Join(b.obj, "include", "config", "kernel.release"))
		if err != nil {
			return infra("kernel.release", err)
		}
		a.Release = strings.TrimSpace(string(rel))
		if a.BuildID, err = elfBuildID(filepath.Join(b.obj, "vmlinux")); err != nil {
			return infra("build id", err)
		}
		if err := sameKernel(filepath.Join(b.obj, "arch/x86/boot/bzImage"), a.BuildID); err != nil {
			return err
		}
		found, missing, err := VerifyAdds(filepath.Join(b.obj, "vmlinux"), b.req.Patches)
		if err != nil {
			return infra("verify", err)
		}
		a.Verified = found
		if len(missing) > 0 {
			return &VerifyError{Missing: missing}
		}
		return nil
	})
}

// sameKernel checks that the bzImage boots the vmlinux just built: a
// stale object in the boot image (a cached piggy.o) would otherwise show
// only when the guest reports another build id.
func sameKernel(bzImage, buildID string) error {
	id, err := bzImageBuildID(bzImage)
	if err != nil {
		return infra("bzImage build id", err)
	}
	if id != buildID {
		return infra("bzImage", fmt.Errorf("it boots build id %s, vmlinux has %s: a stale object in the boot image", id, buildID))
	}
	return nil
}

// testHookPublish, set by a test, runs between the copy and the rename of
// publish: the interruption test stops a build there.
var testHookPublish func(context.Context)

// publish copies the kernel, its config and log into the cache and
// renames them into place at once, with the timings recorded so far.
func (b *buildRun) publish(a *Artifacts) (*Artifacts, error) {
	// The log is published too: a failed close may have lost its tail.
	if err := b.logf.Close(); err != nil {
		return nil, infra("build log", err)
	}
	tmp, err := cachedir.TempDir(b.final)
	if err != nil {
		return nil, infra("publish", err)
	}
	// Gone once publish renamed it; a leftover .tmp- directory is never
	// read, so it is not worth failing a good build for.
	b.onExit(func() { _ = os.RemoveAll(tmp) })
	t := time.Now()
	if err := b.copyOut(tmp, a); err != nil {
		return nil, err
	}
	if testHookPublish != nil {
		testHookPublish(b.ctx)
	}
	a.setDir(b.final)
	a.Phases = append(b.phases, Phase{Name: "publish", Duration: time.Since(t)})
	js, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, infra("publish: encode build.json", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "build.json"), js, 0o644); err != nil {
		return nil, infra("publish", err)
	}
	if err := cachedir.Publish(tmp, b.final); err != nil {
		return nil, infra("publish", err)
	}
	return loadArtifacts(b.final)
}

// copyOut copies the build's files into tmp and records the config's hash.
func (b *buildRun) copyOut(tmp string, a *Artifacts) error {
	for _, f := range [][2]string{
		{filepath.Join(b.obj, "arch/x86/boot/bzImage"), "bzImage"},
		{filepath.Join(b.obj, "vmlinux"), "vmlinux"},
		{filepath.Join(b.obj, ".config"), "config"},
		{b.logPath, "build.log"},
	} {
		if err := fsutil.CopyFile(nil, f[0], nil, filepath.Join(tmp, f[1])); err != nil {
			return infra("publish", err)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(tmp, "config"))
	if err != nil {
		return infra("publish: config hash", err)
	}
	sum := sha256.Sum256(cfg)
	a.ConfigHash = hex.EncodeToString(sum[:])
	return nil
}
