package verdict

import (
	"fmt"
	"reflect"
	"testing"
)

func TestLocatePerf(t *testing.T) {
	for _, tc := range []struct {
		name     string
		values   []float64 // gtp_write at prefix 0..N
		want     []int     // culprit patches
		maxCalls int
	}{
		{"none", []float64{100, 100, 100.2, 100, 100}, nil, 2},
		{"one of 3", []float64{400, 400, 204, 204}, []int{2}, 4},
		{"first", []float64{100, 200, 200, 200, 200, 200, 200, 200, 200}, []int{1}, 5},
		{"last of 8", []float64{100, 100, 100, 100, 100, 100, 100, 100, 130}, []int{8}, 5},
		{"two", []float64{100, 100, 150, 150, 150, 150, 200, 200, 200}, []int{2, 6}, 8},
		// The series as a whole moves nothing: bisection looks no further
		// (--each measures every prefix and sees both steps).
		{"up and down", []float64{100, 100, 150, 150, 100}, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefixes := make([]int, len(tc.values))
			for i := range prefixes {
				prefixes[i] = i
			}
			calls := 0
			steps, err := LocatePerf(prefixes, func(k int) (map[string]float64, error) {
				calls++
				return map[string]float64{"v/gtp_write": tc.values[k], "v/gtp_read": 40}, nil
			}, flat)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			for _, s := range steps {
				got = append(got, s.Patch)
				if s.Key != "v/gtp_write" {
					t.Errorf("step on %s: only gtp_write moves", s.Key)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("culprits %v, want %v", got, tc.want)
			}
			if calls > tc.maxCalls {
				t.Errorf("%d measurements, want at most %d", calls, tc.maxCalls)
			}
		})
	}
	// Every prefix measured: each adjacent step counts.
	m := map[int]map[string]float64{0: {"p": 100}, 1: {"p": 100}, 2: {"p": 150}, 3: {"p": 150}, 4: {"p": 100}}
	var got []string
	for _, s := range AdjacentSteps([]int{0, 1, 2, 3, 4}, m, flat) {
		got = append(got, fmt.Sprintf("%d %+.0f%%", s.Patch, s.Pct))
	}
	if want := []string{"2 +50%", "4 -33%"}; !reflect.DeepEqual(got, want) {
		t.Errorf("every prefix: steps %q, want %q", got, want)
	}
	// Prefixes that did not build are not measured: the step lands on the
	// next one that did.
	steps, _ := LocatePerf([]int{0, 1, 3}, func(k int) (map[string]float64, error) {
		return map[string]float64{"p": map[int]float64{0: 10, 1: 10, 3: 20}[k]}, nil
	}, flat)
	if len(steps) != 1 || steps[0].Patch != 3 {
		t.Errorf("with prefix 2 unbuilt: %+v", steps)
	}
}

// TestPerfThresholdPerProgram: both programs move 1 % at patch 2; lru_write
// spreads 2.4 % over seeds on the tree kernel, cnt 0.2 %. With the
// threshold max(0.5 %, spread) only cnt is blamed, by bisection and by
// every prefix alike.
func TestPerfThresholdPerProgram(t *testing.T) {
	spread := SpreadOverSeeds([]map[string]float64{
		{"v/lru_write": 1000, "v/cnt": 500},
		{"v/lru_write": 1024, "v/cnt": 501},
		{"v/lru_write": 1010, "v/cnt": 500.5},
	})
	if got := fmt.Sprintf("%.2f %.2f", spread["v/lru_write"], spread["v/cnt"]); got != "2.38 0.20" {
		t.Fatalf("spreads %s, want 2.38 0.20 ((max-min)/median)", got)
	}
	thr := func(key string) float64 { return max(0.5, spread[key]) }
	m := map[int]map[string]float64{}
	for k := 0; k <= 3; k++ {
		f := 1.0
		if k >= 2 {
			f = 1.01
		}
		m[k] = map[string]float64{"v/lru_write": 1000 * f, "v/cnt": 500 * f}
	}
	want := []string{"2 v/cnt +1.0% thr 0.5"}
	steps, err := LocatePerf([]int{0, 1, 2, 3}, func(k int) (map[string]float64, error) { return m[k], nil }, thr)
	if err != nil {
		t.Fatal(err)
	}
	for name, steps := range map[string][]PerfStep{"bisection": steps, "every prefix": AdjacentSteps([]int{0, 1, 2, 3}, m, thr)} {
		var got []string
		for _, s := range steps {
			got = append(got, fmt.Sprintf("%d %s %+.1f%% thr %.1f", s.Patch, s.Key, s.Pct, s.ThrPct))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: steps %q, want %q", name, got, want)
		}
	}
	// Without the spread, lru_write's move is blamed too.
	if steps := AdjacentSteps([]int{0, 1, 2, 3}, m, flat); len(steps) != 2 {
		t.Errorf("flat 0.5 %%: %d steps, want 2 (the case the spread guards against)", len(steps))
	}
	if s := SpreadOverSeeds([]map[string]float64{{"p": 0}, {"p": 0}, {"p": 0}}); s["p"] != 0 {
		t.Errorf("spread of a zero-cost program %v, want 0", s["p"])
	}
}

// flat is the threshold 0.5 % for every program.
func flat(string) float64 { return 0.5 }

// A series step must move a program by whole instructions: the null
// patch's +0.39 ns on cnt_egress (+0.5 %) is not located, two nops on
// hash_read (+2 ns, +1 %) are, and nothing from zero is located below
// one instruction.
func TestMovedByResolution(t *testing.T) {
	cases := []struct {
		a, b, thr float64
		want      bool
	}{
		{73.00, 73.39, 0.5, false},
		{204.66, 206.64, 0.5, true},
		{204.66, 206.64, 1.5, false},
		{0, 0.5, 0.5, false},
		{0, 2, 0.5, true},
		{477.15, 472.0, 0.5, true},
	}
	for _, c := range cases {
		if got := movedBy(c.a, c.b, c.thr); got != c.want {
			t.Errorf("movedBy(%v, %v, %v%%) = %v, want %v", c.a, c.b, c.thr, got, c.want)
		}
	}
}
