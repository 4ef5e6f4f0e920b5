package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/kci-dev/kci/wire"
)

// cpuTimes is one CPU's /proc/stat line, in ticks.
type cpuTimes struct {
	cpu                                                int
	user, nice, system, idle, iowait, irq, soft, steal uint64
}

func (t cpuTimes) total() uint64 {
	return t.user + t.nice + t.system + t.idle + t.iowait + t.irq + t.soft + t.steal
}

// parseProcStat reads the per-CPU lines ("cpuN ...") of /proc/stat.
func parseProcStat(b []byte) ([]cpuTimes, error) {
	var out []cpuTimes
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 9 || !strings.HasPrefix(f[0], "cpu") || f[0] == "cpu" {
			continue
		}
		n, err := strconv.Atoi(f[0][3:])
		if err != nil {
			return nil, fmt.Errorf("/proc/stat: %q: %w", f[0], err)
		}
		var v [8]uint64
		for i := range v {
			if v[i], err = strconv.ParseUint(f[i+1], 10, 64); err != nil {
				return nil, fmt.Errorf("/proc/stat: %s field %d: %w", f[0], i+1, err)
			}
		}
		out = append(out, cpuTimes{n, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("/proc/stat: no per-CPU lines")
	}
	return out, sc.Err()
}

func readProcStat() ([]cpuTimes, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return nil, err
	}
	return parseProcStat(b)
}

// cpuDelta turns two snapshots into busy/sys/soft percentages per CPU
// (busy = everything but idle and iowait, like mpstat's 100 - %idle).
func cpuDelta(before, after []cpuTimes) []wire.CPUStat {
	prev := map[int]cpuTimes{}
	for _, t := range before {
		prev[t.cpu] = t
	}
	var out []wire.CPUStat
	for _, a := range after {
		b, ok := prev[a.cpu]
		if !ok {
			continue
		}
		total := float64(a.total() - b.total())
		if total <= 0 {
			out = append(out, wire.CPUStat{CPU: a.cpu})
			continue
		}
		idle := float64((a.idle - b.idle) + (a.iowait - b.iowait))
		out = append(out, wire.CPUStat{
			CPU:  a.cpu,
			Busy: 100 * (total - idle) / total,
			Sys:  100 * float64(a.system-b.system) / total,
			Soft: 100 * float64(a.soft-b.soft) / total,
		})
	}
	return out
}
