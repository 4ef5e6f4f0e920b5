package kernel

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Checkpatch is what scripts/checkpatch.pl of the tree says about a patch.
type Checkpatch struct {
	Errors   int              `json:"errors"`
	Warnings int              `json:"warnings"`
	Checks   int              `json:"checks"`
	Items    []CheckpatchItem `json:"items,omitempty"`
}

// CheckpatchItem is one finding, in checkpatch's own words.
type CheckpatchItem struct {
	Level   string `json:"level"`          // ERROR | WARNING | CHECK
	Type    string `json:"type,omitempty"` // e.g. TRAILING_WHITESPACE
	Line    int    `json:"line,omitempty"` // line in the patch
	Message string `json:"message"`
}

var (
	// -:23: ERROR:TRAILING_WHITESPACE: trailing whitespace  (--terse --show-types)
	cpItem  = regexp.MustCompile(`^\S*?:(\d+): (ERROR|WARNING|CHECK):(?:([A-Z0-9_]+): )?\s*(.*)$`)
	cpItem2 = regexp.MustCompile(`^(?:\S*?:)?\s*(ERROR|WARNING|CHECK): (?:([A-Z0-9_]+): )?(.*)$`)
	cpTotal = regexp.MustCompile(`total: (\d+) errors, (\d+) warnings, (?:(\d+) checks, )?\d+ lines checked`)
)

// ParseCheckpatch reads checkpatch.pl --terse [--show-types] output. The
// counts come from its total line when present.
func ParseCheckpatch(out string) Checkpatch {
	var c Checkpatch
	total := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if m := cpTotal.FindStringSubmatch(l); m != nil {
			c.Errors, _ = strconv.Atoi(m[1])
			c.Warnings, _ = strconv.Atoi(m[2])
			c.Checks, _ = strconv.Atoi(m[3])
			total = true
			continue
		}
		var it CheckpatchItem
		if m := cpItem.FindStringSubmatch(l); m != nil {
			it.Line, _ = strconv.Atoi(m[1])
			it.Level, it.Type, it.Message = m[2], m[3], m[4]
		} else if m := cpItem2.FindStringSubmatch(l); m != nil {
			it.Level, it.Type, it.Message = m[1], m[2], m[3]
		} else {
			continue
		}
		c.Items = append(c.Items, it)
	}
	if !total {
		for _, it := range c.Items {
			switch it.Level {
			case "ERROR":
				c.Errors++
			case "WARNING":
				c.Warnings++
			case "CHECK":
				c.Checks++
			}
		}
	}
	return c
}

// checkpatchFiles are what checkpatch.pl reads next to itself.
var checkpatchFiles = []string{"checkpatch.pl", "spelling.txt", "const_structs.checkpatch"}

// RunCheckpatch runs scripts/checkpatch.pl of the base source at commit
// (the tree's own) on one patch: --no-tree, since the patch is checked
// alone, --terse --show-types for parsing. Its exit status is its verdict,
// not a failure; only a missing script or perl is.
func (c *Cache) RunCheckpatch(ctx context.Context, base Base, commit string, p Patch) (*Checkpatch, error) {
	src, err := c.Import(ctx, base)
	if err != nil {
		return nil, err
	}
	if commit == "" {
		commit = src.Commit
	}
	if _, err := exec.LookPath("perl"); err != nil {
		return nil, infra("checkpatch", errors.New("perl is not installed"))
	}
	dir, err := os.MkdirTemp("", "kci-checkpatch-")
	if err != nil {
		return nil, infra("checkpatch", err)
	}
	defer func() { _ = os.RemoveAll(dir) }() // a leftover temp dir is harmless
	g := command{dir: src.Dir, timeout: time.Minute}
	for _, f := range checkpatchFiles {
		out, err := g.run(ctx, "git", "show", commit+":scripts/"+f)
		if err != nil {
			if f == "checkpatch.pl" {
				return nil, infra("checkpatch", err)
			}
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(out), 0o644); err != nil {
			return nil, infra("checkpatch", err)
		}
	}
	pf := filepath.Join(dir, "patch")
	if err := os.WriteFile(pf, p.Data, 0o644); err != nil {
		return nil, infra("checkpatch", err)
	}
	out, err := (command{dir: dir, timeout: 2 * time.Minute}).run(ctx, "perl", filepath.Join(dir, "checkpatch.pl"),
		"--no-tree", "--terse", "--show-types", "--color=never", pf)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, infra("checkpatch", err)
	}
	cp := ParseCheckpatch(out)
	return &cp, nil
}
