package main

import (
	"strings"
	"testing"
)

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

func TestWithGODEBUG(t *testing.T) {
	for _, c := range []struct {
		env   []string
		want  string
		again bool
	}{
		{[]string{"PATH=/bin"}, "PATH=/bin GODEBUG=asyncpreemptoff=1", true},
		{[]string{"GODEBUG=madvdontneed=1", "PATH=/bin"}, "PATH=/bin GODEBUG=madvdontneed=1,asyncpreemptoff=1", true},
		{[]string{"GODEBUG=x=1,asyncpreemptoff=1"}, "GODEBUG=x=1,asyncpreemptoff=1", false},
	} {
		got, again := withGODEBUG(c.env, asyncPreemptOff)
		if strings.Join(got, " ") != c.want || again != c.again {
			t.Errorf("withGODEBUG(%q) = %q, %v; want %q, %v", c.env, got, again, c.want, c.again)
		}
	}
}
