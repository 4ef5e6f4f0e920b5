// Package vm boots a kernel with kci's initramfs in QEMU and collects what
// the guest agent reports: it starts qemu-system-x86_64 itself, drives it
// over QMP, follows the agent's JSON lines from a virtio-serial port and
// the serial console (files QEMU writes), scans the console for crash
// reports, enforces boot and step deadlines,
// and never leaves a QEMU process or socket behind.
package vm

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/vm/tcgplugin"
)

// Accel is the QEMU accelerator.
type Accel string

// Accelerators. Auto uses KVM when a bounded probe boot under KVM reaches
// the agent, TCG otherwise.
const (
	AccelAuto Accel = "auto"
	AccelKVM  Accel = "kvm"
	AccelTCG  Accel = "tcg"
)

// ParseAccel checks a --accel value.
func ParseAccel(s string) (Accel, error) {
	switch a := Accel(s); a {
	case AccelAuto, AccelKVM, AccelTCG:
		return a, nil
	case "":
		return AccelAuto, nil
	}
	return "", fmt.Errorf("vm: accelerator %q: want auto, kvm or tcg", s)
}

// Clock is what a TCG guest's clock counts.
type Clock string

const (
	// ClockICount: the guest clock counts executed instructions (QEMU's
	// -icount shift=0: one instruction is one ns), idle time is skipped,
	// the RTC runs on that clock from a fixed date and the guest's
	// randomness comes from a fixed seed. The same kernel and plan give
	// the same numbers boot after boot, on a busy host too; they are
	// instruction-time, not real time.
	ClockICount Clock = "icount"
	// ClockHost: the guest clock follows the host's; numbers move with
	// host load (kci's behaviour before icount, --clock host).
	ClockHost Clock = "host"
	// ClockKVM is what a KVM boot reports: real time.
	ClockKVM Clock = "kvm"
)

// ParseClock checks a --clock value.
func ParseClock(s string) (Clock, error) {
	switch c := Clock(s); c {
	case ClockICount, ClockHost:
		return c, nil
	case "":
		return ClockICount, nil
	}
	return "", fmt.Errorf("vm: clock %q: want icount or host", s)
}

// icountArgs make a TCG guest deterministic (see ClockICount). The RTC
// base is fixed so nothing in the guest depends on the host's date; the
// seed fixes every random number the guest draws (RDRAND, the kernel's
// pool, map hash seeds, slab freelist order).
//
// rr=record is what makes it exact. Plain icount still lets QEMU's main
// loop, scheduled by the host, decide at which instruction some timer and
// bottom-half work reaches the guest; once in a while that moves an
// interrupt, the guest's randomness is drawn in another order and
// map-heavy programs take other paths. Record mode funnels all of it
// through instruction-count checkpoints. Measured on the gtp kernel, 5
// boots with one seed under a loaded host: 7 of 22 programs identical
// without it (gtplru_write ±2.7 %), 22 of 22 with it, at no visible cost
// in wall time. The log (a few MB) is written to replay and is what
// `qemu -icount rr=replay` would need to re-run the boot exactly.
func icountArgs(seed uint64, replay string) []string {
	if seed == 0 {
		seed = 1
	}
	icount := "shift=0,sleep=off,align=off"
	if replay != "" {
		icount += ",rr=record,rrfile=" + replay
	}
	return []string{
		"-icount", icount,
		"-rtc", "base=2020-01-01T00:00:00,clock=vm",
		"-seed", strconv.FormatUint(seed, 10),
	}
}

// RecordsReplay says whether a boot of c on clock records QEMU's replay
// log, which is what makes icount exact for one vCPU: batch icount boots
// of one vCPU. QEMU refuses record/replay for more than one vCPU ("not
// supported for 'smp'"); see Repeatable.
func RecordsReplay(c Config, clock Clock) bool {
	return clock == ClockICount && !c.Interactive && c.withDefaults().CPUs == 1
}

// Repeatable says whether a batch boot of c on clock repeats exactly per
// seed: every icount boot. One vCPU records its replay log; several are
// exact by construction: they take turns on one host thread at points the
// instruction count decides (the plugin's quantum), no host input reaches
// the guest while it measures (QMP is used before the start and after the
// end; the agent only writes), what the guest writes goes to files, which
// never make it wait (follow.go), QEMU's main loop runs only when the
// vCPU thread blocks (fence.go), and the result cache's re-check boot
// tests it on every run that reads the cache (docs/internals.md).
func Repeatable(c Config, clock Clock) bool {
	return clock == ClockICount && !c.Interactive
}

// icountCmdline is what an icount boot of cpus vCPUs adds to the kernel's
// command line. nokaslr keeps the guest's layout fixed: with KASLR, code
// and data move each boot, and pointer-keyed hashing (the rhash and hash
// maps key on skb addresses) takes other branches, so other instruction
// counts. kci's kernels have CONFIG_RANDOMIZE_BASE=y and only x86's
// decompressor reads nokaslr, so the kernel proper lists it among its
// "Unknown kernel command line parameters": that line is expected, and
// dropping the argument would change every count (and the result cache's
// key, which holds the command line). no_timer_check skips the boot's IO-APIC timer test (as a KVM
// guest does by itself): its TSC busy-wait ends a translation block per
// rdtsc under icount, about 0.3 s of host time a boot, and QEMU's timer
// routing is known to work.
//
// noapictimer, for a one-vCPU guest (kci test's under TCG by default),
// skips the local APIC timer's calibration, which busy-waits 100 ms of
// guest time (a pause per loop, each a return to QEMU's main loop under
// TCG): under icount it took 4.8 s of a 8.7 s boot to ready; the HPET
// becomes the CPU's tick. TCG has no TSC-deadline timer and fills no CPUID
// leaf 0x15 (the APIC timer's rate; checked with vendor=GenuineIntel and
// tsc-frequency), the kernel's two other ways to skip it. A guest of more
// vCPUs keeps its APIC timers and pays the calibration (3.1 s of a 7.0 s
// two-vCPU boot to the root mount): without them every CPU's tick is an
// IPI broadcast from the HPET, no CPU can switch to high-resolution
// timers, a two-vCPU guest stalled in stop_machine (an RCU stall in
// multi_cpu_stop, 1 of 2 boots, before the plugin guarded turns outside
// windows), and the profiler's 99 Hz timer sampled only the idle loop
// (727 of 739 samples in halt).
func icountCmdline(c Config) []string {
	args := []string{"nokaslr", "no_timer_check"}
	if c.CPUs == 1 {
		args = append(args, "noapictimer")
	}
	return args
}

// Config describes one boot.
type Config struct {
	QEMU      string   // qemu binary; "" = qemu-system-x86_64 from PATH
	Kernel    string   // bzImage
	Initrd    string   // initramfs (vmimage.Image.Compose)
	Append    []string // extra kernel command line arguments
	MemoryMiB int      // 0 = 1024
	CPUs      int      // 0 = 2
	Accel     Accel    // "" = auto
	CPUModel  string   // "" = host under KVM, the identity's under TCG
	// Identity is a TCG guest's CPU identity (LookupIdentity; "" = qemu):
	// its -cpu and the kernel arguments that pick that CPU's mitigations.
	Identity string
	// Clock is the guest clock under TCG: ClockICount (the default) or
	// ClockHost. KVM guests always run on real time.
	Clock Clock
	// Seed is the guest's random seed under icount (0 = 1). The same
	// kernel, plan and seed give the same run; kci test gives repetition
	// k seed k on both kernels, so the boots of one kernel sample what
	// the guest's randomness does to a program (hash seeds, pointer
	// layout) and base and patched stay paired.
	Seed uint64
	// Pin lists host CPUs; vCPU i's thread is pinned to Pin[i % len(Pin)]
	// before the guest starts. A fenced QEMU (several vCPUs under
	// icount, fence.go) takes one CPU of the list for all its threads.
	Pin []int
	// MainLoopStress, for tests, asks QMP for QEMU's status this often
	// while the guest runs (0 = never): QEMU's main loop then wakes at
	// moments the guest does not decide, which the fence must withstand.
	MainLoopStress time.Duration `json:"-"`

	// BootTimeout bounds start to the agent's ready event; 0 = 60 s.
	BootTimeout time.Duration
	// StepTimeout bounds a step that announces no timeout of its own,
	// and the time from ready to the first step; 0 = no step deadline.
	StepTimeout time.Duration

	// Dir receives console.log; "" = a new temporary directory.
	Dir string
	// Console, if set, receives a copy of the serial console.
	Console io.Writer
	// CacheDir keeps the KVM probe's choice per host; "" = $KCI_CACHE
	// or ~/.cache/kci.
	CacheDir string
	// Interactive puts the console on this process's terminal (kci shell):
	// no crash watchdog and no boot deadline, the user is watching.
	Interactive bool

	// Plugin is the exact-count QEMU plugin (tcgplugin.Build) loaded into
	// an icount boot ("" = none; other clocks never load it); CacheModel
	// turns on its cache model. The counts land in Dir (Result.Counts).
	Plugin     string
	CacheModel bool
	// SMT2, with CacheModel and several vCPUs, models vCPUs 2k and 2k+1
	// as two hardware threads of one core (tcgplugin.Options.SMT2).
	SMT2 bool
	// Quantum, in a guest of several vCPUs with the plugin, makes the
	// vCPUs take turns every Quantum instructions while a window is
	// instrumented (tcgplugin.Options.Quantum; outside, the plugin's
	// guard keeps one from starving the others); 0 = DefaultQuantum.
	Quantum uint64
	// Contexts, with the plugin, counts each block's entries by context
	// (a BPF program's call, then the stack classes that Marks begin:
	// tcgplugin's README), for what a patch's code ran in.
	Contexts bool
	Marks    []tcgplugin.Mark

	// Symbolize names the kernel function at a guest address ("" when
	// none), for where each vCPU was when a boot or step timed out; nil
	// leaves the addresses bare.
	Symbolize func(pc uint64) string
	// Note, if set, hears a wait the boot would otherwise sit through in
	// silence: a fenced boot's wait for a host CPU another fenced QEMU
	// holds (fence.go), when it begins and when it ends.
	Note func(msg string)
}

// eventChardev is the agent's event channel's chardev id.
const eventChardev = "kci"

// DefaultQuantum is the turn of a vCPU in a multi-vCPU plugin boot: short
// enough that a packet's hand-off from the client's CPU to the server's
// happens within about one turn (a packet's path is ~15,000 instructions
// on one vCPU), long enough that the turns cost little CPU (each is a
// return to QEMU's main loop).
const DefaultQuantum = 1000

const (
	defaultMemoryMiB   = 1024
	defaultCPUs        = 2
	defaultBootTimeout = 60 * time.Second
)

func (c Config) withDefaults() Config {
	if c.QEMU == "" {
		c.QEMU = "qemu-system-x86_64"
	}
	if c.MemoryMiB == 0 {
		c.MemoryMiB = defaultMemoryMiB
	}
	if c.CPUs == 0 {
		c.CPUs = defaultCPUs
	}
	if c.Accel == "" {
		c.Accel = AccelAuto
	}
	if c.BootTimeout == 0 {
		c.BootTimeout = defaultBootTimeout
	}
	if c.Clock == "" {
		c.Clock = ClockICount
	}
	return c
}

// Paths are the per-boot files QEMU is pointed at.
type Paths struct {
	QMP string // QMP unix socket (QEMU listens)
	// Events receives what the agent writes to its virtio-serial port,
	// and Console the serial console: files QEMU writes and kci follows
	// (follow.go). Interactive boots keep the console on the terminal
	// and log it to Console.
	Events  string
	Console string
	// Replay receives QEMU's record/replay log under icount ("" = none):
	// recording is what makes an icount boot repeat exactly.
	Replay string
	// Counts receives the plugin's counts (required with Config.Plugin).
	Counts string
}

// Cmdline is the kernel command line: the console on the first serial
// port, and a panic that reboots at once, which -no-reboot turns into
// QEMU exiting.
func Cmdline(c Config) string {
	args := []string{"console=ttyS0", "panic=-1"}
	if id, err := LookupIdentity(c.Identity); err == nil && c.Accel == AccelTCG {
		args = append(args, id.Cmdline...)
	}
	return strings.Join(append(args, c.Append...), " ")
}

// QemuArgs builds QEMU's argument list for c (accelerator resolved: kvm
// or tcg). The guest's console and the agent's port go to files (the
// console to the terminal when interactive); the machine starts paused
// (-S) so vCPUs can be pinned before the first guest instruction.
func QemuArgs(c Config, p Paths) ([]string, error) {
	c = c.withDefaults()
	if c.Kernel == "" || c.Initrd == "" {
		return nil, errors.New("vm: kernel and initrd are required")
	}
	if p.QMP == "" || p.Events == "" || p.Console == "" {
		return nil, errors.New("vm: QMP socket, event and console paths are required")
	}
	if c.MemoryMiB < 64 || c.CPUs < 1 {
		return nil, fmt.Errorf("vm: %d MiB and %d CPUs is not a machine", c.MemoryMiB, c.CPUs)
	}
	var accel, cpu string
	switch c.Accel {
	case AccelKVM:
		accel, cpu = "kvm", "host"
	case AccelTCG:
		// One thread taking turns over the vCPUs. Multi-threaded TCG
		// crashed SMP guests here ("Oops: int3 in sched_clock_cpu" during
		// boot: a vCPU ran code another one had just re-patched through
		// text_poke_bp); numbers under TCG are relative only anyway.
		id, err := LookupIdentity(c.Identity)
		if err != nil {
			return nil, fmt.Errorf("vm: %w", err)
		}
		cpu, _ = id.TCG(c.CPUs)
		accel = "tcg,thread=single"
	default:
		return nil, fmt.Errorf("vm: accelerator %q is not resolved (want kvm or tcg)", c.Accel)
	}
	if c.CPUModel != "" {
		cpu = c.CPUModel
	}
	vser := "virtio-serial-pci,id=vser"
	if c.Accel == AccelTCG && c.Clock == ClockICount {
		// Without ioeventfd the guest's kicks of the event port are
		// handled in the vCPU thread at that instruction; with it, QEMU's
		// main loop picks them up whenever the host schedules it, and the
		// completion interrupt lands at a host-dependent instruction.
		vser += ",ioeventfd=off"
	}
	con := "file,id=con,path=" + optValue(p.Console)
	if c.Interactive {
		// mux gives the user QEMU's Ctrl-A escapes (Ctrl-A x quits).
		con = "stdio,id=con,signal=off,mux=on,logfile=" + optValue(p.Console)
	}
	args := []string{
		"-name", "kci",
		"-machine", "pc",
		"-accel", accel,
		"-cpu", cpu,
		"-smp", strconv.Itoa(c.CPUs),
		"-m", strconv.Itoa(c.MemoryMiB),
		"-nodefaults", "-no-user-config",
		"-nographic",
		"-no-reboot",
		"-S",
		"-kernel", c.Kernel,
		"-initrd", c.Initrd,
		"-append", Cmdline(c),
		"-chardev", con,
		"-serial", "chardev:con",
		"-device", vser,
		"-chardev", "file,id=" + eventChardev + ",path=" + optValue(p.Events),
		"-device", "virtserialport,bus=vser.0,chardev=" + eventChardev + ",name=" + event.Port,
		"-qmp", "unix:" + p.QMP + ",server=on,wait=off",
	}
	if c.Accel == AccelTCG && c.Clock == ClockICount {
		args = append(args, icountArgs(c.Seed, p.Replay)...)
		if c.Plugin != "" {
			if p.Counts == "" {
				return nil, errors.New("vm: the plugin needs a counts path")
			}
			// The agent arms the plugin before its first window
			// (suite/mark.go): the boot before it is not instrumented.
			args = append(args, tcgplugin.Args(c.Plugin, p.Counts, pluginOptions(c))...)
		}
	}
	return args, nil
}

// optValue escapes a value for QEMU's option syntax, where a comma ends
// it and two stand for one.
func optValue(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// pluginOptions are the plugin's settings for c: several vCPUs get the
// coherent model and take turns every quantum.
func pluginOptions(c Config) tcgplugin.Options {
	o := tcgplugin.Options{Cache: c.CacheModel, ArmAtMarker: true, Ctx: tcgplugin.CtxRange{Blocks: c.Contexts}, Marks: c.Marks}
	if c.CPUs > 1 {
		o.Coherent = c.CacheModel
		o.SMT2 = c.CacheModel && c.SMT2
		o.Quantum = c.Quantum
		if o.Quantum == 0 {
			o.Quantum = DefaultQuantum
		}
	}
	return o
}

// ICountMachine is QEMU's argument list for an icount boot of c with
// placeholder files and seed 0: everything about the guest machine but the
// kernel, initramfs and seed, for the result cache's key.
func ICountMachine(c Config) ([]string, error) {
	c = c.withDefaults()
	c.Append = append(append([]string(nil), c.Append...), icountCmdline(c)...)
	c.Kernel, c.Initrd, c.Seed = "KERNEL", "INITRD", 0
	if c.Plugin != "" {
		// The plugin's file name carries its sources' hash.
		c.Plugin = filepath.Base(c.Plugin)
	}
	p := Paths{QMP: "QMP", Events: "EVENTS", Console: "CONSOLE", Counts: "COUNTS"}
	if RecordsReplay(c, ClockICount) {
		p.Replay = "REPLAY"
	}
	return QemuArgs(c, p)
}

// GuestClock is the clock a boot of c runs on (accelerator resolved).
func GuestClock(c Config) Clock {
	if c.Accel == AccelKVM {
		return ClockKVM
	}
	if c.Clock == "" {
		return ClockICount
	}
	return c.Clock
}
