package suite

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/kci-dev/kci/internal/kconfig"
	"github.com/kci-dev/kci/wire"
	"golang.org/x/sys/unix"
)

// lockdepOptions are the config options that mean lockdep runs.
var lockdepOptions = []string{"LOCKDEP", "PROVE_LOCKING", "DEBUG_LOCK_ALLOC", "DEBUG_LOCKDEP", "LOCK_STAT", "PROVE_RCU"}

// lockdepFiles exist only while lockdep is compiled in.
var lockdepFiles = []string{"/proc/lockdep", "/proc/lockdep_stats", "/sys/kernel/debug/lockdep"}

// sanityInput is what the guest read; checkSanity judges it.
type sanityInput struct {
	Config       []byte // decompressed /proc/config.gz; nil if unreadable
	ConfigErr    error
	PresentFiles []string // lockdep files that exist
	JITEnable    string   // /proc/sys/net/core/bpf_jit_enable
	Release      string
	Version      string
	Notes        []byte // /sys/kernel/notes
	NumCPU       int
	ClockSource  string
}

// checkSanity decides whether numbers from this kernel mean anything.
func checkSanity(in sanityInput) wire.Sanity {
	s := wire.Sanity{Release: in.Release, Version: strings.TrimSpace(in.Version), NumCPU: in.NumCPU, ClockSource: in.ClockSource}
	s.BuildID = buildID(in.Notes)
	if in.Config == nil {
		s.Problems = append(s.Problems, fmt.Sprintf("cannot check the kernel config: /proc/config.gz: %v (CONFIG_IKCONFIG_PROC off?)", in.ConfigErr))
	} else {
		cfg := parseConfig(in.Config)
		for _, o := range kconfig.Forbidden {
			if v := cfg[o]; v == "y" || v == "m" {
				s.Problems = append(s.Problems, fmt.Sprintf("CONFIG_%s=%s: debug option voids performance numbers", o, v))
				for _, l := range lockdepOptions {
					if l == o {
						s.Lockdep = true
					}
				}
			}
		}
		for _, l := range lockdepOptions { // in case the policy list ever drops one
			if v := cfg[l]; (v == "y" || v == "m") && !s.Lockdep {
				s.Lockdep = true
				s.Problems = append(s.Problems, fmt.Sprintf("CONFIG_%s=%s: lockdep on", l, v))
			}
		}
	}
	for _, f := range in.PresentFiles {
		s.Lockdep = true
		s.Problems = append(s.Problems, "lockdep active at runtime: "+f+" exists")
	}
	switch v := strings.TrimSpace(in.JITEnable); v {
	case "1", "2":
		s.JIT = true
	default:
		s.Problems = append(s.Problems, fmt.Sprintf("BPF JIT off (net.core.bpf_jit_enable=%q): the interpreter's numbers say nothing about production", v))
	}
	if in.NumCPU < 1 {
		s.Problems = append(s.Problems, "cannot count online CPUs")
	}
	return s
}

// parseConfig maps option names (without CONFIG_) to values; "is not set"
// lines map to "n".
func parseConfig(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(l, "# CONFIG_"); ok {
			if name, ok := strings.CutSuffix(rest, " is not set"); ok {
				out[name] = "n"
			}
			continue
		}
		if rest, ok := strings.CutPrefix(l, "CONFIG_"); ok {
			if name, val, ok := strings.Cut(rest, "="); ok {
				out[name] = strings.Trim(val, `"`)
			}
		}
	}
	return out
}

// buildID finds the GNU build id note in /sys/kernel/notes (a sequence of
// ELF notes: namesz, descsz, type, name, desc, each 4-byte aligned).
func buildID(notes []byte) string {
	const ntGNUBuildID = 3
	align := func(n uint32) int { return int((n + 3) &^ 3) }
	for len(notes) >= 12 {
		namesz := binary.NativeEndian.Uint32(notes[0:])
		descsz := binary.NativeEndian.Uint32(notes[4:])
		typ := binary.NativeEndian.Uint32(notes[8:])
		rest := notes[12:]
		if align(namesz)+align(descsz) > len(rest) {
			return ""
		}
		name := rest[:namesz]
		desc := rest[align(namesz) : align(namesz)+int(descsz)]
		if typ == ntGNUBuildID && string(bytes.TrimRight(name, "\x00")) == "GNU" {
			return hex.EncodeToString(desc)
		}
		notes = rest[align(namesz)+align(descsz):]
	}
	return ""
}

// gatherSanity reads the running kernel's facts.
func gatherSanity() sanityInput {
	var in sanityInput
	in.Config, in.ConfigErr = readGzip("/proc/config.gz")
	for _, f := range lockdepFiles {
		if _, err := os.Stat(f); err == nil {
			in.PresentFiles = append(in.PresentFiles, f)
		}
	}
	if b, err := os.ReadFile("/proc/sys/net/core/bpf_jit_enable"); err == nil {
		in.JITEnable = string(b)
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		in.Release = unix.ByteSliceToString(u.Release[:])
	}
	if b, err := os.ReadFile("/proc/version"); err == nil {
		in.Version = string(b)
	}
	in.Notes, _ = os.ReadFile("/sys/kernel/notes")
	in.NumCPU = onlineCPUs()
	if b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); err == nil {
		in.ClockSource = strings.TrimSpace(string(b))
	}
	return in
}

func readGzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
}

// onlineCPUs counts /sys/devices/system/cpu/online ("0-3,5"), falling
// back to the Go runtime's count.
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	n, err := countCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		return runtime.NumCPU()
	}
	return n
}

func countCPUList(s string) (int, error) {
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return 0, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return 0, fmt.Errorf("cpu list %q: %w", s, err)
			}
		}
		n += b - a + 1
	}
	return n, nil
}
