package vm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/vm/event"
)

func argValue(t *testing.T, args []string, flag string) []string {
	t.Helper()
	var vals []string
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			vals = append(vals, args[i+1])
		}
	}
	return vals
}

// The default identity shows the guest the user's CPU and turns off the
// mitigations that CPU does in hardware; an unknown one is refused.
func TestIdentityArgs(t *testing.T) {
	paths := Paths{QMP: "q", Events: "e", Console: "c"}
	args, err := QemuArgs(Config{Kernel: "k", Initrd: "i", Accel: AccelTCG}, paths)
	if err != nil {
		t.Fatal(err)
	}
	if cpu := argValue(t, args, "-cpu"); len(cpu) != 1 || !strings.Contains(cpu[0], "vendor=GenuineIntel") || !strings.Contains(cpu[0], "i7-13800H") {
		t.Errorf("-cpu %q: want the i7-13800H identity", cpu)
	}
	if app := argValue(t, args, "-append"); len(app) != 1 || !strings.Contains(app[0], "spectre_v2=off") || !strings.Contains(app[0], "idle=halt") {
		t.Errorf("-append %q: want the identity's mitigations", app)
	}
	kvm, err := QemuArgs(Config{Kernel: "k", Initrd: "i", Accel: AccelKVM}, paths)
	if err != nil {
		t.Fatal(err)
	}
	if app := argValue(t, kvm, "-append"); len(app) != 1 || strings.Contains(app[0], "spectre_v2") {
		t.Errorf("KVM guest -append %q: a real CPU's kernel picks its own mitigations", app)
	}
	if _, err := QemuArgs(Config{Kernel: "k", Initrd: "i", Accel: AccelTCG, Identity: "pentium"}, paths); err == nil || !strings.Contains(err.Error(), `guest CPU "pentium"`) {
		t.Errorf("unknown identity: %v", err)
	}
}

func TestQemuArgs(t *testing.T) {
	paths := Paths{QMP: "/tmp/q/qmp", Events: "/tmp/q/ev", Console: "/run,1/console.log"}
	cfg := Config{Kernel: "/k/bzImage", Initrd: "/k/initrd", Accel: AccelTCG, CPUs: 4, MemoryMiB: 2048, Append: []string{"loglevel=5"}, Identity: IdentityQEMU}
	args, err := QemuArgs(cfg, paths)
	if err != nil {
		t.Fatal(err)
	}
	for flag, want := range map[string]string{
		"-accel": "tcg,thread=single", "-cpu": "max,-cx16", "-smp": "4", "-m": "2048",
		"-kernel": "/k/bzImage", "-initrd": "/k/initrd", "-serial": "chardev:con",
		"-qmp":    "unix:/tmp/q/qmp,server=on,wait=off",
		"-append": "console=ttyS0 panic=-1 loglevel=5",
	} {
		if got := argValue(t, args, flag); len(got) != 1 || got[0] != want {
			t.Errorf("%s = %q, want %q", flag, got, want)
		}
	}
	for _, f := range []string{"-S", "-nographic", "-no-reboot", "-nodefaults"} {
		if !slices.Contains(args, f) {
			t.Errorf("missing %s in %q", f, args)
		}
	}
	chardevs := strings.Join(argValue(t, args, "-chardev"), " ")
	// Files, never a pipe or a socket: a full one would make QEMU retry
	// from its main loop, at a host-scheduled instruction (follow.go).
	if !strings.Contains(chardevs, "file,id=kci,path=/tmp/q/ev") {
		t.Errorf("event chardev missing: %s", chardevs)
	}
	if !strings.Contains(chardevs, "file,id=con,path=/run,,1/console.log") {
		t.Errorf("batch console: want a file, its path's comma doubled: %s", chardevs)
	}
	for _, c := range argValue(t, args, "-chardev") {
		if !strings.HasPrefix(c, "file,") {
			t.Errorf("batch chardev %q: want every guest→host channel a file", c)
		}
	}
	devices := strings.Join(argValue(t, args, "-device"), " ")
	if !strings.Contains(devices, "virtserialport,bus=vser.0,chardev=kci,name="+event.Port) {
		t.Errorf("agent port missing: %s", devices)
	}

	cfg.Accel, cfg.CPUModel = AccelKVM, ""
	args, _ = QemuArgs(cfg, paths)
	if a, c := argValue(t, args, "-accel"), argValue(t, args, "-cpu"); a[0] != "kvm" || c[0] != "host" {
		t.Errorf("kvm: -accel %q -cpu %q", a, c)
	}
	cfg.CPUModel = "qemu64"
	args, _ = QemuArgs(cfg, paths)
	if c := argValue(t, args, "-cpu"); c[0] != "qemu64" {
		t.Errorf("-cpu %q, want the configured model", c)
	}

	cfg.Interactive = true
	args, _ = QemuArgs(cfg, paths)
	if !strings.Contains(strings.Join(args, " "), "stdio,id=con,signal=off,mux=on,logfile=/run,,1/console.log") {
		t.Errorf("interactive console does not log: %q", args)
	}
}

func TestQemuArgsDefaultsAndErrors(t *testing.T) {
	paths := Paths{QMP: "q", Events: "e", Console: "c"}
	args, err := QemuArgs(Config{Kernel: "k", Initrd: "i", Accel: AccelTCG}, paths)
	if err != nil {
		t.Fatal(err)
	}
	if m, s := argValue(t, args, "-m"), argValue(t, args, "-smp"); m[0] != "1024" || s[0] != "2" {
		t.Errorf("defaults: -m %q -smp %q", m, s)
	}
	for name, c := range map[string]Config{
		"no kernel":  {Initrd: "i", Accel: AccelTCG},
		"no initrd":  {Kernel: "k", Accel: AccelTCG},
		"auto accel": {Kernel: "k", Initrd: "i", Accel: AccelAuto},
		"tiny":       {Kernel: "k", Initrd: "i", Accel: AccelTCG, MemoryMiB: 16},
	} {
		if _, err := QemuArgs(c, paths); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := QemuArgs(Config{Kernel: "k", Initrd: "i", Accel: AccelTCG}, Paths{}); err == nil {
		t.Error("missing paths: no error")
	}
}

func TestParseAccel(t *testing.T) {
	for in, want := range map[string]Accel{"": AccelAuto, "auto": AccelAuto, "kvm": AccelKVM, "tcg": AccelTCG} {
		if got, err := ParseAccel(in); err != nil || got != want {
			t.Errorf("ParseAccel(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseAccel("hvf"); err == nil {
		t.Error("hvf accepted")
	}
}

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{
		"0": {0}, "2-5": {2, 3, 4, 5}, "1,3,5": {1, 3, 5}, "0-1,6": {0, 1, 6}, " 4 , 7-8 ": {4, 7, 8},
	} {
		got, err := ParseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "1,1", "-2", "1-"} {
		if got, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) = %v, want an error", bad, got)
		}
	}
}

func TestPinPlan(t *testing.T) {
	plan := PinPlan([]int{101, 102, 103}, []int{4, 6})
	want := []Pinning{{0, 101, 4}, {1, 102, 6}, {2, 103, 4}}
	if !slices.Equal(plan, want) {
		t.Errorf("PinPlan = %v, want %v", plan, want)
	}
	if PinPlan([]int{1}, nil) != nil {
		t.Error("no CPUs should mean no pinning")
	}
}

func TestParseCPUsFast(t *testing.T) {
	out := []byte(`{"return": [{"thread-id": 2001, "props": {"core-id": 0}, "qom-path": "/machine/unattached/device[0]", "cpu-index": 0, "target": "x86_64"},
	                          {"thread-id": 2002, "cpu-index": 1, "target": "x86_64"}]}`)
	tids, err := parseCPUsFast(out)
	if err != nil || !slices.Equal(tids, []int{2001, 2002}) {
		t.Errorf("parseCPUsFast = %v, %v", tids, err)
	}
	for _, bad := range []string{`{"return": []}`, `{"return": [{"cpu-index": 3, "thread-id": 5}]}`,
		`{"return": [{"cpu-index": 0, "thread-id": 5}, {"cpu-index": 0, "thread-id": 6}]}`, `nope`} {
		if _, err := parseCPUsFast([]byte(bad)); err == nil {
			t.Errorf("parseCPUsFast(%s): no error", bad)
		}
	}
}

func TestKind(t *testing.T) {
	for err, want := range map[error]string{
		nil:                                   failure.None,
		&CrashError{Title: "x"}:               failure.Crash,
		fmt.Errorf("run: %w", &BootError{}):   failure.Boot,
		&TimeoutError{Step: "s", Timeout: 1}:  failure.Timeout,
		&AgentError{Message: "m"}:             failure.Agent,
		infra("qemu", errors.New("missing")):  failure.Infra,
		errors.New("something else"):          failure.Infra,
		fmt.Errorf("x: %w", context.Canceled): failure.Interrupted,
	} {
		if got := Kind(err); got != want {
			t.Errorf("Kind(%v) = %q, want %q", err, got, want)
		}
	}
}

// Deterministic mode is TCG's default: icount, a VM-clock RTC from a fixed
// date and a fixed seed; --clock host and KVM get none of it.
func TestQemuArgsClock(t *testing.T) {
	paths := Paths{QMP: "/q", Events: "/e", Console: "/c", Replay: "/r.rr"}
	has := func(args []string, a, b string) bool {
		for i := 0; i+1 < len(args); i++ {
			if args[i] == a && args[i+1] == b {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		accel  Accel
		clock  Clock
		icount bool
		guest  Clock
	}{
		{AccelTCG, "", true, ClockICount},
		{AccelTCG, ClockICount, true, ClockICount},
		{AccelTCG, ClockHost, false, ClockHost},
		{AccelKVM, "", false, ClockKVM},
		{AccelKVM, ClockICount, false, ClockKVM},
	} {
		cfg := Config{Kernel: "k", Initrd: "i", Accel: tc.accel, Clock: tc.clock}
		args, err := QemuArgs(cfg, paths)
		if err != nil {
			t.Fatal(err)
		}
		got := has(args, "-icount", "shift=0,sleep=off,align=off,rr=record,rrfile=/r.rr") &&
			has(args, "-rtc", "base=2020-01-01T00:00:00,clock=vm") && has(args, "-seed", "1")
		if got != tc.icount {
			t.Errorf("%s/%q: deterministic args %v, want %v: %v", tc.accel, tc.clock, got, tc.icount, args)
		}
		if tc.icount != slices.Contains(args, "virtio-serial-pci,id=vser,ioeventfd=off") {
			t.Errorf("%s/%q: virtio-serial ioeventfd off %v, want %v: %v", tc.accel, tc.clock, !tc.icount, tc.icount, args)
		}
		if tc.icount != slices.Contains(args, "-icount") {
			t.Errorf("%s/%q: stray -icount: %v", tc.accel, tc.clock, args)
		}
		if g := GuestClock(cfg); g != tc.guest {
			t.Errorf("%s/%q: GuestClock %s, want %s", tc.accel, tc.clock, g, tc.guest)
		}
	}
	// QEMU records only single-vCPU guests; interactive ones are not
	// measured.
	for _, tc := range []struct {
		cfg   Config
		clock Clock
		want  bool
	}{
		{Config{CPUs: 1}, ClockICount, true},
		{Config{CPUs: 2}, ClockICount, false},
		{Config{}, ClockICount, false}, // default: 2 vCPUs
		{Config{CPUs: 1, Interactive: true}, ClockICount, false},
		{Config{CPUs: 1}, ClockHost, false},
		{Config{CPUs: 1}, ClockKVM, false},
	} {
		if got := RecordsReplay(tc.cfg, tc.clock); got != tc.want {
			t.Errorf("RecordsReplay(%d vCPUs, interactive %v, %s) = %v, want %v", tc.cfg.CPUs, tc.cfg.Interactive, tc.clock, got, tc.want)
		}
	}
	if _, err := ParseClock("wall"); err == nil || !strings.Contains(err.Error(), "wall") {
		t.Errorf("ParseClock(wall): %v", err)
	}
	if c, err := ParseClock(""); err != nil || c != ClockICount {
		t.Errorf("ParseClock(\"\") = %s, %v; want icount", c, err)
	}
}

// A one-vCPU icount guest skips the APIC timer's calibration; a guest of
// more vCPUs keeps its APIC timers (see icountCmdline). All keep their
// layout fixed, and only one vCPU records. The result cache's machine
// says which it got.
func TestICountCmdlineByCPUs(t *testing.T) {
	for _, tc := range []struct {
		cpus        int
		noAPICT, rr bool
	}{{1, true, true}, {2, false, false}, {8, false, false}} {
		m, err := ICountMachine(Config{Kernel: "k", Initrd: "i", Accel: AccelTCG, CPUs: tc.cpus})
		if err != nil {
			t.Fatal(err)
		}
		machine := strings.Join(m, " ")
		if got := strings.Contains(machine, "noapictimer"); got != tc.noAPICT {
			t.Errorf("%d vCPUs: noapictimer %v, want %v: %s", tc.cpus, got, tc.noAPICT, machine)
		}
		if got := strings.Contains(machine, "rr=record"); got != tc.rr {
			t.Errorf("%d vCPUs: rr=record %v, want %v: %s", tc.cpus, got, tc.rr, machine)
		}
		for _, want := range []string{"nokaslr", "no_timer_check"} {
			if !strings.Contains(machine, want) {
				t.Errorf("%d vCPUs: no %s: %s", tc.cpus, want, machine)
			}
		}
	}
}

func withoutRegs(c CPUState) CPUState {
	c.regs = ""
	return c
}

// A vCPU whose registers did not move between two reads, while another's
// did, is stuck; a halted one, or one of a machine where nothing moved,
// is not.
func TestMarkStuck(t *testing.T) {
	read := func(rax0, rax1 int, halted1 bool) []CPUState {
		hlt := map[bool]string{false: "0", true: "1"}[halted1]
		cs, err := parseCPUStates(fmt.Sprintf("CPU#0\nRAX=%x\nRIP=4000 CPL=3 HLT=0\nCPU#1\nRAX=%x\nRIP=ffffffff818014b0 CPL=0 HLT=%s\n", rax0, rax1, hlt))
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	got := markStuck(read(1, 7, false), read(2, 7, false))
	if got[0].Stuck || !got[1].Stuck {
		t.Fatalf("vCPU 0 ran, vCPU 1 did not: stuck %v %v, want false true", got[0].Stuck, got[1].Stuck)
	}
	if d := describeCPUs(got); !strings.Contains(d, "vCPU 1 at 0xffffffff818014b0, no register changed in 1s while another vCPU ran (QEMU 7.2's round-robin") {
		t.Errorf("described %q", d)
	}
	if got := markStuck(read(1, 7, true), read(2, 7, true)); got[1].Stuck {
		t.Error("a halted vCPU waits for an interrupt: not stuck")
	}
	if got := markStuck(read(1, 7, false), read(1, 7, false)); got[0].Stuck || got[1].Stuck {
		t.Error("nothing moved (a paused machine): no vCPU is singled out")
	}
	if got := markStuck(read(1, 7, false), read(2, 8, false)); got[0].Stuck || got[1].Stuck {
		t.Error("both ran: none stuck")
	}
}

// parseCPUStates reads QEMU 7.2's "info registers -a": every CPU's RIP
// (EIP before long mode), CPL and HLT; text without a CPU, or a CPU
// without its PC, is an error.
func TestParseCPUStates(t *testing.T) {
	got, err := parseCPUStates("\r\nCPU#0\r\nRAX=0 RBX=1\r\nRIP=ffffffff81c5f2a6 RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=1\r\n" +
		"XMM00=0000000000000000 0000000000000000\r\n\r\nCPU#1\r\nEIP=00012839 EFL=00000246 [---Z-P-] CPL=3 II=0 A20=1 SMM=0 HLT=0\r\n")
	want := []CPUState{{Index: 0, PC: 0xffffffff81c5f2a6, Halted: true}, {Index: 1, PC: 0x12839, CPL: 3}}
	if err != nil || len(got) != 2 || withoutRegs(got[0]) != want[0] || withoutRegs(got[1]) != want[1] {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	if !strings.Contains(got[0].regs, "XMM00=") || strings.Contains(got[0].regs, "CPL=3") {
		t.Errorf("CPU#0's registers %q: want its own lines, all of them", got[0].regs)
	}
	if d := describeCPUs(got); d != "vCPU 0 at 0xffffffff81c5f2a6, halted; vCPU 1 at 0x12839, user space" {
		t.Errorf("described %q", d)
	}
	if w := whereCPUs(nil, errors.New("qmp: context deadline exceeded")); w != "where the vCPUs were is unknown (qmp: context deadline exceeded)" {
		t.Errorf("a monitor that cannot say: %q", w)
	}
	for _, bad := range []string{"", "unknown command: 'info'", "CPU#0\nRAX=0\n", "CPU#x\nRIP=1\n", "CPU#0\nRIP=zz CPL=0\n"} {
		if _, err := parseCPUStates(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The plugin's options follow the guest: several vCPUs take turns and,
// with the cache model, get the coherent one, two hardware threads to a
// core when asked; the result cache's machine holds them.
func TestICountMachinePlugin(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want []string
		not  []string
	}{
		{Config{CPUs: 1, CacheModel: true}, []string{",cache=on,"}, []string{"quantum=", "smt=", "coherent"}},
		{Config{CPUs: 6, CacheModel: true}, []string{",cache=coherent,", ",quantum=1000,"}, []string{"smt="}},
		{Config{CPUs: 6, CacheModel: true, SMT2: true}, []string{",cache=coherent,smt=2,quantum=1000,"}, nil},
		{Config{CPUs: 6, SMT2: true}, []string{",quantum=1000,"}, []string{"smt=", "cache="}},
	} {
		tc.cfg.Kernel, tc.cfg.Initrd, tc.cfg.Accel, tc.cfg.Plugin = "k", "i", AccelTCG, "/x/kcicount-abc.so"
		m, err := ICountMachine(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		machine := strings.Join(m, " ")
		for _, w := range tc.want {
			if !strings.Contains(machine, w) {
				t.Errorf("%+v: no %q in %s", tc.cfg, w, machine)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(machine, w) {
				t.Errorf("%+v: %q in %s", tc.cfg, w, machine)
			}
		}
	}
}

// Several vCPUs under TCG go without CMPXCHG16B, whose flags QEMU 7.2
// gets wrong once cpu_exec returns between it and the next instruction
// that sets flags (the turns do, every 1000 instructions); one vCPU keeps
// the identity as it is. The record says so.
func TestIdentityWithoutCX16(t *testing.T) {
	id, err := LookupIdentity("")
	if err != nil {
		t.Fatal(err)
	}
	if cpu, about := id.TCG(1); cpu != id.CPU || about != id.About {
		t.Errorf("one vCPU: %q (%q), want the identity unchanged", cpu, about)
	}
	cpu, about := id.TCG(6)
	if cpu != id.CPU+",-cx16" || !strings.Contains(about, "without CMPXCHG16B") {
		t.Errorf("six vCPUs: %q (%q), want %q and a reason", cpu, about, id.CPU+",-cx16")
	}
	args, err := QemuArgs(Config{Kernel: "k", Initrd: "i", Accel: AccelTCG, CPUs: 2}, Paths{QMP: "q", Events: "e", Console: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if got := argValue(t, args, "-cpu"); len(got) != 1 || got[0] != cpu {
		t.Errorf("-cpu %q with two vCPUs: want %q", got, cpu)
	}
}
