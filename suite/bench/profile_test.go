package bench

import (
	"reflect"
	"testing"

	"github.com/kci-dev/kci/wire"
)

func TestTrafficCPUs(t *testing.T) {
	p := wire.DefaultBench()
	if got, want := trafficCPUs(p, 8), []int{0, 1, 2, 3, 4, 5}; !reflect.DeepEqual(got, want) {
		t.Errorf("8 CPUs: %v, want %v", got, want)
	}
	// Folded onto a 2-vCPU emulated guest: servers 0,2,4 → 0; clients 1,3,5 → 1.
	if got, want := trafficCPUs(p, 2), []int{0, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("2 CPUs: %v, want %v", got, want)
	}
	p.Pairs = 1
	if got, want := trafficCPUs(p, 8), []int{0, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("1 pair: %v, want %v", got, want)
	}
}
