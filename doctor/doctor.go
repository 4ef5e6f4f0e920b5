// Package doctor checks the host for what makes kci's numbers valid or
// possible at all: a working KVM (or knowing it is TCG), KVM halt polling,
// CPU frequency clamping, room for a kernel build, the toolchain, and the
// default base source. Each check has a one-line verdict and the fix.
package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/internal/proc"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/vm"
)

// Status of a check. Only Fail makes results invalid or impossible.
type Status string

const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Check is one verdict.
type Check struct {
	Name   string `json:"name"`
	Status Status `json:"status"`
	Detail string `json:"detail,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// Options say what to check against.
type Options struct {
	// Pin are the host CPUs kci pins vCPUs to; nil = every online CPU.
	Pin []int
	// CacheDir is where kernels are built (free space) and the KVM
	// probe's choice is kept; "" = $KCI_CACHE or ~/.cache/kci.
	CacheDir string
	// BaseSource is the default base's tarball; "" = Debian's
	// linux-source-6.12.
	BaseSource string
	QEMU       string // "" = qemu-system-x86_64
	// Kernel and Initrd, when both set, let the KVM check probe with a
	// real boot if no choice is cached yet.
	Kernel, Initrd string
	// NeedClang adds clang to the toolchain (BPF objects rebuilt).
	NeedClang bool
	// Root prefixes the /sys and /proc paths read (a host's filesystem
	// mounted elsewhere, or a test tree); "" = the real ones.
	Root string
}

// Thresholds for a kernel build plus a guest.
const (
	diskFail = 5 << 30
	diskWarn = 15 << 30
	memFail  = 2 << 30
	memWarn  = 4 << 30
)

// floor grades a quantity that must not run low: below fail is Fail,
// below warn is Warn, each with its fix.
type floor struct {
	fail, warn       uint64
	fixFail, fixWarn string
}

var (
	diskFloor = floor{diskFail, diskWarn,
		"a kernel build needs about " + gib(diskFail) + ": free space or set KCI_CACHE elsewhere",
		"base + patched builds of several trees want " + gib(diskWarn)}
	memFloor = floor{memFail, memWarn,
		"a kernel build plus a 1 GiB guest needs " + gib(memFail) + ": stop other work",
		"parallel compile jobs and the guest want " + gib(memWarn)}
)

// grade returns v's status and the fix, empty when v is enough.
func (f floor) grade(v uint64) (Status, string) {
	switch {
	case v < f.fail:
		return Fail, f.fixFail
	case v < f.warn:
		return Warn, f.fixWarn
	}
	return OK, ""
}

// Run performs every check.
func Run(ctx context.Context, o Options) []Check {
	if o.QEMU == "" {
		o.QEMU = "qemu-system-x86_64"
	}
	if o.BaseSource == "" {
		o.BaseSource = kernel.DebianTarball
	}
	if o.CacheDir == "" {
		if d, err := cachedir.DefaultRoot(); err == nil {
			o.CacheDir = d
		}
	}
	kvm, mayUseKVM := checkKVM(ctx, o)
	checks := []Check{kvm, checkHaltPoll(o, mayUseKVM), checkFence(o, mayUseKVM), checkCPUFreq(o), checkDisk(o), checkMemory(o)}
	checks = append(checks, checkTools(ctx, o)...)
	return append(checks, checkBaseSource(o))
}

// Failed reports whether any check failed.
func Failed(checks []Check) bool {
	return slices.ContainsFunc(checks, func(c Check) bool { return c.Status == Fail })
}

func (o Options) path(p string) string { return filepath.Join(o.Root, p) }

func readTrim(p string) (string, error) {
	b, err := os.ReadFile(p)
	return strings.TrimSpace(string(b)), err
}

func checkHaltPoll(o Options, mayUseKVM bool) Check {
	c := Check{Name: "halt polling"}
	p := o.path("/sys/module/kvm/parameters/halt_poll_ns")
	v, err := readTrim(p)
	switch {
	case err != nil && !mayUseKVM:
		c.Status, c.Detail = OK, "not applicable: KVM not in use"
	case err != nil:
		c.Status, c.Detail = Warn, "cannot read "+p+": "+err.Error()
	case v == "0":
		c.Status, c.Detail = OK, "off (halt_poll_ns = 0)"
	case !mayUseKVM:
		c.Status, c.Detail = OK, fmt.Sprintf("on (halt_poll_ns = %s) but KVM is not in use", v)
	default:
		c.Status = Warn
		c.Detail = fmt.Sprintf("on (halt_poll_ns = %s): idle vCPUs spin on the host, guest CPU accounting is skewed", v)
		c.Fix = "echo 0 | sudo tee " + p
	}
	return c
}

// checkFence: a TCG guest of several vCPUs (--cpus N) is exact only with
// QEMU's main loop fenced (vm/fence.go), which needs SCHED_FIFO and a
// spare host CPU.
func checkFence(o Options, mayUseKVM bool) Check {
	c := Check{Name: "several vCPUs under TCG"}
	if mayUseKVM {
		c.Status, c.Detail = OK, "not applicable: KVM runs the guests"
		return c
	}
	if err := vm.FenceCheck(o.Pin); err != nil {
		c.Status = Warn
		c.Detail = "QEMU's main loop cannot be fenced (" + err.Error() + "): with --cpus N two boots of one seed may count differently"
		c.Fix = "run kci as root, or give it CAP_SYS_NICE (sudo setcap cap_sys_nice+ep $(command -v kci))"
		return c
	}
	c.Status, c.Detail = OK, "QEMU's main loop can be fenced (SCHED_FIFO on a host CPU of its own): --cpus N boots repeat exactly"
	return c
}

func onlineCPUs(o Options) []int {
	if s, err := readTrim(o.path("/sys/devices/system/cpu/online")); err == nil {
		if cpus, err := vm.ParseCPUList(s); err == nil {
			return cpus
		}
	}
	return nil
}

func checkCPUFreq(o Options) Check {
	c := Check{Name: "cpu frequency"}
	cpus := o.Pin
	what := "pinned"
	if len(cpus) == 0 {
		cpus, what = onlineCPUs(o), "online"
	}
	var loose []string
	var clamped, noFreq int
	for _, cpu := range cpus {
		dir := o.path(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpufreq", cpu))
		lo, err1 := readTrim(filepath.Join(dir, "scaling_min_freq"))
		hi, err2 := readTrim(filepath.Join(dir, "scaling_max_freq"))
		switch {
		case err1 != nil || err2 != nil:
			noFreq++
		case lo != hi:
			loose = append(loose, fmt.Sprintf("cpu%d %s-%s kHz", cpu, lo, hi))
		default:
			clamped++
		}
	}
	switch {
	case len(cpus) == 0:
		c.Status, c.Detail = Warn, "cannot tell which CPUs are online"
	case len(loose) > 0:
		c.Status = Warn
		c.Detail = fmt.Sprintf("not clamped on %d of %d %s CPUs (%s): frequency changes add noise", len(loose), len(cpus), what, strings.Join(loose, ", "))
		c.Fix = "set scaling_min_freq = scaling_max_freq on those CPUs, e.g. sudo cpupower -c " + cpuList(cpus) + " frequency-set -d F -u F"
	case noFreq == len(cpus):
		c.Status, c.Detail = OK, "no cpufreq on the "+what+" CPUs (fixed frequency or virtualised)"
	default:
		c.Status, c.Detail = OK, fmt.Sprintf("clamped on all %d %s CPUs", clamped, what)
	}
	return c
}

func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

func gib(n uint64) string { return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30)) }

func checkDisk(o Options) Check {
	c := Check{Name: "disk"}
	dir := o.CacheDir
	// The cache may not exist yet: measure the nearest existing parent.
	for dir != "" {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		c.Status, c.Detail = Warn, fmt.Sprintf("statfs %s: %v", dir, err)
		return c
	}
	free := st.Bavail * uint64(st.Bsize)
	c.Detail = fmt.Sprintf("%s free for the cache at %s", gib(free), o.CacheDir)
	c.Status, c.Fix = diskFloor.grade(free)
	return c
}

func checkMemory(o Options) Check {
	c := Check{Name: "memory"}
	b, err := os.ReadFile(o.path("/proc/meminfo"))
	if err != nil {
		c.Status, c.Detail = Warn, err.Error()
		return c
	}
	var avail uint64
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			avail = kb << 10
		}
	}
	c.Detail = gib(avail) + " available"
	c.Status, c.Fix = memFloor.grade(avail)
	return c
}

// tool is one program kci runs, and what lacking it means.
type tool struct {
	name    string
	args    []string
	purpose string
	fix     string
}

func tools(o Options) []tool {
	ts := []tool{
		{"gcc", []string{"--version"}, "kernel build", "sudo apt-get install gcc"},
		{"make", []string{"--version"}, "kernel build", "sudo apt-get install make"},
		{"bison", []string{"--version"}, "kernel build", "sudo apt-get install bison"},
		{"flex", []string{"--version"}, "kernel build", "sudo apt-get install flex"},
		{"bc", []string{"--version"}, "kernel build", "sudo apt-get install bc"},
		{"pahole", []string{"--version"}, "BTF in the kernel (kfunc and map type probes)", "sudo apt-get install dwarves"},
		{o.QEMU, []string{"--version"}, "booting the kernels", "sudo apt-get install qemu-system-x86"},
		{"go", []string{"version"}, "building the initramfs (u-root and the guest agent)", "install Go (the version in go.mod) and put it on PATH"},
	}
	if o.NeedClang {
		ts = append(ts, tool{"clang", []string{"--version"}, "rebuilding the BPF objects", "sudo apt-get install clang llvm"})
	}
	return ts
}

func checkTools(ctx context.Context, o Options) []Check {
	var cs []Check
	for _, t := range tools(o) {
		c := Check{Name: "tool " + t.name}
		v, err := version(ctx, t.name, t.args...)
		if err != nil {
			c.Status, c.Detail, c.Fix = Fail, fmt.Sprintf("needed for %s: %v", t.purpose, err), t.fix
		} else {
			c.Status, c.Detail = OK, v
		}
		cs = append(cs, c)
	}
	return cs
}

// version runs name --version under a deadline and returns its first
// line.
func version(ctx context.Context, name string, args ...string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("not found")
	}
	out, err := proc.Cmd{Name: path, Args: args, Timeout: 10 * time.Second, WaitDelay: time.Second}.Run(ctx)
	var pe *proc.Error
	if errors.As(err, &pe) {
		// One line for the check's row: the tool, how it ended and its
		// last word.
		msg := fmt.Sprintf("%s %s: %v", name, strings.Join(args, " "), pe.Err)
		if pe.Tail != "" {
			msg += ": " + lines.Last(pe.Tail, 1)
		}
		return "", errors.New(msg)
	}
	if err != nil {
		return "", err
	}
	return lines.First(strings.TrimSpace(string(out))), nil
}

func checkBaseSource(o Options) Check {
	c := Check{Name: "base source"}
	fi, err := os.Stat(o.BaseSource)
	if err != nil {
		c.Status, c.Detail = Fail, fmt.Sprintf("%s missing: the default base cannot be built", o.BaseSource)
		c.Fix = "sudo apt-get install linux-source-6.12 (or point the project's base at your own tree)"
		return c
	}
	c.Status, c.Detail = OK, fmt.Sprintf("%s (%d MiB)", o.BaseSource, fi.Size()>>20)
	return c
}
