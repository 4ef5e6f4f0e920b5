// Package job wires the stages into kci's jobs: build the kernels a tree
// needs, boot them, run the suite, record and compare the results.
//
// kci test (Tester, teststeps.go) and kci series (SeriesTester,
// seriestree.go) are two plans over one engine (engine.go: the run
// directory, the log and progress meter, the boot.Booter and the
// accelerator it settles once, and the boot that names the console,
// classifies and, with bootBlame, blames), with the Builder (kernels.go)
// and one exit-code table (exit.go) over internal/failure's kinds. Each
// saves its record after every step. What one boot does (QEMU, the result
// cache, the plugin's counts) is package boot's.
package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/proc"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
)

// Builder builds the kernels of a project's trees, each one seeded from the
// build below it (stock → tree → tree + patch) so only touched files
// rebuild; a tree whose stock kernel is not built yet builds cold (see
// StockFirst).
type Builder struct {
	Cache   *kernel.Cache
	Project *project.File
	Opts    kernel.Options
	// StockFirst builds the stock kernel before a tree that is not cached
	// yet, and the tree on it, also when stock itself is not cached: for
	// a caller that will need all three trees (the tests). Otherwise a
	// tree starts from stock only when stock is already built: a tree's
	// fragments change the config, so most of it recompiles anyway, and a
	// first kci test of a gtp patch builds one kernel cold, not two.
	StockFirst bool
	// Observe, when set, sees every kernel build produces or finds, and
	// how long that took (make test's ledger of who built what and who
	// waited: job/jobtest).
	Observe func(a *kernel.Artifacts, took time.Duration)
}

func (b *Builder) fragments(t *project.Tree) ([]string, error) {
	req, err := b.Cache.RequiredFragments()
	if err != nil {
		return nil, err
	}
	for _, f := range b.Project.Config.Fragments {
		req = append(req, b.Project.Abs(f))
	}
	if t != nil {
		for _, f := range t.Fragments {
			req = append(req, b.Project.Abs(f))
		}
	}
	return req, nil
}

func (b *Builder) baseRequest() kernel.Request {
	base := b.Project.Base
	if base.Tarball != "" {
		base.Tarball = b.Project.Abs(base.Tarball)
	}
	if base.Git != "" {
		base.Git = b.Project.Abs(base.Git)
	}
	cfg := b.Project.Config.Base
	if cfg != "" && cfg != "tinyconfig" && cfg != "defconfig" {
		cfg = b.Project.Abs(cfg)
	}
	return kernel.Request{Base: base, BaseConfig: cfg}
}

// Series loads a tree's series.
func (b *Builder) Series(t *project.Tree) ([]kernel.Patch, error) {
	var paths []string
	for _, s := range t.Series {
		paths = append(paths, b.Project.Abs(s))
	}
	if len(paths) == 0 {
		return nil, nil
	}
	return kernel.LoadSeries(paths...)
}

// Stock builds the bare base with kci's fragments (and the project's).
func (b *Builder) Stock(ctx context.Context) (*kernel.Artifacts, error) {
	req, err := b.stockRequest()
	if err != nil {
		return nil, err
	}
	return b.build(ctx, req)
}

func (b *Builder) stockRequest() (kernel.Request, error) {
	req := b.baseRequest()
	frags, err := b.fragments(nil)
	req.Fragments, req.Keep = frags, true
	return req, err
}

// Production is the config the drift report compares with: kci.yaml's
// config.production, else Debian's.
func (b *Builder) Production() string {
	if p := b.Project.Config.Production; p != "" {
		return b.Project.Abs(p)
	}
	return kernel.DebianProductionConfig
}

// build builds (or finds) req's kernel and reports its drift from
// Production, freshly each time: a cached kernel may have been built when
// kci.yaml named another production config.
func (b *Builder) build(ctx context.Context, req kernel.Request) (*kernel.Artifacts, error) {
	start := time.Now()
	a, err := b.Cache.Build(ctx, req, b.Opts)
	if err != nil {
		return nil, err
	}
	if b.Observe != nil {
		b.Observe(a, time.Since(start))
	}
	return b.withDrift(ctx, a, "kernel "+a.Release)
}

// withDrift sets a's drift from Production; op names what it was for.
func (b *Builder) withDrift(ctx context.Context, a *kernel.Artifacts, op string) (*kernel.Artifacts, error) {
	d, err := kernel.ProductionDrift(ctx, a.Config, b.Production())
	if err != nil {
		// The machine's fault (a missing linux-config package, a typo in
		// kci.yaml), never the patch's.
		return nil, &kernel.InfraError{Op: op, Err: err}
	}
	a.Drift = d
	return a, nil
}

// Tree builds tree t's kernel: the base plus its series.
func (b *Builder) Tree(ctx context.Context, t *project.Tree) (*kernel.Artifacts, error) {
	series, err := b.Series(t)
	if err != nil {
		return nil, err
	}
	if len(series) == 0 && len(t.Fragments) == 0 {
		return b.Stock(ctx)
	}
	req := b.baseRequest()
	if req.Fragments, err = b.fragments(t); err != nil {
		return nil, err
	}
	req.Patches, req.Keep = series, true
	if req.Parent, err = b.treeParent(ctx, req); err != nil {
		return nil, fmt.Errorf("stock kernel: %w", err)
	}
	a, err := b.build(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", t.Name, err)
	}
	return a, nil
}

// treeParent is what tree's build (req) starts from: the stock kernel,
// or nothing when it would be built for this tree alone (StockFirst off
// and stock not cached with its build tree: the tree builds cold from the
// base) or not be needed (the tree is cached).
func (b *Builder) treeParent(ctx context.Context, tree kernel.Request) (*kernel.Artifacts, error) {
	if b.StockFirst {
		return b.Stock(ctx)
	}
	if built, err := b.cached(ctx, tree); err != nil || built {
		return nil, err // a cache hit: nothing is built
	}
	stock, err := b.stockRequest()
	if err != nil {
		return nil, err
	}
	if built, err := b.cached(ctx, stock); err != nil || !built {
		return nil, err
	}
	// A stock kernel whose tree was pruned would be built again for its
	// objects: one build either way, so the tree builds alone.
	if key, err := b.Cache.Key(ctx, stock); err != nil || !b.Cache.TreeKept(key) {
		return nil, err
	}
	return b.Stock(ctx)
}

// cached reports whether req's kernel is in the cache.
func (b *Builder) cached(ctx context.Context, req kernel.Request) (bool, error) {
	key, err := b.Cache.Key(ctx, req)
	if err != nil {
		return false, err
	}
	_, err = b.Cache.Lookup(key)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Patched builds tree t plus patches, seeded from the tree's kernel.
func (b *Builder) Patched(ctx context.Context, t *project.Tree, tree *kernel.Artifacts, patches []kernel.Patch) (*kernel.Artifacts, error) {
	req, err := b.PatchedRequest(t, tree, patches)
	if err != nil {
		return nil, err
	}
	return b.build(ctx, req)
}

// PatchedRequest is what Patched asks the cache to build.
func (b *Builder) PatchedRequest(t *project.Tree, tree *kernel.Artifacts, patches []kernel.Patch) (kernel.Request, error) {
	series, err := b.Series(t)
	if err != nil {
		return kernel.Request{}, err
	}
	req := b.baseRequest()
	if req.Fragments, err = b.fragments(t); err != nil {
		return kernel.Request{}, err
	}
	req.Patches = append(append([]kernel.Patch{}, series...), patches...)
	req.Parent = tree
	return req, nil
}

// AppliesTo reports whether patches apply on top of tree t's series (see
// Applies, which also says why not).
func (b *Builder) AppliesTo(ctx context.Context, t *project.Tree, patches []kernel.Patch) (bool, error) {
	ae, err := b.Applies(ctx, t, patches)
	return ae == nil && err == nil, err
}

// Applies checks, before any build, that patches apply on top of tree t's
// series, using a scratch index on the imported base: no checkout, nothing
// written to any tree (the series' tip is built in the index, patch by
// patch, as the build's worktree will be). A patch that does not apply is
// the returned *kernel.ApplyError naming it, the tree, the file, the hunk
// and git's message. Only git apply's own verdict (exit status 1) means
// "does not apply"; any other failure (a timeout, a missing git, a corrupt
// patch git dies on) is the error, never a silently skipped tree.
func (b *Builder) Applies(ctx context.Context, t *project.Tree, patches []kernel.Patch) (*kernel.ApplyError, error) {
	src, err := b.Cache.Import(ctx, b.baseRequest().Base)
	if err != nil {
		return nil, err
	}
	series, err := b.Series(t)
	if err != nil {
		return nil, err
	}
	idx, err := os.CreateTemp("", "kci-index-*")
	if err != nil {
		return nil, fmt.Errorf("applies: scratch index: %w", err)
	}
	defer func() { _ = os.Remove(idx.Name()) }() // a stray temp index is harmless
	if err := idx.Close(); err != nil {
		return nil, fmt.Errorf("applies: scratch index: %w", err)
	}
	git := func(stdin []byte, args ...string) error {
		c := proc.Cmd{Name: "git", Args: args, Dir: src.Dir, Env: []string{"GIT_INDEX_FILE=" + idx.Name()}, Timeout: 2 * time.Minute}
		if stdin != nil {
			c.Stdin = bytes.NewReader(stdin)
		}
		_, err := c.Run(ctx)
		return err
	}
	if err := git(nil, "read-tree", src.Commit); err != nil {
		return nil, fmt.Errorf("applies: %w", err)
	}
	for _, p := range series {
		if err := git(p.Data, "apply", "--cached"); err != nil {
			if doesNotApply(err) {
				return nil, fmt.Errorf("tree %s: its own series does not apply (%s): %w", t.Name, p.Name(), err)
			}
			return nil, fmt.Errorf("applies: tree %s, series %s: %w", t.Name, p.Name(), err)
		}
	}
	for _, p := range patches {
		if err := git(p.Data, "apply", "--cached"); err != nil {
			if doesNotApply(err) {
				return kernel.DiagnoseApply(p, t.Name, gitOutput(err)), nil
			}
			if out, ok := corruptPatch(err); ok {
				// git read the patch and refused it: the patch's fault,
				// whatever the tree.
				return nil, &kernel.ApplyError{Patch: p.Name(), Subject: p.Subject, Output: out}
			}
			return nil, fmt.Errorf("applies: tree %s, %s: %w", t.Name, p.Name(), err)
		}
	}
	return nil, nil
}

// gitOutput is what a failed git command printed.
func gitOutput(err error) string {
	var pe *proc.Error
	if errors.As(err, &pe) {
		return pe.Tail
	}
	return err.Error()
}

// corruptPatch: git apply died (128) on the patch text itself, not on
// the repository: it says so in its own words, which are returned.
func corruptPatch(err error) (string, bool) {
	code, ok := proc.ExitCode(err)
	if !ok || code != 128 {
		return "", false
	}
	msg := err.Error()
	for _, s := range []string{"corrupt patch", "patch fragment without header", "No valid patches", "unrecognized input", "patch with only garbage"} {
		if strings.Contains(msg, s) {
			return msg, true
		}
	}
	return "", false
}

// doesNotApply: git apply exits 1 when a patch does not apply, 128 when it
// dies (a corrupt patch, a broken repository).
func doesNotApply(err error) bool {
	code, ok := proc.ExitCode(err)
	return ok && code == 1
}
