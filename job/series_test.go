package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/internal/version"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/verdict"
	"github.com/kci-dev/kci/wire"
)

const warnDir = "../kernel/testdata/warnings"

// fakeStep scripts what building prefix 1..k does.
type fakeStep struct {
	noApply bool
	broken  bool   // BuildError
	stale   bool   // VerifyError
	config  string // ConfigError on this option
	log     string // make output (golden file under kernel/testdata/warnings)
}

// fakeSeriesBuilder scripts builds by prefix length and answers
// checkpatch with the golden outputs of kernel/testdata/checkpatch.
type fakeSeriesBuilder struct {
	steps   map[int]fakeStep
	treeLog string
	built   []int
}

func (f *fakeSeriesBuilder) Tree(ctx context.Context, t *project.Tree) (*kernel.Artifacts, error) {
	return &kernel.Artifacts{Key: "tree", Release: "6.12.117-kci", Log: f.treeLog}, nil
}

func (f *fakeSeriesBuilder) Patched(ctx context.Context, t *project.Tree, tree *kernel.Artifacts, patches []kernel.Patch) (*kernel.Artifacts, error) {
	k := len(patches)
	f.built = append(f.built, k)
	s := f.steps[k]
	switch {
	case s.noApply:
		p := patches[k-1]
		return nil, &kernel.ApplyError{Patch: p.Name(), Subject: p.Subject, File: "net/core/skbuff.c", Hunk: "@@ -6176,6 +6176,8 @@"}
	case s.config != "":
		return nil, &kernel.ConfigError{Violations: []kernel.Violation{{Option: s.config, Want: "y", Got: "", Source: "patches/gtp/kci.config:3"}}}
	case s.stale:
		return nil, &kernel.VerifyError{Missing: []string{"kfunc bpf_trace_skb"}}
	case s.broken:
		return nil, &kernel.BuildError{First: "../net/core/skbuff.c:6176:18: error: expected expression before ';' token", Log: s.log}
	}
	log := s.log
	if log == "" {
		log = filepath.Join(warnDir, "3-quiet.log")
	}
	return &kernel.Artifacts{Key: fmt.Sprintf("prefix-%d", k), Release: "6.12.117-kci", Log: log}, nil
}

func (f *fakeSeriesBuilder) AppliesTo(ctx context.Context, t *project.Tree, patches []kernel.Patch) (bool, error) {
	return true, nil
}

func (f *fakeSeriesBuilder) Checkpatch(ctx context.Context, tree *kernel.Artifacts, p kernel.Patch) (*kernel.Checkpatch, error) {
	data, err := os.ReadFile(filepath.Join("../kernel/testdata/checkpatch", filepath.Base(p.File)[:4]+".txt"))
	if err != nil {
		return &kernel.Checkpatch{}, nil
	}
	c := kernel.ParseCheckpatch(string(data))
	return &c, nil
}

func (f *fakeSeriesBuilder) Warnings(tree *kernel.Artifacts) kernel.WarningSet {
	s := kernel.WarningSet{}
	if o, err := kernel.ParseMakeLog(tree.Log); err == nil {
		s.Apply(o)
	}
	return s
}

// fakeSeriesBooter boots deterministically: survival cells pass unless
// scripted, gtp_write costs perf[key] ns/pkt and gtp_read read[key] (40
// unless scripted) plus readSeed[seed] percent.
type fakeSeriesBooter struct {
	lose     map[string]bool        // kernel key -> the "skb over lo" cell fails
	crash    map[string]bool        // kernel key -> the boot panics
	perf     map[string]float64     // kernel key -> gtp_write ns/pkt
	read     map[string]float64     // kernel key -> gtp_read ns/pkt
	readSeed map[uint64]float64     // guest seed -> percent added to gtp_read
	boots    []string               // key, "+bench" when the plan measured, " seed N" unless seed 1
	onBoot   func(boot.BootRequest) // called as each boot starts
	clock    string                 // the boots' clock: "" is icount
}

func (f *fakeSeriesBooter) Boot(ctx context.Context, req boot.BootRequest) (*boot.BootResult, error) {
	key := req.Kernel.Key
	label := key
	if len(req.Plan.Variants) > 0 {
		label += "+bench"
	}
	if req.Seed != 1 {
		label += fmt.Sprintf(" seed %d", req.Seed)
	}
	f.boots = append(f.boots, label)
	if f.onBoot != nil {
		f.onBoot(req)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	if f.crash[key] {
		return &boot.BootResult{ErrorKind: "crash"}, errors.New("kernel panic: BUG: kernel NULL pointer dereference")
	}
	r := &boot.BootResult{Accel: "tcg", Clock: results.ClockICount, Sanity: &wire.Sanity{}}
	if f.clock != "" {
		r.Clock = f.clock
	}
	if req.Plan.Survival {
		r.Cells = []wire.Cell{
			{Carrier: "skb", Path: "lo", Expected: "survives", Observed: "survives", Pass: !f.lose[key]},
			{Carrier: "skb", Path: "veth", Expected: "survives", Observed: "survives", Pass: true},
		}
	}
	if len(req.Plan.Variants) > 0 {
		w, ok := f.perf[key]
		if !ok {
			w = 100
		}
		rd, ok := f.read[key]
		if !ok {
			rd = 40
		}
		rd *= 1 + f.readSeed[req.Seed]/100
		r.Variants = []wire.VariantResult{{Variant: "gtp-gtp", Valid: true, Programs: []wire.ProgStat{
			{Name: "gtp_write", Type: "sched_cls", RunTimeNs: uint64(w * 1000), RunCnt: 1000},
			{Name: "gtp_read", Type: "sched_cls", RunTimeNs: uint64(rd * 1000), RunCnt: 1000},
		}}}
	}
	return r, nil
}

func seriesTester(b *fakeSeriesBuilder, boot *fakeSeriesBooter) *SeriesTester {
	return &SeriesTester{Project: &project.File{Trees: []project.Tree{{Name: "stock"}}}, Builder: b, Booter: boot}
}

func runSeries(t *testing.T, st *SeriesTester, o SeriesOptions) (*results.Series, int, string) {
	t.Helper()
	if o.Out == "" {
		o.Out = t.TempDir()
	}
	dir, rep, err := st.Series(context.Background(), o)
	code := 0
	var ee *ExitError
	if errors.As(err, &ee) {
		code = ee.Code
	} else if err != nil {
		t.Fatalf("series: %v", err)
	}
	if rep == nil || len(rep.Trees) != 1 {
		t.Fatalf("report: %+v (err %v)", rep, err)
	}
	// What is on disk is what was returned.
	disk, lerr := results.LoadSeries(dir)
	if lerr != nil {
		t.Fatal(lerr)
	}
	if disk.KCIVersion != version.String() || disk.KCIVersion == "" {
		t.Errorf("series.json kci_version %q, want %q", disk.KCIVersion, version.String())
	}
	if !reflect.DeepEqual(disk.Trees, rep.Trees) {
		t.Errorf("series.json differs from the returned report")
	}
	txt, _ := os.ReadFile(filepath.Join(dir, "series.txt"))
	return rep, code, string(txt)
}

// TestSeriesBisectability: the 4-patch fixture — 1 adds a checkpatch
// error, 2 breaks the build, 3 repairs it, 4 adds a compiler warning.
func TestSeriesBisectability(t *testing.T) {
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log"), steps: map[int]fakeStep{
		1: {log: filepath.Join(warnDir, "3-quiet.log")},
		2: {broken: true, log: filepath.Join(warnDir, "broken.log")},
		3: {log: filepath.Join(warnDir, "3-quiet.log")},
		4: {log: filepath.Join(warnDir, "1-shifted.log")},
	}}
	boot := &fakeSeriesBooter{}
	rep, code, txt := runSeries(t, seriesTester(b, boot), SeriesOptions{
		Patches: []string{"testdata/series-bisect"}, Trees: []string{"stock"}, Boot: true, Survival: true})
	t.Logf("series.txt:\n%s", txt)
	tr := rep.Trees[0]
	if len(tr.Patches) != 4 {
		t.Fatalf("%d rows, want 4", len(tr.Patches))
	}
	if !reflect.DeepEqual(b.built, []int{1, 2, 3, 4}) {
		t.Errorf("built prefixes %v, want 1..4 in order (later patches still checked)", b.built)
	}
	p := tr.Patches
	if p[0].Build != results.StepOK || p[1].Build != results.StepFail || p[2].Build != results.StepOK || p[3].Build != results.StepOK {
		t.Errorf("builds: %s %s %s %s", p[0].Build, p[1].Build, p[2].Build, p[3].Build)
	}
	if !strings.Contains(p[1].BuildError, "expected expression") {
		t.Errorf("patch 2 build error %q: want the compiler's first error", p[1].BuildError)
	}
	if want := []results.Bisectability{{Broken: 2, Fixed: 3, BrokenTitle: p[1].Subject, FixedTitle: p[2].Subject, Error: p[1].BuildError}}; !reflect.DeepEqual(tr.Bisect, want) {
		t.Errorf("bisectability = %+v, want %+v", tr.Bisect, want)
	}
	if !strings.Contains(txt, "bisectability failure: patch 2 ‹net: skbuff: a syntax error") {
		t.Errorf("text report does not name the bisectability failure:\n%s", txt)
	}
	// Boots: the tree's kernel (the survival reference), then every prefix that built.
	if want := []string{"tree", "prefix-1", "prefix-3", "prefix-4"}; !reflect.DeepEqual(boot.boots, want) {
		t.Errorf("boots %v, want %v", boot.boots, want)
	}
	if p[1].Boot != nil {
		t.Errorf("patch 2 did not build but was booted")
	}
	// Warnings: only patch 4's unused variable and the linker's RWX note are new;
	// the warning 3 lines lower in lib/string.c and objtool's new offset are not.
	var nw []string
	for _, w := range p[3].NewWarnings {
		nw = append(nw, w.String())
	}
	if len(nw) != 2 || nw[0] != "net/core/skbuff.c:6179: unused variable 'kci_unused' [-Wunused-variable]" {
		t.Errorf("patch 4 new warnings %q", nw)
	}
	for i := 0; i < 3; i++ {
		if len(p[i].NewWarnings) != 0 {
			t.Errorf("patch %d: new warnings %+v, want none", i+1, p[i].NewWarnings)
		}
	}
	if !strings.Contains(txt, "patch 4/4 new warning: net/core/skbuff.c:6179: unused variable 'kci_unused'") {
		t.Errorf("text does not name the new warning with file:line:\n%s", txt)
	}
	// checkpatch: patch 1's error in checkpatch's own words.
	if c := p[0].Checkpatch; c == nil || c.Errors != 1 || c.Items[0].Message != "trailing whitespace" {
		t.Errorf("patch 1 checkpatch = %+v", p[0].Checkpatch)
	}
	if !strings.Contains(txt, "patch 1/4 checkpatch ERROR:TRAILING_WHITESPACE: trailing whitespace") {
		t.Errorf("text does not carry checkpatch's message:\n%s", txt)
	}
	if code != ExitBuild {
		t.Errorf("exit %d, want %d (a patch does not build)", code, ExitBuild)
	}
	if p[0].Boot == nil || p[0].Boot.Cells != 2 || p[0].Boot.Passed != 2 {
		t.Errorf("patch 1 boot %+v: want 2/2 cells", p[0].Boot)
	}
}

func TestSeriesApplyFailureBlocksTheRest(t *testing.T) {
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log"), steps: map[int]fakeStep{2: {noApply: true}}}
	boot := &fakeSeriesBooter{}
	rep, code, txt := runSeries(t, seriesTester(b, boot), SeriesOptions{
		Patches: []string{"testdata/series-bisect"}, Trees: []string{"stock"}, Boot: true, Survival: true})
	p := rep.Trees[0].Patches
	if p[1].Apply != results.StepFail || !strings.Contains(p[1].ApplyError, "net/core/skbuff.c @@ -6176,6 +6176,8 @@") {
		t.Errorf("patch 2: apply %s %q: want the failing hunk", p[1].Apply, p[1].ApplyError)
	}
	if p[2].Apply != results.StepBlocked || p[3].Apply != results.StepBlocked {
		t.Errorf("patches after a non-applying one: %s %s, want blocked", p[2].Apply, p[3].Apply)
	}
	if p[3].Checkpatch == nil {
		t.Error("checkpatch needs no build: it must still run on blocked patches")
	}
	if !reflect.DeepEqual(b.built, []int{1, 2}) {
		t.Errorf("built %v, want 1, 2 only", b.built)
	}
	if code != ExitApply {
		t.Errorf("exit %d, want %d", code, ExitApply)
	}
	if !strings.Contains(txt, "patch 2/4 does not apply") {
		t.Errorf("text:\n%s", txt)
	}
}

func TestSeriesBootAndSurvival(t *testing.T) {
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log")}
	boot := &fakeSeriesBooter{lose: map[string]bool{"prefix-3": true}, crash: map[string]bool{"prefix-4": true}}
	rep, code, txt := runSeries(t, seriesTester(b, boot), SeriesOptions{
		Patches: []string{"testdata/series-bisect"}, Trees: []string{"stock"}, Boot: true, Survival: true})
	p := rep.Trees[0].Patches
	if !reflect.DeepEqual(p[2].Boot.Lost, []string{"skb over lo"}) {
		t.Errorf("patch 3 lost %v, want [skb over lo]", p[2].Boot.Lost)
	}
	if p[3].Boot.Result != results.StepFail || p[3].Boot.ErrorKind != "crash" {
		t.Errorf("patch 4 boot %+v, want a crash", p[3].Boot)
	}
	if code != ExitBoot {
		t.Errorf("exit %d, want %d (boot failure outranks survival)", code, ExitBoot)
	}
	if !strings.Contains(txt, "1/2 (1 LOST)") || !strings.Contains(txt, "FAIL (crash)") {
		t.Errorf("table:\n%s", txt)
	}
}

// TestSeriesInterruptKeepsRows: SIGINT (through signal.NotifyContext, as
// kci's main does) while prefix 3 boots. series.json held rows 1-2 when
// that boot began, saved after every prefix, so a series that is killed
// keeps them too; after the interrupt it keeps them, marked interrupted,
// and patch 3 gets no boot result (nothing of it is blamed).
func TestSeriesInterruptKeepsRows(t *testing.T) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir := filepath.Join(t.TempDir(), "run")
	var during *results.Series
	var derr error
	boot := &fakeSeriesBooter{onBoot: func(req boot.BootRequest) {
		if req.Kernel.Key != "prefix-3" {
			return
		}
		during, derr = results.LoadSeries(dir)
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			t.Error(err)
		}
		<-ctx.Done()
	}}
	st := seriesTester(&fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log")}, boot)
	_, _, err := st.Series(ctx, SeriesOptions{Patches: []string{"testdata/series-bisect"}, Trees: []string{"stock"}, Boot: true, Survival: true, Out: dir})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitInterrupted {
		t.Errorf("err %v, want exit %d (interrupted)", err, ExitInterrupted)
	}
	if derr != nil || during == nil {
		t.Fatalf("series.json while prefix 3 booted: %v", derr)
	}
	if p := during.Trees[0].Patches; len(p) != 2 || p[1].Boot == nil || p[1].Boot.Result != results.StepOK || !during.Incomplete {
		t.Errorf("series.json while prefix 3 booted: %d rows %+v, incomplete %v: want rows 1-2 booted, marked incomplete", len(p), p, during.Incomplete)
	}
	after, err := results.LoadSeries(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := after.Trees[0].Patches
	if len(p) < 2 || p[0].Boot == nil || p[1].Boot == nil || !after.Incomplete || after.IncompleteReason != "interrupted" {
		t.Fatalf("series.json after SIGINT: %d rows, incomplete %v (%q): want rows 1-2, interrupted", len(p), after.Incomplete, after.IncompleteReason)
	}
	if len(p) > 2 && p[2].Boot != nil {
		t.Errorf("patch 3's interrupted boot recorded as %+v", p[2].Boot)
	}
	if len(p) > 3 {
		t.Errorf("%d rows: prefix 4 was not reached", len(p))
	}
}

func writeDiffs(t *testing.T, n int) string {
	dir := t.TempDir()
	for i := 1; i <= n; i++ {
		d := fmt.Sprintf("gtp: step %d of the fake series\n\n--- a/f%d.c\n+++ b/f%d.c\n@@ -1 +1 @@\n-a\n+b\n", i, i, i)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%04d.patch", i)), []byte(d), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestSeriesMarkdown(t *testing.T) {
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log"), steps: map[int]fakeStep{2: {broken: true, log: filepath.Join(warnDir, "broken.log")}}}
	dir := t.TempDir()
	runSeries(t, seriesTester(b, &fakeSeriesBooter{}), SeriesOptions{
		Patches: []string{"testdata/series-bisect"}, Trees: []string{"stock"}, Boot: true, Survival: true, Out: dir})
	md, err := os.ReadFile(filepath.Join(dir, "series.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(md)
	for _, want := range []string{
		"| # | patch | apply | build | new warnings | checkpatch | boot | survival | build time | boot time |",
		// A subject too wide for the table's 100 columns is a numbered
		// note under it.
		"| 2/4 | (2) | ok | FAIL |",
		"- (2) 2/4, patch: net: skbuff: a syntax error (kci fixture: breaks the build)",
		"- bisectability failure: patch 2",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("series.md lacks %q:\n%s", want, s)
		}
	}
}

// TestSeriesUnverifiedPrefix: a prefix whose vmlinux lacks what the series
// adds so far is reported, neither booted nor blamed, and does not count
// as a build break.
func TestSeriesUnverifiedPrefix(t *testing.T) {
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log"), steps: map[int]fakeStep{2: {stale: true}}}
	boot := &fakeSeriesBooter{}
	rep, code, txt := runSeries(t, seriesTester(b, boot), SeriesOptions{
		Patches: []string{"testdata/series-bisect"}, Trees: []string{"stock"}, Boot: true, Survival: true})
	tr := rep.Trees[0]
	if tr.Patches[1].Build != results.StepUnverified || tr.Patches[1].Boot != nil {
		t.Errorf("patch 2: %+v", tr.Patches[1])
	}
	if len(tr.Bisect) != 0 || code != 0 {
		t.Errorf("bisect %+v, exit %d: an unverified prefix is not a build break", tr.Bisect, code)
	}
	if !strings.Contains(txt, "patch 2/4 not checked: built kernel lacks what the series adds: kfunc bpf_trace_skb") {
		t.Errorf("text:\n%s", txt)
	}
}

// TestSeriesConfigDefinedLater: the tree's fragment asks for an option
// patch 2 defines, so prefix 1 cannot meet the policy: not its fault. A
// violation no later patch explains stays a build failure.
func TestSeriesConfigDefinedLater(t *testing.T) {
	dir := t.TempDir()
	for i, d := range []string{
		"net: prepare\n\n--- a/net/a.c\n+++ b/net/a.c\n@@ -1 +1 @@\n-a\n+b\n",
		"net: add gated tracepoints\n\n--- a/net/Kconfig\n+++ b/net/Kconfig\n@@ -1,1 +1,4 @@\n a\n+config SKB_GATED_TRACEPOINTS\n+\tbool \"gated\"\n+\n",
		"net: use them\n\n--- a/net/b.c\n+++ b/net/b.c\n@@ -1 +1 @@\n-a\n+b\n",
	} {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("%04d.patch", i+1)), []byte(d), 0o644)
	}
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log"), steps: map[int]fakeStep{1: {config: "SKB_GATED_TRACEPOINTS"}, 3: {config: "NET_OTHER"}}}
	rep, code, txt := runSeries(t, seriesTester(b, &fakeSeriesBooter{}), SeriesOptions{Patches: []string{dir}, Trees: []string{"stock"}, Boot: true})
	p := rep.Trees[0].Patches
	if p[0].Build != results.StepUnverified || !strings.Contains(txt, "patch 1/3 not checked: config not yet complete: CONFIG_SKB_GATED_TRACEPOINTS comes with patch 2") {
		t.Errorf("patch 1: %s %q\n%s", p[0].Build, p[0].BuildError, txt)
	}
	if p[2].Build != results.StepFail || code != ExitBuild {
		t.Errorf("patch 3: %s, exit %d: a violation of its own is a build failure", p[2].Build, code)
	}
}

// TestSeriesWarningAcrossBreak: lib/string.c warns on the tree; patch 1
// breaks that file (make stops before the warning), patch 2 repairs it and
// the old warning prints again: not new.
func TestSeriesWarningAcrossBreak(t *testing.T) {
	b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log"), steps: map[int]fakeStep{
		1: {broken: true, log: filepath.Join(warnDir, "4-broken-quiet.log")},
		2: {log: filepath.Join(warnDir, "0-tree.log")},
	}}
	rep, _, _ := runSeries(t, seriesTester(b, &fakeSeriesBooter{}), SeriesOptions{Patches: []string{writeDiffs(t, 2)}, Trees: []string{"stock"}})
	for _, p := range rep.Trees[0].Patches {
		if len(p.NewWarnings) > 0 {
			t.Errorf("patch %d: new warnings %+v, want none", p.Index, p.NewWarnings)
		}
	}
}

// TestBuilderWarningsChain: the tree kernel's warnings are its build chain's
// (stock, full, then the tree's incremental build), oldest first.
func TestBuilderWarningsChain(t *testing.T) {
	root := t.TempDir()
	publish := func(key, parent, log string) *kernel.Artifacts {
		dir := filepath.Join(root, "kernels", key)
		os.MkdirAll(dir, 0o755)
		data, err := os.ReadFile(filepath.Join(warnDir, log))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "build.log"), data, 0o644)
		js := fmt.Sprintf(`{"key": %q, "parent": %q}`, key, parent)
		os.WriteFile(filepath.Join(dir, "build.json"), []byte(js), 0o644)
		a, err := (&kernel.Cache{Root: root}).Lookup(key)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	publish("stock", "", "0-tree.log")
	tree := publish("gtp", "stock", "2-fixed.log")
	set := (&Builder{Cache: &kernel.Cache{Root: root}}).Warnings(tree)
	var files []string
	for _, w := range set {
		files = append(files, w.File+"|"+w.Message[:min(len(w.Message), 10)])
	}
	sort.Strings(files)
	// stock's lib/string.c and foo.h warnings stay (not recompiled), the
	// objtool one is the same key, and the tree adds the linker's.
	if want := []string{"include/linux/foo.h|'foo_unuse", "lib/string.c|unused var", "vmlinux.o|objtool: b", "|ld: arch/x"}; !reflect.DeepEqual(files, want) {
		t.Errorf("warnings %q, want %q", files, want)
	}
}

// A series naming a tree kci.yaml lacks is a usage error (exit 64, as in
// kci test) and leaves no run directory.
func TestSeriesUnknownTreeLeavesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	st := seriesTester(&fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log")}, &fakeSeriesBooter{})
	d, rep, err := st.Series(context.Background(), SeriesOptions{Patches: []string{"testdata/series-bisect"}, Trees: []string{"nosuch"}, Out: dir})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != ExitUsage || !strings.HasPrefix(err.Error(), `--tree: no tree "nosuch"`) {
		t.Errorf("err %v, want exit %d naming the tree as PickTrees does", err, ExitUsage)
	}
	if d != "" || rep != nil {
		t.Errorf("returned run %q %v for a refused series", d, rep)
	}
	if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
		t.Errorf("run directory %s: %v, want none", dir, serr)
	}
}

// TestSeriesWarningPolicy: a series whose only faults are a new compiler
// warning or a checkpatch error exits 0 and its check is neutral; with
// --fail-on-warnings it exits 3 and its check fails. series.json records
// the choice, so the check kci post makes of the saved run agrees.
func TestSeriesWarningPolicy(t *testing.T) {
	for _, tc := range []struct {
		name           string
		first          string // patch 1's file: the fake's checkpatch finds an error in 0001.*
		warn           bool   // prefix 2 adds a compiler warning
		failOnWarnings bool
		code           int
		check          string
	}{
		{"warning", "p1.patch", true, false, 0, verdict.Neutral},
		{"warning, --fail-on-warnings", "p1.patch", true, true, ExitBuild, verdict.Failure},
		{"checkpatch error", "0001.patch", false, false, 0, verdict.Neutral},
		{"checkpatch error, --fail-on-warnings", "0001.patch", false, true, ExitBuild, verdict.Failure},
		{"clean, --fail-on-warnings", "p1.patch", false, true, 0, verdict.Success},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			write := func(name, text string) {
				if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write(tc.first, "net: a\n\n--- a/net/a.c\n+++ b/net/a.c\n@@ -1 +1 @@\n-a\n+b\n")
			write("p2.patch", "net: b\n\n--- a/net/b.c\n+++ b/net/b.c\n@@ -1 +1 @@\n-a\n+b\n")
			b := &fakeSeriesBuilder{treeLog: filepath.Join(warnDir, "0-tree.log")}
			if tc.warn {
				b.steps = map[int]fakeStep{2: {log: filepath.Join(warnDir, "1-shifted.log")}}
			}
			out := t.TempDir()
			rep, code, _ := runSeries(t, seriesTester(b, &fakeSeriesBooter{}), SeriesOptions{
				Patches: []string{src}, Trees: []string{"stock"}, Boot: true, Survival: true, FailOnWarnings: tc.failOnWarnings, Out: out})
			p := rep.Trees[0].Patches
			if got := len(p[1].NewWarnings) > 0; got != tc.warn {
				t.Fatalf("prefix 2 new warnings %v, want %v", p[1].NewWarnings, tc.warn)
			}
			if got, want := p[0].Checkpatch.Errors, map[bool]int{true: 1}[tc.first == "0001.patch"]; got != want {
				t.Fatalf("patch 1 checkpatch errors %d, want %d", got, want)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			disk, err := results.LoadSeries(out)
			if err != nil {
				t.Fatal(err)
			}
			if disk.FailOnWarnings != tc.failOnWarnings {
				t.Errorf("series.json fail_on_warnings %v, want %v", disk.FailOnWarnings, tc.failOnWarnings)
			}
			if c := verdict.SeriesConclude(disk, "stock"); c.State != tc.check {
				t.Errorf("check %s (%q), want %s", c.State, c.Title, tc.check)
			}
		})
	}
}
