package kernel

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/proc"
)

// Patch is one change of a series.
type Patch struct {
	File    string `json:"file"`  // where it came from (mbox files yield several)
	Index   int    `json:"index"` // position inside File, from 1
	Subject string `json:"subject"`
	Mail    bool   `json:"mail"` // applied with git am -3; else git apply --index
	Data    []byte `json:"-"`
}

// Name is how errors refer to the patch.
func (p Patch) Name() string {
	if p.Index > 1 {
		return fmt.Sprintf("%s (message %d)", p.File, p.Index)
	}
	return p.File
}

// LoadSeries reads patches from files, mbox files holding several messages,
// directories (a `series` file if present, else *.patch/*.diff/*.mbox/*.mbx/*.eml sorted)
// and `series` files, in order.
func LoadSeries(paths ...string) ([]Patch, error) {
	var out []Patch
	for _, p := range paths {
		ps, err := loadPath(p)
		if err != nil {
			return nil, err
		}
		out = append(out, ps...)
	}
	return out, nil
}

func loadPath(p string) ([]Patch, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("patch %s: %w", p, pathCause(err))
	}
	if st.IsDir() {
		if _, err := os.Stat(filepath.Join(p, "series")); err == nil {
			return loadSeriesFile(filepath.Join(p, "series"))
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("patch dir %s: %w", p, err)
		}
		var names []string
		for _, e := range ents {
			switch filepath.Ext(e.Name()) {
			case ".patch", ".diff", ".mbox", ".mbx", ".eml": // .mbx: b4 am's
				names = append(names, e.Name())
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("patch dir %s: no *.patch, *.diff, *.mbox, *.mbx or *.eml files and no series file", p)
		}
		sort.Strings(names)
		var out []Patch
		for _, n := range names {
			ps, err := loadFile(filepath.Join(p, n))
			if err != nil {
				return nil, err
			}
			out = append(out, ps...)
		}
		return out, nil
	}
	if filepath.Base(p) == "series" {
		return loadSeriesFile(p)
	}
	return loadFile(p)
}

// loadSeriesFile reads a quilt-style series file: one patch per line,
// relative to the file, '#' comments, options after the name ignored.
func loadSeriesFile(p string) ([]Patch, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("series %s: %w", p, err)
	}
	var out []Patch
	for i, line := range strings.Split(string(data), "\n") {
		if j := strings.Index(line, "#"); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		ps, err := loadFile(filepath.Join(filepath.Dir(p), f[0]))
		if err != nil {
			return nil, fmt.Errorf("series %s:%d: %w", p, i+1, err)
		}
		out = append(out, ps...)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("series %s: lists no patches", p)
	}
	return out, nil
}

// mboxFrom matches an mbox message separator as git format-patch and
// public archives write it ("From <sha or address> <date ending in year>").
var mboxFrom = regexp.MustCompile(`^From \S+ .*\d{4}$`)

func loadFile(p string) ([]Patch, error) {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("patch %s: %w", p, pathCause(err))
	}
	msgs := splitMbox(data)
	var out []Patch
	for i, m := range msgs {
		pt := Patch{File: p, Index: i + 1, Data: m}
		pt.Subject, pt.Mail = mailSubject(m)
		if !hasDiff(m) {
			if pt.Mail && len(msgs) > 1 && i == 0 && coverLetter.Match(m) {
				continue // a cover letter carries no change
			}
			return nil, fmt.Errorf("patch %s: %s holds no diff", p, msgName(i, len(msgs)))
		}
		if bad := outsidePath(m); bad != "" {
			return nil, fmt.Errorf("patch %s: %s writes outside the kernel tree: %s", p, msgName(i, len(msgs)), bad)
		}
		if !pt.Mail {
			pt.Subject = diffSubject(m, p)
		}
		out = append(out, pt)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("patch %s: holds no diff", p)
	}
	return out, nil
}

// pathCause is an *fs.PathError's cause alone ("no such file or
// directory"), which still matches errors.Is: the message names the path
// once, without Go's "stat" or "open".
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func msgName(i, n int) string {
	if n == 1 {
		return "it"
	}
	return fmt.Sprintf("message %d", i+1)
}

// coverLetter matches the "[PATCH 0/N]" subject of a series' cover letter.
var coverLetter = regexp.MustCompile(`(?m)^Subject:.*\[[^\]]*\b0+/\d+\]`)

func splitMbox(data []byte) [][]byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	var msgs [][]byte
	var cur []byte
	for _, l := range lines {
		if mboxFrom.Match(bytes.TrimRight(l, "\r\n")) && len(bytes.TrimSpace(cur)) > 0 {
			msgs = append(msgs, cur)
			cur = nil
		}
		cur = append(cur, l...)
	}
	if len(bytes.TrimSpace(cur)) > 0 {
		msgs = append(msgs, cur)
	}
	return msgs
}

var subjectPrefix = regexp.MustCompile(`^\s*(\[[^\]]*\]\s*)+`)

// mailSubject returns the Subject header, unfolded and without [PATCH ..]
// tags, and whether the message looks like a mail at all.
func mailSubject(m []byte) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(m))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var subj string
	inSubj, mail := false, false
	for n := 0; sc.Scan(); n++ {
		l := sc.Text()
		if l == "" {
			break // end of headers
		}
		if n == 0 && mboxFrom.MatchString(l) {
			mail = true
			continue
		}
		if inSubj && (strings.HasPrefix(l, " ") || strings.HasPrefix(l, "\t")) {
			subj += " " + strings.TrimSpace(l)
			continue
		}
		inSubj = false
		if strings.HasPrefix(l, "Subject:") {
			subj = strings.TrimSpace(strings.TrimPrefix(l, "Subject:"))
			inSubj, mail = true, true
		} else if strings.HasPrefix(l, "From:") {
			mail = true
		} else if !strings.Contains(l, ":") {
			break
		}
	}
	return strings.TrimSpace(subjectPrefix.ReplaceAllString(subj, "")), mail
}

func hasDiff(m []byte) bool {
	return bytes.Contains(m, []byte("\n+++ ")) || bytes.HasPrefix(m, []byte("--- ")) ||
		bytes.Contains(m, []byte("\ndiff --git ")) || bytes.HasPrefix(m, []byte("diff --git "))
}

// diffSubject names a plain diff: its first comment line, else the file.
func diffSubject(m []byte, file string) string {
	for _, l := range strings.Split(string(m), "\n") {
		if strings.HasPrefix(l, "diff ") || strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "Index:") {
			break
		}
		if t := strings.TrimSpace(l); t != "" {
			return t
		}
	}
	return filepath.Base(file)
}

// applySeries applies patches in dir (a kci worktree). On failure the
// caller throws the worktree away, so nothing half-applied survives.
func applySeries(ctx context.Context, dir string, patches []Patch) error {
	for i, p := range patches {
		tmp, err := writeTempPatch(p.Data)
		if err != nil {
			// A short write must not reach git: a truncated patch would be
			// blamed on the patch (exit 2) for the disk's fault.
			return infra("apply: write patch "+filepath.Base(p.File), err)
		}
		g := command{dir: dir, env: gitEnv, timeout: 5 * time.Minute}
		var out string
		if p.Mail {
			out, err = g.run(ctx, "git", "am", "-3", "-q", "--committer-date-is-author-date", tmp)
			if err != nil {
				// Best effort: the caller throws the worktree away anyway.
				_, _ = g.run(ctx, "git", "am", "--abort")
			}
		} else {
			out, err = g.run(ctx, "git", "apply", "--index", tmp)
			if err == nil {
				msg := fmt.Sprintf("kci: apply %s\n\n%s", filepath.Base(p.File), p.Subject)
				_, err = g.run(ctx, "git", "commit", "-q", "--allow-empty", "-m", msg)
			}
		}
		if err != nil && ctx.Err() == nil {
			ae := applyError(p, i, out+"\n"+err.Error())
			if ae.Hunk == "" {
				// git am -3 may fail before saying which hunk (no blob ids to
				// build an ancestor from): ask git apply for the diagnosis.
				if chk, cerr := g.run(ctx, "git", "apply", "--check", tmp); cerr != nil {
					if d := applyError(p, i, chk); d.File != "" {
						ae.File, ae.Hunk = d.File, d.Hunk
					}
				}
			}
			_ = os.Remove(tmp) // a stray temp file is no reason to hide the verdict
			return ae
		}
		_ = os.Remove(tmp)
		if err != nil {
			return ctx.Err()
		}
	}
	return nil
}

var (
	patchFailed  = regexp.MustCompile(`error: patch failed: (\S+):(\d+)`)
	doesNotApply = regexp.MustCompile(`error: (\S+): (patch does not apply|does not exist in index|No such file or directory|already exists in (working directory|index))`)
	conflict     = regexp.MustCompile(`CONFLICT \([^)]*\): (?:Merge conflict in )?(\S+)`)
)

func applyError(p Patch, i int, out string) *ApplyError {
	e := &ApplyError{Patch: p.Name(), Subject: p.Subject, Output: tail(out, 30)}
	if m := patchFailed.FindStringSubmatch(out); m != nil {
		e.File = m[1]
		line, _ := strconv.Atoi(m[2])
		e.Hunk = findHunk(p.Data, m[1], line)
		e.Line, e.HunkNo = line, hunkNo(p.Data, m[1], line)
	} else if m := doesNotApply.FindStringSubmatch(out); m != nil {
		e.File, e.Hunk = m[1], m[2]
	} else if m := conflict.FindStringSubmatch(out); m != nil {
		e.File, e.Hunk = m[1], "merge conflict"
	}
	return e
}

// findHunk returns the header of file's hunk that starts at line.
func findHunk(data []byte, file string, line int) string {
	inFile := false
	want := fmt.Sprintf("@@ -%d,", line)
	want1 := fmt.Sprintf("@@ -%d ", line)
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "+++ ") {
			inFile = strings.HasSuffix(strings.TrimSpace(l), "/"+file) || strings.TrimSpace(l[4:]) == file
			continue
		}
		if inFile && (strings.HasPrefix(l, want) || strings.HasPrefix(l, want1)) {
			return strings.TrimSpace(l)
		}
	}
	return fmt.Sprintf("hunk at line %d", line)
}

// DiagnoseApply is git apply's verdict on patch p against tree (out is
// git's output): the file, the hunk and git's own message.
func DiagnoseApply(p Patch, tree, out string) *ApplyError {
	e := applyError(p, 0, out)
	e.Tree = tree
	return e
}

// hunkNo is the position (from 1) among file's hunks of the one that
// starts at line of the old file; 0 if none does.
func hunkNo(data []byte, file string, line int) int {
	inFile, n := false, 0
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "+++ ") {
			inFile = strings.HasSuffix(strings.TrimSpace(l), "/"+file) || strings.TrimSpace(l[4:]) == file
			continue
		}
		if !inFile || !strings.HasPrefix(l, "@@ -") {
			continue
		}
		n++
		start, _, _ := strings.Cut(strings.TrimPrefix(l, "@@ -"), " ")
		start, _, _ = strings.Cut(start, ",")
		if v, err := strconv.Atoi(start); err == nil && v == line {
			return n
		}
	}
	return 0
}

// writeTempPatch writes data to a new temporary file and returns its path;
// on error nothing is left behind.
func writeTempPatch(data []byte) (string, error) {
	f, err := os.CreateTemp("", "kci-patch-*.patch")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// CheckSyntax has git read each patch without a tree (git apply
// --numstat needs no repository): a corrupt patch is refused before the
// base is imported, which takes minutes the first time. The verdict is
// an *ApplyError naming the patch with git's own words.
func CheckSyntax(ctx context.Context, patches []Patch) error {
	for _, p := range patches {
		tmp, err := writeTempPatch(p.Data)
		if err != nil {
			return infra("patch syntax: write "+filepath.Base(p.File), err)
		}
		out, err := command{dir: os.TempDir(), timeout: time.Minute}.run(ctx, "git", "apply", "--numstat", tmp)
		_ = os.Remove(tmp) // a stray temp file hides no verdict
		if code, ok := proc.ExitCode(err); ok && code == 128 && ctx.Err() == nil {
			return &ApplyError{Patch: p.Name(), Subject: p.Subject, Output: strings.ReplaceAll(tail(out, 10), tmp, p.File)}
		}
		if err != nil {
			return infra("patch syntax: git apply --numstat", err)
		}
	}
	return nil
}
