package verdict

import (
	"fmt"
	"strings"

	"github.com/kci-dev/kci/results"

	"github.com/kci-dev/kci/internal/failure"
)

// Conclusion is a tree's outcome as a CI check run shows it: a state
// (Success, Failure, Neutral), a title and a summary.
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

// TreeReport is everything shown about one tree: one tree's part of a
// run's Analysis.
type TreeReport struct {
	Tree        string        `json:"tree"`
	Base        string        `json:"base_kernel,omitempty"`
	Patched     string        `json:"patched_kernel,omitempty"`
	Patches     []string      `json:"patches,omitempty"`
	ConfigCheck string        `json:"config_verdict,omitempty"`
	Drift       []string      `json:"drift,omitempty"`
	Perf        TreeAB        `json:"perf"`
	Survival    []SurvivalRow `json:"survival,omitempty"`
	Changes     []CellChange  `json:"survival_changes,omitempty"`
	Conclusion  Conclusion    `json:"conclusion"`
	// Loads are the verifier and JIT facts per program (loads.go).
	Loads []LoadRow `json:"verifier,omitempty"`
	// Brief is the tree's short answer, which every report leads with.
	Brief *Brief `json:"brief,omitempty"`
	// Where is the change by function, from exact counts (where.go).
	Where *Where `json:"where,omitempty"`
	// Coverage is whether the windows ran the patches' code, hunk by
	// hunk (coverage.go).
	Coverage *Coverage `json:"coverage,omitempty"`
}

// treeReport computes the report of one tree from its comparison (perf)
// and its Where, both computed over the whole run (AnalyzeRun): its
// survival, loads, kernels, conclusion and brief, and each row's change
// as the reports show it.
func treeReport(run *results.Run, tree string, perf TreeAB, where *Where) TreeReport {
	tr := TreeReport{Tree: tree, Perf: perf, Survival: survival(run, tree), Loads: loads(run, tree), Where: where}
	tr.Changes, tr.Coverage = changesOf(tr.Survival), coverageOf(run, tree)
	if t := run.Tree(tree); t != nil {
		tr.Base, tr.Patched = results.KernelID(t.Base), results.KernelID(t.Patched)
		if t.Patched != nil {
			tr.Patches = t.Patched.Patches
		}
		tr.ConfigCheck, tr.Drift = t.ConfigCheck, t.Drift
		if len(tr.Drift) == 0 && t.Patched != nil {
			for _, d := range t.Patched.Drift {
				tr.Drift = append(tr.Drift, d.String())
			}
		}
	}
	tr.Conclusion = conclude(run, tr)
	b := briefOf(tr)
	tr.Brief = &b
	for i := range tr.Perf.Variants {
		v := &tr.Perf.Variants[i]
		v.Total.Change = changePtr(RowChange(tr.Perf, v.Variant, v.Total))
		for j := range v.Programs {
			v.Programs[j].Change = changePtr(RowChange(tr.Perf, v.Variant, v.Programs[j]))
		}
	}
	return tr
}

func changePtr(e Change) *Change { return &e }

// changesOf lists the survival rows whose outcome differs between the
// kernels.
func changesOf(rows []SurvivalRow) []CellChange {
	var out []CellChange
	for _, r := range rows {
		if r.Change != "" {
			out = append(out, CellChange{Kind: r.Change, Base: *r.Base, Patched: *r.Patched})
		}
	}
	return out
}

// facts are what a tree's conclusion is made of, each a list of lines.
type facts struct {
	regs, fixes                 []string // survival cells
	baseFail, patchedFail       []string // the kernel's failures, not the machine's
	patchedInvalid, baseInvalid []string
	slower, faster, noisy       []string // variant totals
	undecided, progs, hidden    []string
	need                        int // boots per kernel an undecided total needs
}

// conclude decides the outcome of one tree: failure for survival
// regressions, a patched kernel that fails where base did not, a variant
// invalid on the patched kernel only, or a decided slowdown of a variant
// total (perfRegressions: not below the smallest effect; in real or
// instruction time); neutral when the numbers cannot decide (emulated
// wall-clock time, too few boots, incomplete run); success otherwise.
func conclude(run *results.Run, tr TreeReport) Conclusion {
	f := factsOf(run, tr)
	c := Conclusion{Summary: summary(run, tr.Perf, f)}
	c.State, c.Title = stateAndTitle(run, tr, f)
	return c
}

func factsOf(run *results.Run, tr TreeReport) facts {
	var f facts
	for _, c := range tr.Changes {
		cell := c.Base.Carrier + " × " + c.Base.Path
		if c.Kind == Regression {
			f.regs = append(f.regs, cell)
		} else {
			f.fixes = append(f.fixes, cell)
		}
	}
	for _, b := range run.Boots {
		if b.Tree != tr.Tree || b.Error == "" || b.ErrorKind == failure.Infra || b.ErrorKind == failure.Cancelled || b.ErrorKind == failure.Interrupted {
			continue
		}
		if b.Role == results.RolePatched {
			f.patchedFail = append(f.patchedFail, b.Error)
		} else {
			f.baseFail = append(f.baseFail, b.Error)
		}
	}
	f.patchedInvalid, f.baseInvalid = oneSidedInvalid(tr.Perf)
	for _, v := range tr.Perf.Variants {
		f.addVariant(tr.Perf, v)
	}
	return f
}

// addVariant files a variant's total by its verdict, and its programs'
// decided changes and undecided "no change" rows.
func (f *facts) addVariant(ab TreeAB, v VariantAB) {
	r := v.Total
	s := fmt.Sprintf("%s %+.1f%%", v.Variant, r.changePct())
	if r.Verdict.moved() {
		s += " " + r.backing()
	}
	switch {
	case r.Verdict.moved() && r.InNoise:
		f.noisy = append(f.noisy, s)
	case r.Verdict == Slower:
		f.slower = append(f.slower, s)
	case r.Verdict == Faster:
		f.faster = append(f.faster, s)
	case r.Verdict == TooFew:
		u := fmt.Sprintf("%s: %s", v.Variant, r.Verdict)
		f.need = max(f.need, r.Need)
		if r.Need > 0 {
			u += fmt.Sprintf(" (needs >= %d boots per kernel, has %d+%d)", r.Need, r.Base.N, r.Patched.N)
		}
		f.undecided = append(f.undecided, u)
	case r.Verdict == NotComparable:
		f.undecided = append(f.undecided, fmt.Sprintf("%s: %s", v.Variant, r.Verdict))
	}
	for _, p := range v.Programs {
		if p.Verdict.moved() && !p.InNoise {
			s := fmt.Sprintf("%s/%s %s %+.1f%% %s", v.Variant, p.Name, p.Verdict, p.changePct(), p.backing())
			if u := RowUnit(p.Name); u != NsUnit {
				s += " (" + u + ")"
			}
			f.progs = append(f.progs, s)
		}
	}
	for _, p := range append([]Row{v.Total}, v.Programs...) {
		if ab.Deterministic() && p.Verdict == NoChange && p.undecided(ab.MinEffectPct) {
			f.hidden = append(f.hidden, fmt.Sprintf("%s/%s (would show ±%.1f%%, %d seeds)", v.Variant, p.Name, p.Detectable, p.Seeds))
		}
	}
}

// summary is the conclusion's body: the facts by kind, then how the
// numbers were tested and what they measure.
func summary(run *results.Run, ab TreeAB, f facts) string {
	var sum []string
	add := func(label string, xs []string) {
		if len(xs) > 0 {
			sum = append(sum, fmt.Sprintf("%s: %s", label, strings.Join(xs, ", ")))
		}
	}
	add("survival regressions", f.regs)
	add("survival fixes", f.fixes)
	add("patched kernel failures", f.patchedFail)
	add("base kernel failures", f.baseFail)
	add("invalid on the patched kernel only", f.patchedInvalid)
	add("invalid on the base kernel only", f.baseInvalid)
	add("slower", f.slower)
	add("faster", f.faster)
	add(fmt.Sprintf("changes below the smallest effect (±%.1f%%)", ab.MinEffectPct), f.noisy)
	add("programs", f.progs)
	add("undecided", f.undecided)
	// Power, said where the conclusion is read: which "no change" rows could
	// not have shown a change of the smallest effect.
	add(fmt.Sprintf("no change, but not ruled out at ±%.1f%% with %.0f%% power", ab.MinEffectPct, PowerLevel*100), f.hidden)
	if sq := ab.Sequential; sq != nil && sq.Stop != "" {
		sum = append(sum, fmt.Sprintf("adaptive seeds: %d of %d planned looks, %s: %s", sq.Done, sq.Looks, sq.BudgetLine(), sq.Stop))
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
	if ab.HasCyclesRows() {
		sum = append(sum, CyclesRow+" and "+CyclesMarginalRow+" are "+results.ModelledCyclesLabel+
			" of kci's cache model (a model, not a measurement; not ns)")
	}
	if ab.HasCallRows() {
		sum = append(sum, CallRowPrefix+"<prog> rows are a program's calls in bpf_stats' scope (its code, what it calls, "+
			"interrupts meanwhile), counted by kci's QEMU plugin: "+results.InstructionsLabel+" and "+results.ModelledCyclesLabel+", not ns")
	}
	if ab.Interleaved {
		sum = append(sum, InterleavedNote)
		sum = append(sum, VCPURowPrefix+"<i> rows are what vCPU i ran in the window per packet, counted by kci's QEMU plugin "+
			"over its own turns: "+results.InstructionsLabel+" and "+results.ModelledCyclesLabel+" of its core, not ns")
	}
	if run.Incomplete {
		sum = append(sum, "run incomplete: "+run.IncompleteReason)
	}
	return strings.Join(sum, "\n")
}

// stateAndTitle is the state and title of the tree's conclusion: the
// gravest fact first.
func stateAndTitle(run *results.Run, tr TreeReport, f facts) (state, title string) {
	name, ab := tr.Tree, tr.Perf
	switch {
	case len(f.regs) > 0:
		return Failure, fmt.Sprintf("%s: %s", name, results.Plural(len(f.regs), "survival regression"))
	case len(f.patchedFail) > 0 && len(f.baseFail) == 0:
		return Failure, fmt.Sprintf("%s: patched kernel failed: %s", name, f.patchedFail[0])
	case len(f.patchedInvalid) > 0:
		return Failure, fmt.Sprintf("%s: invalid on the patched kernel only: %s", name, f.patchedInvalid[0])
	case len(f.baseFail) > 0:
		return Neutral, fmt.Sprintf("%s: base kernel failed too: %s", name, f.baseFail[0])
	case ab.DeterminismCheck:
		return Neutral, fmt.Sprintf("%s: determinism check (one seed per kernel), not a comparison: %s", name, determinism(ab))
	case measuredOnly(run, name):
		return Neutral, measuredTitle(run, name)
	case len(perfRegressions(ab)) > 0:
		return Failure, perfTitle(tr, nil, f.need)
	case len(f.slower) > 0, ab.Emulated && !ab.Deterministic():
		return Neutral, perfTitle(tr, f.undecided, f.need)
	case len(f.undecided) > 0 || len(ab.Variants) == 0 && len(tr.Survival) == 0:
		return Neutral, perfTitle(tr, f.undecided, f.need)
	case run.Incomplete:
		return Neutral, fmt.Sprintf("%s: run incomplete: %s", name, run.IncompleteReason)
	}
	return Success, perfTitle(tr, nil, f.need)
}

// perfTitle is the headline of a tree decided by its numbers: the brief's
// outcome with the changed rows, what could not be decided, and what the
// numbers measure (the tree's Label).
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

// PatchedOnlyInvalid lists the tree's variants invalid on the patched
// kernel only, each with its first reason: the patch broke a benchmark's
// own invariants (a leak, lost packets), which kci test exits on like a
// survival regression.
func (tr TreeReport) PatchedOnlyInvalid() []string {
	patched, _ := oneSidedInvalid(tr.Perf)
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
