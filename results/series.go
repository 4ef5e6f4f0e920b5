package results

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"
)

// SeriesFile is where a series run stores its per-patch report, next to
// run.json.
const SeriesFile = "series.json"

// Step outcomes of one prefix of a series.
const (
	StepOK      = "ok"
	StepFail    = "FAIL"
	StepSkipped = "skipped" // not attempted: an earlier step of this prefix failed
	StepBlocked = "blocked" // not attempted: an earlier patch does not apply
	// StepUnverified: not a kernel to check, through no fault of the
	// prefix: vmlinux lacks something the series so far adds (kci's
	// stale-build check), or the fragments ask for an option a later patch
	// defines. Not published, not booted, not blamed.
	StepUnverified = "unverified"
)

// Series is a per-patch validation of one series, on every tree it was
// checked on.
type Series struct {
	Schema int       `json:"schema"`
	ID     string    `json:"id"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end,omitzero"`
	Args   []string  `json:"args,omitempty"`
	// KCIVersion is the kci that made the run, as in run.json.
	KCIVersion string       `json:"kci_version,omitempty"`
	Accel      string       `json:"accel,omitempty"`
	Clock      string       `json:"clock,omitempty"` // icount: perf deltas are instruction-time, exact
	Trees      []SeriesTree `json:"trees"`
	// FailOnWarnings is the run's policy (--fail-on-warnings): new
	// warnings and checkpatch errors fail the series; otherwise they are
	// reported only. Records from before the field read false, the
	// flag's default.
	FailOnWarnings bool `json:"fail_on_warnings"`
	// Incomplete says the run stopped early (interrupt, machine fault).
	Incomplete       bool   `json:"incomplete,omitempty"`
	IncompleteReason string `json:"incomplete_reason,omitempty"`

	// AccelReason, GuestCPU and GuestCPUReason are Host's: why the
	// accelerator, and QEMU's -cpu model with why it is not the default.
	AccelReason    string `json:"accel_reason,omitempty"`
	GuestCPU       string `json:"guest_cpu,omitempty"`
	GuestCPUReason string `json:"guest_cpu_reason,omitempty"`
}

// SeriesTree is the series checked patch by patch on one tree.
type SeriesTree struct {
	Tree      string          `json:"tree"`
	Base      string          `json:"base_release,omitempty"` // the tree's kernel, under the series
	BaseBoot  *PatchBoot      `json:"base_boot,omitempty"`    // the tree's kernel booted: the survival reference
	Patches   []PatchResult   `json:"patches"`
	Bisect    []Bisectability `json:"bisectability,omitempty"`
	Culprits  []Culprit       `json:"culprits,omitempty"`
	PerfNote  string          `json:"perf_note,omitempty"` // how perf was located (bisection, every prefix), or why not
	PerfBoots int             `json:"perf_boots,omitempty"`
	// BaseBuildTime is getting the tree's kernel (usually a cache hit);
	// Time is the whole tree's validation, wall.
	BaseBuildTime time.Duration `json:"base_build_ns,omitempty"`
	Time          time.Duration `json:"time_ns,omitempty"`
	// Boots are every boot of the tree's kernel and its prefixes, in
	// order (schema 2): the perf rows and culprits are decided from them.
	Boots []SeriesBoot `json:"boots,omitempty"`
	// MinEffectPct and Seeds are what the culprits were located with:
	// the smallest change, and the logical seeds per measured prefix
	// under icount (0: not located through the test).
	MinEffectPct float64 `json:"min_effect_pct,omitempty"`
	Seeds        int     `json:"seeds,omitempty"`
	// Locate is how a noisy series' culprits were found (LocateBisect,
	// LocateEach), so that they can be decided again from Boots; ""
	// under icount (Seeds says) or when perf was not located.
	Locate string `json:"locate,omitempty"`
}

// How a noisy series tree's culprits were located (SeriesTree.Locate).
const (
	LocateBisect = "bisect" // binary search over the prefixes at seed 1
	LocateEach   = "each"   // every prefix at seed 1, step by step
)

// Cost sums the per-prefix build and boot times.
func (t SeriesTree) Cost() (builds, boots time.Duration) {
	for _, p := range t.Patches {
		builds += p.BuildTime
		if p.Boot != nil {
			boots += p.Boot.Time
		}
	}
	if t.BaseBoot != nil {
		boots += t.BaseBoot.Time
	}
	return builds, boots
}

// PatchResult is prefix 1..Index of the series: patch Index on top of the
// ones before it.
type PatchResult struct {
	Index   int    `json:"index"` // from 1
	Of      int    `json:"of"`
	Subject string `json:"subject"`
	File    string `json:"file"`

	Apply      string `json:"apply"`                 // ok | FAIL | blocked
	ApplyError string `json:"apply_error,omitempty"` // file and hunk

	Build      string        `json:"build"` // ok | FAIL | skipped | blocked
	BuildError string        `json:"build_error,omitempty"`
	BuildTime  time.Duration `json:"build_ns,omitempty"`
	CacheHit   bool          `json:"cache_hit,omitempty"`
	Release    string        `json:"release,omitempty"`
	BuildKey   string        `json:"build_key,omitempty"`
	// NewWarnings are warnings of this prefix's build that the previous
	// prefix's build did not have (by file, function, message and source
	// line: line shifts do not count).
	NewWarnings []Warning `json:"new_warnings,omitempty"`

	Checkpatch      *Checkpatch `json:"checkpatch,omitempty"`
	CheckpatchError string      `json:"checkpatch_error,omitempty"`

	Boot *PatchBoot `json:"boot,omitempty"`

	// Perf is this prefix's measured cost per program, where measured
	// (ns/pkt), and its change against the previous measured prefix.
	Perf []ProgDelta `json:"perf,omitempty"`
	// Hunks are this patch's hunks and their code: added lines in this
	// prefix's kernel, removed ones in the previous prefix's; the boots
	// of those prefixes say how often their windows ran them.
	Hunks []Hunk `json:"hunks,omitempty"`
}

// PatchBoot is one boot of a prefix's kernel: sanity + survival.
type PatchBoot struct {
	Result    string        `json:"result"` // ok | FAIL | skipped
	Error     string        `json:"error,omitempty"`
	ErrorKind string        `json:"error_kind,omitempty"`
	Time      time.Duration `json:"boot_ns,omitempty"` // boot + suite, wall
	// Survival: cells run, cells passing, and the cells that passed on the
	// tree's own kernel but not here.
	Cells      int      `json:"cells,omitempty"`
	Passed     int      `json:"passed,omitempty"`
	Lost       []string `json:"lost,omitempty"`
	ConsoleLog string   `json:"console_log,omitempty"`
	// Cache is what the result cache did with the boot (Boot.Cache).
	Cache string `json:"cache,omitempty"`
}

// Bisectability is a build break inside the series: Broken does not build,
// Fixed (0: none) is the first later patch that builds again.
type Bisectability struct {
	Broken      int    `json:"broken"`
	Fixed       int    `json:"fixed,omitempty"`
	BrokenTitle string `json:"broken_subject"`
	FixedTitle  string `json:"fixed_subject,omitempty"`
	Error       string `json:"error,omitempty"`
}

func (b Bisectability) String() string {
	if b.Fixed == 0 {
		return fmt.Sprintf("build broken from patch %d ‹%s› to the end of the series: %s", b.Broken, b.BrokenTitle, b.Error)
	}
	return fmt.Sprintf("bisectability failure: patch %d ‹%s› breaks the build, patch %d ‹%s› fixes it (%s)", b.Broken, b.BrokenTitle, b.Fixed, b.FixedTitle, b.Error)
}

// ProgDelta is one program's cost at a prefix and its change.
type ProgDelta struct {
	Key    string  `json:"key"`              // variant/program
	Value  float64 `json:"ns_per_pkt"`       // at this prefix
	Before float64 `json:"before,omitempty"` // at the prefix it is compared with
	Pct    float64 `json:"pct"`              // (Value-Before)/Before*100
	// Against is the prefix Before was measured on (0: the tree's kernel).
	Against int `json:"against"`
}

// Culprit is a patch that moved a program's cost.
type Culprit struct {
	Patch   int     `json:"patch"`
	Of      int     `json:"of"`
	Subject string  `json:"subject"`
	Key     string  `json:"key"` // variant/program
	Before  float64 `json:"before"`
	After   float64 `json:"after"`
	Pct     float64 `json:"pct"`
	// Share is this patch's part of the whole series' change of Key, in
	// percent of it.
	Share float64 `json:"share"`
	Unit  string  `json:"unit"` // instruction-time | wall, one boot
	// ThrPct is the threshold the change had to exceed: the run's own, or
	// Key's spread over guest seeds on the tree's kernel when larger.
	ThrPct float64 `json:"threshold_pct,omitempty"`
	// Deterministic series, located through the test: From > 0 says no
	// single patch explains the change, spread over patches From..Patch;
	// Lo, Hi are the change's 95 % interval over Seeds seeds per prefix.
	From  int     `json:"from_patch,omitempty"`
	Lo    float64 `json:"lo_pct,omitempty"`
	Hi    float64 `json:"hi_pct,omitempty"`
	Seeds int     `json:"seeds,omitempty"`
}

func (c Culprit) String() string {
	if c.Seeds > 0 {
		what := fmt.Sprintf("patch %d/%d ‹%s›", c.Patch, c.Of, c.Subject)
		if c.From > 0 {
			what = fmt.Sprintf("spread over patches %d..%d/%d (no single patch passes the test)", c.From, c.Patch, c.Of)
		}
		return fmt.Sprintf("%s: %s %s [%s, %s] (%s, %d seeds per prefix)", what, c.Key, FmtSignedPct(c.Pct), FmtSignedPct(c.Lo), FmtSignedPct(c.Hi), c.Unit, c.Seeds)
	}
	thr := ""
	if c.ThrPct > 0 {
		thr = fmt.Sprintf(", threshold %.1f %%", c.ThrPct)
	}
	return fmt.Sprintf("patch %d/%d ‹%s›: %s %s (%s%s; %.0f %% of the series' change)", c.Patch, c.Of, c.Subject, c.Key, FmtSignedPct(c.Pct), c.Unit, thr, c.Share)
}

func FmtSignedPct(p float64) string {
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return "n/a"
	}
	s := fmt.Sprintf("%.0f %%", math.Abs(p))
	if math.Abs(p) < 10 {
		s = fmt.Sprintf("%.1f %%", math.Abs(p))
	}
	if p < 0 {
		return "−" + s
	}
	return "+" + s
}

// SaveSeries stores s as series.json in dir, atomically.
func SaveSeries(dir string, s *Series) error {
	js, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("results: encode series: %w", err)
	}
	return WriteAtomic(filepath.Join(dir, SeriesFile), append(js, '\n'))
}

// SaveProgress stores s with cur, the tree being checked, after its
// finished trees, marked as not finished: a series that is killed keeps
// every row it finished, as run.json does. The finished series is
// saved and rendered by render.WriteSeries.
func (s *Series) SaveProgress(dir string, cur SeriesTree) error {
	snap := *s
	snap.Trees = append(append([]SeriesTree(nil), s.Trees...), cur)
	snap.Incomplete, snap.IncompleteReason = true, inProgress
	return SaveSeries(dir, &snap)
}

// LoadSeries reads series.json from a run directory.
func LoadSeries(dir string) (*Series, error) {
	data, err := os.ReadFile(filepath.Join(dir, SeriesFile))
	if err != nil {
		return nil, err
	}
	var s Series
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("results: %s: %w", filepath.Join(dir, SeriesFile), err)
	}
	return &s, nil
}

// Warning is a compiler warning as series.json keeps it (the record's own
// type: kernel.Warning may change without changing the file).
type Warning struct {
	File     string `json:"file,omitempty"` // relative to the source tree
	Line     int    `json:"line,omitempty"`
	Col      int    `json:"col,omitempty"`
	Function string `json:"function,omitempty"`
	Message  string `json:"message"`
	Option   string `json:"option,omitempty"` // e.g. -Wunused-variable
	Code     string `json:"code,omitempty"`   // the source line the compiler quotes
}

// String is file:line: message [option], as the compiler says it.
func (w Warning) String() string {
	s := w.Message
	if w.Option != "" {
		s += " [" + w.Option + "]"
	}
	switch {
	case w.File == "":
		return s
	case w.Line > 0:
		return fmt.Sprintf("%s:%d: %s", w.File, w.Line, s)
	}
	return w.File + ": " + s
}

// Checkpatch is checkpatch.pl's verdict on one patch, as recorded.
type Checkpatch struct {
	Errors   int              `json:"errors"`
	Warnings int              `json:"warnings"`
	Checks   int              `json:"checks"`
	Items    []CheckpatchItem `json:"items,omitempty"`
}

// CheckpatchItem is one finding, in checkpatch's own words.
type CheckpatchItem struct {
	Level   string `json:"level"`          // ERROR | WARNING | CHECK
	Type    string `json:"type,omitempty"` // e.g. TRAILING_WHITESPACE
	Line    int    `json:"line,omitempty"` // line in the patch
	Message string `json:"message"`
}

// String is LEVEL[:TYPE]: message.
func (i CheckpatchItem) String() string {
	s := i.Level
	if i.Type != "" {
		s += ":" + i.Type
	}
	return s + ": " + i.Message
}

// Summary is the counts in short form, "1E 2W 0C"; "clean" without
// findings and "-" when checkpatch did not run.
func (c *Checkpatch) Summary() string {
	switch {
	case c == nil:
		return "-"
	case c.Errors+c.Warnings+c.Checks == 0:
		return "clean"
	}
	return fmt.Sprintf("%dE %dW %dC", c.Errors, c.Warnings, c.Checks)
}
