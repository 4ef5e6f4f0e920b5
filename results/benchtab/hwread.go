package benchtab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kci-dev/kci/results"
)

// HardwareUnit is what the hardware sets' numbers are: bpf_stats'
// run_time_ns on the user's machine, real time.
const HardwareUnit = "wall-clock ns/pkt (bpf_stats)"

// HardwareError is input kci bench --hardware cannot take: the path (a
// set's directory or one of its files) and what is wrong with it.
type HardwareError struct{ Path, What string }

func (e *HardwareError) Error() string { return e.Path + ": " + e.What }

// setLayout says what a hardware set is, for the errors.
const setLayout = "a set is a directory of <tree>-<variant>" + results.BpfstatsExt +
	" files, each a `bpftool -j prog show` dump, as bpfstats.py --agg reads them"

// ReadHardware reads the user's hardware sets, in the order given: per
// variant each program's ns/pkt per set, by his rule (results.PerPacket),
// and the BPF total as mean ± spread over the sets, as his mail prints
// them; programs that never ran in any set are no row, as in his table.
// A directory that is missing, holds no dump or a dump kci cannot read,
// or a dump without a packet count, is a *HardwareError naming it.
func ReadHardware(dirs []string) (AggTable, error) {
	var sets []AggSet
	byLabel := map[string]string{}
	for _, d := range dirs {
		s, err := readHardwareSet(d)
		if err != nil {
			return AggTable{}, err
		}
		if prev, ok := byLabel[s.Label]; ok {
			what := fmt.Sprintf("a second set named %s (the first: %s): each set is a column named by its directory", s.Label, prev)
			if filepath.Clean(prev) == filepath.Clean(d) {
				what = "given twice"
			}
			return AggTable{}, &HardwareError{Path: d, What: what}
		}
		byLabel[s.Label] = d
		sets = append(sets, s)
	}
	t := BuildAgg("hardware sets", sets)
	t.Unit, t.Metric = HardwareUnit, "wall-time"
	for i := range t.Variants {
		t.Variants[i].Programs = slices.DeleteFunc(t.Variants[i].Programs, neverRan)
	}
	return t, nil
}

// readHardwareSet reads one set directory (readBpfstatsSet's layout) and
// checks every dump has a packet count.
func readHardwareSet(dir string) (AggSet, error) {
	set := AggSet{Label: filepath.Base(filepath.Clean(dir))}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return set, &HardwareError{Path: dir, What: "no such directory"}
	case err != nil:
		return set, &HardwareError{Path: dir, What: err.Error()}
	case !fi.IsDir():
		return set, &HardwareError{Path: dir, What: "not a directory: " + setLayout}
	case results.IsRunDir(dir):
		return set, &HardwareError{Path: dir, What: "a kci run directory (it has " + results.RunFile + "): give it as RUNDIR, not as a hardware set"}
	}
	names, err := bpfstatsFiles(dir)
	if err != nil {
		return set, &HardwareError{Path: dir, What: err.Error()}
	}
	if len(names) == 0 {
		return set, &HardwareError{Path: dir, What: "no " + results.BpfstatsExt + " files: " + setLayout}
	}
	for _, n := range names {
		path := filepath.Join(dir, n)
		progs, err := results.ReadBpfstats(path)
		if err != nil {
			var be *results.BpfstatsError
			if errors.As(err, &be) {
				return set, &HardwareError{Path: be.File, What: be.What}
			}
			return set, &HardwareError{Path: path, What: err.Error()}
		}
		costs, ref := results.PerPacket(progs)
		if ref == 0 {
			return set, &HardwareError{Path: path, What: "no sched_cls program with a run count (run_cnt 0 or absent): " +
				"no packet count to divide by; was bpf_stats on (sysctl kernel.bpf_stats_enabled=1) during the window?"}
		}
		set.Variants = append(set.Variants, AggEntry{Variant: strings.TrimSuffix(n, results.BpfstatsExt), Costs: costs})
	}
	return set, nil
}
