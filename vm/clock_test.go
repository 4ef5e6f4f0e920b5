package vm

import (
	"reflect"
	"testing"
)

func TestTCGClockArgs(t *testing.T) {
	stable := "processor\t: 0\ncpu MHz\t\t: 2399.998\nflags\t\t: fpu tsc constant_tsc nonstop_tsc rdtscp\n"
	if got, want := tcgClockArgs(stable), []string{"tsc_early_khz=2399998", "tsc=reliable"}; !reflect.DeepEqual(got, want) {
		t.Errorf("stable TSC: %q, want %q", got, want)
	}
	if got := tcgClockArgs("cpu MHz\t: 2400\nflags\t: fpu tsc\n"); got != nil {
		t.Errorf("unstable TSC: %q, want nothing", got)
	}
}
