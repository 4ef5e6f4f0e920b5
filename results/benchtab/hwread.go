package benchtab

import (
	"errors"
	"fmt"
	"math"
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

// HardwareFloorUnit is HardwareUnit with floorNs a call taken off.
func HardwareFloorUnit(floorNs float64) string {
	return fmt.Sprintf("wall-clock ns/pkt (bpf_stats less its floor, %.1f ns a call)", floorNs)
}

// ReadHardware reads the user's hardware sets, in the order given: per
// variant each program's ns/pkt per set, by his rule (results.PerPacket),
// and the BPF total as mean ± spread over the sets, as his mail prints
// them; programs that never ran in any set are no row, as in his table.
// A floorNs above 0 is bpf_stats' own floor on that machine (what it
// reads for a program that does nothing: its clock reads), taken off
// every call of every program first.
// A directory that is missing, holds no dump or a dump kci cannot read,
// a dump without a packet count, or a program whose calls average less
// than the floor, is a *HardwareError naming it.
func ReadHardware(dirs []string, floorNs float64) (AggTable, error) {
	var sets []AggSet
	byLabel := map[string]string{}
	for _, d := range dirs {
		s, err := readHardwareSet(d, floorNs)
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
	if floorNs > 0 {
		t.Unit = HardwareFloorUnit(floorNs)
	}
	for i := range t.Variants {
		t.Variants[i].Programs = slices.DeleteFunc(t.Variants[i].Programs, neverRan)
	}
	return t, nil
}

// readHardwareSet reads one set directory (readBpfstatsSet's layout),
// checks every dump has a packet count, and takes floorNs off each call.
func readHardwareSet(dir string, floorNs float64) (AggSet, error) {
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
		if err := lessFloor(progs, floorNs); err != nil {
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

// lessFloor takes floorNs off every call of progs' run times: bpf_stats'
// own clock reads, which kci's call rows do not have. A program whose
// calls average less cannot have run on a machine with that floor.
func lessFloor(progs []results.ProgStat, floorNs float64) error {
	if floorNs <= 0 {
		return nil
	}
	for i := range progs {
		p := &progs[i]
		if p.RunCnt == 0 {
			continue
		}
		per := float64(p.RunTimeNs) / float64(p.RunCnt)
		if per < floorNs {
			return fmt.Errorf("program %s averages %.1f ns a call, under the floor of %.1f (--hardware-floor): "+
				"the floor is what bpf_stats reads for a program that does nothing on the sets' machine", p.Name, per, floorNs)
		}
		p.RunTimeNs -= uint64(math.Round(floorNs * float64(p.RunCnt)))
	}
	return nil
}
