package job

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
)

// OwnSeries validates a tree's own series patch by patch (then any extra
// patches): the tree's kernel is its series on the stock kernel, so here
// the reference is the stock kernel and every prefix is the stock kernel
// plus the tree's fragments plus a prefix of its series, built in the
// stock kernel's kept build directory. It returns the builder to give a
// SeriesTester and the patches to check, in order.
func (b *Builder) OwnSeries(t *project.Tree, extra []kernel.Patch) (SeriesBuilder, []kernel.Patch, error) {
	series, err := b.Series(t)
	if err != nil {
		return nil, nil, err
	}
	if len(series) == 0 {
		return nil, nil, Usagef("--own: tree %s has no series of its own", t.Name)
	}
	return ownSeriesBuilder{b}, append(append([]kernel.Patch{}, series...), extra...), nil
}

type ownSeriesBuilder struct{ *Builder }

// Tree is the reference: the stock kernel (the tree's fragments may name
// options only its series defines).
func (o ownSeriesBuilder) Tree(ctx context.Context, t *project.Tree) (*kernel.Artifacts, error) {
	return o.Stock(ctx)
}

// Patched builds stock + the tree's fragments + patches, in place in the
// stock kernel's build directory.
func (o ownSeriesBuilder) Patched(ctx context.Context, t *project.Tree, stock *kernel.Artifacts, patches []kernel.Patch) (*kernel.Artifacts, error) {
	req := o.baseRequest()
	var err error
	if req.Fragments, err = o.fragments(t); err != nil {
		return nil, err
	}
	req.Patches, req.Parent = patches, stock
	return o.Cache.Build(ctx, req, o.Opts)
}

// AppliesTo: the series is the tree's own; extra patches are checked as
// they come.
func (o ownSeriesBuilder) AppliesTo(ctx context.Context, t *project.Tree, patches []kernel.Patch) (bool, error) {
	return true, nil
}

var kconfigAdd = regexp.MustCompile(`^\+\s*(?:menu)?config\s+([A-Za-z0-9_]+)\s*$`)

// definedLater maps each Kconfig option that patches define to the index
// (from 1, offset by base) of the first patch defining it.
func definedLater(patches []kernel.Patch, base int) map[string]int {
	out := map[string]int{}
	for i, p := range patches {
		for _, l := range strings.Split(string(p.Data), "\n") {
			if m := kconfigAdd.FindStringSubmatch(l); m != nil {
				if _, ok := out[m[1]]; !ok {
					out[m[1]] = base + i + 1
				}
			}
		}
	}
	return out
}

// notYetDefined explains a config policy violation that only says the
// fragments ask for options a later patch of the series defines: "" when
// any violation is the prefix's own.
func notYetDefined(ce *kernel.ConfigError, later map[string]int) string {
	var parts []string
	for _, v := range ce.Violations {
		k, ok := later[v.Option]
		if !ok {
			return ""
		}
		parts = append(parts, fmt.Sprintf("CONFIG_%s comes with patch %d", v.Option, k))
	}
	if len(parts) == 0 {
		return ""
	}
	return "config not yet complete: " + strings.Join(parts, ", ")
}
