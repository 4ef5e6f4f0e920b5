package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/fsutil"
	"github.com/kci-dev/kci/internal/names"
)

// Merge combines shard records of one job (same trees, same kernels, same
// plan; different repetitions) into one record, as if one run had made
// every boot. Repetition numbers that collide between shards are shifted
// so every (tree, role, rep) stays unique; boots are renumbered in shard
// order.
func Merge(runs ...*Run) (*Run, error) {
	if len(runs) == 0 {
		return nil, errors.New("results: merge: no runs")
	}
	first := runs[0]
	m := &Run{
		Schema: SchemaVersion, ID: NewID(), Args: first.Args,
		Start: first.Start, End: first.End, Host: first.Host, Plan: first.Plan,
		KCIVersion: first.KCIVersion,
	}
	plan, _ := json.Marshal(first.Plan)
	used := map[string]bool{} // tree/role/rep
	maxRep := 0
	checks := map[string]bool{}
	var reasons []string
	for i, r := range runs {
		m.MergedFrom = append(m.MergedFrom, r.ID)
		if r.KCIVersion != first.KCIVersion {
			return nil, fmt.Errorf("results: merge: shard %s was made by kci %q, shard %s by %q: numbers compare within one kci version", r.ID, r.KCIVersion, first.ID, first.KCIVersion)
		}
		if p, _ := json.Marshal(r.Plan); !bytes.Equal(p, plan) {
			return nil, fmt.Errorf("results: merge: shard %s ran a different plan than shard %s", r.ID, first.ID)
		}
		for _, t := range r.Trees {
			if err := m.mergeTree(t, r.ID); err != nil {
				return nil, err
			}
		}
		if r.Start.Before(m.Start) {
			m.Start = r.Start
		}
		if r.End.IsZero() || m.End.IsZero() {
			m.End = time.Time{}
		} else if r.End.After(m.End) {
			m.End = r.End
		}
		if r.Incomplete {
			reasons = append(reasons, fmt.Sprintf("shard %s: %s", r.ID, r.IncompleteReason))
		}
		if r.Host.Accel == AccelTCG {
			m.Host.Accel = AccelTCG
		}
		for _, c := range r.Host.Checks {
			k := c.Name + "\x00" + c.Status + "\x00" + c.Detail
			if i > 0 && !checks[k] {
				m.Host.Checks = append(m.Host.Checks, c)
			}
			checks[k] = true
		}
		m.Phases = append(m.Phases, r.Phases...)

		boots := append([]Boot(nil), r.Boots...)
		sort.SliceStable(boots, func(a, b int) bool { return boots[a].Seq < boots[b].Seq })
		shift := 0
		for _, b := range boots {
			if used[repKey(b)] {
				shift = maxRep
				break
			}
		}
		for _, b := range boots {
			b.Rep += shift
			used[repKey(b)] = true
			maxRep = max(maxRep, b.Rep)
			b.Seq = len(m.Boots) + 1
			m.Boots = append(m.Boots, b)
		}
	}
	if len(reasons) > 0 {
		m.Incomplete = true
		m.IncompleteReason = strings.Join(reasons, "; ")
	}
	return m, nil
}

func repKey(b Boot) string {
	return fmt.Sprintf("%s\x00%s\x00%d", b.Tree, b.Role, b.Rep)
}

func (m *Run) mergeTree(t Tree, shard string) error {
	have := m.Tree(t.Name)
	if have == nil {
		m.Trees = append(m.Trees, t)
		return nil
	}
	for _, k := range []struct {
		role     string
		a, b     string
		aok, bok bool
	}{
		{RoleBase, keyOf(have.Base), keyOf(t.Base), have.Base != nil, t.Base != nil},
		{RolePatched, keyOf(have.Patched), keyOf(t.Patched), have.Patched != nil, t.Patched != nil},
	} {
		if k.aok && k.bok && k.a != k.b {
			return fmt.Errorf("results: merge: shard %s tree %s: %s kernel %s differs from %s", shard, t.Name, k.role, k.b, k.a)
		}
	}
	if have.Base == nil {
		have.Base = t.Base
	}
	if have.Patched == nil {
		have.Patched = t.Patched
	}
	return nil
}

func keyOf(a *Kernel) string {
	if a == nil {
		return ""
	}
	return a.Key
}

// MergeDirs merges the shard run directories into out: run.json, the
// shards' console logs (under shard-<id>/). The caller renders the
// reports (render.WriteReports): a record does not render itself.
func MergeDirs(out string, dirs ...string) (*Run, error) {
	// The merge's console/ copies would mix with an earlier run's (and
	// out may be one of the shards).
	if err := HoldsRun(out); err != nil {
		return nil, err
	}
	var runs []*Run
	for _, d := range dirs {
		r, err := Load(d)
		if err != nil {
			return nil, err
		}
		if err := checkShardPaths(d, r); err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if err := checkDistinctShards(dirs, runs); err != nil {
		return nil, err
	}
	m, err := Merge(runs...)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("results: merge: %w", err)
	}
	// Copies go through os.Root on both sides: a symlink in a shard (or a
	// planted one in out) cannot lead outside either directory.
	dst, err := os.OpenRoot(out)
	if err != nil {
		return nil, fmt.Errorf("results: merge: %w", err)
	}
	defer func() { _ = dst.Close() }() // a Root's close releases only its descriptor
	// Boots were appended shard by shard, so walk them in step.
	i := 0
	for si, r := range runs {
		src, err := os.OpenRoot(dirs[si])
		if err != nil {
			return nil, fmt.Errorf("results: merge: %w", err)
		}
		for range r.Boots {
			b := &m.Boots[i]
			i++
			if b.ConsoleLog == "" {
				continue
			}
			rel := filepath.Join("shard-"+r.ID, b.ConsoleLog)
			err := fsutil.CopyFile(src, b.ConsoleLog, dst, rel)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				// The shard lost its log; keep the record's word for it.
			case err != nil:
				_ = src.Close() // the copy's error is the news
				return nil, fmt.Errorf("results: merge: shard %s: %w", r.ID, err)
			default:
				b.ConsoleLog = rel
			}
		}
		if err := src.Close(); err != nil {
			return nil, fmt.Errorf("results: merge: %w", err)
		}
	}
	if err := Save(out, m); err != nil {
		return nil, err
	}
	return m, nil
}

// checkShardPaths refuses a shard whose record would put files outside
// the shard or the output directory: its ID names a directory under out,
// its console logs are read from dir and its tree names become file names.
// The record was written by the pull request's own job: it is untrusted.
func checkShardPaths(dir string, r *Run) error {
	if err := names.Element("run id", r.ID); err != nil {
		return fmt.Errorf("results: merge: shard %s: %w", dir, err)
	}
	for _, t := range r.Trees {
		if err := names.Tree(t.Name); err != nil {
			return fmt.Errorf("results: merge: shard %s: %w", dir, err)
		}
	}
	for _, b := range r.Boots {
		if err := names.Tree(b.Tree); err != nil {
			return fmt.Errorf("results: merge: shard %s boot %d: %w", dir, b.Seq, err)
		}
		if b.ConsoleLog == "" {
			continue
		}
		if err := names.Local("console log", b.ConsoleLog); err != nil {
			return fmt.Errorf("results: merge: shard %s boot %d: %w", dir, b.Seq, err)
		}
	}
	return nil
}
