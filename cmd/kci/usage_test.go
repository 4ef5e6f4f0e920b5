package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/results"
)

// kci runs the command line as main does and returns its exit code and
// stderr.
func kci(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errOut strings.Builder
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String() + errOut.String()
}

// Bad input is a usage error (exit 64) naming the flag in words, before
// the cache, a run directory or a build.
func TestUsageErrorsExit64(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	patch := filepath.Join(dir, "p.patch")
	if err := os.WriteFile(patch, []byte("--- a/x\n+++ b/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old")
	if err := results.Save(old, &results.Run{Schema: results.SchemaVersion, ID: "old00001"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"test", "--reps", "abc", patch}, `--reps "abc": want a whole number`},
		{[]string{"test", "--reps", "0", patch}, "--reps 0: want 1 or more"},
		{[]string{"test", "--warmup", "-1s", patch}, "--warmup -1s: want 0 or more"},
		{[]string{"test", "--window", "soon", patch}, `--window "soon": want a duration`},
		{[]string{"test", "--seed", "0", patch}, "--seed 0: seeds start at 1"},
		{[]string{"test", "--seed", "-1", patch}, `--seed "-1": want a whole number, 1 or more`},
		{[]string{"test", "--parallel", "0", patch}, "--parallel 0: want 1 or more"},
		{[]string{"test", "--memory", "2X", patch}, `--memory "2X": want a size such as 2G`},
		{[]string{"test", "--memory", "32M", patch}, "--memory 32M: want 64M or more"},
		{[]string{"test", "--variants", "nosuch", patch}, `--variants: unknown variant "nosuch" (known: none, cnt, ext, gtp, gtpchurn, gtplru, hash, lru)`},
		{[]string{"series", "--variants", "cnt,nosuch", patch}, `unknown variant "nosuch"`},
		{[]string{"series", "--variants", "hash", "--seeds", "2", patch}, "--seeds 2: want 3 or more"},
		{[]string{"profile", "--variants", "nosuch", patch}, `unknown variant "nosuch"`},
		{[]string{"test", "--out", old, patch}, "holds a run old00001"},
		{[]string{"series", "--out", old, patch}, "holds a run old00001"},
		{[]string{"bench", "--out", old}, "holds a run old00001"},
		{[]string{"bench", "--reps", "-1"}, "--reps -1: want 1 or more"},
		{[]string{"bench", "--first-seed", "0"}, "--first-seed 0: seeds start at 1"},
		{[]string{"test", "--tree", "nope", patch}, `--tree: no tree "nope"`},
		{[]string{"series", "--tree", "nope", patch}, `--tree: no tree "nope"`},
		{[]string{"test", "--no-such-flag", patch}, "unknown flag: --no-such-flag"},
		{[]string{"nosuchverb"}, `unknown command "nosuchverb"`},
	} {
		cache := filepath.Join(dir, "cache")
		t.Setenv("KCI_CACHE", cache)
		code, msg := kci(t, tc.args...)
		if code != job.ExitUsage || !strings.Contains(msg, tc.want) {
			t.Errorf("kci %v: exit %d, %q; want exit %d saying %q", tc.args, code, msg, job.ExitUsage, tc.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "kci-results")); err == nil {
			t.Fatalf("kci %v created a run directory before refusing", tc.args)
		}
		if _, err := os.Stat(filepath.Join(cache, "kernels")); err == nil {
			t.Fatalf("kci %v built into the cache before refusing", tc.args)
		}
	}
	if r, err := results.Load(old); err != nil || r.ID != "old00001" {
		t.Errorf("the earlier run changed: %v %v", r, err)
	}
}

func TestMemoryUnits(t *testing.T) {
	for in, want := range map[string]int{"2G": 2048, "2048M": 2048, "2048": 2048, "1.5G": 1536, "2GiB": 2048, "512MiB": 512, "4g": 4096, "1T": 1 << 20} {
		if got, err := parseMiB(in); err != nil || got != want {
			t.Errorf("parseMiB(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "G", "2X", "-1G", "1.1M", "2 G B"} {
		if got, err := parseMiB(in); err == nil {
			t.Errorf("parseMiB(%q) = %d, want an error", in, got)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out := kci(t, "--version")
	if code != 0 || !strings.HasPrefix(out, "kci ") || len(strings.TrimSpace(out)) <= len("kci ") {
		t.Errorf("kci --version: exit %d, %q", code, out)
	}
}

// A patch that does not apply is refused before any kernel is built, by
// kci test --tree, kci build and kci run --patch, naming the file, the
// hunk and git's message (exit 2).
func TestPatchThatDoesNotApplyRefusedBeforeAnyBuild(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	repo := filepath.Join(dir, "linux")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"Makefile": "VERSION = 6\nPATCHLEVEL = 12\n", "f.c": "a\nb\nc\n"} {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=kci", "-c", "user.email=kci@example.org", "commit", "-qm", "base"}} {
		if out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	yaml := "base:\n  git: " + repo + "\ntrees:\n  - name: stock\n"
	if err := os.WriteFile("kci.yaml", []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("x.patch", []byte("--- a/f.c\n+++ b/f.c\n@@ -1,3 +1,3 @@\n a\n-B\n+b2\n c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	t.Setenv("KCI_CACHE", cache)
	want := "x.patch: does not apply to tree stock: f.c: hunk #1 at line 1: error: patch failed: f.c:1"
	for _, args := range [][]string{{"build", "--tree", "stock", "x.patch"}, {"run", "--tree", "stock", "--patch", "x.patch"}, {"test", "--tree", "stock", "x.patch"}} {
		code, msg := kci(t, args...)
		if code != job.ExitApply || !strings.Contains(msg, want) {
			t.Errorf("kci %v: exit %d, %q; want exit %d saying %q", args, code, msg, job.ExitApply, want)
		}
		if _, err := os.Stat(filepath.Join(cache, "kernels")); err == nil {
			t.Fatalf("kci %v built a kernel before refusing", args)
		}
	}
}

// kci series reads --tree as kci test does (job.PickTrees): an unknown
// tree is exit 64 with the very same line, and --own on a tree without a
// series of its own is exit 64 too; nothing is built or created first.
func TestSeriesTreeRefusedAsInTest(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	patch := filepath.Join(dir, "p.patch")
	if err := os.WriteFile(patch, []byte("--- a/x\n+++ b/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(dir, "cache")
	t.Setenv("KCI_CACHE", cache)
	testCode, testMsg := kci(t, "test", "--tree", "nope", patch)
	code, msg := kci(t, "series", "--tree", "nope", patch)
	if testCode != job.ExitUsage || !strings.HasPrefix(testMsg, `kci: --tree: no tree "nope" in `) {
		t.Errorf("kci test --tree nope: exit %d, %q", testCode, testMsg)
	}
	if code != testCode || msg != testMsg {
		t.Errorf("kci series --tree nope: exit %d, %q; want kci test's exit %d, %q", code, msg, testCode, testMsg)
	}
	code, msg = kci(t, "series", "--own", "--tree", "stock")
	if want := "kci: --own: tree stock has no series of its own\n"; code != job.ExitUsage || msg != want {
		t.Errorf("kci series --own --tree stock: exit %d, %q; want exit %d, %q", code, msg, job.ExitUsage, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "kci-results")); err == nil {
		t.Error("a run directory was created before the refusal")
	}
	if _, err := os.Stat(filepath.Join(cache, "kernels")); err == nil {
		t.Error("a kernel was built before the refusal")
	}
}
