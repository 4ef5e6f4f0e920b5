package kernel

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// CodeRange is a half-open range [Lo, Hi) of a kernel's text.
type CodeRange struct {
	Lo, Hi uint64
}

// LineSet is some lines of one source file (a tree-relative path, as a
// patch names it).
type LineSet struct {
	File  string
	Lines []int
}

// LineCode is where a LineSet compiled to in a vmlinux, by its DWARF line
// table: every inline copy of a header's line is a range of its own.
// NoCode says why there is none.
type LineCode struct {
	LineSet
	Ranges []CodeRange
	NoCode string
}

// Why a file's lines have no code in vmlinux.
const (
	NoCodeNotBuilt = "not in vmlinux: the file is not built in (a module, or not configured)"
	NoCodeNone     = "compiles to no code (declarations, comments, or code the compiler dropped)"
)

// LinesCode maps each set of lines to the address ranges vmlinux's line
// table gives them, in sets' order. vmlinux must carry DWARF line tables
// (kci's configs keep them); one without is an error naming it.
func LinesCode(vmlinux string, sets []LineSet) ([]LineCode, error) {
	f, err := elf.Open(vmlinux)
	if err != nil {
		return nil, fmt.Errorf("line table: %w", err)
	}
	defer func() { _ = f.Close() }()
	d, err := f.DWARF()
	if err != nil {
		return nil, fmt.Errorf("line table of %s: %w", vmlinux, err)
	}
	out := make([]LineCode, len(sets))
	want := map[string]map[int][]int{} // file -> line -> indexes into sets
	for i, s := range sets {
		out[i].LineSet = s
		if want[s.File] == nil {
			want[s.File] = map[int][]int{}
		}
		for _, l := range s.Lines {
			want[s.File][l] = append(want[s.File][l], i)
		}
	}
	seen := map[string]bool{}
	r := d.Reader()
	for {
		cu, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("line table of %s: %w", vmlinux, err)
		}
		if cu == nil {
			break
		}
		if cu.Tag == dwarf.TagCompileUnit {
			if err := scanUnit(d, cu, want, out, seen); err != nil {
				return nil, fmt.Errorf("line table of %s: %w", vmlinux, err)
			}
		}
		r.SkipChildren()
	}
	for i := range out {
		lc := &out[i]
		lc.Ranges = mergeRanges(lc.Ranges)
		switch {
		case len(lc.Ranges) > 0:
		case seen[lc.File]:
			lc.NoCode = NoCodeNone
		default:
			lc.NoCode = NoCodeNotBuilt
		}
	}
	return out, nil
}

// scanUnit adds the ranges of one compile unit's line program whose rows
// fall on wanted lines: a row's code runs to the next row's address.
func scanUnit(d *dwarf.Data, cu *dwarf.Entry, want map[string]map[int][]int, out []LineCode, seen map[string]bool) error {
	lr, err := d.LineReader(cu)
	if err != nil || lr == nil {
		return err
	}
	match := map[*dwarf.LineFile]map[int][]int{}
	for _, lf := range lr.Files() {
		if lf == nil {
			continue
		}
		for file, lines := range want {
			if sameSource(lf.Name, file) {
				match[lf], seen[file] = lines, true
			}
		}
	}
	if len(match) == 0 {
		return nil
	}
	if name, _ := cu.Val(dwarf.AttrName).(string); name != "" {
		for file := range want {
			if sameSource(name, file) {
				if err := scanInlined(d, cu, lr.Files(), match, out); err != nil {
					return err
				}
				break
			}
		}
	}
	var row, prev dwarf.LineEntry
	havePrev := false
	for {
		if err := lr.Next(&row); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if havePrev && row.Address > prev.Address {
			for _, i := range match[prev.File][prev.Line] {
				out[i].Ranges = append(out[i].Ranges, CodeRange{prev.Address, row.Address})
			}
		}
		prev, havePrev = row, !row.EndSequence
	}
}

// scanInlined adds the code of inlined calls made from wanted lines of a
// compile unit's own file: the line table gives an inlined body's
// instructions the inlined function's lines (atomic_long_inc's in
// atomic64_64.h), and only the call site's DW_TAG_inlined_subroutine
// says which line of the caller they stand for. Only the unit of the
// changed file is walked: a header's hunk is found by its own lines.
func scanInlined(d *dwarf.Data, cu *dwarf.Entry, files []*dwarf.LineFile, match map[*dwarf.LineFile]map[int][]int, out []LineCode) error {
	r := d.Reader()
	r.Seek(cu.Offset)
	if _, err := r.Next(); err != nil { // the unit itself
		return err
	}
	for depth := 1; depth > 0; {
		e, err := r.Next()
		if err != nil {
			return err
		}
		if e == nil {
			return nil
		}
		if e.Tag == 0 {
			depth--
			continue
		}
		if e.Children {
			depth++
		}
		if e.Tag != dwarf.TagInlinedSubroutine {
			continue
		}
		fi, okF := e.Val(dwarf.AttrCallFile).(int64)
		line, okL := e.Val(dwarf.AttrCallLine).(int64)
		if !okF || !okL || fi < 0 || int(fi) >= len(files) || files[fi] == nil {
			continue
		}
		idx := match[files[fi]][int(line)]
		if len(idx) == 0 {
			continue
		}
		ranges, err := d.Ranges(e)
		if err != nil {
			return err
		}
		for _, rg := range ranges {
			for _, i := range idx {
				out[i].Ranges = append(out[i].Ranges, CodeRange{rg[0], rg[1]})
			}
		}
	}
	return nil
}

// sameSource says whether a line table's file name (absolute, or relative
// to the build directory: "../net/core/dev.c", "./include/linux/skbuff.h")
// is the tree's file.
func sameSource(name, file string) bool {
	name = path.Clean(name)
	return name == file || strings.HasSuffix(name, "/"+file)
}

// mergeRanges sorts ranges and joins those that touch or overlap.
func mergeRanges(rs []CodeRange) []CodeRange {
	if len(rs) == 0 {
		return nil
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].Lo < rs[j].Lo })
	out := []CodeRange{rs[0]}
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.Lo <= last.Hi {
			last.Hi = max(last.Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	return out
}
