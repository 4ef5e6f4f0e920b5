package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// HoldsRunError: a directory asked to receive a new run already holds
// one. Runs are never overwritten: the caller picks another directory or
// sets the old one aside (SetAside).
type HoldsRunError struct {
	Dir  string
	File string // run.json or series.json
	ID   string // the run's id, when its record reads
}

func (e *HoldsRunError) Error() string {
	id := ""
	if e.ID != "" {
		id = " " + e.ID
	}
	return fmt.Sprintf("%s holds a run%s (%s): runs are never overwritten", e.Dir, id, e.File)
}

// HoldsRun returns a *HoldsRunError when dir holds a run record of kci
// test, kci series or kci report --merge, nil when dir does not exist or
// holds none, and other errors (permissions) as they are.
func HoldsRun(dir string) error {
	for _, f := range []string{RunFile, SeriesFile} {
		_, err := os.Stat(filepath.Join(dir, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("results: %s: %w", dir, err)
		}
		e := &HoldsRunError{Dir: dir, File: f}
		if r, lerr := Load(dir); lerr == nil && f == RunFile {
			e.ID = r.ID
		}
		return e
	}
	return nil
}

// SetAside renames dir, which holds an earlier run, to a sibling named
// after it and the time ("DIR.replaced-20261201T080000Z"), so a new run
// can take its place with nothing deleted. It returns the new name.
func SetAside(dir string, now time.Time) (string, error) {
	clean := filepath.Clean(dir)
	to := clean + ".replaced-" + now.UTC().Format("20060102T150405Z")
	if _, err := os.Lstat(to); err == nil {
		return "", fmt.Errorf("results: set %s aside: %s exists", dir, to)
	}
	if err := os.Rename(clean, to); err != nil {
		return "", fmt.Errorf("results: set %s aside: %w", dir, err)
	}
	return to, nil
}
