package verdict

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kci-dev/kci/internal/stats"
	"github.com/kci-dev/kci/results"
)

// HunkCover is whether the benchmark ran one hunk's code on one side:
// per variant, the times per packet its windows ran it (the median over
// that side's boots that counted it; exact per seed under icount).
type HunkCover struct {
	results.Hunk
	PerPkt map[string]float64 `json:"per_pkt,omitempty"`
	// In is, per variant whose windows ran it, those runs per packet by
	// context (results.Contexts' keys, adding up to PerPkt, and
	// results.ContextBPF for those inside a BPF program's call; the
	// median over the boots that counted them), when the plugin counted
	// entries by context.
	In    map[string]map[string]float64 `json:"in,omitempty"`
	Boots int                           `json:"boots"` // boots whose windows were looked up
}

// Coverage is what a tree's verdict covers of its patches: each hunk's
// code and how often the windows ran it. Unmeasured, when set, says why
// no boot could count it (no plugin: KVM, the host clock).
type Coverage struct {
	Hunks      []HunkCover `json:"hunks"`
	Unmeasured string      `json:"unmeasured,omitempty"`
}

// coverageOf is tree's coverage from the run's record; nil when the
// record maps no hunk (no patch, a record from before coverage).
func coverageOf(run *results.Run, tree string) *Coverage {
	t := run.Tree(tree)
	if t == nil {
		return nil
	}
	return coverOf(t.Hunks, func(side string) []results.Boot {
		var out []results.Boot
		for _, b := range run.Boots {
			if b.Tree == tree && b.Role == side {
				out = append(out, b)
			}
		}
		return out
	})
}

// PatchCoverage is patch p's coverage in series tree t: its added lines
// over the boots of its own prefix, its removed lines over the previous
// prefix's (0: the tree's kernel). nil when the record maps no hunk.
func PatchCoverage(t *results.SeriesTree, p results.PatchResult) *Coverage {
	return coverOf(p.Hunks, func(side string) []results.Boot {
		prefix := p.Index
		if side == results.RoleBase {
			prefix--
		}
		var out []results.Boot
		for _, b := range t.Boots {
			if b.Prefix == prefix {
				out = append(out, b.Boot)
			}
		}
		return out
	})
}

// coverOf is the coverage of hunks over the boots of each side: per
// variant, the median of runs per packet over the boots that counted it.
func coverOf(hunks []results.Hunk, bootsOf func(side string) []results.Boot) *Coverage {
	if len(hunks) == 0 {
		return nil
	}
	c := &Coverage{}
	for _, h := range hunks {
		c.Hunks = append(c.Hunks, coverHunk(h, bootsOf(h.Side)))
	}
	if !c.measured() && c.hasCode() {
		c.Unmeasured = "counting a hunk's runs needs the instruction clock (icount) with kci's QEMU plugin: no boot had it"
	}
	return c
}

// coverHunk is h's coverage over boots: per variant, the medians of its
// runs per packet and of those in each context.
func coverHunk(h results.Hunk, boots []results.Boot) HunkCover {
	hc := HunkCover{Hunk: h}
	vals := map[string][]float64{}
	in := map[string]map[string][]float64{}
	for _, b := range boots {
		if b.Error != "" {
			continue
		}
		counted := false
		for _, v := range b.Variants {
			x := v.Exact
			if x == nil || x.HunkRuns == nil || x.Packets == 0 {
				continue
			}
			n, ok := x.HunkRuns[h.Key]
			if !ok {
				continue
			}
			vals[v.Variant] = append(vals[v.Variant], float64(n)/float64(x.Packets))
			counted = true
			if by := x.HunkIn[h.Key]; by != nil {
				if in[v.Variant] == nil {
					in[v.Variant] = map[string][]float64{}
				}
				for _, k := range contextKeys() {
					in[v.Variant][k] = append(in[v.Variant][k], float64(by[k])/float64(x.Packets))
				}
			}
		}
		if counted {
			hc.Boots++
		}
	}
	for v, xs := range vals {
		if hc.PerPkt == nil {
			hc.PerPkt = map[string]float64{}
		}
		hc.PerPkt[v] = stats.Median(xs)
	}
	for v, byCtx := range in {
		for k, xs := range byCtx {
			if m := stats.Median(xs); m > 0 {
				if hc.In == nil {
					hc.In = map[string]map[string]float64{}
				}
				if hc.In[v] == nil {
					hc.In[v] = map[string]float64{}
				}
				hc.In[v][k] = m
			}
		}
	}
	return hc
}

// hasCode says some hunk compiled to code: one that did not needs no
// boot to be reported.
func (c *Coverage) hasCode() bool {
	for _, h := range c.Hunks {
		if h.NoCode == "" {
			return true
		}
	}
	return false
}

// measured says some boot counted some hunk with code.
func (c *Coverage) measured() bool {
	for _, h := range c.Hunks {
		if h.Boots > 0 {
			return true
		}
	}
	return false
}

// Ran says the windows ran any of the patches' code on either side.
func (c *Coverage) Ran() bool {
	for _, h := range c.Hunks {
		for _, x := range h.PerPkt {
			if x > 0 {
				return true
			}
		}
	}
	return false
}

// Lines are the coverage as the reports print it, one line a hunk side.
func (c *Coverage) Lines() []string {
	var out []string
	if c.Unmeasured != "" {
		out = append(out, "not counted: "+c.Unmeasured)
	}
	for _, h := range c.Hunks {
		out = append(out, h.line())
	}
	return out
}

func (h HunkCover) line() string {
	s := h.Name
	if h.Side == results.RoleBase {
		s += ", its removed lines (in the kernel before the patch)"
	}
	switch {
	case h.NoCode != "":
		return s + ": " + h.NoCode
	case h.Boots == 0:
		return s + ": not counted"
	}
	var ran, never []string
	for _, v := range variantsOf(h.PerPkt) {
		if x := h.PerPkt[v]; x > 0 {
			ran = append(ran, fmt.Sprintf("%s×/pkt in %s%s", fmtPerPkt(x), v, inContexts(h.In[v])))
		} else {
			never = append(never, v)
		}
	}
	if len(ran) == 0 {
		return fmt.Sprintf("%s: never ran in a measured window (%s; %s)", s, strings.Join(never, ", "), results.Plural(h.Boots, "boot"))
	}
	s += ": ran " + strings.Join(ran, ", ")
	if len(never) > 0 {
		s += "; never in " + strings.Join(never, ", ")
	}
	return s + fmt.Sprintf(" (%s)", results.Plural(h.Boots, "boot"))
}

// contextKeys are HunkIn's keys a report reads: the stack classes and
// ContextBPF.
func contextKeys() []string {
	ks := []string{results.ContextBPF}
	for _, c := range results.Contexts {
		ks = append(ks, c.Key)
	}
	return ks
}

// inContexts is " (softirq)" for runs all in one stack class, " (softirq
// 0.50, syscall 0.50)" for several, with "; 1.00 in a BPF program's
// call" when some were; "" when not counted by context.
func inContexts(in map[string]float64) string {
	var labels, parts []string
	for _, c := range results.Contexts {
		if x := in[c.Key]; x > 0 {
			labels = append(labels, c.Label)
			parts = append(parts, c.Label+" "+fmtPerPkt(x))
		}
	}
	s := strings.Join(parts, ", ")
	if len(parts) == 1 {
		s = labels[0]
	}
	if x := in[results.ContextBPF]; x > 0 {
		s += "; " + fmtPerPkt(x) + " in a BPF program's call"
	}
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// fmtPerPkt writes runs per packet with two significant decimals.
func fmtPerPkt(x float64) string {
	if x >= 0.01 {
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.2g", x)
}

func variantsOf(m map[string]float64) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// covers is the brief's clause on coverage: "" when hunks with code
// could not be counted; else whether the windows ran the patches' code, and for a
// tree whose numbers show no change over code they never ran, that the
// rows do not cover it.
func (c *Coverage) covers(outcome string) string {
	if c == nil || c.Unmeasured != "" {
		return ""
	}
	// A hunk ran if either side's code ran; it never ran if some side was
	// counted and none ran; it has no code if no side has any.
	state, order := map[string]string{}, []string{}
	for _, h := range c.Hunks {
		if _, ok := state[h.Key]; !ok {
			order = append(order, h.Key)
			state[h.Key] = ""
		}
		switch {
		case h.NoCode != "":
			if state[h.Key] == "" {
				state[h.Key] = "none"
			}
		case h.Boots == 0:
		case maxOf(h.PerPkt) > 0:
			state[h.Key] = "ran"
		case state[h.Key] != "ran":
			state[h.Key] = "never"
		}
	}
	var ran, never, none []string
	for _, k := range order {
		switch state[k] {
		case "ran":
			ran = append(ran, "hunk "+k)
		case "never":
			never = append(never, "hunk "+k)
		case "none":
			none = append(none, "hunk "+k)
		}
	}
	var parts []string
	if len(ran) > 0 {
		parts = append(parts, strings.Join(ran, ", ")+" ran in the windows")
	}
	if len(never) > 0 {
		parts = append(parts, strings.Join(never, ", ")+" never ran in any window")
	}
	if len(none) > 0 {
		parts = append(parts, strings.Join(none, ", ")+" compiled to no code")
	}
	s := "coverage: " + strings.Join(parts, "; ")
	switch {
	case len(ran) > 0 || len(never) == 0:
	case outcome == "no change":
		s = "coverage: no window ran the patch's code, so these rows do not cover it (" + strings.Join(parts, "; ") + ")"
	default:
		s += ": what moved, moved through what that code did outside the windows (setup, state it left)"
	}
	return s
}

func maxOf(m map[string]float64) float64 {
	var x float64
	for _, v := range m {
		x = max(x, v)
	}
	return x
}
