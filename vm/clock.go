package vm

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// TCGClockArgs tells a TCG guest its TSC rate. Under TCG the guest's TSC
// runs at the host's, but on a busy host the kernel's PIT calibration
// fails, the TSC is marked unusable and sched_clock — which BPF stats use —
// falls back to jiffies, with tick resolution. A host with a constant,
// non-stop TSC gives the rate; elsewhere nothing is passed.
func TCGClockArgs() []string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return nil
	}
	return tcgClockArgs(string(b))
}

func tcgClockArgs(cpuinfo string) []string {
	var mhz float64
	var flags string
	for _, l := range strings.Split(cpuinfo, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "cpu MHz":
			if mhz == 0 {
				mhz, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			}
		case "flags":
			if flags == "" {
				flags = " " + v + " "
			}
		}
	}
	if mhz <= 0 || !strings.Contains(flags, " constant_tsc ") || !strings.Contains(flags, " nonstop_tsc ") {
		return nil
	}
	return []string{fmt.Sprintf("tsc_early_khz=%d", int64(mhz*1000)), "tsc=reliable"}
}
