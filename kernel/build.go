package kernel

import (
	"bufio"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/fsutil"
)

// objDirName is the build directory, a direct child of the source tree:
// Kbuild then uses srctree := .., so commands (and .cmd files) are the same
// in every kci worktree and a copied build directory stays valid.
const objDirName = ".kci-o"

// Request says what to build.
type Request struct {
	Base       Base
	BaseConfig string     // "tinyconfig" (default), "defconfig", or a full config file
	Fragments  []string   // fragment files, applied in order after BaseConfig
	Patches    []Patch    // the series, in order
	Parent     *Artifacts // a build of a prefix of this one: its build tree seeds ours
	Keep       bool       // keep source + objects so later builds can start from them
}

// Options tune a build without changing what is built.
type Options struct {
	Jobs     int       // make -j; default nproc
	Progress io.Writer // receives make's output lines as they come (optional)
	Timeout  time.Duration
}

// Key is the cache key of req: what Build would publish it under.
func (c *Cache) Key(ctx context.Context, req Request) (string, error) {
	src, err := c.Import(ctx, req.Base)
	if err != nil {
		return "", err
	}
	key, _, err := c.key(src, req)
	return key, err
}

// key hashes everything that decides the kernel: the base's content, the
// base config, every fragment's text and every patch, in order. The final
// .config is a function of these; its hash is recorded too.
func (c *Cache) key(src *Source, req Request) (string, []Fragment, error) {
	frags := make([]Fragment, 0, len(req.Fragments))
	parts := []string{"kci-build-v1", src.ID}
	switch req.BaseConfig {
	case "", "tinyconfig":
		parts = append(parts, "tinyconfig")
	case "defconfig":
		parts = append(parts, "defconfig")
	default:
		data, err := os.ReadFile(req.BaseConfig)
		if err != nil {
			return "", nil, fmt.Errorf("base config: %w", err)
		}
		parts = append(parts, string(data))
	}
	for _, p := range req.Fragments {
		data, err := os.ReadFile(p)
		if err != nil {
			return "", nil, &ConfigError{Violations: []Violation{{Option: "-", Source: p, Why: err.Error()}}}
		}
		f, err := ParseFragment(p, data)
		if err != nil {
			return "", nil, &ConfigError{Violations: []Violation{{Option: "-", Source: p, Why: err.Error()}}}
		}
		frags = append(frags, f)
		parts = append(parts, string(data))
	}
	for _, p := range req.Patches {
		parts = append(parts, string(p.Data))
	}
	return hashStrings(parts...)[:24], frags, nil
}

// Build produces the kernel req describes, from the cache when it is there.
func (c *Cache) Build(ctx context.Context, req Request, opt Options) (*Artifacts, error) {
	var phases []Phase
	timed := func(name string, f func() error) error {
		t := time.Now()
		err := f()
		phases = append(phases, Phase{Name: name, Duration: time.Since(t)})
		return err
	}
	go c.sweepTrash()
	var src *Source
	if err := timed("import", func() (err error) { src, err = c.Import(ctx, req.Base); return }); err != nil {
		return nil, err
	}
	key, frags, err := c.key(src, req)
	if err != nil {
		return nil, err
	}
	baseCfg := req.BaseConfig
	if baseCfg == "" {
		baseCfg = "tinyconfig"
	}
	final := c.path("kernels", key)
	if a, err := loadArtifacts(final); err == nil {
		a.CacheHit = true
		return a, nil
	}
	unlock, err := c.lock("build-" + key)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if a, err := loadArtifacts(final); err == nil {
		a.CacheHit = true
		return a, nil
	}

	// Where to build. A leaf build (a patch on top of a kept tree) works in
	// the parent's own tree, as a developer would: reset the sources to the
	// parent, apply the patch, make — only what differs from the last build
	// there recompiles. A kept build gets a fresh worktree seeded with a
	// copy of its parent's objects.
	var tree string
	var apply []Patch
	inPlace := false
	if req.Parent != nil && !req.Keep && len(req.Patches) >= len(req.Parent.Patches) {
		ws := c.path("builds", req.Parent.Key)
		if _, err := os.Stat(filepath.Join(ws, objDirName, "vmlinux")); err == nil {
			inPlace = true
			tree = ws
			unlockWS, err := c.lock("ws-" + req.Parent.Key)
			if err != nil {
				return nil, err
			}
			defer unlockWS()
			if err := timed("reset", func() error { return resetWorkspace(ctx, tree, parentCommit(src, req.Parent), key) }); err != nil {
				return nil, err
			}
			apply = req.Patches[len(req.Parent.Patches):]
		}
	}
	if !inPlace {
		tree = c.path("builds", key)
		keepTree := false
		defer func() {
			if !keepTree {
				removeWorktree(src, tree)
			}
		}()
		defer func() { keepTree = keepTree || (req.Keep && published(c.path("kernels", key))) }()
		// A leftover tree is from an interrupted run: start over.
		removeWorktree(src, tree)
		if err := timed("worktree", func() error { return worktree(ctx, src, tree) }); err != nil {
			return nil, err
		}
		apply = req.Patches
		if req.Parent != nil {
			if err := timed("seed", func() error { return c.seed(ctx, src, req.Parent, tree) }); err != nil {
				return nil, err
			}
		}
	}
	obj := filepath.Join(tree, objDirName)
	if err := timed("apply", func() error { return applySeries(ctx, tree, apply) }); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(obj, 0o755); err != nil {
		return nil, infra("build dir", err)
	}
	logPath := c.path("logs", key+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, infra("build log", err)
	}
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, infra("build log", err)
	}
	// Closed (and checked) before the log is published; this is for the
	// early returns, where the build's own error is the news.
	defer func() { _ = logf.Close() }()
	var logw io.Writer = logf
	if opt.Progress != nil {
		logw = io.MultiWriter(logf, opt.Progress)
	}
	mk := makeCommand{Tree: tree, Jobs: opt.Jobs, CCache: haveCCache(), Release: "-kci"}
	run := func(timeout time.Duration, targets ...string) (string, error) {
		args := mk.Args(targets...)
		fmt.Fprintf(logf, "$ make %s\n", strings.Join(args, " "))
		return command{dir: tree, env: mk.Env(), timeout: timeout, out: logw}.run(ctx, "make", args...)
	}

	// The drift from production is not part of the build: job.Builder
	// reports it against the project's production config, cached or not.
	var values Values
	if err := timed("config", func() error {
		if inPlace && sameStrings(req.Fragments, req.Parent.Fragments) && !touchesKconfig(apply) {
			// Same fragments, no Kconfig change: the parent's verified
			// config is this build's. Leaving an identical .config alone
			// also spares make its config sync.
			return reuseConfig(req.Parent, filepath.Join(obj, ".config"), &values)
		}
		if inPlace {
			if err := fsutil.CopyFile(nil, req.Parent.Config, nil, filepath.Join(obj, ".config")); err != nil {
				return infra("parent config", err)
			}
		} else if baseCfg == "tinyconfig" || baseCfg == "defconfig" {
			target := baseCfg
			if target == "defconfig" {
				target = "x86_64_defconfig"
			}
			if _, err := run(5*time.Minute, target); err != nil {
				return infra("make "+target, err)
			}
		} else if err := fsutil.CopyFile(nil, baseCfg, nil, filepath.Join(obj, ".config")); err != nil {
			return infra("base config", err)
		}
		cur, err := os.ReadFile(filepath.Join(obj, ".config"))
		if err != nil {
			return infra("config", err)
		}
		if err := os.WriteFile(filepath.Join(obj, ".config"), mergeInto(cur, frags), 0o644); err != nil {
			return infra("config", err)
		}
		if out, err := run(5*time.Minute, "olddefconfig"); err != nil {
			// A Kconfig syntax error is the patch's.
			return &BuildError{First: firstError(out), Log: logPath, Tail: tail(out, 20)}
		}
		data, err := os.ReadFile(filepath.Join(obj, ".config"))
		if err != nil {
			return infra("config", err)
		}
		values = ParseValues(data)
		if vs := Verify(values, frags, kconfigDeps(tree)); len(vs) > 0 {
			return &ConfigError{Violations: vs}
		}
		return nil
	}); err != nil {
		return nil, err
	}

	if err := timed("build", func() error {
		to := opt.Timeout
		if to == 0 {
			to = 2 * time.Hour
		}
		out, err := run(to, "bzImage")
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return &BuildError{First: firstError(out), Log: logPath, Tail: tail(out, 20)}
			}
			return infra("make", err)
		}
		return nil
	}); err != nil {
		return nil, err
	}

	a := &Artifacts{
		Key: key, BaseID: src.ID, BaseOrigin: src.Origin, Version: src.Version,
		Fragments: req.Fragments,
	}
	if out, err := (command{dir: tree}).run(ctx, "git", "rev-parse", "HEAD"); err == nil {
		a.Commit = strings.TrimSpace(out)
	}
	for _, p := range req.Patches {
		a.Patches = append(a.Patches, p.Subject)
	}
	if req.Parent != nil {
		a.Parent = req.Parent.Key
	}
	if err := timed("verify", func() error {
		rel, err := os.ReadFile(filepath.Join(obj, "include", "config", "kernel.release"))
		if err != nil {
			return infra("kernel.release", err)
		}
		a.Release = strings.TrimSpace(string(rel))
		if a.BuildID, err = elfBuildID(filepath.Join(obj, "vmlinux")); err != nil {
			return infra("build id", err)
		}
		found, missing, err := VerifyAdds(filepath.Join(obj, "vmlinux"), req.Patches)
		if err != nil {
			return infra("verify", err)
		}
		a.Verified = found
		if len(missing) > 0 {
			return &VerifyError{Missing: missing}
		}
		return nil
	}); err != nil {
		return nil, err
	}

	// The log is published too: a failed close may have lost its tail.
	if err := logf.Close(); err != nil {
		return nil, infra("build log", err)
	}
	tmp, err := tempDir(final)
	if err != nil {
		return nil, infra("publish", err)
	}
	// Gone once publish renamed it; a leftover .tmp- directory is never
	// read, so it is not worth failing a good build for.
	defer func() { _ = os.RemoveAll(tmp) }()
	t := time.Now()
	for _, f := range [][2]string{
		{filepath.Join(obj, "arch/x86/boot/bzImage"), "bzImage"},
		{filepath.Join(obj, "vmlinux"), "vmlinux"},
		{filepath.Join(obj, ".config"), "config"},
		{logPath, "build.log"},
	} {
		if err := fsutil.CopyFile(nil, f[0], nil, filepath.Join(tmp, f[1])); err != nil {
			return nil, infra("publish", err)
		}
	}
	cfg, err := os.ReadFile(filepath.Join(tmp, "config"))
	if err != nil {
		return nil, infra("publish: config hash", err)
	}
	sum := sha256.Sum256(cfg)
	a.ConfigHash = hex.EncodeToString(sum[:])
	a.setDir(final)
	phases = append(phases, Phase{Name: "publish", Duration: time.Since(t)})
	a.Phases = phases
	js, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, infra("publish: encode build.json", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "build.json"), js, 0o644); err != nil {
		return nil, infra("publish", err)
	}
	if err := publish(tmp, final); err != nil {
		return nil, infra("publish", err)
	}
	return loadArtifacts(final)
}

func (a *Artifacts) setDir(dir string) {
	a.Dir = dir
	a.BzImage = filepath.Join(dir, "bzImage")
	a.Vmlinux = filepath.Join(dir, "vmlinux")
	a.Config = filepath.Join(dir, "config")
	a.Log = filepath.Join(dir, "build.log")
}

func loadArtifacts(dir string) (*Artifacts, error) {
	data, err := os.ReadFile(filepath.Join(dir, "build.json"))
	if err != nil {
		return nil, err
	}
	var a Artifacts
	if err := json.Unmarshal(data, &a); err != nil {
		return nil, err
	}
	a.setDir(dir) // the cache may have moved
	return &a, nil
}

// makeCommand is the kernel make invocation, as a pure value for tests and
// dry runs.
type makeCommand struct {
	Tree    string
	Jobs    int
	CCache  bool
	Release string // LOCALVERSION
}

// Args are make's arguments for targets.
func (m makeCommand) Args(targets ...string) []string {
	j := m.Jobs
	if j <= 0 {
		j = runtime.NumCPU()
	}
	args := []string{"O=" + objDirName, "ARCH=x86_64", fmt.Sprintf("-j%d", j)}
	if m.CCache {
		args = append(args, "CC=ccache gcc", "HOSTCC=ccache gcc")
	}
	if m.Release != "" {
		args = append(args, "LOCALVERSION="+m.Release)
	}
	return append(args, targets...)
}

// Env makes builds reproducible and lets ccache hit across worktrees.
func (m makeCommand) Env() []string {
	return []string{
		"KBUILD_BUILD_TIMESTAMP=2000-01-01 00:00:00 UTC",
		"KBUILD_BUILD_USER=kci", "KBUILD_BUILD_HOST=kci",
		"CCACHE_NOHASHDIR=1", "CCACHE_BASEDIR=" + m.Tree,
		"LC_ALL=C",
	}
}

func haveCCache() bool {
	_, err := exec.LookPath("ccache")
	return err == nil
}

var errorLine = regexp.MustCompile(`(: (fatal )?error: |undefined reference to|: multiple definition of|^ld: |Error: |\*\*\* No rule)`)

// firstError is the first compiler/linker error in make's output.
func firstError(out string) string {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var fallback string
	for sc.Scan() {
		l := sc.Text()
		if errorLine.MatchString(l) {
			return strings.TrimSpace(l)
		}
		if fallback == "" && strings.Contains(l, "make[") && strings.Contains(l, "Error") {
			fallback = strings.TrimSpace(l)
		}
	}
	return fallback
}

// elfBuildID reads the GNU build id note of vmlinux; the guest reports the
// same id from /sys/kernel/notes, proving which kernel booted.
func elfBuildID(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read-only: closing loses nothing
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			continue
		}
		if id := noteBuildID(data, f.ByteOrder); id != "" {
			return id, nil
		}
	}
	return "", fmt.Errorf("%s: no build id note", path)
}

// noteBuildID walks ELF notes for NT_GNU_BUILD_ID (3, "GNU").
func noteBuildID(data []byte, bo binary.ByteOrder) string {
	for len(data) >= 12 {
		nsz, dsz, typ := bo.Uint32(data), bo.Uint32(data[4:]), bo.Uint32(data[8:])
		off := 12 + int(align4(nsz))
		end := off + int(align4(dsz))
		if end > len(data) || off > len(data) {
			return ""
		}
		name := strings.TrimRight(string(data[12:12+nsz]), "\x00")
		if typ == 3 && name == "GNU" {
			return hex.EncodeToString(data[off : off+int(dsz)])
		}
		data = data[end:]
	}
	return ""
}

func align4(n uint32) uint32 { return (n + 3) &^ 3 }
