package verdict

import (
	"fmt"
	"strings"

	"github.com/kci-dev/kci/results"

	"github.com/kci-dev/kci/internal/failure"
)

// Conclusion is the one-word outcome of a tree, as a CI check run shows it.
type Conclusion struct {
	State   string `json:"state"` // success | failure | neutral
	Title   string `json:"title"`
	Summary string `json:"summary"`
}

// Conclusion states.
const (
	Success = "success"
	Failure = "failure"
	Neutral = "neutral"
)

// TreeReport is everything shown about one tree.
type TreeReport struct {
	Tree          string        `json:"tree"`
	Base          string        `json:"base_kernel,omitempty"`
	Patched       string        `json:"patched_kernel,omitempty"`
	Patches       []string      `json:"patches,omitempty"`
	ConfigVerdict string        `json:"config_verdict,omitempty"`
	Drift         []string      `json:"drift,omitempty"`
	Perf          TreeAB        `json:"perf"`
	Survival      []SurvivalRow `json:"survival,omitempty"`
	Changes       []CellChange  `json:"survival_changes,omitempty"`
	Conclusion    Conclusion    `json:"conclusion"`
	// Loads are the verifier and JIT facts per program (loads.go).
	Loads []LoadRow `json:"verifier,omitempty"`
	// Brief is the tree's short answer (report.json only).
	Brief *Brief `json:"brief,omitempty"`
}

// Analyze computes the report of one tree.
func Analyze(run *results.Run, tree string) TreeReport {
	tr := TreeReport{Tree: tree, Perf: Compare(run, tree), Survival: Survival(run, tree), Loads: Loads(run, tree)}
	tr.Changes = ChangesOf(tr.Survival)
	if t := run.Tree(tree); t != nil {
		tr.Base, tr.Patched = results.KernelID(t.Base), results.KernelID(t.Patched)
		if t.Patched != nil {
			tr.Patches = t.Patched.Patches
		}
		tr.ConfigVerdict, tr.Drift = t.ConfigVerdict, t.Drift
		if len(tr.Drift) == 0 && t.Patched != nil {
			for _, d := range t.Patched.Drift {
				tr.Drift = append(tr.Drift, d.String())
			}
		}
	}
	tr.Conclusion = conclude(run, tr)
	return tr
}

func ChangesOf(rows []SurvivalRow) []CellChange {
	var out []CellChange
	for _, r := range rows {
		if r.Change != "" {
			out = append(out, CellChange{Kind: r.Change, Base: *r.Base, Patched: *r.Patched})
		}
	}
	return out
}

// Conclude decides the outcome of one tree: failure for survival
// regressions, a patched kernel that fails where base did not, a variant
// invalid on the patched kernel only, or a decided slowdown of a variant
// total (see Compare; not below the smallest effect; in real or
// instruction time); neutral when the numbers cannot decide (emulated
// wall-clock time, too few boots, incomplete run); success otherwise.
func Conclude(run *results.Run, tree string) Conclusion {
	return Analyze(run, tree).Conclusion
}

func conclude(run *results.Run, tr TreeReport) Conclusion {
	name := tr.Tree
	ab := tr.Perf
	var regs, fixes []string
	for _, c := range tr.Changes {
		cell := c.Base.Carrier + " × " + c.Base.Path
		if c.Kind == Regression {
			regs = append(regs, cell)
		} else {
			fixes = append(fixes, cell)
		}
	}
	var baseFail, patchedFail []string
	for _, b := range run.Boots {
		if b.Tree != name || b.Error == "" || b.ErrorKind == failure.Infra || b.ErrorKind == failure.Cancelled || b.ErrorKind == failure.Interrupted {
			continue
		}
		if b.Role == results.RolePatched {
			patchedFail = append(patchedFail, b.Error)
		} else {
			baseFail = append(baseFail, b.Error)
		}
	}
	patchedInvalid, baseInvalid := oneSidedInvalid(ab)
	var slower, faster, noisy, undecided, progs, hidden []string
	need := 0
	for _, v := range ab.Variants {
		r := v.Total
		s := fmt.Sprintf("%s %+.1f%%", v.Variant, r.Effect())
		if r.Verdict == Slower || r.Verdict == Faster {
			s += " " + r.Backing()
		}
		switch {
		case (r.Verdict == Slower || r.Verdict == Faster) && r.InNoise:
			noisy = append(noisy, s)
		case r.Verdict == Slower:
			slower = append(slower, s)
		case r.Verdict == Faster:
			faster = append(faster, s)
		case r.Verdict == TooFew:
			u := fmt.Sprintf("%s: %s", v.Variant, r.Verdict)
			need = max(need, r.Need)
			if r.Need > 0 {
				u += fmt.Sprintf(" (needs >= %d boots per kernel, has %d+%d)", r.Need, r.Base.N, r.Patched.N)
			}
			undecided = append(undecided, u)
		case r.Verdict == NotComparable:
			undecided = append(undecided, fmt.Sprintf("%s: %s", v.Variant, r.Verdict))
		}
		for _, p := range v.Programs {
			if (p.Verdict == Slower || p.Verdict == Faster) && !p.InNoise {
				progs = append(progs, fmt.Sprintf("%s/%s %s %+.1f%% %s", v.Variant, p.Name, p.Verdict, p.Effect(), p.Backing()))
			}
		}
		for _, p := range append([]Row{v.Total}, v.Programs...) {
			if ab.Deterministic() && p.Verdict == NoChange && p.Undecided(ab.MinEffectPct) {
				hidden = append(hidden, fmt.Sprintf("%s/%s (would show ±%.1f%%, %d seeds)", v.Variant, p.Name, p.Detectable, p.Seeds))
			}
		}
	}
	var sum []string
	add := func(label string, xs []string) {
		if len(xs) > 0 {
			sum = append(sum, fmt.Sprintf("%s: %s", label, strings.Join(xs, ", ")))
		}
	}
	add("survival regressions", regs)
	add("survival fixes", fixes)
	add("patched kernel failures", patchedFail)
	add("base kernel failures", baseFail)
	add("invalid on the patched kernel only", patchedInvalid)
	add("invalid on the base kernel only", baseInvalid)
	add("slower", slower)
	add("faster", faster)
	add(fmt.Sprintf("changes below the smallest effect (±%.1f%%)", ab.MinEffectPct), noisy)
	add("programs", progs)
	add("undecided", undecided)
	// Power, said where the verdict is read: which "no change" rows could
	// not have shown a change of the smallest effect.
	add(fmt.Sprintf("no change, but not ruled out at ±%.1f%% with %.0f%% power", ab.MinEffectPct, PowerLevel*100), hidden)
	if sq := ab.Sequential; sq != nil && sq.Stop != "" {
		sum = append(sum, fmt.Sprintf("adaptive seeds: %d of %d planned looks, %d boots (--max-boots %d): %s", sq.Done, sq.Looks, sq.Boots, sq.MaxBoots, sq.Stop))
	}
	if ab.Deterministic() && ab.Family > 0 {
		sum = append(sum, fmt.Sprintf("test: Welch t over per-seed values, Holm over %d rows of the run at %.0f%% family-wise (split over %d looks)", ab.Family, ab.Alpha*100, ab.Looks))
	}
	sum = append(sum, ab.Warnings...)
	switch {
	case ab.Deterministic():
		sum = append(sum, "numbers are "+results.InstructionTimeLabel+" (TCG, icount): guest instructions, not real time")
	case ab.Emulated:
		sum = append(sum, "numbers are "+results.EmulatedLabel+" (TCG)")
	}
	if run.Incomplete {
		sum = append(sum, "run incomplete: "+run.IncompleteReason)
	}
	c := Conclusion{Summary: strings.Join(sum, "\n")}
	switch {
	case len(regs) > 0:
		c.State, c.Title = Failure, fmt.Sprintf("%s: %s", name, results.Plural(len(regs), "survival regression"))
	case len(patchedFail) > 0 && len(baseFail) == 0:
		c.State, c.Title = Failure, fmt.Sprintf("%s: patched kernel failed: %s", name, patchedFail[0])
	case len(patchedInvalid) > 0:
		c.State, c.Title = Failure, fmt.Sprintf("%s: invalid on the patched kernel only: %s", name, patchedInvalid[0])
	case len(baseFail) > 0:
		c.State, c.Title = Neutral, fmt.Sprintf("%s: base kernel failed too: %s", name, baseFail[0])
	case ab.DeterminismCheck:
		c.State, c.Title = Neutral, fmt.Sprintf("%s: determinism check (one seed per kernel), not a comparison: %s", name, determinism(ab))
	case len(perfRegressions(ab)) > 0:
		c.State, c.Title = Failure, perfTitle(tr, nil, need)
	case len(slower) > 0, ab.Emulated && !ab.Deterministic():
		c.State, c.Title = Neutral, perfTitle(tr, undecided, need)
	case len(undecided) > 0 || len(ab.Variants) == 0 && len(tr.Survival) == 0:
		c.State, c.Title = Neutral, perfTitle(tr, undecided, need)
	case run.Incomplete:
		c.State, c.Title = Neutral, fmt.Sprintf("%s: run incomplete: %s", name, run.IncompleteReason)
	default:
		c.State, c.Title = Success, perfTitle(tr, nil, need)
	}
	return c
}

// perfTitle is the headline of a tree decided by its numbers: the brief's
// verdict with the changed rows, what could not be decided, and what the
// numbers measure when they are not real time.
func perfTitle(tr TreeReport, undecided []string, need int) string {
	b := perfBrief(tr)
	s := b.headline()
	if len(undecided) > 0 {
		u := string(TooFew)
		if need > 0 {
			u += fmt.Sprintf(": needs >= %d boots per kernel", need)
		}
		if len(undecided) < len(tr.Perf.Variants) {
			var names []string
			for _, x := range undecided {
				v, _, _ := strings.Cut(x, ":")
				names = append(names, v)
			}
			u += " (" + strings.Join(names, ", ") + ")"
		}
		s += "; " + u
	}
	if tr.Perf.Label != "" && len(tr.Perf.Variants) > 0 {
		s += "; " + tr.Perf.Label
	}
	return s
}

// PatchedOnlyInvalid lists, for a tree, the variants invalid on the
// patched kernel only, each with its first reason: the patch broke a
// benchmark's own invariants (a leak, lost packets), which kci test exits
// on like a survival regression.
func PatchedOnlyInvalid(run *results.Run, tree string) []string {
	patched, _ := oneSidedInvalid(Compare(run, tree))
	return patched
}

// oneSidedInvalid lists the variants invalid on one kernel only (never on
// the other), with the first reason and how many boots: on the patched
// side that is the patch's doing (a leak, a lost packet count) and fails
// the tree.
func oneSidedInvalid(ab TreeAB) (patched, base []string) {
	type acc struct {
		reasons []string
		n       int
	}
	inv := map[string]map[string]*acc{} // variant → role
	var order []string
	for _, e := range ab.Excluded {
		if e.Kind != "invalid" {
			continue
		}
		if inv[e.Variant] == nil {
			inv[e.Variant] = map[string]*acc{}
			order = append(order, e.Variant)
		}
		a := inv[e.Variant][e.Role]
		if a == nil {
			a = &acc{}
			inv[e.Variant][e.Role] = a
		}
		a.n++
		a.reasons = append(a.reasons, e.Reason)
	}
	line := func(v string, a *acc) string {
		return fmt.Sprintf("%s invalid in %s: %s", v, results.Plural(a.n, "boot"), a.reasons[0])
	}
	for _, v := range order {
		p, b := inv[v][results.RolePatched], inv[v][results.RoleBase]
		switch {
		case p != nil && b == nil:
			patched = append(patched, line(v, p))
		case b != nil && p == nil:
			base = append(base, line(v, b))
		}
	}
	return patched, base
}

// determinism says whether a determinism check's repeated boots agreed.
func determinism(ab TreeAB) string {
	for _, v := range ab.Variants {
		for _, r := range append([]Row{v.Total}, v.Programs...) {
			if len(r.Warnings) > 0 {
				return "boots of one seed differ (" + v.Variant + "/" + r.Name + ")"
			}
		}
	}
	return "repeated boots of each kernel agree exactly"
}
