package kernel

import (
	"bufio"
	"context"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/keyhash"
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
	// Foreground keeps make at kci's own priority: for a build that is
	// the whole command (kci build), with no boots of its own beside it
	// to yield to (see buildNice).
	Foreground bool
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
	parts := []string{"kci-build-v1", "KCFLAGS=" + kcflags, src.ID}
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
	return keyhash.Strings(parts...)[:24], frags, nil
}

// Build produces the kernel req describes, from the cache when it is there.
// Its steps are in buildsteps.go; each returns its error typed by cause.
func (c *Cache) Build(ctx context.Context, req Request, opt Options) (*Artifacts, error) {
	go c.sweepTrash()
	b := &buildRun{c: c, ctx: ctx, req: req, opt: opt}
	defer b.exit()
	if err := b.resolve(); err != nil {
		return nil, err
	}
	if a := b.cached(); a != nil && !b.treeLost() {
		return a, nil
	}
	if err := b.lock(); err != nil {
		return nil, err
	}
	// Another process may have published it (or regrown its tree) while
	// we waited.
	hit := b.cached()
	if hit != nil && !b.treeLost() {
		return hit, nil
	}
	if err := b.prepareTree(); err != nil {
		return nil, err
	}
	b.obj = filepath.Join(b.tree, objDirName)
	if err := b.applyPatches(); err != nil {
		return nil, err
	}
	if err := b.openLog(); err != nil {
		return nil, err
	}
	if err := b.configure(); err != nil {
		return nil, err
	}
	if err := b.compile(); err != nil {
		return nil, err
	}
	if hit != nil {
		return b.regrown(hit)
	}
	a := b.describe()
	if err := b.collect(a); err != nil {
		return nil, err
	}
	return b.publish(a)
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

// kcflags are kci's additions to every kernel C compile. -fno-var-tracking
// drops DWARF's variable-location lists: no generated code changes (the
// stripped objects are byte-identical), BTF and kallsyms are built from
// types and symbols. A large compile costs 13-17 % less CPU (dev.o,
// skbuff.o, verifier.o), small ones less; a cold stock build 5 % less. They are part of the
// cache key: a seeded build dir must have been compiled with the same.
const kcflags = "-fno-var-tracking"

// makeCommand is the kernel make invocation, as a pure value for tests and
// dry runs.
type makeCommand struct {
	Tree    string
	Jobs    int
	CC      string // the compiler command, for CC and HOSTCC: Cache.compiler
	Release string // LOCALVERSION
}

// Args are make's arguments for targets.
func (m makeCommand) Args(targets ...string) []string {
	j := m.Jobs
	if j <= 0 {
		j = runtime.NumCPU()
	}
	args := []string{"O=" + objDirName, "ARCH=x86_64", fmt.Sprintf("-j%d", j), "KCFLAGS=" + kcflags}
	if m.CC != "" {
		args = append(args, "CC="+m.CC, "HOSTCC="+m.CC)
	}
	if m.Release != "" {
		args = append(args, "LOCALVERSION="+m.Release)
	}
	return append(args, targets...)
}

// Env makes builds reproducible and lets ccache hit across worktrees.
// CCACHE_NODEPEND: ccache's depend mode serves stale objects for sources
// with an .incbin (kci-cc.sh); only kci-cc turns it on, for the others.
// Without the variable a user's ccache.conf could turn it on for all.
func (m makeCommand) Env() []string {
	return []string{
		"KBUILD_BUILD_TIMESTAMP=2000-01-01 00:00:00 UTC",
		"KBUILD_BUILD_USER=kci", "KBUILD_BUILD_HOST=kci",
		"CCACHE_NOHASHDIR=1", "CCACHE_BASEDIR=" + m.Tree, "CCACHE_NODEPEND=1",
		"LC_ALL=C",
	}
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
