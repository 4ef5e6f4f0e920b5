package verdict

import (
	"fmt"
	"strings"

	"github.com/kci-dev/kci/results"
)

// Findings are the lines under a series tree's table, in the record's
// order: bisectability, then each patch's apply, build, warnings,
// checkpatch, boot and survival, then the performance culprits.
func Findings(t results.SeriesTree) []string {
	var out []string
	for _, bi := range t.Bisect {
		out = append(out, bi.String())
	}
	for _, p := range t.Patches {
		id := fmt.Sprintf("patch %d/%d", p.Index, p.Of)
		if p.ApplyError != "" {
			out = append(out, fmt.Sprintf("%s does not apply: %s", id, p.ApplyError))
		}
		if p.BuildError != "" && p.Build == results.StepUnverified {
			out = append(out, fmt.Sprintf("%s not checked: %s", id, p.BuildError))
		} else if p.BuildError != "" {
			out = append(out, fmt.Sprintf("%s build failed: %s", id, p.BuildError))
		}
		for _, w := range p.NewWarnings {
			out = append(out, fmt.Sprintf("%s new warning: %s", id, w))
		}
		if p.Checkpatch != nil {
			for _, it := range p.Checkpatch.Items {
				if it.Level == "ERROR" || it.Level == "WARNING" || it.Level == "CHECK" {
					out = append(out, fmt.Sprintf("%s checkpatch %s", id, it))
				}
			}
		}
		if p.CheckpatchError != "" {
			out = append(out, fmt.Sprintf("%s checkpatch did not run: %s", id, p.CheckpatchError))
		}
		if p.Boot != nil && p.Boot.Error != "" {
			out = append(out, fmt.Sprintf("%s boot: %s", id, p.Boot.Error))
		}
		if p.Boot != nil {
			for _, c := range p.Boot.Lost {
				out = append(out, fmt.Sprintf("%s survival lost: %s", id, c))
			}
		}
		if c := PatchCoverage(&t, p); c != nil && c.measured() {
			for _, l := range c.Lines() {
				out = append(out, fmt.Sprintf("%s coverage: %s", id, l))
			}
		}
	}
	for _, c := range t.Culprits {
		out = append(out, c.String())
	}
	return out
}

// SeriesConclude is one tree's outcome as a CI check shows it, from
// DecideSeries: failure when the tree has a fault that fails the series;
// neutral when the run stopped early, or when its only faults are new
// warnings or checkpatch errors and the run did not fail on warnings
// (reported, not failed, as in the run's exit code); success otherwise. Perf
// culprits are findings, not failures: a series may mean to change
// performance.
func SeriesConclude(s *results.Series, tree string) Conclusion {
	for _, t := range s.Trees {
		if t.Tree != tree {
			continue
		}
		o := DecideSeries(s, tree)
		c := Conclusion{State: Success, Title: fmt.Sprintf("%s: %d patches, each applies, builds and boots", tree, len(t.Patches))}
		switch {
		case o.Fail != nil:
			c.State, c.Title = Failure, tree+": "+o.Fail.Cause
			c.Summary = strings.Join(Findings(t), "\n")
		case s.Incomplete:
			c.State, c.Title = Neutral, fmt.Sprintf("%s: incomplete: %s", tree, s.IncompleteReason)
		case len(o.Reported) > 0:
			c.State = Neutral
			c.Title = fmt.Sprintf("%s: reported, not failed (no --fail-on-warnings): %s", tree, o.Reported[0].Cause)
			c.Summary = strings.Join(Findings(t), "\n")
		}
		for _, cu := range t.Culprits {
			c.Summary = strings.TrimPrefix(c.Summary+"\n"+cu.String(), "\n")
		}
		if c.Summary == "" {
			c.Summary = c.Title
		}
		return c
	}
	return Conclusion{State: Neutral, Title: tree + ": not in this series run", Summary: tree + ": not in this series run"}
}
