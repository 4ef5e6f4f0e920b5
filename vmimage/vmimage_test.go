package vmimage

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/u-root/u-root/pkg/cpio"

	kci "github.com/kci-dev/kci"
)

func TestURootKey(t *testing.T) {
	e := toolEnv{GoVersion: "go1.26.8", GOOS: "linux", GOARCH: "amd64", URoot: "v0.16.0"}
	a := urootKey(e, []string{"init", "ls", "gosh"})
	if b := urootKey(e, []string{"gosh", "init", "ls"}); a != b {
		t.Errorf("command order changed the key: %s != %s", a, b)
	}
	for name, other := range map[string]string{
		"commands": urootKey(e, []string{"init", "ls"}),
		"u-root":   urootKey(toolEnv{GoVersion: e.GoVersion, GOOS: e.GOOS, GOARCH: e.GOARCH, URoot: "v0.15.0"}, []string{"init", "ls", "gosh"}),
		"go":       urootKey(toolEnv{GoVersion: "go1.25.0", GOOS: e.GOOS, GOARCH: e.GOARCH, URoot: e.URoot}, []string{"init", "ls", "gosh"}),
	} {
		if other == a {
			t.Errorf("a different %s gave the same key", name)
		}
	}
}

func TestHashPackages(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	listed := `{"ImportPath":"fmt","Dir":"/goroot/src/fmt","GoFiles":["print.go"]}
{"ImportPath":"github.com/cilium/ebpf","Dir":"/nonexistent","GoFiles":["x.go"],"Module":{"Path":"github.com/cilium/ebpf","Version":"v0.22.0"}}
{"ImportPath":"github.com/kci-dev/kci/cmd/kci-guest","Dir":"` + dir + `","GoFiles":["main.go"],"Module":{"Path":"github.com/kci-dev/kci","Main":true}}
`
	pkgs, err := decodeListed(strings.NewReader(listed))
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 3 {
		t.Fatalf("decoded %d packages, want 3", len(pkgs))
	}
	sum := func() string {
		h := sha256.New()
		if err := hashPackages(h, pkgs); err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(h.Sum(nil))
	}
	write("package main\n")
	a := sum()
	if b := sum(); a != b {
		t.Fatal("hash is not stable")
	}
	write("package main // changed\n")
	if b := sum(); a == b {
		t.Error("editing a kci source file did not change the hash")
	}
	pkgs[1].Module.Version = "v0.23.0"
	if c, b := sum(), a; c == b {
		t.Error("a dependency version bump did not change the hash")
	}
}

func readCPIO(t *testing.T, b []byte) map[string]cpio.Record {
	t.Helper()
	recs := map[string]cpio.Record{}
	r := cpio.Newc.Reader(bytes.NewReader(b))
	for {
		rec, err := r.ReadRecord()
		if err == io.EOF {
			return recs
		}
		if err != nil {
			t.Fatalf("read cpio: %v", err)
		}
		recs[rec.Name] = rec
	}
}

func TestWriteCPIO(t *testing.T) {
	var buf bytes.Buffer
	err := writeCPIO(&buf, []File{
		{Path: "/kci/plan.json", Data: []byte(`{"sanity":true}`)},
		{Path: "bin/tool", Data: []byte("x"), Mode: 0o755},
		{Path: "bin/uinit", Link: "tool"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d is not 4-byte aligned", buf.Len())
	}
	recs := readCPIO(t, buf.Bytes())
	for _, want := range []string{"kci", "kci/plan.json", "bin", "bin/tool", "bin/uinit"} {
		if _, ok := recs[want]; !ok {
			t.Errorf("archive lacks %q (has %v)", want, keys(recs))
		}
	}
	plan := recs["kci/plan.json"]
	got, _ := io.ReadAll(io.NewSectionReader(plan.ReaderAt, 0, int64(plan.FileSize)))
	if string(got) != `{"sanity":true}` {
		t.Errorf("plan content = %q", got)
	}
	if m := recs["bin/tool"].Mode & 0o777; m != 0o755 {
		t.Errorf("bin/tool mode = %o, want 755", m)
	}
	if m := recs["kci/plan.json"].Mode & 0o777; m != 0o644 {
		t.Errorf("default mode = %o, want 644", m)
	}
	if recs["bin/uinit"].Mode&cpio.S_IFMT != cpio.S_IFLNK {
		t.Errorf("bin/uinit is not a symlink: mode %o", recs["bin/uinit"].Mode)
	}
}

func TestComposePadsBetweenArchives(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.cpio")
	// A 5-byte "image": the run layer must still start 4-byte aligned.
	if err := os.WriteFile(base, []byte("01234"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := &Image{Path: base}
	dst := filepath.Join(dir, "run.cpio")
	if err := img.Compose(dst, File{Path: "kci/plan.json", Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b[8:], []byte("070701")) {
		t.Fatalf("run layer does not start at offset 8: % x", b[:16])
	}
	if _, ok := readCPIO(t, b[8:])["kci/plan.json"]; !ok {
		t.Error("run layer lacks the plan")
	}
}

func TestIsKCIModule(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "go.mod")
	os.WriteFile(p, []byte("// comment\nmodule github.com/kci-dev/kci\n\ngo 1.26\n"), 0o644)
	if !isKCIModule(p) {
		t.Error("kci go.mod not recognised")
	}
	os.WriteFile(p, []byte("module github.com/kci-dev/kci2\n"), 0o644)
	if isKCIModule(p) {
		t.Error("another module recognised as kci")
	}
}

// TestAgentSourceComplete: the sources embedded in the binary must build
// the agent on their own (an installed kci has nothing else). Every file
// go list needs for the agent's packages of this module is embedded.
func TestAgentSourceComplete(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go tool")
	}
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,GoFiles,EmbedFiles,Module", AgentPackage).Output()
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err := decodeListed(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	need := []string{"go.mod", "go.sum", "cmd/kci-uroot/main.go"} // builds u-root's layer
	for _, p := range pkgs {
		if p.Module == nil || p.Module.Path != kciModulePath {
			continue
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, kciModulePath), "/")
		for _, f := range append(append([]string(nil), p.GoFiles...), p.EmbedFiles...) {
			need = append(need, filepath.ToSlash(filepath.Join(rel, f)))
		}
	}
	for _, f := range need {
		if _, err := fs.Stat(kci.AgentSource, f); err != nil {
			t.Errorf("%s is not in kci.AgentSource: add its package to the go:embed lines in embed.go", f)
		}
	}
	if len(need) < 10 {
		t.Fatalf("only %d files listed: %v", len(need), need)
	}
	assertOnlyAgentPackages(t, need)
}

// assertOnlyAgentPackages: the embedded tree holds no package the agent
// does not import, so the guest never ships (or depends on) host stages
// such as the kernel builder.
func assertOnlyAgentPackages(t *testing.T, need []string) {
	t.Helper()
	dirs := map[string]bool{}
	for _, f := range need {
		dirs[path.Dir(f)] = true
	}
	err := fs.WalkDir(kci.AgentSource, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		if !dirs[path.Dir(p)] {
			t.Errorf("%s is embedded in kci.AgentSource but the agent does not import its package: drop it from embed.go", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A source directory from the embedded tree, in a cache that does not
// exist yet, with no checkout around: what an installed kci sees.
func TestFindSourceEmbedded(t *testing.T) {
	t.Setenv("KCI_SRC", "")
	t.Chdir(t.TempDir())
	cache := filepath.Join(t.TempDir(), "new-cache")
	d, err := findSource(cache)
	if err != nil {
		t.Fatal(err)
	}
	if !isKCIModule(filepath.Join(d, "go.mod")) {
		t.Fatalf("%s has no kci go.mod", d)
	}
	if _, err := os.Stat(filepath.Join(d, "cmd", "kci-guest", "main.go")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KCI_SRC", t.TempDir())
	if _, err := findSource(cache); err == nil || !strings.Contains(err.Error(), "KCI_SRC") {
		t.Fatalf("KCI_SRC without a kci module: %v, want an error naming KCI_SRC", err)
	}
}

func keys(m map[string]cpio.Record) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// TestBuild builds the real image in the kci cache (cold the first time:
// minutes; warm afterwards) and checks its contents.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds u-root and the agent with the Go toolchain; skipped with -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	var log bytes.Buffer
	img, err := Build(ctx, Options{Log: &log})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	t.Logf("first build: %v (cached=%v) %s", img.Duration, img.Cached, img.Path)
	warm, err := Build(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("warm build: %v", warm.Duration)
	if !warm.Cached || warm.Path != img.Path {
		t.Errorf("second build was not a cache hit: %+v vs %+v", warm, img)
	}
	b, err := os.ReadFile(img.Path)
	if err != nil {
		t.Fatal(err)
	}
	// The reader stops at the first trailer, i.e. after the u-root layer.
	recs := readCPIO(t, b)
	for _, want := range []string{"init", "bbin/bb", "bbin/gosh", "bin/defaultsh"} {
		if _, ok := recs[want]; !ok {
			t.Errorf("u-root layer lacks %s", want)
		}
	}
	ab, err := os.ReadFile(img.Layers[1])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(bytes.TrimRight(b, "\x00"), bytes.TrimRight(ab, "\x00")) {
		t.Error("image does not end with the agent layer")
	}
	agent := readCPIO(t, ab)
	if rec, ok := agent[AgentPath]; !ok || rec.FileSize < 1<<20 {
		t.Errorf("agent layer lacks a plausible %s: %v", AgentPath, keys(agent))
	}
	if rec, ok := agent["bin/uinit"]; !ok || rec.Mode&cpio.S_IFMT != cpio.S_IFLNK {
		t.Errorf("agent layer lacks the bin/uinit link")
	}
	start := time.Now()
	run := filepath.Join(t.TempDir(), "initrd")
	if err := img.Compose(run, File{Path: "kci/plan.json", Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	t.Logf("compose: %v", time.Since(start))
}

// ^C during u-root's build ends it at once: the builder is a child whose
// group proc kills (mkuimage in kci's own process ran its go builds to
// their end), and a canceled build starts nothing.
func TestURootBuildStopsOnCancel(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go tool")
	}
	src, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	o := Options{SourceDir: src, Commands: []string{"init", "echo"}, Log: io.Discard}
	env := toolEnv{URoot: "test"}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	path := filepath.Join(t.TempDir(), "uroot.cpio")
	if err := buildURootLayer(done, o, env, path); !errors.Is(err, context.Canceled) {
		t.Errorf("build on a canceled context: %v, want context.Canceled", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(500*time.Millisecond, cancel)
	start := time.Now()
	err = buildURootLayer(ctx, o, env, path)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("build canceled after 0.5 s: %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Errorf("build canceled after 0.5 s took %v to end", d)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a canceled build published its layer")
	}
}
