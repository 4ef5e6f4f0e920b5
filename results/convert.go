package results

import (
	"maps"
	"path/filepath"
	"slices"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/wire"
)

// Conversions from the stages' structs to run.json's own types. Slices and
// maps are copied: a record never shares memory with what a stage may
// still change. Fields are named one by one, so a field a stage adds is
// not recorded until the schema says so.

// KernelOf is the record of a built kernel, its paths made relative to
// the cache root (see Kernel). nil stays nil.
func KernelOf(a *kernel.Artifacts) *Kernel {
	if a == nil {
		return nil
	}
	k := &Kernel{
		Key: a.Key, Dir: a.Dir, BzImage: a.BzImage, Vmlinux: a.Vmlinux, Config: a.Config, Log: a.Log,
		Release: a.Release, BuildID: a.BuildID, BaseID: a.BaseID, BaseOrigin: a.BaseOrigin,
		Commit: a.Commit, Version: a.Version, Patches: slices.Clone(a.Patches),
		ConfigHash: a.ConfigHash, Fragments: slices.Clone(a.Fragments),
		Verified: slices.Clone(a.Verified), Parent: a.Parent,
	}
	for _, d := range a.Drift {
		k.Drift = append(k.Drift, DriftOf(d))
	}
	for _, p := range a.Phases {
		k.Phases = append(k.Phases, KernelPhase{Name: p.Name, Duration: p.Duration, CPU: p.CPU})
	}
	k.relativize()
	return k
}

// relativize rewrites k's paths relative to the cache root its Dir lies
// in, or to bare file names: schema 1 stored them absolute.
func (k *Kernel) relativize() {
	root := cacheRoot(k.Dir)
	for _, p := range []*string{&k.Dir, &k.BzImage, &k.Vmlinux, &k.Config, &k.Log} {
		*p = cacheRel(root, *p)
	}
	for i := range k.Fragments {
		k.Fragments[i] = cacheRel(root, k.Fragments[i])
	}
}

// cacheRoot is the kci cache root an absolute published kernel directory
// lies in: the kernel cache publishes every build at <root>/kernels/<key>.
// "" when dir is not laid out that way.
func cacheRoot(dir string) string {
	if !filepath.IsAbs(dir) {
		return ""
	}
	parent := filepath.Dir(filepath.Clean(dir))
	if filepath.Base(parent) != "kernels" {
		return ""
	}
	return filepath.Dir(parent)
}

// cacheRel is p relative to root when it lies inside, else p's bare file
// name. A path that is already local (a schema 2 record) is kept.
func cacheRel(root, p string) string {
	switch {
	case p == "":
		return ""
	case !filepath.IsAbs(p):
		if filepath.IsLocal(p) {
			return p
		}
		return filepath.Base(p)
	case root != "":
		if rel, err := filepath.Rel(root, p); err == nil && filepath.IsLocal(rel) {
			return rel
		}
	}
	return filepath.Base(p) // outside the cache: the name is all a reader can use
}

// PlanOf is the record of the suite plan.
func PlanOf(p wire.Plan) Plan {
	b := p.Bench
	return Plan{
		Sanity: p.Sanity, Survival: p.Survival, Variants: slices.Clone(p.Variants), Profile: p.Profile,
		Command: slices.Clone(p.Command), StepTimeout: p.StepTimeout,
		Bench: BenchParams{
			Pairs: b.Pairs, PayloadSize: b.PayloadSize, RateMbit: b.RateMbit,
			ServerLead: b.ServerLead, Warmup: b.Warmup, Window: b.Window,
			ServerCPUs: slices.Clone(b.ServerCPUs), ClientCPUs: slices.Clone(b.ClientCPUs), SamplerCPU: b.SamplerCPU,
		},
	}
}

// SanityOf is the record of the guest's sanity report. nil stays nil.
func SanityOf(s *wire.Sanity) *Sanity {
	if s == nil {
		return nil
	}
	return &Sanity{
		Release: s.Release, BuildID: s.BuildID, Version: s.Version, Lockdep: s.Lockdep, JIT: s.JIT,
		NumCPU: s.NumCPU, ClockSource: s.ClockSource, Problems: slices.Clone(s.Problems),
	}
}

// CapsOf is the record of the guest's capability probe. nil stays nil.
func CapsOf(c *wire.Caps) *Caps {
	if c == nil {
		return nil
	}
	return &Caps{
		Kfuncs: maps.Clone(c.Kfuncs), Tracepoints: maps.Clone(c.Tracepoints), MapTypes: maps.Clone(c.MapTypes),
		TCX: c.TCX, Links: maps.Clone(c.Links), XDPHelpers: maps.Clone(c.XDPHelpers),
	}
}

// CellsOf is the record of a boot's survival cells.
func CellsOf(cs []wire.Cell) []Cell {
	var out []Cell
	for _, c := range cs {
		out = append(out, Cell{Carrier: c.Carrier, Path: c.Path, Expected: c.Expected, Observed: c.Observed,
			Reason: c.Reason, Detail: c.Detail, Pass: c.Pass})
	}
	return out
}

// VariantsOf is the record of a boot's benchmark variants.
func VariantsOf(vs []wire.VariantResult) []VariantResult {
	var out []VariantResult
	for _, v := range vs {
		r := VariantResult{
			Variant: v.Variant, Skipped: v.Skipped, Attach: v.Attach, Programs: ProgStatsOf(v.Programs),
			Counters: maps.Clone(v.Counters), Lo: loOf(v.Lo), PerSecond: slices.Clone(v.PerSecond),
			PPS: v.PPS, Window: v.Window, Valid: v.Valid, Invalid: v.Invalid,
			Cost: costOf(v.Cost), Loads: loadsOf(v.Loads), LoadError: v.LoadError,
		}
		for _, c := range v.CPUs {
			r.CPUs = append(r.CPUs, CPUStat{CPU: c.CPU, Busy: c.Busy, Sys: c.Sys, Soft: c.Soft})
		}
		out = append(out, r)
	}
	return out
}

// ProgStatsOf is the record of a variant's program counters.
func ProgStatsOf(ps []wire.ProgStat) []ProgStat {
	var out []ProgStat
	for _, p := range ps {
		out = append(out, ProgStat{Name: p.Name, Type: p.Type, RunTimeNs: p.RunTimeNs, RunCnt: p.RunCnt, NsPerPkt: p.NsPerPkt})
	}
	return out
}

func loOf(l wire.LoStat) LoStat {
	return LoStat{RxPackets: l.RxPackets, TxPackets: l.TxPackets, RxErrors: l.RxErrors, TxErrors: l.TxErrors,
		RxDropped: l.RxDropped, TxDropped: l.TxDropped}
}

func costOf(c *wire.Cost) *Cost {
	if c == nil {
		return nil
	}
	out := &Cost{IdleSource: c.IdleSource, ResolutionNs: c.ResolutionNs, CPUWindowNs: c.CPUWindowNs, BusyNs: c.BusyNs,
		SoftirqNs: c.SoftirqNs, BPFNs: c.BPFNs, Packets: c.Packets, PacketSource: c.PacketSource, AcctNote: c.AcctNote,
		AcctPackets: c.AcctPackets, AcctWindowNs: c.AcctWindowNs}
	for _, x := range c.Contexts {
		out.Contexts = append(out.Contexts, ContextTime{Name: x.Name, Ns: x.Ns, Entries: x.Entries})
	}
	return out
}

func loadsOf(ls []wire.ProgLoad) []ProgLoad {
	var out []ProgLoad
	for _, l := range ls {
		out = append(out, ProgLoad{Name: l.Name, VerifiedInsns: l.VerifiedInsns, XlatedBytes: l.XlatedBytes,
			JitedBytes: l.JitedBytes, VerifyUs: l.VerifyUs, LoadNs: l.LoadNs})
	}
	return out
}

// WarningsOf records compiler warnings.
func WarningsOf(ws []kernel.Warning) []Warning {
	out := make([]Warning, 0, len(ws))
	for _, w := range ws {
		out = append(out, Warning{File: w.File, Line: w.Line, Col: w.Col, Function: w.Function, Message: w.Message, Option: w.Option, Code: w.Code})
	}
	return out
}

// DriftOf records one option's drift from production.
func DriftOf(d kernel.Drift) Drift {
	return Drift{Option: d.Option, Here: d.Here, Production: d.Production, Why: d.Why}
}

// CheckpatchOf records checkpatch's verdict (nil: it did not run).
func CheckpatchOf(c *kernel.Checkpatch) *Checkpatch {
	if c == nil {
		return nil
	}
	out := &Checkpatch{Errors: c.Errors, Warnings: c.Warnings, Checks: c.Checks}
	for _, it := range c.Items {
		out.Items = append(out.Items, CheckpatchItem{Level: it.Level, Type: it.Type, Line: it.Line, Message: it.Message})
	}
	return out
}
