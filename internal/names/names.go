// Package names validates names that end up in file names, comment
// markers, check names and log lines. Tree names reach the posting job
// through run.json, which a pull request's own job wrote, so they are
// checked where they are defined (kci.yaml) and again where they are used.
package names

import (
	"fmt"
	"path/filepath"
	"regexp"
)

// TreeMax is the longest tree name.
const TreeMax = 64

var treeRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// Tree checks a tree name: 1 to 64 of A-Z a-z 0-9 . _ -, and not "." or
// "..", so it is one safe path element, a safe marker and a safe log word.
func Tree(name string) error {
	if !treeRE.MatchString(name) || name == "." || name == ".." {
		return fmt.Errorf("tree name %s is not 1 to %d of A-Z a-z 0-9 . _ -", Quote(name), TreeMax)
	}
	return nil
}

// Element checks that s is exactly one local path element: a shard's run
// ID, say, which becomes a directory name.
func Element(what, s string) error {
	if !filepath.IsLocal(s) || filepath.Base(s) != s || s == "." {
		return fmt.Errorf("%s %s is not a plain file name", what, Quote(s))
	}
	return nil
}

// Local checks that p is a relative path that stays inside its base
// directory (lexically; open it through an os.Root to be sure of
// symlinks too).
func Local(what, p string) error {
	if !filepath.IsLocal(p) {
		return fmt.Errorf("%s %s is not a relative path inside its directory", what, Quote(p))
	}
	return nil
}
