package kernel

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/internal/keyhash"
	"github.com/kci-dev/kci/internal/proc"
)

// DebianTarball is where Debian's linux-source-6.12 package puts the source.
const DebianTarball = "/usr/src/linux-source-6.12.tar.xz"

// Base is where a tree's source comes from: exactly one of Tarball or Git.
type Base struct {
	Tarball string `yaml:"tarball,omitempty" json:"tarball,omitempty"`
	Git     string `yaml:"git,omitempty" json:"git,omitempty"` // an existing checkout; never modified
	Ref     string `yaml:"ref,omitempty" json:"ref,omitempty"` // with Git; default HEAD
}

// Source is an imported base: a kci-owned git repository at a commit.
type Source struct {
	Dir     string `json:"dir"`
	Commit  string `json:"commit"`
	ID      string `json:"id"`      // git tree hash: content identity, independent of dates
	Version string `json:"version"` // e.g. 6.12.117, from the top Makefile
	Origin  string `json:"origin"`  // e.g. "debian linux-source-6.12 6.12.117-1~deb12u1"
}

// fixed dates make imported commits, and so worktrees, reproducible.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=kci", "GIT_AUTHOR_EMAIL=kci@localhost",
	"GIT_COMMITTER_NAME=kci", "GIT_COMMITTER_EMAIL=kci@localhost",
	"GIT_AUTHOR_DATE=2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2000-01-01T00:00:00Z",
}

// Import makes b available as a git repository in the cache, once.
func (c *Cache) Import(ctx context.Context, b Base) (*Source, error) {
	if err := c.repairOnce(ctx); err != nil {
		return nil, err
	}
	switch {
	case b.Tarball != "" && b.Git != "":
		return nil, fmt.Errorf("base: give a tarball or a git checkout, not both")
	case b.Git != "":
		return c.importGit(ctx, b)
	case b.Tarball != "":
		return c.importTarball(ctx, b.Tarball)
	}
	return nil, fmt.Errorf("base: no source given (tarball or git)")
}

func (c *Cache) importTarball(ctx context.Context, tarball string) (*Source, error) {
	name, origin, err := tarballName(ctx, tarball)
	if err != nil {
		return nil, err
	}
	final := c.path(cachedir.Base, name)
	src := filepath.Join(final, "src")
	if s, err := openSource(ctx, src, origin); err == nil {
		return s, nil
	}
	unlock, err := c.lock(ctx, cachedir.BaseLock(name))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if s, err := openSource(ctx, src, origin); err == nil {
		return s, nil
	}
	c.dropScratch(final)
	tmp, err := cachedir.TempDir(final)
	if err != nil {
		return nil, infra("import "+tarball, err)
	}
	// Published by a rename, so gone on success; else trashed at once: an
	// interrupted import must not spend a minute deleting 90k files.
	defer func() { _ = c.toTrash(tmp) }()
	end := c.beginImport(tarball, origin)
	s, err := c.unpackAndCommit(ctx, tarball, origin, tmp, final)
	end(err)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// importRate is what the base import moves per second of compressed
// tarball on the reference machine (2 cores: 32-47 s for the 145 MiB
// linux-source-6.12, announced as ~48 s): for the announced estimate.
const importRate = 3 << 20

// beginImport announces the one-time import with an estimate and returns
// what ends the phase.
func (c *Cache) beginImport(tarball, origin string) func(error) {
	if c.Meter == nil {
		return func(error) {}
	}
	est := "~1 min"
	if st, err := os.Stat(tarball); err == nil {
		est = fmt.Sprintf("~%d s", max(st.Size()/importRate, 1))
	}
	c.Meter.Begin("importing %s into the cache (one time, %s)", origin, est)
	return func(err error) {
		if errors.Is(err, context.Canceled) {
			c.Meter.End("interrupted")
			return
		}
		if err != nil {
			c.Meter.End("failed")
			return
		}
		c.Meter.End("done") // the meter adds the time it took
	}
}

// unpackAndCommit unpacks tarball in tmp, commits it and publishes it as
// final.
func (c *Cache) unpackAndCommit(ctx context.Context, tarball, origin, tmp, final string) (*Source, error) {
	src := filepath.Join(final, "src")
	x := command{dir: tmp, timeout: 20 * time.Minute}
	if _, err := x.run(ctx, "tar", "xf", tarball); err != nil {
		return nil, infra("import "+tarball, err)
	}
	top, err := singleDir(tmp)
	if err != nil {
		return nil, infra("import "+tarball, err)
	}
	if err := os.Rename(filepath.Join(tmp, top), filepath.Join(tmp, "src")); err != nil {
		return nil, infra("import "+tarball, err)
	}
	// -f: Debian's tarball has a top-level .gitignore that ignores /*.
	g := command{dir: filepath.Join(tmp, "src"), env: gitEnv, timeout: 20 * time.Minute}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", "."},
		gcOff[0], gcOff[1],
		{"add", "-f", "-A", "."},
		{"commit", "-q", "-m", "import " + origin},
	} {
		if _, err := g.run(ctx, "git", args...); err != nil {
			return nil, infra("import "+tarball, err)
		}
	}
	if err := excludeBuildDirs(filepath.Join(tmp, "src")); err != nil {
		return nil, infra("import "+tarball, err)
	}
	if err := cachedir.Publish(tmp, final); err != nil {
		return nil, infra("import "+tarball, err)
	}
	return openSource(ctx, src, origin)
}

// tarballName names a tarball's import. Debian's package gets its version in
// the name; any other tarball is named by its content hash.
func tarballName(ctx context.Context, tarball string) (name, origin string, err error) {
	if _, err := os.Stat(tarball); err != nil {
		return "", "", infra("base tarball", err)
	}
	if abs, _ := filepath.Abs(tarball); abs == DebianTarball {
		// No answer (no dpkg, package gone) falls back to the content hash.
		q := proc.Cmd{Name: "dpkg-query", Args: []string{"-W", "-f=${Version}", "linux-source-6.12"}, Timeout: time.Minute, StdoutOnly: true}
		out, err := q.Run(ctx)
		if err == nil && len(out) > 0 {
			v := string(out)
			return "debian-" + strings.NewReplacer("~", "_", ":", "_", "/", "_").Replace(v),
				"debian linux-source-6.12 " + v, nil
		}
	}
	f, err := os.Open(tarball)
	if err != nil {
		return "", "", infra("base tarball", err)
	}
	defer func() { _ = f.Close() }() // read-only: closing loses nothing
	h := sha256.New()
	if _, err := io.Copy(h, ctxReader{ctx, f}); err != nil {
		return "", "", infra("base tarball", err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	return "tar-" + sum[:16], "tarball " + filepath.Base(tarball) + " sha256:" + sum[:16], nil
}

func (c *Cache) importGit(ctx context.Context, b Base) (*Source, error) {
	abs, err := filepath.Abs(b.Git)
	if err != nil {
		return nil, infra("base git", err)
	}
	ref := b.Ref
	if ref == "" {
		ref = "HEAD"
	}
	// A shared clone: worktrees hang off kci's repository, not the user's,
	// so the user's checkout (and its .git) is never modified.
	name := "git-" + keyhash.Strings(abs)[:16]
	mirror := c.path(cachedir.Base, name, "src")
	unlock, err := c.lock(ctx, cachedir.BaseLock(name))
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(mirror, ".git", "HEAD")); err != nil {
		if err := c.cloneMirror(ctx, abs, c.path(cachedir.Base, name)); err != nil {
			return nil, err
		}
	}
	g := command{dir: mirror, timeout: 30 * time.Minute}
	if _, err := g.run(ctx, "git", "fetch", "-q", "--no-tags", abs, ref); err != nil {
		return nil, fmt.Errorf("base git %s: ref %q: %w", abs, ref, err)
	}
	out, err := g.run(ctx, "git", "rev-parse", "FETCH_HEAD")
	if err != nil {
		return nil, infra("base git", err)
	}
	commit := strings.TrimSpace(out)
	// Pin it so gc cannot drop it while worktrees use it.
	if _, err := g.run(ctx, "git", "update-ref", "refs/kci/"+commit, commit); err != nil {
		return nil, infra("base git", err)
	}
	return describeSource(ctx, mirror, commit, "git "+abs+" "+ref)
}

// cloneMirror makes final/src a shared clone of the checkout abs, in a
// scratch directory published by a rename: an interrupted clone leaves
// no half repository in its place.
func (c *Cache) cloneMirror(ctx context.Context, abs, final string) error {
	if _, err := os.Stat(final); err == nil {
		if err := c.toTrash(final); err != nil { // not a repository: from before publishing by rename
			return infra("base git", err)
		}
	}
	tmp, err := cachedir.TempDir(final)
	if err != nil {
		return infra("base git", err)
	}
	defer func() { _ = c.toTrash(tmp) }() // renamed away on success
	src := filepath.Join(tmp, "src")
	if _, err := (command{timeout: 30 * time.Minute}).run(ctx, "git", "clone", "-q", "--shared", "--no-checkout", abs, src); err != nil {
		return infra("base git "+abs, err)
	}
	for _, args := range gcOff {
		if _, err := (command{dir: src}).run(ctx, "git", args...); err != nil {
			return infra("base git", err)
		}
	}
	if err := excludeBuildDirs(src); err != nil {
		return infra("base git", err)
	}
	return infra("base git", cachedir.Publish(tmp, final))
}

// gcOff, in each of kci's repositories, stops git from starting a detached
// "gc --auto" or maintenance after a commit, am or fetch: it would outlive
// kci and compete with the next build. kci's repositories only grow by
// the patches applied; they need no repacking.
var gcOff = [][]string{{"config", "gc.auto", "0"}, {"config", "maintenance.auto", "false"}}

// ctxReader ends a long read (hashing a tarball) when ctx does.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

func openSource(ctx context.Context, dir, origin string) (*Source, error) {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return nil, err
	}
	out, err := command{dir: dir}.run(ctx, "git", "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	return describeSource(ctx, dir, strings.TrimSpace(out), origin)
}

func describeSource(ctx context.Context, dir, commit, origin string) (*Source, error) {
	g := command{dir: dir}
	out, err := g.run(ctx, "git", "rev-parse", commit+"^{tree}")
	if err != nil {
		return nil, infra("describe source", err)
	}
	mk, err := g.run(ctx, "git", "show", commit+":Makefile")
	if err != nil {
		return nil, fmt.Errorf("base %s: no top-level Makefile: not a kernel tree", origin)
	}
	return &Source{Dir: dir, Commit: commit, ID: strings.TrimSpace(out), Version: makefileVersion(mk), Origin: origin}, nil
}

var mkVar = regexp.MustCompile(`^(VERSION|PATCHLEVEL|SUBLEVEL|EXTRAVERSION)\s*=\s*(\S*)`)

func makefileVersion(mk string) string {
	v := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(mk))
	for n := 0; sc.Scan() && n < 20; n++ {
		if m := mkVar.FindStringSubmatch(sc.Text()); m != nil {
			v[m[1]] = m[2]
		}
	}
	return fmt.Sprintf("%s.%s.%s%s", v["VERSION"], v["PATCHLEVEL"], v["SUBLEVEL"], v["EXTRAVERSION"])
}

func singleDir(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	if len(ents) != 1 || !ents[0].IsDir() {
		return "", fmt.Errorf("tarball must hold one top-level directory, found %d entries", len(ents))
	}
	return ents[0].Name(), nil
}

// excludeBuildDirs keeps kci's in-tree build directories out of git status.
func excludeBuildDirs(repo string) error {
	p := filepath.Join(repo, ".git", "info", "exclude")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString("/" + objDirName + "/\n")
	return errors.Join(err, f.Close())
}

// worktree checks out src at commit into dir and backdates every file, so
// that a build directory copied from an earlier build of the same sources
// is newer than them and only what a patch touches gets rebuilt.
func worktree(ctx context.Context, src *Source, dir string) error {
	g := command{dir: src.Dir, timeout: 10 * time.Minute}
	// --force twice: an entry for dir that a killed run left locked
	// ("initializing") is not in the way; the caller holds dir's lock.
	if _, err := g.run(ctx, "git", "worktree", "add", "-q", "--force", "--force", "--detach", dir, src.Commit); err != nil {
		return infra("worktree", err)
	}
	old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err // 90k files: a Ctrl-C must not wait for them
		}
		if d.Name() == ".git" && p != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		return infra("worktree backdate", err)
	}
	// Record the new mtimes in the index: later resets of this tree then
	// touch only the files that really differ.
	if _, err := (command{dir: dir, timeout: 10 * time.Minute}).run(ctx, "git", "update-index", "-q", "--refresh"); err != nil {
		return infra("worktree index refresh", err)
	}
	return nil
}

// removeWorktree takes a worktree out of the way at once (a rename) and
// deletes it in the background: deleting 90k files can take minutes on a
// busy disk, and a failed build should say why without waiting for that.
// Leftovers of an interrupted deletion are swept by the next build.
func removeWorktree(src *Source, dir string) {
	if _, err := os.Lstat(dir); err != nil {
		return
	}
	trash := filepath.Join(filepath.Dir(filepath.Dir(dir)), cachedir.Trash)
	if err := os.MkdirAll(trash, 0o755); err == nil {
		if t, err := os.MkdirTemp(trash, filepath.Base(dir)+"-"); err == nil {
			if os.Rename(dir, filepath.Join(t, "tree")) == nil {
				dir = t
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Best effort, both: a stale worktree entry is pruned and leftover
	// files swept by the next build.
	_, _ = command{dir: src.Dir}.run(ctx, "git", "worktree", "prune")
	go func() { _ = os.RemoveAll(dir) }()
}

// sweepTrash deletes what interrupted runs left in the trash.
func (c *Cache) sweepTrash() {
	ents, _ := os.ReadDir(c.path(cachedir.Trash))
	for _, e := range ents {
		_ = os.RemoveAll(c.path(cachedir.Trash, e.Name())) // what fails now is tried again next build
	}
}
