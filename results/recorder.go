package results

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kci-dev/kci/internal/version"
)

// DefaultRoot is where runs go when no --out is given.
const DefaultRoot = "kci-results"

// inProgress is the reason a record carries until Finish: a run that dies
// leaves a record that says so.
const inProgress = "run did not finish (interrupted or crashed)"

// NewID returns a short random run id.
func NewID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; a fixed id is still usable.
		return "00000000"
	}
	return hex.EncodeToString(b[:])
}

// DefaultDir is the default run directory, ./kci-results/<UTC time>-<id>.
func DefaultDir(start time.Time, id string) string {
	return filepath.Join(DefaultRoot, start.UTC().Format("20060102T150405Z")+"-"+id)
}

// Recorder owns a run directory and rewrites run.json after every change,
// atomically, so the record on disk is always whole and always current.
// Safe for concurrent use.
type Recorder struct {
	dir string
	mu  sync.Mutex
	run Run
	// err is the first failed save: later saves still try (the disk may
	// recover), but a job must not end well with a record that was lost.
	err error
}

// NewRecorder creates dir (and parents) and writes an initial run.json
// marked incomplete. id "" picks a random one.
func NewRecorder(dir, id string) (*Recorder, error) {
	if id == "" {
		id = NewID()
	}
	// The last line of defence: verbs refuse such an --out before any
	// work (kci test --force sets the old run aside instead).
	if err := HoldsRun(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("results: create run dir: %w", err)
	}
	rec := &Recorder{dir: dir, run: Run{
		Schema:           SchemaVersion,
		ID:               id,
		Start:            time.Now().UTC(),
		Incomplete:       true,
		IncompleteReason: inProgress,
		KCIVersion:       version.String(),
	}}
	if err := rec.save(); err != nil {
		return nil, err
	}
	return rec, nil
}

// Snapshot returns a deep copy of the record as it is now.
func (r *Recorder) Snapshot() (*Run, error) {
	r.mu.Lock()
	b, err := json.Marshal(&r.run)
	r.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("results: snapshot: %w", err)
	}
	var c Run
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("results: snapshot: %w", err)
	}
	return &c, nil
}

// Update applies f to the record and saves it.
func (r *Recorder) Update(f func(*Run)) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(&r.run)
	return r.saveLocked()
}

// SetArgs records the command line.
func (r *Recorder) SetArgs(args []string) error {
	return r.Update(func(run *Run) { run.Args = append([]string(nil), args...) })
}

// SetHost records the host facts and doctor checks.
func (r *Recorder) SetHost(h Host) error {
	return r.Update(func(run *Run) { run.Host = h })
}

// SetPlan records the suite plan.
func (r *Recorder) SetPlan(p Plan) error {
	return r.Update(func(run *Run) { run.Plan = p })
}

// SetTree adds a tree or replaces the one of the same name.
func (r *Recorder) SetTree(t Tree) error {
	return r.Update(func(run *Run) {
		for i := range run.Trees {
			if run.Trees[i].Name == t.Name {
				run.Trees[i] = t
				return
			}
		}
		run.Trees = append(run.Trees, t)
	})
}

// AddPhase appends a phase timing.
func (r *Recorder) AddPhase(p Phase) error {
	return r.Update(func(run *Run) { run.Phases = append(run.Phases, p) })
}

// AddBoot appends a boot. A zero Seq is set to the boot's position in the
// run; the Seq used is returned.
func (r *Recorder) AddBoot(b Boot) (int, error) {
	var seq int
	err := r.Update(func(run *Run) {
		if b.Seq == 0 {
			b.Seq = len(run.Boots) + 1
		}
		seq = b.Seq
		run.Boots = append(run.Boots, b)
	})
	return seq, err
}

// Finish closes the record: "" marks the run complete, anything else keeps
// it incomplete with that reason.
func (r *Recorder) Finish(incompleteReason string) error {
	return r.Update(func(run *Run) {
		run.End = time.Now().UTC()
		run.Incomplete = incompleteReason != ""
		run.IncompleteReason = incompleteReason
	})
}

func (r *Recorder) save() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.saveLocked()
}

func (r *Recorder) saveLocked() error {
	err := r.write()
	if err != nil && r.err == nil {
		r.err = err
	}
	return err
}

func (r *Recorder) write() error {
	b, err := json.MarshalIndent(&r.run, "", "  ")
	if err != nil {
		return fmt.Errorf("results: encode run: %w", err)
	}
	return WriteAtomic(filepath.Join(r.dir, RunFile), append(b, '\n'))
}

// Err is the first error saving the record met, nil if every save so far
// succeeded. Callers that carry on after a failed save check it at the end.
func (r *Recorder) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Save writes run to dir/run.json atomically.
func Save(dir string, run *Run) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("results: create run dir: %w", err)
	}
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return fmt.Errorf("results: encode run: %w", err)
	}
	return WriteAtomic(filepath.Join(dir, RunFile), append(b, '\n'))
}

// writeAtomic replaces path with data through a temporary file in the same
// directory and a rename, so readers and crashes never see half a file.
func WriteAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("results: write %s: %w", path, err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, 0o644)
	}
	if werr == nil {
		werr = os.Rename(tmp, path)
	}
	if werr != nil {
		_ = os.Remove(tmp) // werr is the news; a leftover dot-file is harmless
		return fmt.Errorf("results: write %s: %w", path, werr)
	}
	return nil
}
