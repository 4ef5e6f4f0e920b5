// Package profile turns CPU profiles sampled in the guest (folded stacks,
// symbolised there) into what a developer reads: a flame graph SVG, a
// pprof profile, a top-N table of symbols and a differential view of
// patched against base. It runs on the host: no guest, no QEMU.
package profile

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Stack is one folded line: frames root first, and how many samples had
// exactly this stack.
type Stack struct {
	Frames []string
	Count  int64
}

// Profile is a set of folded stacks. The root frame of each stack is the
// task name (comm), as in perf's flame graphs; the rest are functions.
type Profile struct {
	Stacks []Stack
	// FreqHz is the sampling rate, when known: it turns samples into CPU
	// time in the pprof output.
	FreqHz int
}

// ParseFolded reads "f1;f2;...;fn COUNT" lines. Blank lines and lines
// starting with # are skipped; identical stacks are summed.
func ParseFolded(r io.Reader) (*Profile, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	idx := map[string]int{}
	p := &Profile{}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i <= 0 {
			return nil, fmt.Errorf("folded line %d: %q: want \"frames count\"", n, line)
		}
		count, err := strconv.ParseInt(line[i+1:], 10, 64)
		if err != nil || count < 0 {
			return nil, fmt.Errorf("folded line %d: count %q is not a non-negative integer", n, line[i+1:])
		}
		stack := strings.TrimSpace(line[:i])
		if stack == "" {
			return nil, fmt.Errorf("folded line %d: no frames", n)
		}
		frames := strings.Split(stack, ";")
		for _, f := range frames {
			if f == "" {
				return nil, fmt.Errorf("folded line %d: empty frame in %q", n, stack)
			}
		}
		if j, ok := idx[stack]; ok {
			p.Stacks[j].Count += count
			continue
		}
		idx[stack] = len(p.Stacks)
		p.Stacks = append(p.Stacks, Stack{Frames: frames, Count: count})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("folded: %w", err)
	}
	return p, nil
}

// ParseFoldedString is ParseFolded on a string (the guest's payload).
func ParseFoldedString(s string) (*Profile, error) {
	return ParseFolded(strings.NewReader(s))
}

// Total is the number of samples.
func (p *Profile) Total() int64 {
	var t int64
	for _, s := range p.Stacks {
		t += s.Count
	}
	return t
}

// WriteFolded writes the stacks one per line, sorted, so equal profiles
// give equal files.
func (p *Profile) WriteFolded(w io.Writer) error {
	lines := make([]string, 0, len(p.Stacks))
	for _, s := range p.Stacks {
		lines = append(lines, strings.Join(s.Frames, ";")+" "+strconv.FormatInt(s.Count, 10))
	}
	sort.Strings(lines)
	bw := bufio.NewWriter(w)
	for _, l := range lines {
		// bufio keeps the first error; Flush returns it.
		_, _ = bw.WriteString(l)
		_ = bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Merge sums profiles (e.g. one variant's repetitions). The rate is kept
// when all agree.
func Merge(ps ...*Profile) *Profile {
	out := &Profile{}
	idx := map[string]int{}
	for i, p := range ps {
		if i == 0 {
			out.FreqHz = p.FreqHz
		} else if p.FreqHz != out.FreqHz {
			out.FreqHz = 0
		}
		for _, s := range p.Stacks {
			k := strings.Join(s.Frames, ";")
			if j, ok := idx[k]; ok {
				out.Stacks[j].Count += s.Count
				continue
			}
			idx[k] = len(out.Stacks)
			out.Stacks = append(out.Stacks, Stack{Frames: append([]string(nil), s.Frames...), Count: s.Count})
		}
	}
	return out
}

// Kind is what a frame is, for colouring and for telling the reader where
// time went.
type Kind int

const (
	KindKernel  Kind = iota // a kernel function
	KindBPF                 // JIT-compiled BPF: programs, trampolines, dispatchers
	KindTask                // the root frame: the task's name
	KindUser                // a sample taken in user mode
	KindUnknown             // lost or unsymbolised
)

func (k Kind) String() string {
	switch k {
	case KindKernel:
		return "kernel"
	case KindBPF:
		return "bpf"
	case KindTask:
		return "task"
	case KindUser:
		return "user"
	}
	return "unknown"
}

// FrameKind classifies the frame name at depth (0 = root).
func FrameKind(name string, depth int) Kind {
	switch {
	case depth == 0:
		return KindTask
	case name == "[user]":
		return KindUser
	case strings.HasPrefix(name, "["):
		return KindUnknown
	case strings.HasPrefix(name, "bpf_prog_"), strings.HasPrefix(name, "bpf_trampoline_"),
		strings.HasPrefix(name, "bpf_dispatcher_"):
		return KindBPF
	}
	return KindKernel
}
