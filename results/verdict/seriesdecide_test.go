package verdict

import (
	"reflect"
	"testing"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/results"
)

// warned is one tree whose patch 2 adds a compiler warning, nothing else.
func warned(failOnWarnings bool) *results.Series {
	ok := &results.PatchBoot{Result: results.StepOK}
	return &results.Series{FailOnWarnings: failOnWarnings, Trees: []results.SeriesTree{{Tree: "gtp", Patches: []results.PatchResult{
		{Index: 1, Of: 2, Subject: "a", Apply: results.StepOK, Build: results.StepOK, Boot: ok},
		{Index: 2, Of: 2, Subject: "b", Apply: results.StepOK, Build: results.StepOK, Boot: ok,
			NewWarnings: []results.Warning{{File: "a.c", Line: 3, Message: "unused variable 'x'", Option: "-Wunused-variable"}}},
	}}}}
}

// TestDecideSeriesWarnings: a new warning is reported without
// FailOnWarnings (no failure, a neutral check) and fails the series with
// it (a failing check), naming the patch and the warning.
func TestDecideSeriesWarnings(t *testing.T) {
	fault := Fault{Tree: "gtp", Kind: FaultWarning, Cause: "patch 2/2 adds warning a.c:3: unused variable 'x' [-Wunused-variable]"}
	o := DecideSeries(warned(false), "")
	if o.Fail != nil || !reflect.DeepEqual(o.Reported, []Fault{fault}) {
		t.Errorf("without FailOnWarnings: %+v, want no failure and %+v reported", o, fault)
	}
	if c := SeriesConclude(warned(false), "gtp"); c.State != Neutral ||
		c.Title != "gtp: reported, not failed (no --fail-on-warnings): "+fault.Cause {
		t.Errorf("without FailOnWarnings the check is %+v, want neutral naming the warning", c)
	}
	o = DecideSeries(warned(true), "")
	if o.Fail == nil || *o.Fail != fault || len(o.Reported) != 0 {
		t.Errorf("with FailOnWarnings: %+v, want %+v failing", o, fault)
	}
	if c := SeriesConclude(warned(true), "gtp"); c.State != Failure || c.Title != "gtp: "+fault.Cause {
		t.Errorf("with FailOnWarnings the check is %+v, want failure naming the warning", c)
	}
}

// TestDecideSeriesRanks: the failing fault is the most serious over every
// tree (apply, build, warning, boot, survival: the exit codes' order), and
// a boot the machine failed is nobody's fault.
func TestDecideSeriesRanks(t *testing.T) {
	s := warned(true)
	p := &s.Trees[0].Patches[0]
	p.Boot = &results.PatchBoot{Result: results.StepFail, Error: "qemu: disk full", ErrorKind: failure.Infra}
	s.Trees[0].Patches[1].Boot = &results.PatchBoot{Result: results.StepOK, Lost: []string{"skb over lo"}}
	if f := DecideSeries(s, "").Fail; f == nil || f.Kind != FaultWarning {
		t.Errorf("fail %+v, want the warning (outranks survival; the infra boot is not a fault)", f)
	}
	p.Boot.ErrorKind = failure.Crash
	s.FailOnWarnings = false
	if f := DecideSeries(s, "").Fail; f == nil || f.Kind != FaultBoot || f.Cause != "patch 1/2: qemu: disk full" {
		t.Errorf("fail %+v, want patch 1's crash", f)
	}
	s.Trees = append(s.Trees, results.SeriesTree{Tree: "ext", Patches: []results.PatchResult{
		{Index: 1, Of: 2, Apply: results.StepFail, ApplyError: "net/a.c @@ -1 +1 @@", Build: results.StepSkipped},
	}})
	if f := DecideSeries(s, "").Fail; f == nil || f.Tree != "ext" || f.Kind != FaultApply {
		t.Errorf("fail %+v, want ext's apply failure", f)
	}
	if f := DecideSeries(s, "gtp").Fail; f == nil || f.Tree != "gtp" || f.Kind != FaultBoot {
		t.Errorf("gtp alone: %+v, want its crash", f)
	}
}

// TestDecideSeriesOldRecord: a series.json from before fail_on_warnings
// reads as the flag's default: its new warning is reported, not failed,
// as its run's exit code (0) had it.
func TestDecideSeriesOldRecord(t *testing.T) {
	s, err := results.LoadSeries("../testdata/series-v1-no-policy")
	if err != nil {
		t.Fatal(err)
	}
	if s.FailOnWarnings || len(s.Trees[0].Patches[1].NewWarnings) != 1 {
		t.Fatalf("fail_on_warnings %v, warnings %v: want false and patch 2's warning", s.FailOnWarnings, s.Trees[0].Patches[1].NewWarnings)
	}
	if o := DecideSeries(s, ""); o.Fail != nil || len(o.Reported) != 1 {
		t.Errorf("outcome %+v, want the warning reported only", o)
	}
	if c := SeriesConclude(s, "gtp"); c.State != Neutral {
		t.Errorf("check %+v, want neutral", c)
	}
}

// TestRedecideSeriesOldRecord: a schema 1 series.json has no boot
// records: re-deciding it keeps what it was saved with.
func TestRedecideSeriesOldRecord(t *testing.T) {
	s, err := results.LoadSeries("../testdata/series-v1-no-policy")
	if err != nil {
		t.Fatal(err)
	}
	s.Trees[0].Culprits = []results.Culprit{{Patch: 1, Key: "k"}}
	s.Trees[0].Seeds = 6 // even when it says so, no records: nothing to decide from
	RedecideSeries(s)
	if want := []results.Culprit{{Patch: 1, Key: "k"}}; !reflect.DeepEqual(s.Trees[0].Culprits, want) {
		t.Errorf("culprits %+v, want the saved %+v", s.Trees[0].Culprits, want)
	}
}
