package kernel

import (
	"bufio"
	"bytes"
	"path"
	"strings"
)

// outsidePath is the first path patch text m names that is not inside the
// tree (absolute, or climbing out with ".."), or "". git apply refuses
// such a patch only once it has a tree to apply it to ("invalid path",
// after the base's import and with an exit status that blames no one), so
// kci refuses it when it reads the patch.
func outsidePath(m []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(m))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		for _, p := range diffPaths(sc.Text()) {
			if p == "/dev/null" {
				continue
			}
			if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") || strings.Contains(p, "/../") || strings.HasSuffix(p, "/..") {
				return p
			}
		}
	}
	return ""
}

// diffPaths are the paths a line of a git diff's headers names: "---"
// and "+++" lines and the "diff --git", rename and copy headers.
func diffPaths(l string) []string {
	strip := func(p string) string {
		if i := strings.IndexByte(p, '\t'); i >= 0 {
			p = p[:i] // "--- a/x\t2024-01-01 ..." (diff -u's timestamp)
		}
		p = strings.Trim(strings.TrimSpace(p), `"`)
		if strings.HasPrefix(p, "a/") || strings.HasPrefix(p, "b/") {
			return p[2:]
		}
		return p
	}
	for _, h := range []string{"--- ", "+++ ", "rename from ", "rename to ", "copy from ", "copy to "} {
		if strings.HasPrefix(l, h) {
			return []string{strip(l[len(h):])}
		}
	}
	if rest, ok := strings.CutPrefix(l, "diff --git "); ok {
		var ps []string
		for _, f := range strings.Fields(rest) {
			ps = append(ps, strip(f))
		}
		return ps
	}
	return nil
}
