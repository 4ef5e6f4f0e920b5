package kernel

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/kci-dev/kci/internal/kconfig"
)

// Option is one CONFIG_ assignment and where it was asked for.
type Option struct {
	Name   string `json:"name"`             // without CONFIG_
	Value  string `json:"value"`            // y, m, n, a number or a quoted string
	Source string `json:"source,omitempty"` // file:line
}

// Fragment is a config fragment file.
type Fragment struct {
	Path    string   `json:"path"`
	Options []Option `json:"options"`
}

var (
	setLine   = regexp.MustCompile(`^CONFIG_([A-Za-z0-9_]+)=(.*)$`)
	unsetLine = regexp.MustCompile(`^# CONFIG_([A-Za-z0-9_]+) is not set$`)
)

// ParseFragment reads a fragment or a full .config. Unknown lines are an
// error naming file:line, so a typo cannot silently drop a request.
func ParseFragment(path string, data []byte) (Fragment, error) {
	f := Fragment{Path: path}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		src := fmt.Sprintf("%s:%d", path, n)
		if m := setLine.FindStringSubmatch(l); m != nil {
			f.Options = append(f.Options, Option{Name: m[1], Value: m[2], Source: src})
			continue
		}
		if m := unsetLine.FindStringSubmatch(l); m != nil {
			f.Options = append(f.Options, Option{Name: m[1], Value: "n", Source: src})
			continue
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		return f, fmt.Errorf("config fragment %s: not a CONFIG_ assignment: %q", src, l)
	}
	return f, nil
}

// Values maps option name to value; "n" for unset.
type Values map[string]string

// Get returns the value, "n" when absent.
func (v Values) Get(name string) string {
	if x, ok := v[name]; ok {
		return x
	}
	return "n"
}

// ParseValues reads a final .config.
func ParseValues(data []byte) Values {
	f, _ := ParseFragment(".config", data)
	v := Values{}
	for _, o := range f.Options {
		v[o.Name] = o.Value
	}
	return v
}

// mergeInto overrides .config text with fragments, last one wins, the way
// merge_config.sh does, keeping the rest of the file as it is.
func mergeInto(config []byte, frags []Fragment) []byte {
	want := map[string]string{}
	var order []string
	for _, f := range frags {
		for _, o := range f.Options {
			if _, ok := want[o.Name]; !ok {
				order = append(order, o.Name)
			}
			want[o.Name] = o.Value
		}
	}
	var b bytes.Buffer
	for _, l := range strings.Split(string(config), "\n") {
		t := strings.TrimSpace(l)
		if m := setLine.FindStringSubmatch(t); m != nil {
			if _, ok := want[m[1]]; ok {
				continue
			}
		} else if m := unsetLine.FindStringSubmatch(t); m != nil {
			if _, ok := want[m[1]]; ok {
				continue
			}
		}
		if l != "" {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	for _, n := range order {
		if want[n] == "n" {
			fmt.Fprintf(&b, "# CONFIG_%s is not set\n", n)
		} else {
			fmt.Fprintf(&b, "CONFIG_%s=%s\n", n, want[n])
		}
	}
	return b.Bytes()
}

// Violation is one way the final config breaks the policy.
type Violation struct {
	Option string `json:"option"`
	Want   string `json:"want"`
	Got    string `json:"got"`
	Source string `json:"source,omitempty"` // fragment file:line that asked, or "forbidden"
	Why    string `json:"why,omitempty"`    // Kconfig's dependency, where known
}

func (v Violation) String() string {
	s := fmt.Sprintf("CONFIG_%s=%s (wanted %s", v.Option, v.Got, v.Want)
	if v.Source != "" {
		s += ", " + v.Source
	}
	s += ")"
	if v.Why != "" {
		s += ": " + v.Why
	}
	return s
}

// Verify checks the final config: every requested option has its value,
// and no forbidden option is on. deps explains a dropped option (may be nil).
func Verify(final Values, frags []Fragment, deps func(name string) string) []Violation {
	want := map[string]Option{}
	var order []string
	for _, f := range frags {
		for _, o := range f.Options {
			if _, ok := want[o.Name]; !ok {
				order = append(order, o.Name)
			}
			want[o.Name] = o
		}
	}
	var vs []Violation
	for _, n := range order {
		o := want[n]
		if got := final.Get(n); got != o.Value {
			v := Violation{Option: n, Want: o.Value, Got: got, Source: o.Source}
			if deps != nil {
				v.Why = deps(n)
			}
			vs = append(vs, v)
		}
	}
	for _, n := range kconfig.Forbidden {
		if got := final.Get(n); got != "n" {
			v := Violation{Option: n, Want: "n", Got: got, Source: "forbidden: debug option voids performance numbers"}
			if o, ok := want[n]; ok {
				v.Source = "forbidden, yet requested at " + o.Source
			}
			vs = append(vs, v)
		}
	}
	return vs
}

// kconfigDeps finds option's `depends on` lines in the tree's Kconfig files,
// or says the symbol does not exist.
func kconfigDeps(srcDir string) func(string) string {
	return func(name string) string {
		def := regexp.MustCompile(`^\s*(menu)?config\s+` + regexp.QuoteMeta(name) + `\s*$`)
		var deps []string
		found := false
		// The callback skips what it cannot read, so the walk returns no error.
		_ = filepath.WalkDir(srcDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				if n := d.Name(); n == ".git" || strings.HasPrefix(n, ".kci") || n == "Documentation" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasPrefix(d.Name(), "Kconfig") {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			lines := strings.Split(string(data), "\n")
			for i, l := range lines {
				if !def.MatchString(l) {
					continue
				}
				found = true
				for _, b := range lines[i+1:] {
					t := strings.TrimSpace(b)
					if strings.HasPrefix(t, "config ") || strings.HasPrefix(t, "menuconfig ") ||
						strings.HasPrefix(t, "endmenu") || strings.HasPrefix(t, "choice") || strings.HasPrefix(t, "endif") {
						break
					}
					if strings.HasPrefix(t, "depends on ") {
						deps = append(deps, t)
					}
				}
			}
			return nil
		})
		if !found {
			return "no such Kconfig symbol in this tree"
		}
		if len(deps) == 0 {
			return "dropped by Kconfig (a choice or a select decides it)"
		}
		sort.Strings(deps)
		return "unmet dependency: " + strings.Join(deps, "; ")
	}
}
