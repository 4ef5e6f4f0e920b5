package job

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/kernel"
)

// resolvingBooter counts how often it is asked for its accelerator.
type resolvingBooter struct {
	asked int
	err   error
}

func (b *resolvingBooter) Boot(context.Context, boot.BootRequest) (*boot.BootResult, error) {
	return &boot.BootResult{}, nil
}

func (b *resolvingBooter) ResolveAccel(context.Context, *kernel.Artifacts) (string, string, error) {
	b.asked++
	return "tcg", "PVM host", b.err
}

type plainBooter struct{}

func (plainBooter) Boot(context.Context, boot.BootRequest) (*boot.BootResult, error) {
	return &boot.BootResult{}, nil
}

// A run's engine asks the Booter for its accelerator once, however many
// trees and boots ask after, and logs it once; a failed probe is not
// remembered as an answer; a Booter that settles none
// gives "" and is never treated as one that does.
func TestEngineSettlesTheAcceleratorOnce(t *testing.T) {
	b := &resolvingBooter{}
	var log strings.Builder
	e := &engine{ctx: context.Background(), log: &log, booter: b}
	if !e.resolves() {
		t.Fatal("a boot.Booter with ResolveAccel does not resolve")
	}
	for range 3 {
		if accel, why, err := e.settleAccel(nil); accel != "tcg" || why != "PVM host" || err != nil {
			t.Fatalf("settleAccel = %q, %q, %v", accel, why, err)
		}
	}
	if b.asked != 1 || strings.Count(log.String(), "kci: accelerator tcg: PVM host\n") != 1 {
		t.Errorf("asked %d times, logged:\n%s", b.asked, log.String())
	}

	failing := &resolvingBooter{err: errors.New("probe failed")}
	e = &engine{ctx: context.Background(), booter: failing}
	if _, _, err := e.settleAccel(nil); err == nil {
		t.Error("the probe's error was dropped")
	}
	if _, _, err := e.settleAccel(nil); err == nil || failing.asked != 2 {
		t.Errorf("a failed probe must not be remembered as settled (asked %d, err %v)", failing.asked, err)
	}

	e = &engine{ctx: context.Background(), booter: plainBooter{}}
	if accel, _, err := e.settleAccel(nil); e.resolves() || accel != "" || err != nil {
		t.Errorf("a plain Booter: resolves %v, accel %q, err %v", e.resolves(), accel, err)
	}
}
