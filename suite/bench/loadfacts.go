package bench

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/cilium/ebpf"

	"github.com/kci-dev/kci/wire"
)

// loadWithFacts loads spec with the verifier's statistics log on and
// returns, per program in name order, what veristat compares: verified
// instructions, translated and JIT'd size, the verifier's own time, and
// the collection's load time measured around the load. A failed load
// returns the error (it names the program) and no facts.
func loadWithFacts(spec *ebpf.CollectionSpec) (*ebpf.Collection, []wire.ProgLoad, error) {
	opts := ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelStats}}
	start := time.Now()
	coll, err := ebpf.NewCollectionWithOptions(spec, opts)
	took := time.Since(start)
	if err != nil {
		return nil, nil, err
	}
	var loads []wire.ProgLoad
	names := make([]string, 0, len(coll.Programs))
	for n := range coll.Programs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		l, err := progFacts(n, coll.Programs[n])
		if err != nil {
			coll.Close()
			return nil, nil, err
		}
		l.LoadNs = took.Nanoseconds()
		loads = append(loads, l)
	}
	return coll, loads, nil
}

func progFacts(name string, p *ebpf.Program) (wire.ProgLoad, error) {
	l := wire.ProgLoad{Name: name, VerifyUs: verifyTime(p.VerifierLog)}
	info, err := p.Info()
	if err != nil {
		return l, fmt.Errorf("program %s info: %w", name, err)
	}
	l.VerifiedInsns, _ = info.VerifiedInstructions()
	// Both sizes need CAP_BPF and a JIT; the guest runs as root with the
	// JIT forced on (sanity checks it), so a missing size stays 0.
	l.XlatedBytes, _ = info.TranslatedSize()
	l.JitedBytes, _ = info.JitedSize()
	l.JIT = jitRanges(name, info)
	return l, nil
}

// jitRanges names each JIT'd function of a program: the program itself,
// then its subprograms as name/1, name/2...
func jitRanges(name string, info *ebpf.ProgramInfo) []wire.CodeRange {
	addrs, ok := info.JitedKsymAddrs()
	lens, ok2 := info.JitedFuncLens()
	if !ok || !ok2 || len(addrs) != len(lens) {
		return nil
	}
	var rs []wire.CodeRange
	for i, a := range addrs {
		n := name
		if i > 0 {
			n = fmt.Sprintf("%s/%d", name, i)
		}
		rs = append(rs, wire.CodeRange{Prog: n, Addr: uint64(a), Len: lens[i]})
	}
	return rs
}

var verifyTimeRE = regexp.MustCompile(`verification time (\d+) usec`)

// verifyTime is the "verification time N usec" of a stats-level verifier
// log, 0 when absent.
func verifyTime(log string) uint64 {
	m := verifyTimeRE.FindStringSubmatch(log)
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseUint(m[1], 10, 64) // the pattern is digits only
	return v
}
