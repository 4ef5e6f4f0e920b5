// Package profile samples the guest kernel's stacks on a set of CPUs and
// folds them, symbolised from /proc/kallsyms, into the lines a flame
// graph is drawn from; the bench profiles each variant's window with it.
package profile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/kci-dev/kci/bpf"
	"github.com/kci-dev/kci/wire"
)

// Profiler samples kernel stacks on a set of CPUs with a BPF perf_event
// program on cpu-clock (a software event, so it works under TCG too).
type Profiler struct {
	coll   *ebpf.Collection
	events []int
	links  []link.Link
	cpus   []int
	freq   int
	start  time.Time
}

// Start starts sampling cpus at freqHz. Stop ends it.
func Start(cpus []int, freqHz int) (*Profiler, error) {
	if len(cpus) == 0 {
		return nil, errors.New("profile: no CPUs to sample")
	}
	if freqHz <= 0 {
		return nil, fmt.Errorf("profile: frequency %d Hz", freqHz)
	}
	spec, err := bpf.ProfileSpec()
	if err != nil {
		return nil, fmt.Errorf("profile: %w", err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("profile: load sampler: %w", err)
	}
	p := &Profiler{coll: coll, cpus: cpus, freq: freqHz}
	prog := coll.Programs[bpf.ProfileProgram]
	for _, cpu := range cpus {
		fd, err := openCPUClock(cpu, freqHz)
		if err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("profile: cpu %d: %w", cpu, err)
		}
		p.events = append(p.events, fd)
		l, err := link.AttachRawLink(link.RawLinkOptions{Target: fd, Program: prog, Attach: ebpf.AttachPerfEvent})
		if err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("profile: attach to cpu %d: %w", cpu, err)
		}
		p.links = append(p.links, l)
	}
	// Enable only once every CPU is attached, so all start together.
	for i, fd := range p.events {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("profile: enable cpu %d: %w", p.cpus[i], err)
		}
	}
	p.start = time.Now()
	return p, nil
}

// cpuClockAttr is the perf event the sampler hangs off: cpu-clock at freq
// samples per second, created disabled.
func cpuClockAttr(freqHz int) unix.PerfEventAttr {
	return unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: uint64(freqHz),
		Bits:   unix.PerfBitFreq | unix.PerfBitDisabled,
	}
}

func openCPUClock(cpu, freqHz int) (int, error) {
	attr := cpuClockAttr(freqHz)
	fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("perf_event_open cpu-clock: %w", err)
	}
	return fd, nil
}

// Stop ends sampling and returns the folded stacks ("comm;f1;...;fn N",
// root first), symbolised from /proc/kallsyms. Call it while the programs
// under test are still loaded: their JIT symbols leave kallsyms with them.
func (p *Profiler) Stop() (Stats, string, error) {
	defer func() { _ = p.Close() }()
	st := Stats{CPUs: p.cpus, FreqHz: p.freq}
	for _, fd := range p.events {
		unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0) //nolint:errcheck // closing follows
	}
	st.Elapsed = time.Since(p.start)
	for _, l := range p.links {
		_ = l.Close()
	}
	p.links = nil

	counts, err := readProfileCounts(p.coll.Maps[bpf.ProfileCountsMap])
	if err != nil {
		return st, "", fmt.Errorf("profile: %w", err)
	}
	stacks := map[int32][]uint64{}
	sm := p.coll.Maps[bpf.ProfileStacksMap]
	for _, c := range counts {
		if c.kstack < 0 {
			continue
		}
		if _, ok := stacks[c.kstack]; ok {
			continue
		}
		pcs := make([]uint64, bpf.ProfileStackDepth)
		if err := sm.Lookup(uint32(c.kstack), pcs); err != nil {
			return st, "", fmt.Errorf("profile: stack %d: %w", c.kstack, err)
		}
		stacks[c.kstack] = pcs
	}
	var per []uint64
	if err := p.coll.Maps[bpf.ProfileDroppedMap].Lookup(uint32(0), &per); err == nil {
		for _, v := range per {
			st.Dropped += v
		}
	}
	syms, err := loadKallsyms()
	if err != nil {
		return st, "", fmt.Errorf("profile: %w", err)
	}
	folded, n := foldStacks(counts, stacks, syms)
	st.Samples = n
	return st, folded, nil
}

// Close releases the sampler; Stop calls it.
func (p *Profiler) Close() error {
	for _, l := range p.links {
		_ = l.Close()
	}
	p.links = nil
	for _, fd := range p.events {
		_ = unix.Close(fd)
	}
	p.events = nil
	if p.coll != nil {
		p.coll.Close()
		p.coll = nil
	}
	return nil
}

// Stats describes one sampling session.
type Stats struct {
	CPUs    []int
	FreqHz  int
	Elapsed time.Duration
	Samples uint64
	Dropped uint64
}

// stackCount is one counts map entry.
type stackCount struct {
	comm   string
	kstack int32
	n      uint64
}

func readProfileCounts(m *ebpf.Map) ([]stackCount, error) {
	if m == nil {
		return nil, errors.New("sampler has no counts map")
	}
	var (
		k   bpf.ProfileKey
		v   uint64
		out []stackCount
	)
	it := m.Iterate()
	for it.Next(&k, &v) {
		b := make([]byte, 0, len(k.Comm))
		for _, c := range k.Comm {
			if c == 0 {
				break
			}
			b = append(b, byte(c))
		}
		out = append(out, stackCount{comm: string(b), kstack: k.Kstack, n: v})
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("read counts: %w", err)
	}
	return out, nil
}

// foldStacks turns counted stack ids into folded lines, root first, merging
// stacks that symbolise alike (same functions, different offsets), sorted
// for stable output. It returns the lines and the samples they hold.
func foldStacks(counts []stackCount, stacks map[int32][]uint64, syms *kallsyms) (string, uint64) {
	merged := map[string]uint64{}
	var total uint64
	for _, c := range counts {
		frames := []string{frameSafe(c.comm)}
		switch {
		case c.kstack == -int32(unix.EFAULT):
			frames = append(frames, wire.FrameUser)
		case c.kstack == -int32(unix.EEXIST):
			frames = append(frames, wire.FrameLost) // its bucket held another stack
		case c.kstack < 0:
			frames = append(frames, "[no_stack_"+unix.ErrnoName(unix.Errno(-c.kstack))+"]")
		default:
			pcs := stacks[c.kstack]
			// The map holds the leaf first, zero-padded.
			n := 0
			for n < len(pcs) && pcs[n] != 0 {
				n++
			}
			for i := n - 1; i >= 0; i-- {
				frames = append(frames, frameSafe(syms.lookup(pcs[i])))
			}
		}
		merged[strings.Join(frames, ";")] += c.n
		total += c.n
	}
	keys := make([]string, 0, len(merged))
	for k := range merged {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s %d\n", k, merged[k])
	}
	return b.String(), total
}

// frameSafe keeps a frame name from breaking the folded format.
func frameSafe(s string) string {
	if s == "" {
		return wire.FrameUnknown
	}
	return strings.Map(func(r rune) rune {
		if r == ';' || r == ' ' || r == '\n' || r == '\t' {
			return '_'
		}
		return r
	}, s)
}

// kallsyms maps kernel text addresses to function names.
type kallsyms struct {
	addrs []uint64
	names []string
}

// parseKallsyms reads /proc/kallsyms text symbols (t, T, w, W), sorted by
// address. All addresses zero means kptr_restrict hid them.
func parseKallsyms(r io.Reader) (*kallsyms, error) {
	type sym struct {
		addr uint64
		name string
	}
	var syms []sym
	hidden := true
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 {
			continue
		}
		switch f[1] {
		case "t", "T", "w", "W":
		default:
			continue
		}
		a, err := strconv.ParseUint(f[0], 16, 64)
		if err != nil {
			return nil, fmt.Errorf("kallsyms: %q: %w", sc.Text(), err)
		}
		if a != 0 {
			hidden = false
		}
		syms = append(syms, sym{a, f[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("kallsyms: %w", err)
	}
	if len(syms) == 0 {
		return nil, errors.New("kallsyms: no text symbols (CONFIG_KALLSYMS off?)")
	}
	if hidden {
		return nil, errKptrRestricted
	}
	sort.SliceStable(syms, func(i, j int) bool { return syms[i].addr < syms[j].addr })
	k := &kallsyms{}
	for _, s := range syms {
		if n := len(k.addrs); n > 0 && k.addrs[n-1] == s.addr {
			// Several names for one address: keep the function, not a
			// section marker (__softirqentry_text_end, _stext).
			if markerRank(s.name) < markerRank(k.names[n-1]) {
				k.names[n-1] = s.name
			}
			continue
		}
		k.addrs = append(k.addrs, s.addr)
		k.names = append(k.names, s.name)
	}
	return k, nil
}

// markerRank is 1 for names that mark a section or padding rather than
// name a function, 0 otherwise.
func markerRank(name string) int {
	switch name {
	case "_text", "_stext", "_etext", "_sinittext", "_einittext":
		return 1
	}
	if strings.HasSuffix(name, "_start") || strings.HasSuffix(name, "_end") ||
		strings.HasPrefix(name, "__pfx_") || strings.HasPrefix(name, "__cfi_") {
		return 1
	}
	return 0
}

var errKptrRestricted = errors.New("kallsyms: addresses hidden (kernel.kptr_restrict)")

// lookup names the function holding addr: the closest symbol at or below.
func (k *kallsyms) lookup(addr uint64) string {
	i := sort.Search(len(k.addrs), func(i int) bool { return k.addrs[i] > addr })
	if i == 0 {
		return wire.FrameUnknown
	}
	return k.names[i-1]
}

// loadKallsyms reads the running kernel's symbols, lifting kptr_restrict
// once if it hides the addresses (the agent is root in a throwaway guest).
func loadKallsyms() (*kallsyms, error) {
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return nil, fmt.Errorf("kallsyms: %w", err)
	}
	k, err := parseKallsyms(bytes.NewReader(b))
	if !errors.Is(err, errKptrRestricted) {
		return k, err
	}
	if werr := os.WriteFile("/proc/sys/kernel/kptr_restrict", []byte("0\n"), 0o644); werr != nil {
		return nil, fmt.Errorf("%w; lifting it: %w", err, werr)
	}
	if b, err = os.ReadFile("/proc/kallsyms"); err != nil {
		return nil, fmt.Errorf("kallsyms: %w", err)
	}
	return parseKallsyms(bytes.NewReader(b))
}
