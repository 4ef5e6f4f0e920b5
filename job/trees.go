package job

import (
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
)

// PickTrees is the one reading of --tree, for every verb: the trees
// named, each checked against kci.yaml, or every tree when none is named.
// An unknown name is a usage error naming the trees kci.yaml has.
func PickTrees(p *project.File, named []string) ([]*project.Tree, error) {
	var out []*project.Tree
	if len(named) == 0 {
		for i := range p.Trees {
			out = append(out, &p.Trees[i])
		}
		return out, nil
	}
	for _, n := range named {
		t, err := p.Tree(n)
		if err != nil {
			return nil, Usagef("--tree: %v", err)
		}
		out = append(out, t)
	}
	return out, nil
}

// treePick is one tree of a run's choice, and why the patches are not
// for it (nil: they are, or it was named and not asked).
type treePick struct {
	tree *project.Tree
	skip *kernel.ApplyError
}

// pickApplying is the one tree picker of kci test and kci series: the
// trees --tree names (PickTrees), or every tree of kci.yaml, each asked
// whether the patches apply (applies) unless it was named and checkNamed
// is false. What a tree the patches are not for means (a quiet skip, or a
// refusal when named) is the caller's.
func pickApplying(p *project.File, named []string, checkNamed bool, applies func(*project.Tree) (*kernel.ApplyError, error)) ([]treePick, error) {
	trees, err := PickTrees(p, named)
	if err != nil {
		return nil, err
	}
	picks := make([]treePick, 0, len(trees))
	for _, tr := range trees {
		pk := treePick{tree: tr}
		if len(named) == 0 || checkNamed {
			if pk.skip, err = applies(tr); err != nil {
				return nil, err
			}
		}
		picks = append(picks, pk)
	}
	return picks, nil
}
