package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/kernel"
)

// devCheckout is a kernel developer's git checkout in miniature: tag
// base, two commits on it, and uncommitted work kci must not touch.
func devCheckout(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "linux")
	if err := os.MkdirAll(filepath.Join(dir, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ file, text, git string }{
		{"Makefile", "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\n", ""},
		{"net/skbuff.c", "int a;\nint b;\nint c;\n", "init -q -b main|add -A|commit -qm base|tag base"},
		{"net/skbuff.c", "int a;\nint b2;\nint c;\n", "commit -qam net: rename b"},
		{"net/gtp.c", "int gtp;\n", "add net/gtp.c|commit -qm net: add gtp.c"},
		{"net/skbuff.c", "uncommitted\n", ""},
	} {
		write(t, filepath.Join(dir, step.file), step.text)
		for _, g := range strings.Split(step.git, "|") {
			if g != "" {
				gitIn(t, dir, splitGit(g)...)
			}
		}
	}
	return dir
}

// splitGit splits "commit -qm net: rename b" keeping the message whole.
func splitGit(s string) []string {
	if before, msg, ok := strings.Cut(s, "-qm "); ok {
		return append(strings.Fields(before), "-qm", msg)
	}
	if before, msg, ok := strings.Cut(s, "-qam "); ok {
		return append(strings.Fields(before), "-qam", msg)
	}
	return strings.Fields(s)
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=dev", "GIT_AUTHOR_EMAIL=dev@localhost",
		"GIT_COMMITTER_NAME=dev", "GIT_COMMITTER_EMAIL=dev@localhost", "GIT_OPTIONAL_LOCKS=0")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// One parser for every verb: a range and "-" become files LoadSeries
// reads, in the order given, beside plain paths; Keep copies what was
// made into the run directory and Close removes the temporary copy.
func TestResolvePatches(t *testing.T) {
	co := devCheckout(t)
	before := gitIn(t, co, "status", "--porcelain")
	plain := filepath.Join(t.TempDir(), "p.patch")
	write(t, plain, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
	mbox := gitIn(t, co, "format-patch", "--stdout", "base..HEAD~1")
	var log strings.Builder
	in, err := resolvePatches(context.Background(), []string{co + ":base..HEAD", "-", plain}, strings.NewReader(mbox), &log)
	if err != nil {
		t.Fatal(err)
	}
	if len(in.paths) != 3 || in.paths[2] != plain {
		t.Fatalf("paths %q", in.paths)
	}
	ps, err := kernel.LoadSeries(in.paths...)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.Subject)
	}
	if want := "net: rename b|net: add gtp.c|net: rename b|p.patch"; strings.Join(got, "|") != want {
		t.Errorf("series %q, want %q", strings.Join(got, "|"), want)
	}
	if !strings.Contains(log.String(), co+":base..HEAD: 2 commits") {
		t.Errorf("log %q", log.String())
	}
	if after := gitIn(t, co, "status", "--porcelain"); after != before {
		t.Errorf("checkout changed: %q then %q", before, after)
	}
	run := t.TempDir()
	if err := in.Keep(run); err != nil {
		t.Fatal(err)
	}
	kept, _ := filepath.Glob(filepath.Join(run, inputDir, "*", "*.patch"))
	if data, err := os.ReadFile(filepath.Join(run, inputDir, "2-stdin.mbox")); err != nil || string(data) != mbox || len(kept) != 2 {
		t.Errorf("kept %q and stdin (%v)", kept, err)
	}
	in.Close()
	if _, err := os.Stat(in.dir); !os.IsNotExist(err) {
		t.Errorf("temporary copy %s left: %v", in.dir, err)
	}
}

// Each verb takes - and CHECKOUT:RANGE, and refuses a bad one (exit 64,
// one line naming it) before the cache, a build or a run directory.
func TestBadPatchInputRefusedFirst(t *testing.T) {
	co, plain := devCheckout(t), t.TempDir()
	empty := func() io.Reader { return strings.NewReader("") }
	for _, tc := range []badInput{
		{args: []string{"test", co + ":nosuch..HEAD"}, want: "patch " + co + ":nosuch..HEAD: range nosuch..HEAD in " + co + `: "nosuch" is not a commit there`},
		{args: []string{"series", co + ":HEAD..HEAD"}, want: "range HEAD..HEAD in " + co + " holds no commits"},
		{args: []string{"build", plain + ":base..HEAD"}, want: plain + ": not a git checkout"},
		{args: []string{"profile", "/nonexistent/linux:base..HEAD"}, want: "/nonexistent/linux: no such directory"},
		{args: []string{"run", "--patch", co + ":base..nosuch"}, want: `"nosuch" is not a commit there`},
		{args: []string{"test", "-"}, stdin: empty, want: "patch -: standard input is empty"},
		{args: []string{"build", "-"}, stdin: empty, want: "patch -: standard input is empty"},
		{args: []string{"test", "-", "-"}, stdin: func() io.Reader { return strings.NewReader("x") }, want: "standard input given twice"},
		// kci.yaml's base.git and base.ref, checked as the tarball is.
		{args: []string{"build"}, yaml: "base:\n  git: " + co + "\n  ref: nosuch\ntrees:\n  - name: stock\n", want: "kci.yaml:3: base.ref: nosuch: not a commit in " + co},
		{args: []string{"build"}, yaml: "base:\n  git: " + co + "\n  ref: HEAD~1\ntrees:\n  - name: stock\n", want: "kci.yaml:3: base.ref: HEAD~1: a revision expression"},
		{args: []string{"test", "--tree", "stock"}, yaml: "base:\n  git: " + plain + "\ntrees:\n  - name: stock\n", want: "kci.yaml:2: base.git: " + plain + ": not a git checkout"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) { tc.check(t) })
	}
}

// A good range and an mbox on standard input reach the apply check
// against the base kci.yaml names (base.git: the checkout, base.ref:
// base): the range's two commits apply there, so a plain patch after
// them written against base is the one named, exit 2, before any build.
func TestOwnTreeReachesTheApplyCheck(t *testing.T) {
	co := devCheckout(t)
	stale := filepath.Join(t.TempDir(), "stale.patch")
	write(t, stale, "--- a/net/skbuff.c\n+++ b/net/skbuff.c\n@@ -1,3 +1,3 @@\n int a;\n-int b;\n+int bb;\n int c;\n")
	yaml := "base:\n  git: " + co + "\n  ref: base\ntrees:\n  - name: stock\n"
	mbox := gitIn(t, co, "format-patch", "--stdout", "base..HEAD")
	for _, args := range [][]string{
		{"build", co + ":base..HEAD", stale},
		{"test", "--tree", "stock", co + ":base..HEAD", stale},
		{"test", "--tree", "stock", "-", stale},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			write(t, filepath.Join(dir, "kci.yaml"), yaml)
			t.Setenv("KCI_CACHE", filepath.Join(dir, "cache"))
			var out, errOut strings.Builder
			code := runStdin(context.Background(), args, strings.NewReader(mbox), &out, &errOut)
			msg := errOut.String()
			if code != job.ExitApply || !strings.Contains(msg, "stale.patch: does not apply to tree stock: net/skbuff.c") {
				t.Errorf("exit %d, %q; want %d naming stale.patch", code, msg, job.ExitApply)
			}
			if _, err := os.Stat(filepath.Join(dir, "cache", "builds")); err == nil {
				t.Errorf("a build was started")
			}
			if st := gitIn(t, co, "status", "--porcelain"); st != " M net/skbuff.c\n" {
				t.Errorf("the checkout's status is %q", st)
			}
		})
	}
}
