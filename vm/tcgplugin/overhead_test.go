package tcgplugin_test

import (
	"github.com/kci-dev/kci/vm/tcgplugin"

	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestOverhead measures TestQEMU's whole boot without the plugin,
// counting, and with the cache model, each with the call contexts (the
// default), with them and each block's entries by context (ctxblocks, as
// kci boots) and without contexts, interleaved so that a loaded host
// slows all three alike: QEMU's wall time and its CPU time (user+system,
// from the children's rusage: boots run one at a time), which a busy host
// disturbs far less. It only runs with KCI_TCGPLUGIN_BENCH set to the
// number of rounds: it measures, it asserts nothing about speed.
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
		{"counting", func() []string { return tcgplugin.Args(g.so, filepath.Join(t.TempDir(), "c.txt"), tcgplugin.Options{}) }},
		{"counting, no contexts", func() []string {
			return tcgplugin.Args(g.so, filepath.Join(t.TempDir(), "c.txt"), tcgplugin.Options{NoCtx: true})
		}},
		{"counting, blocks by context", func() []string {
			return tcgplugin.Args(g.so, filepath.Join(t.TempDir(), "c.txt"), tcgplugin.Options{Ctx: tcgplugin.CtxRange{Blocks: true}})
		}},
		{"cache model", func() []string {
			return tcgplugin.Args(g.so, filepath.Join(t.TempDir(), "c.txt"), tcgplugin.Options{Cache: true})
		}},
		{"cache model, blocks by context", func() []string {
			return tcgplugin.Args(g.so, filepath.Join(t.TempDir(), "c.txt"), tcgplugin.Options{Cache: true, Ctx: tcgplugin.CtxRange{Blocks: true}})
		}},
		{"cache model, no contexts", func() []string {
			return tcgplugin.Args(g.so, filepath.Join(t.TempDir(), "c.txt"), tcgplugin.Options{Cache: true, NoCtx: true})
		}},
	}
	wall := make([][]time.Duration, len(modes))
	cpu := make([][]time.Duration, len(modes))
	for r := 0; r < rounds; r++ {
		for i, m := range modes {
			before := childCPU(t)
			_, d := g.boot(t, m.plugin())
			wall[i] = append(wall[i], d)
			cpu[i] = append(cpu[i], childCPU(t)-before)
		}
	}
	for _, k := range []struct {
		what string
		d    [][]time.Duration
	}{{"wall", wall}, {"cpu", cpu}} {
		base := median(k.d[0])
		for i, m := range modes {
			med := median(k.d[i])
			t.Logf("%-4s %-24s median %6.2fs  min %6.2fs  max %6.2fs  %+5.1f%%  runs %v", k.what, m.name,
				med.Seconds(), slices.Min(k.d[i]).Seconds(), slices.Max(k.d[i]).Seconds(),
				100*(med.Seconds()/base.Seconds()-1), k.d[i])
		}
	}
}

// childCPU is the user+system time of this process's waited-for children.
func childCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
