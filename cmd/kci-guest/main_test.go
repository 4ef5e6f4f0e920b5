package main

import "testing"

func TestCPUKHz(t *testing.T) {
	for in, want := range map[string]int64{
		"processor\t: 0\ncpu MHz\t\t: 999.998\nflags: fpu\n": 999998,
		"cpu MHz : 2400.000\ncpu MHz : 1.0\n":                2400000,
		"model name : qemu\n":                                0,
		"cpu MHz : n/a\n":                                    0,
	} {
		if got := cpuKHz(in); got != want {
			t.Errorf("cpuKHz(%q) = %d, want %d", in, got, want)
		}
	}
}
