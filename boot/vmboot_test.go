package boot

import (
	"testing"

	"github.com/kci-dev/kci/results"

	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/wire"
)

func TestCollectProfile(t *testing.T) {
	var out BootResult
	ev, err := event.New(event.Profile, wire.Profile{Variant: "hash", Folded: "t;f 3\n", FreqHz: 99, CPUs: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if err := collect(&out, ev, nil, "x"); err != nil {
		t.Fatal(err)
	}
	if len(out.Profiles) != 1 || out.Profiles[0].Folded != "t;f 3\n" || out.Profiles[0].FreqHz != 99 {
		t.Fatalf("profiles %+v", out.Profiles)
	}
	bad := event.Event{Type: event.Profile, Data: []byte(`{"folded": 3}`)}
	if err := collect(&out, bad, nil, "x"); err == nil {
		t.Error("undecodable profile payload: want an error")
	}
}

// A boot stopped after its first window keeps its phases up to that
// window, even when the guest announced its next step before the stop.
func TestPhasesBeforeStop(t *testing.T) {
	ps := []results.BootPhase{{Name: "kernel"}, {Name: "bench/hash"}, {Name: "bench/lru"}}
	got := phasesBefore(ps, "hash")
	if len(got) != 2 || got[1].Name != "bench/hash" {
		t.Errorf("phases %v, want them to end with bench/hash", got)
	}
	if got := phasesBefore(ps, "gtp"); len(got) != 3 {
		t.Errorf("no such window: phases %v, want all kept", got)
	}
}
