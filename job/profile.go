package job

import (
	"bytes"
	"fmt"
	"path/filepath"

	"github.com/kci-dev/kci/profile"
	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/wire"
)

// ProfileTopN is how many symbols the profile tables list.
const ProfileTopN = 15

// profiles files the guest's CPU profiles of a run into its profiles/
// directory as boots come back; nil when the run does not profile.
type profiles struct {
	w    *profile.Writer
	logf func(format string, a ...any)
}

func newProfiles(runDir string, logf func(string, ...any)) (*profiles, error) {
	w, err := profile.NewWriter(runDir)
	if err != nil {
		return nil, err
	}
	return &profiles{w: w, logf: logf}, nil
}

// add writes one boot's profiles. A profile that cannot be written is
// logged, not fatal: the measurements of the boot stand on their own.
func (p *profiles) add(tree, role string, rep int, release, accel string, ps []wire.Profile) {
	if p == nil {
		return
	}
	for _, g := range ps {
		e := profile.Entry{
			Tree: tree, Role: role, Rep: rep, Variant: g.Variant, Kernel: release, Accel: accel,
			CPUs: g.CPUs, FreqHz: g.FreqHz, Window: g.Window, Dropped: g.Dropped, Error: g.Error,
		}
		e, err := p.w.Add(e, g.Folded)
		switch {
		case err != nil:
			p.logf("kci: profile %s: %v", e.Stem(), err)
		case e.Error != "":
			p.logf("kci: profile %s: the guest's sampler failed: %s", e.Stem(), e.Error)
		default:
			p.logf("kci: profile %s: %d samples", e.Stem(), e.Samples)
		}
	}
}

// finish writes the differential views and the summary.
func (p *profiles) finish() (*profile.Set, error) {
	if p == nil {
		return nil, nil
	}
	s, err := p.w.Finish(ProfileTopN)
	if err != nil {
		return s, fmt.Errorf("profiles: %w", err)
	}
	return s, nil
}

// section renders the profiles' top tables and differential views for
// the run's reports: Markdown with links for report.md, text with the
// files' paths for report.txt.
func (p *profiles) section(runDir string, set *profile.Set) (render.Section, error) {
	if p == nil || set == nil || len(set.Entries) == 0 {
		return render.Section{}, nil
	}
	dir := filepath.Join(runDir, profile.Dir)
	var md, txt bytes.Buffer
	md.WriteString("\n")
	txt.WriteString("\n")
	err := profile.WriteSummary(&md, dir, set, profile.SummaryOptions{TopN: ProfileTopN, Markdown: true, LinkPrefix: profile.Dir + "/"})
	if err == nil {
		err = profile.WriteSummary(&txt, dir, set, profile.SummaryOptions{TopN: ProfileTopN})
	}
	if err != nil {
		return render.Section{}, fmt.Errorf("profiles: report: %w", err)
	}
	return render.Section{Text: txt.String(), Markdown: md.String()}, nil
}
