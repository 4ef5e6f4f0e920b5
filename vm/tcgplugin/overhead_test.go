package tcgplugin_test

import (
	"github.com/kci-dev/kci/vm/tcgplugin"

	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestOverhead measures the wall time of TestQEMU's whole boot without the
// plugin, counting, and with the cache model, interleaved so that a loaded
// host slows all three alike. It only runs with KCI_TCGPLUGIN_BENCH set to
// the number of rounds: it measures, it asserts nothing about speed.
func TestOverhead(t *testing.T) {
	rounds, err := strconv.Atoi(os.Getenv("KCI_TCGPLUGIN_BENCH"))
	if err != nil || rounds < 1 {
		t.Skip("set KCI_TCGPLUGIN_BENCH=<rounds> to measure the plugin's overhead")
	}
	g := newGuest(t)
	modes := []struct {
		name   string
		plugin func() []string
	}{
		{"no plugin", func() []string { return nil }},
		{"counting", func() []string { return tcgplugin.Args(g.so, filepath.Join(t.TempDir(), "c.txt"), false) }},
		{"cache model", func() []string { return tcgplugin.Args(g.so, filepath.Join(t.TempDir(), "c.txt"), true) }},
	}
	times := make([][]time.Duration, len(modes))
	for r := 0; r < rounds; r++ {
		for i, m := range modes {
			_, d := g.boot(t, m.plugin())
			times[i] = append(times[i], d)
		}
	}
	base := median(times[0])
	for i, m := range modes {
		med := median(times[i])
		t.Logf("%-12s median %6.2fs  min %6.2fs  max %6.2fs  %+5.1f%%  runs %v", m.name,
			med.Seconds(), slices.Min(times[i]).Seconds(), slices.Max(times[i]).Seconds(),
			100*(med.Seconds()/base.Seconds()-1), times[i])
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
