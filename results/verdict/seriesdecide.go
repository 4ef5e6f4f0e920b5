package verdict

import (
	"fmt"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/results"
)

// FaultKind is what a prefix of a series did wrong, most serious first:
// the order in which DecideSeries ranks them (job's faultExit gives each
// its exit code).
type FaultKind int

// The kinds of fault, most serious first.
const (
	FaultApply    FaultKind = iota + 1 // a patch does not apply
	FaultBuild                         // a prefix does not build, or the series is not bisectable
	FaultWarning                       // a new warning or checkpatch error: fails only under FailOnWarnings
	FaultBoot                          // a prefix does not boot (the kernel's fault, not the machine's)
	FaultSurvival                      // a prefix loses a survival cell
)

// Fault is one finding of a series that blames a patch.
type Fault struct {
	Tree string
	Kind FaultKind
	// Cause is one line naming the patch by number, not by the subject
	// its author wrote: it becomes the check's title, which is not escaped.
	Cause string
}

// SeriesOutcome is whether a series fails. kci series' exit code, the
// check kci post posts and its title all read it.
type SeriesOutcome struct {
	// Fail is the most serious fault that fails the series (the first of
	// its kind); nil: the series passes.
	Fail *Fault
	// Reported are faults that do not fail it: new warnings and
	// checkpatch errors of a run that did not fail on warnings.
	Reported []Fault
}

// DecideSeries is the one decision on a series run, on tree alone when
// tree is not empty, under the policy recorded in s (FailOnWarnings).
func DecideSeries(s *results.Series, tree string) SeriesOutcome {
	var o SeriesOutcome
	for _, t := range s.Trees {
		if tree != "" && t.Tree != tree {
			continue
		}
		for _, f := range treeFaults(t) {
			switch {
			case f.Kind == FaultWarning && !s.FailOnWarnings:
				o.Reported = append(o.Reported, f)
			case o.Fail == nil || f.Kind < o.Fail.Kind:
				o.Fail = &f
			}
		}
	}
	return o
}

// treeFaults are t's faults in the record's order: bisectability, then
// patch by patch.
func treeFaults(t results.SeriesTree) []Fault {
	var out []Fault
	add := func(k FaultKind, cause string) { out = append(out, Fault{Tree: t.Tree, Kind: k, Cause: cause}) }
	for _, bi := range t.Bisect {
		if bi.Fixed == 0 {
			add(FaultBuild, fmt.Sprintf("build broken from patch %d to the end of the series: %s", bi.Broken, bi.Error))
		} else {
			add(FaultBuild, fmt.Sprintf("bisectability failure: patch %d breaks the build, patch %d fixes it: %s", bi.Broken, bi.Fixed, bi.Error))
		}
	}
	for _, p := range t.Patches {
		id := fmt.Sprintf("patch %d/%d", p.Index, p.Of)
		if p.Apply == results.StepFail {
			add(FaultApply, id+" does not apply: "+p.ApplyError)
		}
		if p.Build == results.StepFail {
			add(FaultBuild, id+" does not build: "+p.BuildError)
		}
		if len(p.NewWarnings) > 0 {
			add(FaultWarning, id+" adds warning "+p.NewWarnings[0].String())
		}
		if p.Checkpatch != nil && p.Checkpatch.Errors > 0 {
			add(FaultWarning, fmt.Sprintf("%s: checkpatch: %d error(s)", id, p.Checkpatch.Errors))
		}
		if b := p.Boot; b != nil && b.Result == results.StepFail && kernelsFault(b.ErrorKind) {
			add(FaultBoot, id+": "+b.Error)
		}
		if b := p.Boot; b != nil && len(b.Lost) > 0 {
			add(FaultSurvival, id+" loses survival cell "+b.Lost[0])
		}
	}
	return out
}

// kernelsFault: a boot that failed for the machine (or was stopped) is
// not the patch's fault; records without a kind are.
func kernelsFault(kind string) bool {
	return kind != failure.Infra && kind != failure.Interrupted && kind != failure.Cancelled
}
