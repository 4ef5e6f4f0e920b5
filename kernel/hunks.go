package kernel

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Hunk is one hunk of a patch, by the lines it changes: the new file's
// lines it adds (the patched kernel's code) and the old file's lines it
// removes (the base kernel's). Context lines are neither.
type Hunk struct {
	Index   int    // among the patch's hunks, from 1, in patch order
	File    string // the new file's path in the tree ("" for a deleted file)
	OldFile string // the old file's path ("" for a new file)
	Header  string // the text after the @@ … @@ range: git's enclosing function
	OldLine int    // where the hunk starts in the old file
	NewLine int    // and in the new one
	Added   []int  // new-file line numbers of the '+' lines
	Removed []int  // old-file line numbers of the '-' lines
}

// Name is how reports refer to the hunk, by its first changed line: "hunk
// 1 (kernel/bpf/hashtab.c:2976 rhtab_map_alloc)"; a hunk that only
// removes lines, by the old file's.
func (h Hunk) Name() string { return h.NameIn("") }

// NameIn is Name with fn as the function when the diff's hunk header
// names none (a diff made without -p): the function its code is in.
func (h Hunk) NameIn(fn string) string {
	file, line := h.File, h.NewLine
	switch {
	case len(h.Added) > 0:
		line = h.Added[0]
	case len(h.Removed) > 0 || file == "":
		file, line = h.OldFile, h.OldLine
		if len(h.Removed) > 0 {
			line = h.Removed[0]
		}
	}
	s := fmt.Sprintf("hunk %d (%s:%d", h.Index, file, line)
	if f := hunkFunc(h.Header); f != "" {
		fn = f
	}
	if fn != "" {
		s += " " + fn
	}
	return s + ")"
}

// hunkFunc is the function name in git's hunk context ("static struct
// bpf_map *rhtab_map_alloc(union bpf_attr *attr)" → "rhtab_map_alloc"):
// the first name called like a function that is no attribute or keyword.
func hunkFunc(header string) string {
	for _, m := range callRe.FindAllStringSubmatch(header, -1) {
		if !notFuncs[m[1]] {
			return m[1]
		}
	}
	return ""
}

var (
	callRe   = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*\(`)
	notFuncs = map[string]bool{"__attribute__": true, "__aligned": true, "__section": true, "if": true, "for": true,
		"while": true, "switch": true, "sizeof": true, "return": true, "typeof": true, "__printf": true}
)

// Hunks reads p's unified diff into its hunks. Binary patches and renames
// without content carry no hunks; a hunk whose line counts disagree with
// its body is an error naming the patch and the hunk.
func (p Patch) Hunks() ([]Hunk, error) {
	var out []Hunk
	var oldFile, newFile string
	sc := bufio.NewScanner(bytes.NewReader(p.Data))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "--- "):
			oldFile = diffPath(l[4:], "a/")
		case strings.HasPrefix(l, "+++ "):
			newFile = diffPath(l[4:], "b/")
		case strings.HasPrefix(l, "@@ -"):
			h, err := readHunk(sc, l)
			if err != nil {
				return nil, fmt.Errorf("patch %s: %s: %w", p.Name(), newFile, err)
			}
			h.Index, h.File, h.OldFile = len(out)+1, newFile, oldFile
			out = append(out, h)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("patch %s: %w", p.Name(), err)
	}
	return out, nil
}

// diffPath is a ---/+++ line's path without its a/ or b/ prefix, "" for
// /dev/null; a timestamp after a tab (diff -u) is dropped.
func diffPath(s, prefix string) string {
	s, _, _ = strings.Cut(s, "\t")
	s = strings.TrimSpace(s)
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, prefix)
}

// readHunk reads the hunk whose @@ line is head, to its last line.
func readHunk(sc *bufio.Scanner, head string) (Hunk, error) {
	var h Hunk
	oldStart, oldN, newStart, newN, rest, err := parseRange(head)
	if err != nil {
		return h, err
	}
	h.OldLine, h.NewLine, h.Header = oldStart, newStart, rest
	o, n := oldStart, newStart
	for oldN > 0 || newN > 0 {
		if !sc.Scan() {
			return h, fmt.Errorf("%s: the patch ends %d old and %d new lines short", head, oldN, newN)
		}
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, `\`): // "\ No newline at end of file"
		case strings.HasPrefix(l, "+"):
			h.Added = append(h.Added, n)
			n, newN = n+1, newN-1
		case strings.HasPrefix(l, "-"):
			h.Removed = append(h.Removed, o)
			o, oldN = o+1, oldN-1
		case l == "" || strings.HasPrefix(l, " "):
			o, n, oldN, newN = o+1, n+1, oldN-1, newN-1
		default:
			return h, fmt.Errorf("%s: line %q is not part of a hunk", head, l)
		}
		if oldN < 0 || newN < 0 {
			return h, fmt.Errorf("%s: more lines than its range says", head)
		}
	}
	return h, nil
}

// parseRange reads "@@ -a[,b] +c[,d] @@ rest".
func parseRange(head string) (oldStart, oldN, newStart, newN int, rest string, err error) {
	body, rest, ok := strings.Cut(strings.TrimPrefix(head, "@@ "), " @@")
	f := strings.Fields(body)
	if !ok || len(f) != 2 || !strings.HasPrefix(f[0], "-") || !strings.HasPrefix(f[1], "+") {
		return 0, 0, 0, 0, "", fmt.Errorf("%q is not a hunk header", head)
	}
	if oldStart, oldN, err = startCount(f[0][1:]); err == nil {
		newStart, newN, err = startCount(f[1][1:])
	}
	if err != nil {
		return 0, 0, 0, 0, "", fmt.Errorf("%q: %w", head, err)
	}
	return oldStart, oldN, newStart, newN, strings.TrimSpace(rest), nil
}

func startCount(s string) (start, n int, err error) {
	a, b, has := strings.Cut(s, ",")
	if start, err = strconv.Atoi(a); err != nil {
		return 0, 0, err
	}
	n = 1
	if has {
		n, err = strconv.Atoi(b)
	}
	return start, n, err
}
