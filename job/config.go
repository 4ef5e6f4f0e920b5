package job

import (
	"context"
	"fmt"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
)

// Config is tree t's final config and its drift from Production, resolved
// with the kconfig tools alone (kernel.Cache.ResolveConfig): the request
// is the one Tree builds (the same cache key), so a kernel built already
// gives its own config, and nothing is compiled when none is.
func (b *Builder) Config(ctx context.Context, t *project.Tree) (*kernel.Artifacts, error) {
	series, err := b.Series(t)
	if err != nil {
		return nil, err
	}
	req := b.baseRequest()
	// A tree without fragments asks for exactly the stock kernel's.
	if req.Fragments, err = b.fragments(t); err != nil {
		return nil, err
	}
	req.Patches = series
	a, err := b.Cache.ResolveConfig(ctx, req, b.Opts)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", t.Name, err)
	}
	return b.withDrift(ctx, a, "config "+t.Name+": drift")
}
