package job

import (
	"fmt"
	"strings"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
	"github.com/kci-dev/kci/wire"
)

// withExact puts each variant's exact counts into its record.
func withExact(vs []results.VariantResult, ex []boot.VariantExact) {
	for _, e := range ex {
		for i := range vs {
			if vs[i].Variant == e.Variant {
				vs[i].Exact = e.Exact
			}
		}
	}
}

// exactProfiles puts the plugin's counts in place of the guest's samples
// where a variant has them: under icount the profile is then every
// instruction the window ran, by function, not a 99 Hz sample of it.
// API v1 cannot walk stacks, so the "stack" is the code's kind and its
// function.
func exactProfiles(ps []wire.Profile, ex []boot.VariantExact) []wire.Profile {
	out := append([]wire.Profile(nil), ps...)
	for i := range out {
		for _, e := range ex {
			if e.Variant == out[i].Variant && e.Exact != nil {
				out[i].Folded, out[i].Samples = exactFolded(e.Exact), e.Exact.Insns
				out[i].FreqHz, out[i].Dropped, out[i].Error = 0, 0, ""
			}
		}
	}
	return out
}

// exactFolded is a window's counts as folded stacks: kind;function insns,
// and a BPF program's calls split by function under it (bpf;prog;function:
// what the program called, taken from the function's own stack), so a
// flame graph shows each program's children as a profiler's does.
func exactFolded(e *results.Exact) string {
	own := map[string]uint64{}
	for _, f := range e.Funcs {
		own[f.Name] = f.Insns
	}
	var b strings.Builder
	for _, c := range verdict.ProgCalls(e) {
		for _, f := range c.Funcs {
			if f.Name == "bpf:"+c.Prog || f.Insns == 0 {
				continue
			}
			// A function under the window's fold is in its bucket there.
			from := f.Name
			if _, ok := own[from]; !ok {
				from = results.FuncSmall
			}
			n := min(f.Insns, own[from])
			own[from] -= n
			fmt.Fprintf(&b, "bpf;%s;%s %d\n", c.Prog, foldedName(f.Name), n)
		}
	}
	for _, f := range e.Funcs {
		kind, name := "kernel", f.Name
		switch {
		case strings.HasPrefix(name, "bpf:"):
			kind, name = "bpf", strings.TrimPrefix(name, "bpf:")
		case strings.HasPrefix(name, "observer:"):
			kind, name = "kci accountant", strings.TrimPrefix(name, "observer:")
		case name == results.FuncUser:
			kind, name = "user", "[user]"
		}
		if own[f.Name] > 0 {
			fmt.Fprintf(&b, "%s;%s %d\n", kind, foldedName(name), own[f.Name])
		}
	}
	return b.String()
}

// foldedName is a function's name as one frame of a folded stack.
func foldedName(name string) string {
	return strings.NewReplacer(" ", "_", ";", "_").Replace(name)
}
