// Package results is kci's record: run.json and series.json, their own
// types (schema.go), the crash-safe recorder, the conversions from the
// stages' structs, the shard merge and the run directory's rules. It
// decides nothing and renders nothing: results/verdict computes the
// statistics and conclusions over a record, results/render draws both.
// The three are one stage, the last before ci/; none imports a later one.
package results

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kci-dev/kci/internal/role"
)

// SchemaVersion is the run.json layout version. Readers refuse newer
// records instead of misreading them. Version 2: the record's own types
// (schema.go), kernel paths relative to the cache root; version 1 stored
// them absolute and still loads (Load upgrades it).
const SchemaVersion = 2

// RunFile is the name of the run record inside a run directory.
const RunFile = "run.json"

// Roles of a kernel within a tree.
const (
	RoleBase    = role.Base
	RolePatched = role.Patched
)

// Accelerators a boot can run under.
const (
	AccelKVM = "kvm"
	AccelTCG = "tcg"
)

// Clock modes of a boot: what the guest's clock, and so every ns it
// reports, counts.
const (
	// ClockKVM: real time on real CPUs; noisy, compare with statistics.
	ClockKVM = "kvm"
	// ClockHost: TCG with the guest clock following the host's wall
	// clock (--clock host); noisy and relative only.
	ClockHost = "host"
	// ClockICount: TCG with -icount shift=0: one guest instruction is one
	// ns of guest time, so numbers are instruction counts, repeatable
	// from boot to boot (deterministic mode, the default under TCG).
	ClockICount = "icount"
)

// InstructionTimeLabel names the unit of numbers measured under icount:
// never real nanoseconds.
const InstructionTimeLabel = "instruction-time ns/pkt, emulated and deterministic"

// WallTimeLabel names the unit of numbers measured under KVM: real
// time, so every one carries its interval over the boots behind it.
const WallTimeLabel = "wall-clock ns/pkt under KVM"

// ModelledCyclesLabel names the unit of the cache model's rows
// (modelled-cycles, cycles-marginal): cycles of a modelled CPU per
// packet, a model's own unit, never ns and never comparable with ns.
const ModelledCyclesLabel = "modelled cycles/pkt"

// InstructionsLabel is the unit of the plugin's instruction rows: every
// instruction the guest's vCPUs ran in the window, per packet, exact;
// and of a program's call rows in instructions (call:<prog>/instructions,
// its calls' instructions per packet). Not ns.
const InstructionsLabel = "instructions/pkt"

// The units of a program's calls split by function (a call, not a
// packet): the cache model's cycles, or exact instructions.
const (
	ModelledCyclesPerCallLabel = "modelled cycles a call"
	InstructionsPerCallLabel   = "instructions a call"
)

// EmulatedLabel marks numbers measured under TCG: only base-vs-patched
// ratios from the same run mean anything there.
const EmulatedLabel = "emulated — relative only"

// Run is everything one `kci test` (or `kci run`) measured, as stored in
// run.json. Durations are nanoseconds in JSON.
type Run struct {
	Schema           int       `json:"schema"`
	ID               string    `json:"id"`
	Args             []string  `json:"args,omitempty"` // the command line that started the run
	Start            time.Time `json:"start"`
	End              time.Time `json:"end,omitzero"`
	Incomplete       bool      `json:"incomplete"`
	IncompleteReason string    `json:"incomplete_reason,omitempty"`
	Host             Host      `json:"host"`
	Trees            []Tree    `json:"trees,omitempty"`
	Plan             Plan      `json:"plan"`
	Phases           []Phase   `json:"phases,omitempty"`
	Boots            []Boot    `json:"boots,omitempty"`
	// MergedFrom lists the shard run ids a merged record was built from.
	MergedFrom []string `json:"merged_from,omitempty"`
	// MinEffectPct is the smallest effect of interest the user set
	// (percent; 0 = DefaultMinEffectPct): the deterministic threshold and
	// the noisy-mode bound a change's interval is compared with.
	MinEffectPct float64 `json:"min_effect_pct,omitempty"`
	// Sequential is the adaptive-seed rule's record (deterministic runs
	// that added seeds); nil for a fixed number of boots.
	Sequential *Sequential `json:"sequential,omitempty"`
	// KCIVersion is the kci that made the run (module version and VCS
	// revision): numbers compare within one kci version.
	KCIVersion string `json:"kci_version,omitempty"`
}

// Host describes the machine the run was measured on.
type Host struct {
	Hostname string  `json:"hostname"`
	Kernel   string  `json:"kernel"` // host uname -r
	CPUModel string  `json:"cpu_model"`
	NProc    int     `json:"nproc"`
	MemBytes uint64  `json:"mem_bytes"`
	Accel    string  `json:"accel"` // kvm | tcg
	Checks   []Check `json:"checks,omitempty"`

	// AccelReason is why the run got that accelerator (the KVM probe's
	// reason, or "requested").
	AccelReason string `json:"accel_reason,omitempty"`
	// GuestCPU is QEMU's -cpu model the guests ran with (host, max, or
	// host,-arch-capabilities where -cpu host died on an MSR write), and
	// GuestCPUReason why it is not the accelerator's default.
	GuestCPU       string `json:"guest_cpu,omitempty"`
	GuestCPUReason string `json:"guest_cpu_reason,omitempty"`
	// GuestVCPUs is the guests' vCPU count when more than one (0: one,
	// or a record written before it was kept).
	GuestVCPUs int `json:"guest_vcpus,omitempty"`
}

// Check is one `kci doctor` finding.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok | warn | fail
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// Check statuses.
const (
	CheckOK   = "ok"
	CheckWarn = "warn"
	CheckFail = "fail"
)

// Tree is one kernel tree of the run: its base and patched kernels and the
// config policy that was applied to them.
type Tree struct {
	Name    string  `json:"name"`
	Base    *Kernel `json:"base,omitempty"`
	Patched *Kernel `json:"patched,omitempty"`
	// ConfigCheck is the config policy applied to the kernels and what
	// checking their configs against it found, in one line.
	ConfigCheck string   `json:"config_verdict,omitempty"`
	Drift       []string `json:"drift,omitempty"` // differences from the production config
	// Hunks are the patches' hunks and what their changed lines compiled
	// to in this tree's kernels (coverage.go); each boot's exact counts
	// say how often its windows ran them (Exact.HunkRuns).
	Hunks []Hunk `json:"hunks,omitempty"`
}

// Phase is one timed stage of the run (build, image, boot, suite...).
type Phase struct {
	Name     string        `json:"name"`
	Tree     string        `json:"tree,omitempty"`
	Kernel   string        `json:"kernel,omitempty"` // base | patched
	Start    time.Time     `json:"start"`
	Duration time.Duration `json:"duration_ns"`
}

// Boot is one fresh boot of one kernel and what the guest reported.
type Boot struct {
	Seq         int             `json:"seq"` // global order within the run, from 1
	Tree        string          `json:"tree"`
	Role        string          `json:"role"` // base | patched
	Rep         int             `json:"rep"`  // repetition, from 1
	Accel       string          `json:"accel"`
	BootToReady time.Duration   `json:"boot_to_ready_ns"`
	Sanity      *Sanity         `json:"sanity,omitempty"`
	Caps        *Caps           `json:"caps,omitempty"`
	Cells       []Cell          `json:"cells,omitempty"`
	Variants    []VariantResult `json:"variants,omitempty"`
	Error       string          `json:"error,omitempty"`       // one-line cause
	ErrorKind   string          `json:"error_kind,omitempty"`  // whose fault: e.g. boot, crash, timeout, infra
	ConsoleLog  string          `json:"console_log,omitempty"` // relative to the run dir
	// Clock is the boot's clock mode (ClockKVM, ClockHost, ClockICount);
	// empty in records older than deterministic mode (read as host/kvm
	// by Accel).
	Clock string `json:"clock,omitempty"`
	// TSCkHz and Clocksource are what the guest kernel calibrated and
	// chose: a boot whose scale differs from its siblings' is flagged.
	TSCkHz      int64  `json:"tsc_khz,omitempty"`
	Clocksource string `json:"clocksource,omitempty"`
	// Seed is the guest's random seed under icount: with the kernel and
	// plan it reproduces the boot exactly (kci test --seed).
	Seed uint64 `json:"seed,omitempty"`
	// Cache is what kci's result cache did with the boot: CacheHit (its
	// numbers come from an earlier boot of the same key, nothing booted),
	// CacheStored, CacheChecked or CacheMismatch; empty when the boot was
	// not exact (KVM, host clock) or the cache was off.
	Cache string `json:"cache,omitempty"`
	// CPU is QEMU's -cpu model of this boot.
	CPU string `json:"cpu,omitempty"`
	// MainLoop says whether QEMU's main loop was fenced off the counts of
	// a guest of several vCPUs under icount ("fenced on host CPU 1", or
	// "not fenced: " and why); empty for other boots.
	MainLoop string `json:"main_loop,omitempty"`
	// Phases are where the boot's host wall time went, in order (qemu,
	// firmware, kernel, agent, the agent's steps as it named them,
	// teardown); they sum to the boot's wall time. A cache hit's are the
	// stored boot's, not time this run spent.
	Phases []BootPhase `json:"phases,omitempty"`
}

// BootPhase is one consecutive stretch of a boot's host wall time.
type BootPhase struct {
	Name     string        `json:"name"`
	Duration time.Duration `json:"duration_ns"`
}

// What the result cache did with a boot (Boot.Cache).
const (
	CacheHit      = "hit"      // served from the cache, not booted
	CacheStored   = "stored"   // booted and stored
	CacheChecked  = "checked"  // booted to re-check a cached entry: identical
	CacheMismatch = "mismatch" // booted to re-check: differed, the entry dropped
)

// BootCount is how many boots a run (or one tree of it, tree != "")
// records and how many of them came from the result cache.
func (r *Run) BootCount(tree string) (n, cached int) {
	n, cached, _ = r.cacheCount(tree)
	return n, cached
}

// cacheCount is BootCount plus the boots that re-checked a cached entry
// (CacheChecked or CacheMismatch).
func (r *Run) cacheCount(tree string) (n, cached, rechecked int) {
	for _, b := range r.Boots {
		if tree != "" && b.Tree != tree {
			continue
		}
		n++
		switch b.Cache {
		case CacheHit:
			cached++
		case CacheChecked, CacheMismatch:
			rechecked++
		}
	}
	return n, cached, rechecked
}

// Replayed reports whether a run (or one tree of it) is a replay: it has
// boots from the result cache, and every boot came from it but the one
// that re-checked an entry and found it identical. A re-check that
// differed (CacheMismatch) turns the cache off for the run: no replay.
func (r *Run) Replayed(tree string) bool {
	n, cached, rechecked := r.cacheCount(tree)
	if cached == 0 || cached+rechecked != n {
		return false
	}
	for _, b := range r.Boots {
		if (tree == "" || b.Tree == tree) && b.Cache == CacheMismatch {
			return false
		}
	}
	return true
}

// BootsLine reads "12 boots (6 from cache)", or "12 boots" when none
// came from the cache, or for a replay (Replayed) "20 boots (replayed:
// 19 from the result cache, 1 re-check)".
func (r *Run) BootsLine(tree string) string {
	n, k, checked := r.cacheCount(tree)
	s := Plural(n, "boot")
	switch {
	case r.Replayed(tree) && checked > 0:
		s += fmt.Sprintf(" (replayed: %d from the result cache, %d re-check)", k, checked)
	case r.Replayed(tree):
		s += fmt.Sprintf(" (replayed: %d from the result cache)", k)
	case k > 0:
		s += fmt.Sprintf(" (%d from cache)", k)
	}
	return s
}

// ClockMode is the clock mode of a tree's measured boots ("" = all
// trees): ClockICount only when every boot ran under icount.
func (r *Run) ClockMode(tree string) string {
	mode := ""
	for _, b := range r.Boots {
		if tree != "" && b.Tree != tree {
			continue
		}
		if b.Clock == "" && b.Accel == "" {
			continue // the boot never reported: it has no clock to mix in
		}
		c := b.Clock
		if c == "" {
			c = ClockHost
			if b.Accel == AccelKVM {
				c = ClockKVM
			}
		}
		switch {
		case mode == "":
			mode = c
		case mode != c:
			return ClockHost // mixed: treat as noisy
		}
	}
	if mode == "" {
		if r.Host.Accel == AccelKVM {
			return ClockKVM
		}
		return ClockHost
	}
	return mode
}

// TreeNames returns the trees of the run in recorded order, including trees
// that only appear in boots.
func (r *Run) TreeNames() []string {
	var names []string
	seen := map[string]bool{}
	add := func(n string) {
		if n != "" && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for _, t := range r.Trees {
		add(t.Name)
	}
	for _, b := range r.Boots {
		add(b.Tree)
	}
	return names
}

// Tree returns the named tree, or nil.
func (r *Run) Tree(name string) *Tree {
	for i := range r.Trees {
		if r.Trees[i].Name == name {
			return &r.Trees[i]
		}
	}
	return nil
}

// Emulated reports whether any number of tree was measured under TCG
// (tree "" = the whole run).
func (r *Run) Emulated(tree string) bool {
	if r.Host.Accel == AccelTCG {
		return true
	}
	for _, b := range r.Boots {
		if (tree == "" || b.Tree == tree) && b.Accel == AccelTCG {
			return true
		}
	}
	return false
}

// Load reads dir/run.json. Older schema versions are upgraded in memory:
// the Run returned is always in the current form.
func Load(dir string) (*Run, error) {
	b, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return nil, fmt.Errorf("results: load run: %w", err)
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, JSONError(filepath.Join(dir, RunFile), err)
	}
	switch {
	case r.Schema == 0:
		return nil, fmt.Errorf("results: load run %s: no schema version: not a kci run record", dir)
	case r.Schema > SchemaVersion:
		return nil, fmt.Errorf("results: load run %s: schema %d is newer than this kci understands (%d)", dir, r.Schema, SchemaVersion)
	case r.Schema == 1:
		r.upgradeV1()
	}
	return &r, nil
}

// upgradeV1 brings a schema 1 record to the current form: its kernels'
// paths were absolute paths of the machine that built them.
func (r *Run) upgradeV1() {
	for i := range r.Trees {
		for _, k := range []*Kernel{r.Trees[i].Base, r.Trees[i].Patched} {
			if k != nil {
				k.relativize()
			}
		}
	}
	r.Schema = SchemaVersion
}

// IsRunDir reports whether dir holds a run record.
func IsRunDir(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, RunFile))
	return err == nil
}

// Sequential records the adaptive rule of a deterministic run: how many
// looks it was planned for (the false-alarm rate is split evenly over
// them, Bonferroni, so stopping early never inflates it), how many it
// took, the boot budget, and why it stopped.
//
// The budget counts every boot of the run, cache hits included
// (Boots+Cached), so the plan is a function of the boots' results and a
// rerun replays it; with an explicit --max-boots (NewBootsOnly) it
// counts only the boots that ran (Boots), and cache hits are free.
// Records written before Cached existed counted Boots only.
type Sequential struct {
	Looks    int `json:"looks"`      // planned: the alpha divisor
	Done     int `json:"looks_done"` // taken
	MaxBoots int `json:"max_boots"`
	Boots    int `json:"boots"`            // booted by the run (cache hits not counted)
	Cached   int `json:"cached,omitempty"` // served by the result cache
	// NewBootsOnly: --max-boots was given, and it caps Boots alone.
	NewBootsOnly bool   `json:"new_boots_only,omitempty"`
	Stop         string `json:"stop"` // why it stopped: StopDecided, StopBudget...
}

// Counted is how many of the run's boots the budget counts.
func (s *Sequential) Counted() int {
	if s.NewBootsOnly {
		return s.Boots
	}
	return s.Boots + s.Cached
}

// BudgetLine says what the budget counted: "20 boots (--max-boots 20)",
// or under NewBootsOnly with cache hits "26 boots, 12 from cache
// (--max-boots 14 counts booted ones)".
func (s *Sequential) BudgetLine() string {
	if s.NewBootsOnly && s.Cached > 0 {
		return fmt.Sprintf("%s, %d from cache (--max-boots %d counts booted ones)", Plural(s.Boots+s.Cached, "boot"), s.Cached, s.MaxBoots)
	}
	return fmt.Sprintf("%s (--max-boots %d)", Plural(s.Boots+s.Cached, "boot"), s.MaxBoots)
}

// Why the adaptive rule stopped.
const (
	StopDecided = "every row decided"
	StopBudget  = "boot budget (--max-boots) reached with rows undecided"
	StopLooks   = "last planned look taken with rows undecided"
	// StopFutile: the rows still undecided have seed spread that no seeds
	// the run could still boot would bring to the floor (verdict's futile).
	StopFutile = "rows left undecided cannot reach the smallest effect within the looks and budget left"
)

func Plural(n int, s string) string {
	if n == 1 {
		return "1 " + s
	}
	return fmt.Sprintf("%d %ss", n, s)
}

// DefaultMinEffectPct is the smallest effect of interest, in percent of
// the base, when the user sets none: in deterministic mode the threshold
// a change must clear besides the observed spread; in noisy mode a
// significant change whose whole interval lies within ± this much is
// reported as below the smallest effect, not as a change.
const DefaultMinEffectPct = 0.5

// MinEffect is the smallest effect of interest in percent for this run:
// the recorded MinEffectPct, or DefaultMinEffectPct.
func (r *Run) MinEffect() float64 {
	if r.MinEffectPct > 0 {
		return r.MinEffectPct
	}
	return DefaultMinEffectPct
}
