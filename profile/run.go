package profile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/role"
)

// Dir is where a run directory keeps its profiles.
const Dir = "profiles"

// indexFile describes the profiles of a run (profiles/index.json).
const indexFile = "index.json"

// Roles of a kernel within a tree, as in the run record.
const (
	RoleBase    = role.Base
	RolePatched = role.Patched
)

// Entry is one profile of a run: one variant in one boot.
type Entry struct {
	Tree    string        `json:"tree"`
	Role    string        `json:"role"` // base | patched
	Rep     int           `json:"rep"`
	Variant string        `json:"variant"`
	Kernel  string        `json:"kernel,omitempty"` // release
	Accel   string        `json:"accel,omitempty"`
	CPUs    []int         `json:"cpus,omitempty"`
	FreqHz  int           `json:"freq_hz,omitempty"`
	Window  time.Duration `json:"window_ns,omitempty"`
	Samples int64         `json:"samples"`
	Dropped uint64        `json:"dropped,omitempty"`
	Error   string        `json:"error,omitempty"` // the guest's sampler failed
	// Files, relative to the profiles directory; empty without samples.
	Folded string `json:"folded,omitempty"`
	SVG    string `json:"svg,omitempty"`
	Pprof  string `json:"pprof,omitempty"`
}

// Stem is the entry's file name without extension:
// <tree>-<role>-rep<N>-<variant>.
func (e Entry) Stem() string {
	return fmt.Sprintf("%s-%s-rep%d-%s", e.Tree, e.Role, e.Rep, e.Variant)
}

var stemRE = regexp.MustCompile(`^(.+)-(base|patched)-rep([0-9]+)-(.+)$`)

// parseStem reverses Stem.
func parseStem(stem string) (Entry, bool) {
	m := stemRE.FindStringSubmatch(stem)
	if m == nil {
		return Entry{}, false
	}
	rep, _ := strconv.Atoi(m[3])
	return Entry{Tree: m[1], Role: m[2], Rep: rep, Variant: m[4]}, true
}

// DiffEntry is the differential view of one variant on one tree, patched
// against base, each side merged over its repetitions.
type DiffEntry struct {
	Tree     string   `json:"tree"`
	Variant  string   `json:"variant"`
	Base     []string `json:"base"`    // stems merged
	Patched  []string `json:"patched"` // stems merged
	Text     string   `json:"text"`
	Markdown string   `json:"markdown"`
	SVG      string   `json:"svg"`
}

// Set is a run's profiles.
type Set struct {
	Entries []Entry     `json:"entries"`
	Diffs   []DiffEntry `json:"diffs,omitempty"`
}

// Writer files profiles into a run directory as they arrive.
type Writer struct {
	dir string // the profiles directory
	set Set
}

// NewWriter writes into runDir/profiles, keeping entries already indexed
// there.
func NewWriter(runDir string) (*Writer, error) {
	w := &Writer{dir: filepath.Join(runDir, Dir)}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return nil, fmt.Errorf("profiles: %w", err)
	}
	if s, err := LoadSet(runDir); err == nil {
		w.set = *s
	}
	return w, nil
}

// Add parses the guest's folded stacks and writes the entry's .folded,
// .svg and .pb.gz. A sampler error is recorded with the entry; a payload
// that does not parse is an error.
func (w *Writer) Add(e Entry, folded string) (Entry, error) {
	e.Folded, e.SVG, e.Pprof = "", "", ""
	defer func() { w.replace(e) }()
	if strings.TrimSpace(folded) == "" {
		return e, w.save()
	}
	p, err := ParseFoldedString(folded)
	if err != nil {
		if e.Error == "" {
			e.Error = err.Error()
		}
		return e, errors.Join(fmt.Errorf("profile %s: %w", e.Stem(), err), w.save())
	}
	p.FreqHz = e.FreqHz
	e.Samples = p.Total()
	if err := writeEntryFiles(w.dir, &e, p); err != nil {
		return e, err
	}
	return e, w.save()
}

func (w *Writer) replace(e Entry) {
	for i, old := range w.set.Entries {
		if old.Stem() == e.Stem() {
			w.set.Entries[i] = e
			return
		}
	}
	w.set.Entries = append(w.set.Entries, e)
}

// Finish writes the differential views (a tree and variant profiled on
// both kernels), profiles/summary.md and the index, and returns the set.
func (w *Writer) Finish(topN int) (*Set, error) {
	diffs, err := writeDiffs(w.dir, w.set.Entries, topN)
	w.set.Diffs = diffs
	err = errors.Join(err, w.save(), writeSummary(w.dir, &w.set, topN))
	s := w.set
	return &s, err
}

func (w *Writer) save() error {
	sort.Slice(w.set.Entries, func(i, j int) bool { return entryLess(w.set.Entries[i], w.set.Entries[j]) })
	b, err := json.MarshalIndent(w.set, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(w.dir, indexFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("profiles: %w", err)
	}
	return os.Rename(tmp, filepath.Join(w.dir, indexFile))
}

func entryLess(a, b Entry) bool {
	if a.Tree != b.Tree {
		return a.Tree < b.Tree
	}
	if a.Variant != b.Variant {
		return a.Variant < b.Variant
	}
	if a.Rep != b.Rep {
		return a.Rep < b.Rep
	}
	return a.Role < b.Role
}

// LoadSet reads runDir/profiles/index.json.
func LoadSet(runDir string) (*Set, error) {
	b, err := os.ReadFile(filepath.Join(runDir, Dir, indexFile))
	if err != nil {
		return nil, err
	}
	var s Set
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("profiles index: %w", err)
	}
	return &s, nil
}

// ErrNoProfiles is a run directory that holds no profiles: one made
// without --profile, which Render is asked of in error.
var ErrNoProfiles = errors.New("no profiles")

// Render (re)renders a saved run's profiles from their .folded files: SVG,
// pprof, differential views and summary. Without an index the entries are
// recovered from the file names.
func Render(runDir string, topN int) (*Set, error) {
	dir := filepath.Join(runDir, Dir)
	set, err := LoadSet(runDir)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		set = &Set{}
		names, _ := filepath.Glob(filepath.Join(dir, "*.folded"))
		for _, n := range names {
			if e, ok := parseStem(strings.TrimSuffix(filepath.Base(n), ".folded")); ok {
				set.Entries = append(set.Entries, e)
			}
		}
		if len(set.Entries) == 0 {
			return nil, fmt.Errorf("%w in %s (run kci test with --profile)", ErrNoProfiles, dir)
		}
	}
	w := &Writer{dir: dir, set: Set{}}
	var errs []error
	for _, e := range set.Entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Stem()+".folded"))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				w.replace(e) // a sampler error: nothing to render
				continue
			}
			errs = append(errs, err)
			continue
		}
		if _, err := w.Add(e, string(b)); err != nil {
			errs = append(errs, err)
		}
	}
	s, err := w.Finish(topN)
	return s, errors.Join(append(errs, err)...)
}

// Load reads one entry's folded stacks from a profiles directory.
func Load(dir string, e Entry) (*Profile, error) {
	f, err := os.Open(filepath.Join(dir, e.Stem()+".folded"))
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read-only: closing loses nothing
	p, err := ParseFolded(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	p.FreqHz = e.FreqHz
	return p, nil
}

func writeEntryFiles(dir string, e *Entry, p *Profile) error {
	stem := e.Stem()
	var folded bytes.Buffer
	p.WriteFolded(&folded) //nolint:errcheck // bytes.Buffer does not fail
	if err := os.WriteFile(filepath.Join(dir, stem+".folded"), folded.Bytes(), 0o644); err != nil {
		return fmt.Errorf("profile %s: %w", stem, err)
	}
	e.Folded = stem + ".folded"
	var svg bytes.Buffer
	if err := WriteFlameGraph(&svg, p, FlameOptions{Title: e.title(), Subtitle: e.subtitle()}); err != nil {
		return fmt.Errorf("profile %s: %w", stem, err)
	}
	if err := os.WriteFile(filepath.Join(dir, stem+".svg"), svg.Bytes(), 0o644); err != nil {
		return fmt.Errorf("profile %s: %w", stem, err)
	}
	e.SVG = stem + ".svg"
	var pb bytes.Buffer
	if err := WritePprof(&pb, p, PprofOptions{Duration: e.Window, Comment: e.comments()}); err != nil {
		return fmt.Errorf("profile %s: %w", stem, err)
	}
	if err := os.WriteFile(filepath.Join(dir, stem+".pb.gz"), pb.Bytes(), 0o644); err != nil {
		return fmt.Errorf("profile %s: %w", stem, err)
	}
	e.Pprof = stem + ".pb.gz"
	return nil
}

func (e Entry) title() string {
	return fmt.Sprintf("%s on %s %s (tree %s, rep %d)", e.Variant, e.Role, e.kernelName(), e.Tree, e.Rep)
}

func (e Entry) kernelName() string {
	if e.Kernel != "" {
		return e.Kernel
	}
	return "kernel"
}

func (e Entry) subtitle() string {
	var parts []string
	if e.Accel != "" {
		parts = append(parts, e.Accel)
	}
	if len(e.CPUs) > 0 {
		parts = append(parts, fmt.Sprintf("CPUs %s", cpuList(e.CPUs)))
	}
	if e.FreqHz > 0 {
		parts = append(parts, fmt.Sprintf("%d Hz", e.FreqHz))
	}
	if e.Window > 0 {
		parts = append(parts, e.Window.Round(100*time.Millisecond).String()+" window")
	}
	return strings.Join(parts, " · ")
}

func (e Entry) comments() []string {
	c := []string{"kci profile: " + e.title()}
	if s := e.subtitle(); s != "" {
		c = append(c, s)
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

// writeDiffs writes, per tree and variant profiled on both kernels, the
// differential top table (text, Markdown) and flame graph, each side
// merged over its repetitions.
func writeDiffs(dir string, entries []Entry, topN int) ([]DiffEntry, error) {
	type key struct{ tree, variant string }
	groups := map[key]map[string][]Entry{}
	var keys []key
	for _, e := range entries {
		if e.Folded == "" {
			continue
		}
		k := key{e.Tree, e.Variant}
		if groups[k] == nil {
			groups[k] = map[string][]Entry{}
			keys = append(keys, k)
		}
		groups[k][e.Role] = append(groups[k][e.Role], e)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].tree != keys[j].tree {
			return keys[i].tree < keys[j].tree
		}
		return keys[i].variant < keys[j].variant
	})
	var out []DiffEntry
	var errs []error
	for _, k := range keys {
		g := groups[k]
		if len(g[RoleBase]) == 0 || len(g[RolePatched]) == 0 {
			continue
		}
		base, bs, err := mergeEntries(dir, g[RoleBase])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		patched, ps, err := mergeEntries(dir, g[RolePatched])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		stem := fmt.Sprintf("%s-%s-diff", k.tree, k.variant)
		d := DiffEntry{Tree: k.tree, Variant: k.variant, Base: bs, Patched: ps,
			Text: stem + ".txt", Markdown: stem + ".md", SVG: stem + ".svg"}
		ds := Diff(base, patched, topN)
		var txt, md, svg bytes.Buffer
		fmt.Fprintf(&txt, "%s on tree %s: patched (%d samples) minus base (%d samples)\n", k.variant, k.tree, patched.Total(), base.Total())
		WriteDiffText(&txt, ds) //nolint:errcheck // bytes.Buffer
		fmt.Fprintf(&md, "#### %s on tree %s: patched minus base\n\nPercentage points of each kernel's samples (base %d, patched %d).\n\n", k.variant, k.tree, base.Total(), patched.Total())
		WriteDiffMarkdown(&md, ds) //nolint:errcheck // bytes.Buffer
		err = WriteFlameGraph(&svg, patched, FlameOptions{
			Title: fmt.Sprintf("%s on tree %s: patched vs base", k.variant, k.tree), Base: base})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for name, b := range map[string][]byte{d.Text: txt.Bytes(), d.Markdown: md.Bytes(), d.SVG: svg.Bytes()} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				errs = append(errs, fmt.Errorf("profile diff: %w", err))
			}
		}
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}

func mergeEntries(dir string, es []Entry) (*Profile, []string, error) {
	var ps []*Profile
	var stems []string
	for _, e := range es {
		p, err := Load(dir, e)
		if err != nil {
			return nil, nil, err
		}
		ps = append(ps, p)
		stems = append(stems, e.Stem())
	}
	return Merge(ps...), stems, nil
}

// writeSummary writes profiles/summary.md: every profile's top table and
// every differential view, with links to the files.
func writeSummary(dir string, s *Set, topN int) error {
	var b bytes.Buffer
	if err := WriteSummary(&b, dir, s, SummaryOptions{TopN: topN, Markdown: true}); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "summary.md"), b.Bytes(), 0o644)
}

// SummaryOptions shape WriteSummary.
type SummaryOptions struct {
	TopN     int
	Markdown bool
	// LinkPrefix goes before the file names in Markdown links, e.g.
	// "profiles/" for a report at the top of the run directory.
	LinkPrefix string
}

// WriteSummary writes the top-N table of every profile in the set and the
// differential views, as text (with the files' paths) or Markdown (with
// links). dir is the profiles directory the set's files are in.
func WriteSummary(w io.Writer, dir string, s *Set, o SummaryOptions) error {
	var b bytes.Buffer
	link := func(name string) string { return fmt.Sprintf("[%s](%s%s)", name, o.LinkPrefix, name) }
	if o.Markdown {
		b.WriteString("### CPU profiles\n\n")
	}
	for _, e := range s.Entries {
		head := e.title()
		if sub := e.subtitle(); sub != "" {
			head += " — " + sub
		}
		if o.Markdown {
			fmt.Fprintf(&b, "#### %s\n\n", head)
		} else {
			fmt.Fprintf(&b, "%s\n", head)
		}
		if e.Error != "" {
			fmt.Fprintf(&b, "profile failed: %s\n\n", e.Error)
			continue
		}
		if e.Folded == "" {
			b.WriteString("no samples\n\n")
			continue
		}
		p, err := Load(dir, e)
		if err != nil {
			return err
		}
		if o.Markdown {
			fmt.Fprintf(&b, "Flame graph %s, pprof %s, folded %s.\n\n", link(e.SVG), link(e.Pprof), link(e.Folded))
			WriteTopMarkdown(&b, Top(p, o.TopN), p.Total()) //nolint:errcheck // bytes.Buffer
		} else {
			for _, f := range []string{e.SVG, e.Pprof, e.Folded} {
				fmt.Fprintf(&b, "  %s\n", filepath.Join(dir, f))
			}
			WriteTopText(&b, Top(p, o.TopN), p.Total()) //nolint:errcheck // bytes.Buffer
		}
		b.WriteString("\n")
	}
	for _, d := range s.Diffs {
		name := d.Text
		if o.Markdown {
			name = d.Markdown
		}
		body, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		b.Write(body)
		if o.Markdown {
			fmt.Fprintf(&b, "\nDifferential flame graph %s.\n\n", link(d.SVG))
		} else {
			fmt.Fprintf(&b, "  %s\n\n", filepath.Join(dir, d.SVG))
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
