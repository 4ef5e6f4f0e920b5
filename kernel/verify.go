package kernel

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/cilium/ebpf/btf"
)

// What a series visibly adds to the kernel, read from its added lines.
var (
	addedKfunc    = regexp.MustCompile(`^\+\s*__bpf_kfunc\s+[^(]*?\b(\w+)\s*\(`)
	addedEvent    = regexp.MustCompile(`^\+\s*(?:TRACE_EVENT|TRACE_EVENT_CONDITION|TRACE_EVENT_FN)\(\s*(\w+)\s*,`)
	addedDefEvent = regexp.MustCompile(`^\+\s*DEFINE_EVENT(?:_CONDITION)?\(\s*\w+\s*,\s*(\w+)\s*,`)
	addedMapType  = regexp.MustCompile(`^\+\s*(BPF_MAP_TYPE_\w+)\s*,`)
	diffFile      = regexp.MustCompile(`^\+\+\+ (?:b/)?(\S+)`)
)

// Expectation is one thing a series adds that vmlinux BTF must show.
type Expectation struct {
	Kind string // kfunc, tracepoint, map type
	Name string
}

func (e Expectation) String() string { return e.Kind + " " + e.Name }

// Expectations lists what patches add: kfuncs, tracepoints, BPF map types.
// Files under tools/ are copies of UAPI headers and are ignored.
func Expectations(patches []Patch) []Expectation {
	seen := map[Expectation]bool{}
	var out []Expectation
	add := func(e Expectation) {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	for _, p := range patches {
		file := ""
		for _, l := range strings.Split(string(p.Data), "\n") {
			if m := diffFile.FindStringSubmatch(l); m != nil {
				file = m[1]
				continue
			}
			if strings.HasPrefix(file, "tools/") || strings.HasPrefix(file, "Documentation/") {
				continue
			}
			if m := addedKfunc.FindStringSubmatch(l); m != nil {
				add(Expectation{"kfunc", m[1]})
			} else if m := addedEvent.FindStringSubmatch(l); m != nil {
				add(Expectation{"tracepoint", m[1]})
			} else if m := addedDefEvent.FindStringSubmatch(l); m != nil {
				add(Expectation{"tracepoint", m[1]})
			} else if m := addedMapType.FindStringSubmatch(l); m != nil && strings.Contains(file, "uapi/linux/bpf.h") {
				add(Expectation{"map type", m[1]})
			}
		}
	}
	return out
}

// VerifyAdds checks vmlinux's BTF for everything the series adds, so a
// stale build cannot pass as patched.
func VerifyAdds(vmlinux string, patches []Patch) (found, missing []string, err error) {
	exp := Expectations(patches)
	if len(exp) == 0 {
		return nil, nil, nil
	}
	spec, err := btf.LoadSpec(vmlinux)
	if err != nil {
		return nil, nil, fmt.Errorf("vmlinux BTF: %w", err)
	}
	var mapTypes map[string]bool
	for _, e := range exp {
		ok := false
		switch e.Kind {
		case "kfunc":
			var fn *btf.Func
			ok = spec.TypeByName(e.Name, &fn) == nil
		case "tracepoint":
			var td *btf.Typedef
			ok = spec.TypeByName("btf_trace_"+e.Name, &td) == nil
		case "map type":
			if mapTypes == nil {
				mapTypes = enumValues(spec, "bpf_map_type")
			}
			ok = mapTypes[e.Name]
		}
		if ok {
			found = append(found, e.String())
		} else {
			missing = append(missing, e.String())
		}
	}
	sort.Strings(found)
	return found, missing, nil
}

func enumValues(spec *btf.Spec, name string) map[string]bool {
	out := map[string]bool{}
	types, err := spec.AnyTypesByName(name)
	if err != nil {
		return out
	}
	for _, t := range types {
		if en, ok := t.(*btf.Enum); ok {
			for _, v := range en.Values {
				out[v.Name] = true
			}
		}
	}
	return out
}
