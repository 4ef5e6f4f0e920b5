package kernel

import "time"

// Artifacts is a built kernel as published in the cache. Every path is
// absolute and read-only once published.
type Artifacts struct {
	Key        string   `json:"key"`     // cache key: hash(base id, base config, fragments, patches)
	Dir        string   `json:"dir"`     // the published cache directory
	BzImage    string   `json:"bzimage"` // arch/x86/boot/bzImage
	Vmlinux    string   `json:"vmlinux"` // with BTF, for symbolisation and BTF checks
	Config     string   `json:"config"`  // the final .config
	Log        string   `json:"log"`     // build log
	Release    string   `json:"release"` // kernel release string (uname -r)
	BuildID    string   `json:"build_id"`
	BaseID     string   `json:"base_id"` // identity of the base source (git tree hash)
	BaseOrigin string   `json:"base_origin"`
	Commit     string   `json:"commit"` // the tree's HEAD after the series, in the base repository
	Version    string   `json:"version"`
	Patches    []string `json:"patches,omitempty"` // subjects of the applied series, in order
	ConfigHash string   `json:"config_hash"`       // sha256 of the final .config
	Fragments  []string `json:"fragments,omitempty"`
	Drift      []Drift  `json:"drift,omitempty"`    // differences from production: see ProductionDrift (set by job.Builder)
	Verified   []string `json:"verified,omitempty"` // what the series adds, found in vmlinux BTF
	Parent     string   `json:"parent,omitempty"`   // key of the build this one was seeded from
	Phases     []Phase  `json:"phases"`
	CacheHit   bool     `json:"-"` // this call found it published
	Regrown    []Phase  `json:"-"` // this call rebuilt its lost kept tree, in these phases
}

// Phase is one timed step of producing a kernel: its wall time, and the
// CPU time (user and system) make and its compilers used in it. CPU over
// wall is how many cores the step kept busy; on a shared host, a step
// whose CPU is far below cores × wall waited for the CPU.
type Phase struct {
	Name     string        `json:"name"`
	Duration time.Duration `json:"duration_ns"`
	CPU      time.Duration `json:"cpu_ns,omitempty"` // make's phases only (config, build)
}

// Took sums a's phases: the wall time and make's CPU time of its build.
func (a *Artifacts) Took() (wall, cpu time.Duration) {
	for _, p := range a.Phases {
		wall, cpu = wall+p.Duration, cpu+p.CPU
	}
	return wall, cpu
}
