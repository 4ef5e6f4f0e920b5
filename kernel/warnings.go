package kernel

import (
	"bufio"
	"os"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/kci-dev/kci/internal/cachedir"
)

// Warning is one compiler, assembler or linker warning from make's output.
type Warning struct {
	File     string `json:"file,omitempty"` // relative to the source tree
	Line     int    `json:"line,omitempty"`
	Col      int    `json:"col,omitempty"`
	Function string `json:"function,omitempty"` // gcc's "In function 'f':" context
	Message  string `json:"message"`
	Option   string `json:"option,omitempty"` // e.g. -Wunused-variable
	Code     string `json:"code,omitempty"`   // the source line gcc quotes, trimmed
}

// String is file:line: message, as a compiler says it.
func (w Warning) String() string {
	var b strings.Builder
	if w.File != "" {
		b.WriteString(w.File)
		if w.Line > 0 {
			b.WriteString(":" + strconv.Itoa(w.Line))
		}
		b.WriteString(": ")
	}
	b.WriteString(w.Message)
	if w.Option != "" {
		b.WriteString(" [" + w.Option + "]")
	}
	return b.String()
}

// Key identifies a warning across builds without its line and column, so
// lines shifted by unrelated edits above it do not make it new: file,
// function, message and the quoted source line.
func (w Warning) Key() string {
	return w.File + "\x00" + w.Function + "\x00" + w.Message + "\x00" + w.Option + "\x00" + w.Code
}

var (
	// ../net/core/skbuff.c:6179:13: warning: unused variable 'x' [-Wunused-variable]
	ccWarning = regexp.MustCompile(`^(\S+?):(\d+):(?:(\d+):)? warning: (.*?)(?: \[(-W[^\]]+)\])?$`)
	// ../net/core/skbuff.c: In function 'skb_scrub_packet':
	ccFunction = regexp.MustCompile(`^(\S+?): In function ['‘]([^'’]+)['’]:$`)
	// ld: warning: ..., vmlinux.o: warning: objtool: ..., WARNING: modpost: ...
	toolWarning = regexp.MustCompile(`^(?:(\S+?): )?(?:warning|WARNING): (.*)$`)
	// "   6179 |  int x;" — gcc's quote of the source line.
	ccQuote = regexp.MustCompile(`^\s*\d+\s\|\s?(.*)$`)
	// "  CC      net/core/skbuff.o" — kbuild's quiet command lines.
	kbuildObj = regexp.MustCompile(`^\s+(?:CC|AS|CC \[M\]|AS \[M\])\s+(\S+)\.o$`)
)

// BuildOutput is what ParseMakeOutput found in one make run.
type BuildOutput struct {
	Warnings []Warning `json:"warnings"`
	// Compiled are the sources (without extension, e.g. net/core/skbuff)
	// this build compiled: a warning they had before and no longer print
	// is gone.
	Compiled []string `json:"compiled"`
}

// cleanPath makes a compiler's path relative to the source tree: builds run
// in O=.kci-o with srctree "..", and absolute paths differ per worktree.
func cleanPath(p string) string {
	if i := strings.Index(p, "/"+objDirName+"/"); i >= 0 {
		p = p[i+len(objDirName)+2:]
	}
	for strings.HasPrefix(p, "../") {
		p = p[3:]
	}
	if i := strings.Index(p, "/.kci-"); i >= 0 && strings.HasPrefix(p, "/") {
		// an absolute path into a kci tree: strip the tree.
		p = p[i+1:]
	}
	return path.Clean(p)
}

// ParseMakeOutput extracts warnings and compiled objects from make's output.
func ParseMakeOutput(out string) BuildOutput {
	var r BuildOutput
	seen := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	fn := map[string]string{} // file -> current function context
	last := -1                // index of the last warning, for its quote
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		if m := kbuildObj.FindStringSubmatch(l); m != nil {
			r.Compiled = append(r.Compiled, cleanPath(m[1]))
			last = -1
			continue
		}
		if m := ccFunction.FindStringSubmatch(l); m != nil {
			fn[cleanPath(m[1])] = m[2]
			last = -1
			continue
		}
		if m := ccWarning.FindStringSubmatch(l); m != nil {
			f := cleanPath(m[1])
			line, _ := strconv.Atoi(m[2])
			col, _ := strconv.Atoi(m[3])
			r.Warnings = append(r.Warnings, Warning{File: f, Line: line, Col: col, Function: fn[f], Message: normMessage(m[4]), Option: m[5]})
			last = len(r.Warnings) - 1
			continue
		}
		if last >= 0 && r.Warnings[last].Code == "" {
			if m := ccQuote.FindStringSubmatch(l); m != nil {
				r.Warnings[last].Code = strings.TrimSpace(m[1])
				last = -1
				continue
			}
		}
		if m := toolWarning.FindStringSubmatch(l); m != nil && !strings.Contains(l, " error: ") && !strings.HasPrefix(m[1], "make") {
			w := Warning{Message: normMessage(m[2])}
			switch {
			case m[1] == "ld" || strings.HasSuffix(m[1], "-ld") || strings.HasPrefix(m[1], "ld."):
				w.Message = "ld: " + w.Message // the linker, not a file
			case m[1] != "":
				w.File = cleanPath(m[1])
			}
			r.Warnings = append(r.Warnings, w)
			last = -1
		}
	}
	// One warning printed once per translation unit (a header's) is one.
	ws := r.Warnings[:0]
	for _, w := range r.Warnings {
		if !seen[w.Key()] {
			seen[w.Key()] = true
			ws = append(ws, w)
		}
	}
	r.Warnings = ws
	sort.Strings(r.Compiled)
	return r
}

// hexAddr matches addresses and offsets that change with any relink.
var hexAddr = regexp.MustCompile(`0x[0-9a-fA-F]+`)

func normMessage(s string) string {
	return strings.TrimSpace(hexAddr.ReplaceAllString(s, "0x…"))
}

// ParseMakeLog reads a build log (build.log of a published kernel or the
// log a BuildError names).
func ParseMakeLog(file string) (BuildOutput, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return BuildOutput{}, err
	}
	return ParseMakeOutput(string(data)), nil
}

// WarningSet is the warnings a build directory holds: an incremental build
// prints only the warnings of what it recompiled, so the set carries the
// others over from the builds before.
type WarningSet map[string]Warning

// Apply folds one build's output into the set and returns the warnings that
// are new: not in the set before, by Key.
func (s WarningSet) Apply(o BuildOutput) []Warning {
	var added []Warning
	for _, w := range o.Warnings {
		if _, ok := s[w.Key()]; !ok {
			added = append(added, w)
		}
	}
	recompiled := map[string]bool{}
	for _, c := range o.Compiled {
		recompiled[c] = true
	}
	for k, w := range s {
		if recompiled[strings.TrimSuffix(w.File, path.Ext(w.File))] {
			delete(s, k) // it recompiled: its warnings are those it printed now
		}
	}
	for _, w := range o.Warnings {
		s[w.Key()] = w
	}
	return added
}

// Clone copies the set.
func (s WarningSet) Clone() WarningSet {
	c := make(WarningSet, len(s))
	for k, w := range s {
		c[k] = w
	}
	return c
}

// Lookup returns the published kernel with cache key key.
func (c *Cache) Lookup(key string) (*Artifacts, error) {
	return loadArtifacts(c.path(cachedir.Kernels, key))
}
