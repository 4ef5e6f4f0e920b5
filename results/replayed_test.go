package results

import "testing"

// A run is a replay when every boot came from the result cache but the
// re-check that found its entry identical; a re-check that differed, or a
// boot that ran, makes it none. The boots line says which.
func TestReplayedBootsLine(t *testing.T) {
	run := func(states ...string) *Run {
		r := &Run{}
		for i, s := range states {
			r.Boots = append(r.Boots, Boot{Seq: i + 1, Tree: "stock", Cache: s})
		}
		return r
	}
	for _, c := range []struct {
		run      *Run
		replayed bool
		line     string
	}{
		{run(CacheChecked, CacheHit, CacheHit), true, "3 boots (replayed: 2 from the result cache, 1 re-check)"},
		{run(CacheHit, CacheHit), true, "2 boots (replayed: 2 from the result cache)"},
		{run(CacheChecked, CacheHit, CacheStored), false, "3 boots (1 from cache)"},
		{run(CacheMismatch, CacheStored), false, "2 boots"},
		{run(CacheChecked), false, "1 boot"},
		{run(), false, "0 boots"},
	} {
		if got := c.run.Replayed(""); got != c.replayed {
			t.Errorf("%v: replayed %v, want %v", c.run.Boots, got, c.replayed)
		}
		if got := c.run.BootsLine(""); got != c.line {
			t.Errorf("%v: boots line %q, want %q", c.run.Boots, got, c.line)
		}
	}
}
