package vm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/vm/event"
)

// phaseGap is how long the fake guest dwells in each phase: long against
// the loop's reaction time, so each edge lands in its own phase.
const phaseGap = 150 * time.Millisecond

// fakePhases plays a guest that spends phaseGap in each phase kci cuts a
// boot into, SeaBIOS's lines first as a real console has them.
func fakePhases(con func(...string), emit func(string, any)) int {
	con("\x1bc\x1b[?7l\x1b[2J\x1b[0mSeaBIOS (version 1.16.2-debian-1.16.2-1)")
	time.Sleep(phaseGap)
	con("Booting from ROM..\x1bc\x1b[?7l\x1b[2J[    0.000000] Linux version 6.12.0-fake", "[    0.300000] Run /init as init process")
	time.Sleep(phaseGap)
	emit(event.Ready, event.Hello{Agent: "fake"})
	time.Sleep(phaseGap)
	for _, step := range []string{"sanity", "caps", "bench/hash"} {
		emit(event.StepBeg, event.StepData{Name: step, Timeout: 5 * time.Second})
		time.Sleep(phaseGap)
	}
	emit(event.Done, event.DoneData{OK: true})
	time.Sleep(phaseGap)
	return 0 // the agent powers off
}

func TestFakePhases(t *testing.T) {
	res, err := fakeRun(t, context.Background(), "phases", nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var names []string
	var sum time.Duration
	for _, p := range res.Phases {
		names = append(names, p.Name)
		sum += p.Duration
	}
	want := "qemu firmware kernel agent sanity caps bench/hash teardown"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("phases %q, want %q (%+v)", got, want, res.Phases)
	}
	if sum != res.Duration {
		t.Errorf("phases sum to %v, the boot took %v", sum, res.Duration)
	}
	// Every phase but qemu's start-up is one phaseGap of the guest's:
	// a misplaced edge moves a gap into a neighbour.
	for _, p := range res.Phases[1:] {
		if p.Duration < phaseGap*2/3 || p.Duration > phaseGap*3 {
			t.Errorf("phase %s took %v, the guest dwelt %v in it", p.Name, p.Duration, phaseGap)
		}
	}
}

// A console without a recognisable kernel line gives the early phase a
// name that does not pretend to know the split.
func TestPhaseClockEarly(t *testing.T) {
	t0 := time.Unix(0, 0)
	pc := newPhaseClock(t0)
	pc.mark(PhaseFirmware, t0.Add(time.Second))
	pc.rename(PhaseFirmware, PhaseEarly)
	pc.mark(PhaseAgent, t0.Add(3*time.Second))
	got := pc.close(t0.Add(4 * time.Second))
	want := []Phase{{PhaseQEMU, time.Second}, {PhaseEarly, 2 * time.Second}, {PhaseAgent, time.Second}}
	if len(got) != len(want) {
		t.Fatalf("phases %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("phase %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
