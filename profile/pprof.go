package profile

import (
	"fmt"
	"io"
	"time"

	"github.com/google/pprof/profile"
)

// PprofOptions describe where the samples came from.
type PprofOptions struct {
	Duration time.Duration // the sampling window
	Comment  []string      // e.g. kernel release, variant
}

// Pprof converts p to a pprof profile: one location per function (the
// guest symbolised them already), the task name as the sample label
// "comm", and when the rate is known CPU time next to the sample count.
func Pprof(p *Profile, o PprofOptions) *profile.Profile {
	period := int64(0)
	if p.FreqHz > 0 {
		period = int64(time.Second) / int64(p.FreqHz)
	}
	out := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		Comments:   o.Comment,
	}
	if period > 0 {
		out.SampleType = append(out.SampleType, &profile.ValueType{Type: "cpu", Unit: "nanoseconds"})
		out.PeriodType = &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}
		out.Period = period
		out.DefaultSampleType = "cpu"
	}
	if o.Duration > 0 {
		out.DurationNanos = int64(o.Duration)
	}
	// One mapping that says everything is symbolised, so pprof does not
	// go looking for binaries.
	m := &profile.Mapping{ID: 1, File: "[kernel.kallsyms]", HasFunctions: true}
	out.Mapping = []*profile.Mapping{m}
	locs := map[string]*profile.Location{}
	loc := func(name string) *profile.Location {
		if l, ok := locs[name]; ok {
			return l
		}
		f := &profile.Function{ID: uint64(len(out.Function) + 1), Name: name, SystemName: name}
		out.Function = append(out.Function, f)
		l := &profile.Location{ID: uint64(len(out.Location) + 1), Mapping: m, Line: []profile.Line{{Function: f}}}
		out.Location = append(out.Location, l)
		locs[name] = l
		return l
	}
	for _, s := range p.Stacks {
		if s.Count <= 0 || len(s.Frames) == 0 {
			continue
		}
		smp := &profile.Sample{Value: []int64{s.Count}}
		if period > 0 {
			smp.Value = append(smp.Value, s.Count*period)
		}
		smp.Label = map[string][]string{"comm": {s.Frames[0]}}
		fns := s.Frames[1:]
		if len(fns) == 0 {
			fns = s.Frames // a bare task frame: keep the sample visible
		}
		// pprof wants the leaf first.
		for i := len(fns) - 1; i >= 0; i-- {
			smp.Location = append(smp.Location, loc(fns[i]))
		}
		out.Sample = append(out.Sample, smp)
	}
	return out
}

// WritePprof writes p as a gzipped pprof protobuf (`go tool pprof` reads it).
func WritePprof(w io.Writer, p *Profile, o PprofOptions) error {
	pp := Pprof(p, o)
	if err := pp.CheckValid(); err != nil {
		return fmt.Errorf("pprof: %w", err)
	}
	if err := pp.Write(w); err != nil {
		return fmt.Errorf("pprof: %w", err)
	}
	return nil
}
