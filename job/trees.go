package job

import "github.com/kci-dev/kci/project"

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
