package bench

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/kci-dev/kci/bpf"
	"github.com/kci-dev/kci/wire"
)

// The context accountant (bpf/c/acct.bpf.c) splits every CPU's time in
// the window by what ran: the traffic threads' read and write syscalls,
// the rest of the traffic threads, the agent's own threads, other tasks,
// hardirqs, and each softirq vector. Whole-path is their sum but idle and
// the agent's own; the receive softirq (NET_RX) is the part that moves
// only when the packet's own receive work does.

// accountant is the loaded and attached accountant of the guest run.
type accountant struct {
	coll    *ebpf.Collection
	links   []link.Link
	skipped []string // attach points the kernel lacks
	tracked []int    // the traffic threads of the current variant
}

// startAccountant loads and attaches the accountant. An attach point the
// kernel does not have is left out and named (a missing hardirq
// tracepoint's interrupts then count as the context they interrupt).
func startAccountant(kernel *btf.Spec) (*accountant, error) {
	spec, err := bpf.AcctSpec()
	if err != nil {
		return nil, fmt.Errorf("accountant: %w", err)
	}
	if err := spec.Variables[bpf.AcctAgentTGID].Set(uint32(os.Getpid())); err != nil {
		return nil, fmt.Errorf("accountant: %w", err)
	}
	a := &accountant{}
	for name, ps := range spec.Programs {
		if !kernelHas(kernel, ps) {
			a.skipped = append(a.skipped, ps.AttachTo)
			delete(spec.Programs, name)
		}
	}
	sort.Strings(a.skipped)
	if a.coll, err = ebpf.NewCollection(spec); err != nil {
		return nil, fmt.Errorf("accountant: load: %w", err)
	}
	for _, name := range sortedKeys(a.coll.Programs) {
		l, err := link.AttachTracing(link.TracingOptions{Program: a.coll.Programs[name]})
		if err != nil {
			return nil, errors.Join(fmt.Errorf("accountant: attach %s: %w", name, err), a.close())
		}
		a.links = append(a.links, l)
	}
	return a, nil
}

// kernelHas says whether the kernel has ps's attach point: a function
// for fentry/fexit, a tracepoint for tp_btf.
func kernelHas(kernel *btf.Spec, ps *ebpf.ProgramSpec) bool {
	if ps.AttachType == ebpf.AttachTraceFEntry || ps.AttachType == ebpf.AttachTraceFExit {
		var fn *btf.Func
		return kernel.TypeByName(ps.AttachTo, &fn) == nil
	}
	var typ *btf.Typedef
	return kernel.TypeByName("btf_trace_"+ps.AttachTo, &typ) == nil
}

// track names the threads whose read and write are the packet path,
// in place of the previous variant's.
func (a *accountant) track(tids []int) error {
	m := a.coll.Maps[bpf.AcctTrafficMap]
	for _, tid := range a.tracked {
		if err := m.Delete(uint32(tid)); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("accountant: thread %d: %w", tid, err)
		}
	}
	a.tracked = nil
	for _, tid := range tids {
		if err := m.Put(uint32(tid), bpf.AcctTrafficThread); err != nil {
			return fmt.Errorf("accountant: thread %d: %w", tid, err)
		}
		a.tracked = append(a.tracked, tid)
	}
	return nil
}

// acctSnap is the accountant read at one edge of the window.
type acctSnap struct {
	at       time.Duration // CLOCK_MONOTONIC, the clock the programs read
	contexts []wire.ContextTime
	sent     uint64
}

// read takes the accountant's snapshot.
func (a *accountant) read() (acctSnap, error) {
	var s acctSnap
	var err error
	if s.contexts, err = a.contexts(); err != nil {
		return s, err
	}
	if s.sent, err = a.sentNow(); err != nil {
		return s, err
	}
	s.at = rawMono()
	return s, nil
}

// sentNow is the datagrams the traffic has written so far.
func (a *accountant) sentNow() (uint64, error) {
	var per []uint64
	if err := a.coll.Maps[bpf.AcctSentMap].Lookup(uint32(0), &per); err != nil {
		return 0, fmt.Errorf("accountant: sent: %w", err)
	}
	var sum uint64
	for _, n := range per {
		sum += n
	}
	return sum, nil
}

// contexts sums the categories over the CPUs.
func (a *accountant) contexts() ([]wire.ContextTime, error) {
	out := make([]wire.ContextTime, len(bpf.AcctCategories))
	for i, name := range bpf.AcctCategories {
		out[i].Name = name
		var ns, n []uint64
		if err := a.coll.Maps[bpf.AcctNsMap].Lookup(uint32(i), &ns); err != nil {
			return nil, fmt.Errorf("accountant: %s: %w", name, err)
		}
		if err := a.coll.Maps[bpf.AcctEntriesMap].Lookup(uint32(i), &n); err != nil {
			return nil, fmt.Errorf("accountant: %s: %w", name, err)
		}
		for c := range ns {
			out[i].Ns += ns[c]
			out[i].Entries += n[c]
		}
	}
	return out, nil
}

// addContexts puts the accountant's window (b − a) in c: the categories,
// the datagrams sent, and the window's length summed over the CPUs.
func addContexts(c *wire.Cost, a, b acctSnap, ncpu int) {
	if a.contexts == nil || b.contexts == nil || len(a.contexts) != len(b.contexts) {
		return
	}
	c.Contexts = make([]wire.ContextTime, len(b.contexts))
	for i, x := range b.contexts {
		y := a.contexts[i]
		c.Contexts[i] = wire.ContextTime{Name: x.Name, Ns: x.Ns - y.Ns, Entries: x.Entries - y.Entries}
	}
	c.AcctPackets = b.sent - a.sent
	c.AcctWindowNs = uint64(b.at-a.at) * uint64(ncpu)
}

// jitRanges are the accountant's JIT'd programs (none where the kernel
// will not say).
func (a *accountant) jitRanges() []wire.CodeRange {
	var rs []wire.CodeRange
	for _, name := range sortedKeys(a.coll.Programs) {
		if info, err := a.coll.Programs[name].Info(); err == nil {
			rs = append(rs, jitRanges(name, info)...)
		}
	}
	return rs
}

func (a *accountant) close() error {
	var errs []error
	for _, l := range a.links {
		errs = append(errs, l.Close())
	}
	a.links = nil
	if a.coll != nil {
		a.coll.Close()
	}
	return errors.Join(errs...)
}

// skippedNote names the attach points the accountant went without.
func (a *accountant) skippedNote() string {
	if len(a.skipped) == 0 {
		return ""
	}
	return "no attach point " + strings.Join(a.skipped, ", ")
}
