package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// BpfstatsExt is the suffix of the user's per-variant stats files.
const BpfstatsExt = ".bpfstats"

// preloaded are the BPF iterators the kernel loads itself (BPF_PRELOAD);
// bpftool lists them in every dump but they belong to no variant.
var preloaded = map[string]bool{"dump_bpf_map": true, "dump_bpf_prog": true}

// ParseBpfstats reads one `bpftool -j prog show` dump, optionally preceded
// by '#' comment lines. Programs without run stats (bpftool omits the
// fields when nothing ran) come back with zero counters; the kernel's
// preloaded iterators are dropped. A dump it cannot read is an error
// saying where (DescribeBpfstatsError words it).
func ParseBpfstats(data []byte) ([]ProgStat, error) {
	var body bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(bytes.TrimLeft(line, " \t"), []byte("#")) {
			// Blanked, not dropped: a syntax error's offset stays the
			// file's.
			line = bytes.Repeat([]byte(" "), len(line))
		}
		body.Write(line)
		body.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	trimmed := bytes.TrimSpace(body.Bytes())
	if len(trimmed) == 0 {
		return nil, errNoDump
	}
	type prog struct {
		Name      string `json:"name"`
		Type      string `json:"type"`
		RunTimeNs uint64 `json:"run_time_ns"`
		RunCnt    uint64 `json:"run_cnt"`
	}
	var progs []prog
	if bytes.HasPrefix(trimmed, []byte("{")) {
		// bpftool prints a bare object for `prog show id N`.
		var p prog
		if err := json.Unmarshal(body.Bytes(), &p); err != nil {
			return nil, err
		}
		progs = []prog{p}
	} else if err := json.Unmarshal(body.Bytes(), &progs); err != nil {
		return nil, err
	}
	out := make([]ProgStat, 0, len(progs))
	for _, p := range progs {
		if preloaded[p.Name] {
			continue
		}
		if p.Name == "" {
			p.Name = "?"
		}
		out = append(out, ProgStat{Name: p.Name, Type: p.Type, RunTimeNs: p.RunTimeNs, RunCnt: p.RunCnt})
	}
	return out, nil
}

// errNoDump: a file of comment lines, or nothing.
var errNoDump = errors.New("no bpftool JSON in it (empty, or # comment lines only)")

// BpfstatsError is a .bpfstats file kci cannot use: which, and what is
// wrong with it in plain words.
type BpfstatsError struct{ File, What string }

func (e *BpfstatsError) Error() string { return "results: " + e.File + ": " + e.What }

// ReadBpfstats reads and parses one .bpfstats file; a file it cannot
// read or parse is a *BpfstatsError.
func ReadBpfstats(path string) ([]ProgStat, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &BpfstatsError{File: path, What: unwrapPath(err)}
	}
	progs, err := ParseBpfstats(b)
	if err != nil {
		return nil, &BpfstatsError{File: path, What: DescribeBpfstatsError(b, err)}
	}
	return progs, nil
}

// DescribeBpfstatsError words what ParseBpfstats said of data: the line
// and column of a syntax error, the field of a value of the wrong kind.
func DescribeBpfstatsError(data []byte, err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset is just past the byte the decoder stopped at.
		at := int(se.Offset) - 1
		if at < 0 || at >= len(bytes.TrimRight(data, " \t\r\n")) {
			return fmt.Sprintf("not a complete bpftool JSON dump (%v)", se)
		}
		line := 1 + bytes.Count(data[:at], []byte("\n"))
		col := at - bytes.LastIndexByte(data[:at], '\n')
		return fmt.Sprintf("line %d, column %d: not valid JSON (%v)", line, col, se)
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			return fmt.Sprintf("holds a JSON %s, where a bpftool dump (`bpftool -j prog show`) is a list of programs", te.Value)
		}
		return fmt.Sprintf("a program's %q holds a JSON %s, where bpftool writes %s", field, te.Value, jsonKind(te.Type))
	}
	return err.Error()
}

// unwrapPath is an *os.PathError's own words, without the path the
// caller names anyway.
func unwrapPath(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// ProgCost is one program's cost per packet in one measurement.
type ProgCost struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	NsPerPkt float64 `json:"ns_per_pkt"`
}

// PerPacket applies the user's rule to one measurement: a program's ns/pkt
// is run_time_ns / ref_cnt with ref_cnt the largest run_cnt among the
// sched_cls programs, so reapers that run on every freed skb are weighted
// by packets, not by their own invocations. Programs that never ran cost 0
// and are kept. Programs of the same name are summed. It returns the costs
// in first-seen order and ref_cnt.
func PerPacket(progs []ProgStat) ([]ProgCost, uint64) {
	var ref uint64
	for _, p := range progs {
		if p.Type == "sched_cls" && p.RunCnt > ref {
			ref = p.RunCnt
		}
	}
	idx := map[string]int{}
	var out []ProgCost
	for _, p := range progs {
		v := 0.0
		if p.RunCnt > 0 && ref > 0 {
			v = float64(p.RunTimeNs) / float64(ref)
		}
		if i, ok := idx[p.Name]; ok {
			out[i].NsPerPkt += v
			continue
		}
		idx[p.Name] = len(out)
		out = append(out, ProgCost{Name: p.Name, Type: p.Type, NsPerPkt: v})
	}
	return out, ref
}

// Total sums the per-program costs: the variant's BPF cost per packet.
func Total(costs []ProgCost) float64 {
	t := 0.0
	for _, c := range costs {
		t += c.NsPerPkt
	}
	return t
}

// variantLabel names a variant the user's way, <tree>-<object>, whether or
// not the guest already prefixed it.
func VariantLabel(tree, variant string) string {
	if tree == "" || strings.HasPrefix(variant, tree+"-") {
		return variant
	}
	return tree + "-" + variant
}
