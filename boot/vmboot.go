package boot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/internal/fsutil"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/profile"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/vm"
	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/vmimage"
	"github.com/kci-dev/kci/wire"
)

// VMBooter boots kernels in QEMU from kci's initramfs.
type VMBooter struct {
	VM        vm.Config // template: CPUs, memory, accelerator, pinning
	ImageOpts vmimage.Options
	Log       io.Writer // agent log events, when set
	// FitTCG adjusts the guest once TCG is chosen (e.g. fewer vCPUs).
	FitTCG func(*vm.Config)
	// PluginDir is where the exact-count QEMU plugin is built and kept
	// ("" = no plugin); CacheModel turns on its cache model (modelled
	// cycles). Both apply to icount boots only (exact.go).
	PluginDir  string
	CacheModel bool
	// ScratchDir holds each boot's temporary directory (its initramfs,
	// console and plugin counts) while it runs; "" = $TMPDIR.
	ScratchDir string

	pluginOnce sync.Once
	plugin     string

	imageMu sync.Mutex // the initramfs, built once (Image)
	img     *vmimage.Image
	imgErr  error

	// The result cache's key parts, computed once (cache.go).
	keyMu  sync.Mutex
	qemu   string
	hashes map[string]string                 // bzImage path -> sha256
	syms   map[string]*profile.KernelSymbols // vmlinux path -> symbols
}

// Image builds (or finds) the initramfs once per booter. A build that
// was cancelled is not kept as its result: the run that prepared it
// beside its kernel builds may have ended, and the next caller builds.
func (b *VMBooter) Image(ctx context.Context) (*vmimage.Image, error) {
	return b.image(ctx, nil)
}

// Prepare builds (or finds) the initramfs ahead of the first boot; its
// build progress goes to log when set, else to ImageOpts.Log.
func (b *VMBooter) Prepare(ctx context.Context, log io.Writer) error {
	_, err := b.image(ctx, log)
	return err
}

// image is Image with the build's progress going to log (nil: to
// ImageOpts.Log).
func (b *VMBooter) image(ctx context.Context, log io.Writer) (*vmimage.Image, error) {
	b.imageMu.Lock()
	defer b.imageMu.Unlock()
	if b.img == nil && (b.imgErr == nil || errors.Is(b.imgErr, context.Canceled)) {
		o := b.ImageOpts
		if log != nil {
			o.Log = log
		}
		b.img, b.imgErr = vmimage.Build(ctx, o)
	}
	return b.img, b.imgErr
}

// ResolveAccel settles the accelerator before the first boot, probing KVM
// with kernel k if no choice is cached, so the plan can be sized for it.
// Under KVM the -cpu model it settled on is kept for every boot (each
// boot's result says which and why).
func (b *VMBooter) ResolveAccel(ctx context.Context, k *kernel.Artifacts) (string, string, error) {
	if b.VM.Accel == vm.AccelKVM || b.VM.Accel == vm.AccelTCG {
		b.warnSMPICount()
		return string(b.VM.Accel), "requested", nil
	}
	img, err := b.Image(ctx)
	if err != nil {
		return "", "", fmt.Errorf("initramfs: %w", err)
	}
	cfg := b.VM
	cfg.Kernel, cfg.Initrd = k.BzImage, img.Path
	v, err := vm.Resolve(ctx, cfg)
	if err != nil {
		return "", "", err
	}
	b.VM.Accel = v.Accel
	if v.Accel == vm.AccelKVM && b.VM.CPUModel == "" {
		b.VM.CPUModel = v.CPU
	}
	if v.Accel == vm.AccelTCG && b.FitTCG != nil {
		b.FitTCG(&b.VM)
	}
	if n := runtime.NumCPU(); v.Accel == vm.AccelKVM && b.VM.CPUs > n {
		// Each KVM vCPU is a host thread: more would time-share and
		// measure the sharing (TCG's instruction clock runs them in turns).
		return "", "", fmt.Errorf("%d vCPUs under KVM: the host has %d CPUs (use --cpus %d or fewer, or --accel tcg)", b.VM.CPUs, n, n)
	}
	b.warnSMPICount()
	return string(v.Accel), v.Reason, nil
}

// GuestClock is the guest clock of b's boots: results.ClockKVM under
// KVM, else the vm.Config's TCG clock (icount when unset).
func (b *VMBooter) GuestClock() string {
	return string(vm.GuestClock(b.VM))
}

// warnSMPICount says, before the first boot, what a guest of several
// vCPUs under TCG's instruction clock is: QEMU refuses to record it, so
// it is exact by construction (no host input reaches the guest while it
// measures; the plugin, when it can be built, ends each vCPU's turn at
// instruction counts; QEMU's main loop is fenced), which the result
// cache's re-check boot tests. Where the fence cannot be had it says so.
func (b *VMBooter) warnSMPICount() {
	c := b.VM
	if b.Log == nil || c.Accel != vm.AccelTCG || (c.Clock != "" && c.Clock != vm.ClockICount) || c.CPUs <= 1 {
		return
	}
	fmt.Fprintf(b.Log, "kci: %d vCPUs under TCG with the instruction clock: taking turns every %d instructions while "+
		"a window is measured (after at most a million outside); not recorded (QEMU refuses replay for several vCPUs), "+
		"exact by construction, QEMU's main loop fenced (docs/internals.md)\n", c.CPUs, vm.DefaultQuantum)
	if err := vm.FenceCheck(c.Pin); err != nil {
		fmt.Fprintf(b.Log, "kci: warning: QEMU's main loop cannot be fenced here (%v): two boots of one seed may count differently\n", err)
	}
}

// Boot runs one plan on one kernel.
func (b *VMBooter) Boot(ctx context.Context, req BootRequest) (*BootResult, error) {
	cfg, tmp, err := b.bootConfig(ctx, req)
	if tmp != "" {
		defer func() { _ = os.RemoveAll(tmp) }() // a leftover temp dir is harmless
	}
	if err != nil {
		return &BootResult{ErrorKind: failure.Infra}, err
	}
	out := &BootResult{VCPUs: cfg.CPUs}
	res, stopped, decodeErr, err := b.run(ctx, cfg, req, out)
	out.VM = res
	consoleErr := fromVM(out, res, req.Console)
	if stopped {
		out.Variants = out.Variants[:req.StopAfter]
		out.Phases = phasesBefore(out.Phases, out.Variants[req.StopAfter-1].Variant)
	}
	if err != nil {
		// The boot's own failure comes first; a lost console log rides along.
		err = errors.Join(err, consoleErr)
		out.ErrorKind = vm.Kind(err)
		return out, err
	}
	if err := checkBoot(out, req, decodeErr, consoleErr); err != nil {
		out.ErrorKind = failure.Infra
		return out, err
	}
	if stopped {
		return out, nil // the plugin's counts are written at a whole boot's end
	}
	if err := b.attachExact(out, res, req.Kernel); err != nil {
		out.ErrorKind = failure.Infra
		return out, err
	}
	return out, nil
}

// bootConfig is the boot's vm.Config: the template, with the plugin where
// it applies, the kernel, and an initramfs with req's plan appended, in a
// temporary directory of its own (returned once made, for the caller to
// remove).
func (b *VMBooter) bootConfig(ctx context.Context, req BootRequest) (vm.Config, string, error) {
	img, err := b.Image(ctx)
	if err != nil {
		return vm.Config{}, "", fmt.Errorf("initramfs: %w", err)
	}
	tmp, err := os.MkdirTemp(b.ScratchDir, "kci-boot-")
	if err != nil {
		return vm.Config{}, "", err
	}
	plan, err := json.Marshal(req.Plan)
	if err != nil {
		return vm.Config{}, tmp, err
	}
	initrd := filepath.Join(tmp, "initrd.cpio")
	if err := img.Compose(initrd, vmimage.File{Path: wire.PlanPath[1:], Data: plan}); err != nil {
		return vm.Config{}, tmp, err
	}
	cfg := b.pluginConfig(ctx)
	if cfg.Contexts {
		if cfg.Marks, err = b.contextMarks(req.Kernel); err != nil {
			return vm.Config{}, tmp, fmt.Errorf("exact counts: %w", err)
		}
	}
	cfg.Symbolize = func(pc uint64) string {
		// Read only when a boot hangs; without vmlinux's symbols the
		// report gives the bare address.
		syms, err := b.kernelSymbols(req.Kernel.Vmlinux)
		if err != nil {
			return ""
		}
		return syms.Where(pc)
	}
	if b.Log != nil {
		// A fenced boot's wait for a host CPU can be a whole boot long on a
		// two-CPU host: say so rather than look stalled.
		cfg.Note = func(msg string) { fmt.Fprintf(b.Log, "kci: [%s] %s\n", req.Label, msg) }
	}
	cfg.Kernel, cfg.Initrd, cfg.Dir = req.Kernel.BzImage, initrd, tmp
	cfg.StepTimeout = req.Plan.StepTimeout
	cfg.Seed = req.Seed
	cfg.Console = req.Tee
	cfg.Append = append(append([]string(nil), cfg.Append...), req.Append...)
	if req.BootTimeout > 0 {
		cfg.BootTimeout = req.BootTimeout
	}
	return cfg, tmp, nil
}

// run boots cfg and files the agent's events into out as they come. It
// ends the boot once req.StopAfter variants reported (stopped: not a
// failure); decodeErr is the first event that did not decode.
func (b *VMBooter) run(ctx context.Context, cfg vm.Config, req BootRequest, out *BootResult) (res *vm.Result, stopped bool, decodeErr, err error) {
	log := b.Log
	if req.Watch != nil {
		log = nil // the watcher shows the guest's log lines
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	res, err = vm.Run(runCtx, cfg, func(ev event.Event) {
		if req.Watch != nil {
			req.Watch(ev)
		}
		if derr := collect(out, ev, log, req.Label); derr != nil && decodeErr == nil {
			decodeErr = derr
		}
		if req.StopAfter > 0 && ev.Type == event.Variant && len(out.Variants) == req.StopAfter {
			stopped = true
			stop()
		}
	})
	if stopped && ctx.Err() == nil {
		err = nil // the stop asked for, not a failure: QEMU is gone
	}
	return res, stopped, decodeErr, err
}

// phasesBefore cuts a stopped boot's phases after the window of the last
// variant it was asked for: the guest may announce its next step before
// the host's stop reaches QEMU, and what ran after the stop is not the
// boot's.
func phasesBefore(ps []results.BootPhase, variant string) []results.BootPhase {
	for i, p := range ps {
		if p.Name == "bench/"+variant {
			return ps[:i+1]
		}
	}
	return ps
}

// fromVM copies QEMU's account of the boot into out and keeps the console
// log at console; the error is the copy's.
func fromVM(out *BootResult, res *vm.Result, console string) error {
	if res == nil {
		return nil
	}
	out.Accel, out.BootToReady, out.Clock = string(res.Accel), res.BootToReady, string(res.Clock)
	out.CPU, out.CPUReason = res.CPU, res.CPUReason
	out.MainLoop = res.MainLoop.String()
	for _, p := range res.Phases {
		out.Phases = append(out.Phases, results.BootPhase{Name: p.Name, Duration: p.Duration})
	}
	if h := res.Hello; h != nil {
		out.TSCkHz, out.Clocksource = h.TSCkHz, h.Clocksource
	}
	if res.Console != "" && console != "" {
		return fsutil.CopyFile(nil, res.Console, nil, console)
	}
	return nil
}

// checkBoot is what makes a boot that QEMU ran to its end the machine's
// failure: an event that did not decode, a lost console, a guest that ran
// another kernel than the one built.
func checkBoot(out *BootResult, req BootRequest, decodeErr, consoleErr error) error {
	if decodeErr != nil {
		return decodeErr
	}
	if consoleErr != nil {
		// The console is the boot's evidence: losing it is the machine's fault.
		return fmt.Errorf("keep console log: %w", consoleErr)
	}
	// The guest must have booted the kernel we built: a stale image or a
	// wrong path would otherwise measure the wrong kernel.
	if out.Sanity != nil && req.Kernel.BuildID != "" && out.Sanity.BuildID != "" && out.Sanity.BuildID != req.Kernel.BuildID {
		return fmt.Errorf("booted kernel has build id %s, built kernel %s", out.Sanity.BuildID, req.Kernel.BuildID)
	}
	return nil
}

// collect files one agent event into the result.
func collect(out *BootResult, ev event.Event, log io.Writer, label string) error {
	switch ev.Type {
	case event.Sanity:
		var s wire.Sanity
		if err := ev.Decode(&s); err != nil {
			return err
		}
		out.Sanity = &s
	case event.Caps:
		var c wire.Caps
		if err := ev.Decode(&c); err != nil {
			return err
		}
		out.Caps = &c
	case event.Cell:
		var c wire.Cell
		if err := ev.Decode(&c); err != nil {
			return err
		}
		out.Cells = append(out.Cells, c)
	case event.Variant:
		var v wire.VariantResult
		if err := ev.Decode(&v); err != nil {
			return err
		}
		out.Variants = append(out.Variants, v)
	case event.Profile:
		var p wire.Profile
		if err := ev.Decode(&p); err != nil {
			return err
		}
		out.Profiles = append(out.Profiles, p)
	case event.Log:
		if log != nil {
			var s string
			if ev.Decode(&s) == nil {
				fmt.Fprintf(log, "kci: [%s] guest: %s\n", label, s)
			}
		}
	}
	return nil
}
