// Package boot runs one kernel with one plan in QEMU and returns what the
// guest reported: the real Booter (VMBooter), the result cache in front of
// it (WithResultCache, cache.go) and the QEMU plugin's exact counts, named
// by function, attached to each boot (exact.go). job/ plans the boots;
// this package does one.
package boot

import (
	"context"
	"io"
	"time"

	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/vm"
	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/wire"
)

// Booter boots one kernel with a plan and returns what the guest reported.
// The real one drives QEMU (VMBooter); tests use a scripted fake.
type Booter interface {
	Boot(ctx context.Context, req BootRequest) (*BootResult, error)
}

// BootRequest is one fresh boot.
type BootRequest struct {
	Kernel  *kernel.Artifacts
	Plan    wire.Plan
	Console string // where the console log goes
	Label   string // e.g. "gtp patched rep 2/6", for progress
	// Seed is the guest's random seed under icount (vm.Config.Seed):
	// the repetition, the same for base and patched.
	Seed uint64
	// Watch, when set, sees every agent event as it arrives, and Tee a
	// copy of the console as it is written (kci run shows both live).
	Watch func(event.Event)
	Tee   io.Writer
	// Append adds kernel command line arguments to this boot, and
	// BootTimeout (0: the booter's) bounds its start to ready: kci run's
	// --append and --boot-timeout, which the accelerator probe does not
	// take.
	Append      []string
	BootTimeout time.Duration
	// StopAfter, when > 0, ends the boot once that many bench variants
	// have reported: the result cache's re-check compares that prefix of
	// a boot with its entry (cache.go). The result then holds what
	// ran before the stop and no exact counts.
	StopAfter int
}

// BootResult is what one boot produced. Partial results come back with an
// error too: what was measured before a crash is kept.
type BootResult struct {
	Accel       string
	BootToReady time.Duration
	Sanity      *wire.Sanity
	Caps        *wire.Caps
	Cells       []wire.Cell
	Variants    []wire.VariantResult
	Profiles    []wire.Profile // with TestOptions.Profile: one per variant
	ErrorKind   string         // with an error: boot, crash, timeout, guest, infra
	// Clock is what the guest's ns count (results.ClockICount, ...);
	// TSCkHz and Clocksource are the guest kernel's calibration.
	Clock       string
	TSCkHz      int64
	Clocksource string
	// Cache is what the result cache did with the boot (results.CacheHit,
	// ...); empty without one. Set by WithResultCache.
	Cache string `json:"-"`
	// CPU is QEMU's -cpu model the boot ran with, CPUReason why it is not
	// the accelerator's default ("" when it is).
	CPU, CPUReason string
	// MainLoop is how QEMU's main loop was kept from moving the counts of
	// several vCPUs under icount (vm.MainLoop's words; "" otherwise).
	MainLoop string `json:",omitempty"`
	// VCPUs is the guest's vCPU count (0 in an older cache entry: one).
	VCPUs int `json:",omitempty"`
	// Exact are the QEMU plugin's counts of the variants' windows (icount
	// boots with the plugin only).
	Exact []VariantExact `json:",omitempty"`
	// Phases are where the boot's host wall time went (vm.Phase); served
	// from the result cache they are the stored boot's.
	Phases []results.BootPhase `json:",omitempty"`
	// VM is QEMU's own account of the boot (pinning, done, wall time),
	// which kci run prints; not kept by the result cache.
	VM *vm.Result `json:"-"`
}

// AccelResolver is a Booter that settles the accelerator before the first
// boot, so the plan can be sized for it (VMBooter does).
type AccelResolver interface {
	// ResolveAccel returns the accelerator and why it was chosen.
	ResolveAccel(ctx context.Context, k *kernel.Artifacts) (accel, why string, err error)
}

// ClockReporter is a Booter that knows its guest clock once the
// accelerator is settled (VMBooter: its vm.Config's, "" meaning icount
// under TCG). A run whose options name no clock takes it, so an icount
// booter's boots share the host however the options were filled in.
type ClockReporter interface {
	GuestClock() string
}

// Preparer is a Booter with work that needs no kernel: VMBooter's
// initramfs, which kci prepares beside the kernel builds. What it prints
// goes to log, line by line (nil: the booter's own log).
type Preparer interface {
	Prepare(ctx context.Context, log io.Writer) error
}

// The real implementations, checked at compile time: a signature drifting
// would otherwise silently skip the accelerator step.
var (
	_ AccelResolver = (*VMBooter)(nil)
	_ ClockReporter = (*VMBooter)(nil)
	_ CacheKeyer    = (*VMBooter)(nil)
	_ Preparer      = (*VMBooter)(nil)
)
