package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/doctor"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/vm"
	"github.com/kci-dev/kci/vmimage"
)

// vmFlags are the guest's size and accelerator, defaulting to kci.yaml.
type vmFlags struct {
	accel  string
	cpus   int
	memory int
	pin    string
	clock  string
	// cacheModel turns on the plugin's cache model (modelled cycles);
	// smt makes its vCPUs 2k and 2k+1 two hardware threads of a core.
	cacheModel bool
	smt        bool
	// guestCPU is a TCG guest's CPU identity (vm.LookupIdentity).
	guestCPU string
	// changed tells a value given from the default (--cpus 0 is refused,
	// not read as unset); nil before register.
	changed func(string) bool
}

func (v *vmFlags) register(f *pflag.FlagSet) {
	v.changed = f.Changed
	f.StringVar(&v.accel, "accel", "", "auto, kvm or tcg (default: kci.yaml vm.accel)")
	f.IntVar(&v.cpus, "cpus", 0, "guest vCPUs (default: kci.yaml vm.cpus, at most the host's CPUs under TCG)")
	f.Var(memoryValue{&v.memory}, "memory", "guest memory: 2G, 2048M or 2048 (MiB), at least 64M (default: kci.yaml vm.memory_mib)")
	f.StringVar(&v.clock, "clock", "", "guest clock under TCG: icount (deterministic instruction-time, the default) or host (wall clock, noisy; kci.yaml vm.clock)")
	f.StringVar(&v.pin, "pin", "", "pin vCPU threads to these host CPUs, e.g. 2-5 (default: kci.yaml vm.pin)")
	f.StringVar(&v.guestCPU, "guest-cpu", "", "under TCG, the CPU the guest is shown and whose mitigations its kernel picks: i7-13800h (the default) or qemu (QEMU's own; docs/cost.md)")
	f.BoolVar(&v.cacheModel, "cache-model", false, "under icount, also count modelled cycles: a Xeon 8180's caches (docs/cost.md)")
	f.BoolVar(&v.smt, "smt", false, "with --cache-model and --cpus 2 or more: model vCPUs 2k and 2k+1 as two hardware threads of one core, "+
		"sharing its L1 and L2 (each client/server pair on SMT siblings; the guest is not told; docs/cost.md)")
}

// validate refuses nonsense VM flags before anything is built or
// created: a negative --cpus used to fall through to kci.yaml's count
// (8 vCPUs, unrecorded) without a word.
func (v *vmFlags) validate() error {
	given := func(name string) bool { return v.changed != nil && v.changed(name) }
	if v.cpus < 0 || (given("cpus") && v.cpus == 0) {
		return job.Usagef("--cpus %d: want 1 or more (leave it out for the default)", v.cpus)
	}
	if v.memory < 0 || (v.memory < 64 && (v.memory > 0 || given("memory"))) {
		return job.Usagef("--memory %dM: want 64M or more (leave it out for the default)", v.memory)
	}
	// Under TCG's instruction clock every vCPU takes turns on one host
	// thread, so a guest may have more vCPUs than the host has CPUs (the
	// user's 6- or 8-vCPU topology on a 2-CPU runner); booter checks the
	// count once the accelerator and clock are known.
	if err := checkGuestSize("--cpus", 0, "--memory", v.memory, nil); err != nil {
		return err
	}
	if v.cpus > maxICountCPUs {
		return job.Usagef("--cpus %d: at most %d", v.cpus, maxICountCPUs)
	}
	if _, err := vm.ParseAccel(v.accel); err != nil {
		return job.Usagef("--accel: %v", err)
	}
	if _, err := vm.ParseClock(v.clock); err != nil {
		return job.Usagef("--clock: %v", err)
	}
	if _, err := vm.LookupIdentity(v.guestCPU); err != nil {
		return job.Usagef("--guest-cpu: %v", err)
	}
	if v.cacheModel && (v.clock == string(vm.ClockHost) || v.accel == string(vm.AccelKVM)) {
		return job.Usagef("--cache-model: modelled cycles need TCG's instruction clock (--clock icount, not KVM)")
	}
	if v.smt && !v.cacheModel {
		return job.Usagef("--smt: hardware threads are the cache model's: it needs --cache-model")
	}
	if v.smt && v.cpus < 2 {
		return job.Usagef("--smt: a core's two hardware threads need --cpus 2 or more")
	}
	_, err := checkPin(v.pin)
	return err
}

// maxICountCPUs bounds --cpus: the exact-count plugin models up to 64
// cores.
const maxICountCPUs = 64

// booter returns a booter for the project's guest; the accelerator is
// settled (and cached per host) before the first boot.
func (v *vmFlags) booter(cacheDir string, p *project.File) (*boot.VMBooter, error) {
	if err := v.validate(); err != nil {
		return nil, err
	}
	cfg := vm.Config{CPUs: p.VM.CPUs, MemoryMiB: p.VM.MemoryMiB, CacheDir: cacheDir, Identity: v.guestCPU, SMT2: v.smt}
	accel := v.accel
	if accel == "" {
		accel = p.VM.Accel
	}
	a, err := vm.ParseAccel(accel)
	if err != nil {
		return nil, err
	}
	pin := v.pin
	if pin == "" {
		pin = p.VM.Pin
	}
	if pin != "" {
		if cfg.Pin, err = vm.ParseCPUList(pin); err != nil {
			return nil, fmt.Errorf("--pin: %w", err)
		}
	}
	if v.cpus > 0 {
		cfg.CPUs = v.cpus
	}
	if v.memory > 0 {
		cfg.MemoryMiB = v.memory
	} else if err := checkGuestSize("", 0, p.Path+": vm.memory_mib", cfg.MemoryMiB, nil); err != nil {
		return nil, err // kci.yaml's vCPUs are fitted to the host, its memory cannot be
	}
	cfg.Accel = a
	clock := v.clock
	if clock == "" {
		clock = p.VM.Clock
	}
	if cfg.Clock, err = vm.ParseClock(clock); err != nil {
		return nil, fmt.Errorf("--clock: %w", err)
	}
	if a == vm.AccelKVM || cfg.Clock != vm.ClockICount {
		// Each vCPU is a host thread: more would time-share and
		// measure the sharing.
		if err := checkGuestSize("--cpus", v.cpus, "--memory", 0, nil); err != nil {
			return nil, err
		}
	}
	b := &boot.VMBooter{VM: cfg, Log: os.Stderr, ImageOpts: vmimage.Options{CacheDir: cacheDir, Log: os.Stderr},
		PluginDir: cacheDir, CacheModel: v.cacheModel}
	if v.cpus == 0 {
		// TCG runs the vCPUs of a guest in turns on one host thread
		// (multi-threaded TCG crashed SMP guests): a second vCPU would
		// only put the other's turns into the BPF programs' run times.
		b.FitTCG = func(c *vm.Config) { c.CPUs = 1 }
		if a == vm.AccelTCG {
			b.FitTCG(&b.VM)
		}
	}
	return b, nil
}

// doctorChecks records the host checks (kci doctor's) in the run.
func doctorChecks(ctx context.Context, cacheDir string) []results.Check {
	var out []results.Check
	for _, c := range doctor.Run(ctx, doctor.Options{CacheDir: cacheDir}) {
		out = append(out, results.Check{Name: c.Name, Status: string(c.Status), Detail: c.Detail, Fix: c.Fix})
	}
	return out
}
