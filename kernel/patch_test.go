package kernel

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadSeriesKinds(t *testing.T) {
	ps, err := LoadSeries("testdata/one-file.patch", "testdata/breaks-build.diff")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 {
		t.Fatalf("got %d patches, want 2", len(ps))
	}
	if !ps[0].Mail || ps[0].Subject != "net: skbuff: document scrubbing for a kci fixture" {
		t.Errorf("format-patch: mail=%v subject=%q", ps[0].Mail, ps[0].Subject)
	}
	if ps[1].Mail || !strings.Contains(ps[1].Subject, "breaks the build") {
		t.Errorf("plain diff: mail=%v subject=%q", ps[1].Mail, ps[1].Subject)
	}
}

func TestLoadSeriesMboxDirAndSeriesFile(t *testing.T) {
	one, _ := os.ReadFile("testdata/one-file.patch")
	cover := "From 1111111111111111111111111111111111111111 Mon Sep 17 00:00:00 2001\nFrom: a <a@b>\nSubject: [PATCH 0/2] the\n series\n\nblurb\n"
	second := strings.Replace(string(one), "document scrubbing", "second change", 1)
	dir := t.TempDir()
	mbox := filepath.Join(dir, "series.mbox")
	os.WriteFile(mbox, []byte(cover+string(one)+second), 0o644)
	ps, err := LoadSeries(mbox)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Subject != "net: skbuff: document scrubbing for a kci fixture" ||
		ps[1].Subject != "net: skbuff: second change for a kci fixture" {
		t.Fatalf("mbox split: %+v", subjects(ps))
	}

	// A directory is read in name order.
	d2 := t.TempDir()
	os.WriteFile(filepath.Join(d2, "0002-b.patch"), []byte(second), 0o644)
	os.WriteFile(filepath.Join(d2, "0001-a.patch"), one, 0o644)
	os.WriteFile(filepath.Join(d2, "notes.txt"), []byte("ignored"), 0o644)
	ps, err = LoadSeries(d2)
	if err != nil || len(ps) != 2 || !strings.Contains(ps[1].Subject, "second") {
		t.Fatalf("dir: %v %v", subjects(ps), err)
	}
	// A series file decides the order and wins over name order.
	os.WriteFile(filepath.Join(d2, "series"), []byte("# quilt\n0002-b.patch -p1\n\n0001-a.patch\n"), 0o644)
	ps, err = LoadSeries(d2)
	if err != nil || len(ps) != 2 || !strings.Contains(ps[0].Subject, "second") {
		t.Fatalf("series: %v %v", subjects(ps), err)
	}
}

func TestLoadSeriesErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	notPatch := filepath.Join(dir, "README")
	os.WriteFile(notPatch, []byte("hello\n"), 0o644)
	for _, p := range []string{notPatch, filepath.Join(dir, "missing.patch"), dir} {
		_, err := LoadSeries(p)
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("LoadSeries(%s) = %v, want an error naming it", p, err)
		}
	}
}

// A patch that names a path outside the tree is refused when it is read,
// in one line naming the path: git apply says "invalid path" only with a
// tree, after the base's import.
func TestLoadSeriesRefusesPathsOutsideTheTree(t *testing.T) {
	dir := t.TempDir()
	hunk := "@@ -0,0 +1 @@\n+int x;\n"
	cases := map[string]string{
		"diff --git a/../evil.c b/../evil.c\nnew file mode 100644\n--- /dev/null\n+++ b/../evil.c\n" + hunk: "../evil.c",
		"--- a/net/x.c\t2024-01-01\n+++ b/net/../../x.c\t2024-01-01\n" + hunk:                               "net/../../x.c",
		"diff --git a/a.c b/a.c\nsimilarity index 100%\nrename from a.c\nrename to ../a.c\n":                "../a.c",
		"--- /etc/passwd\n+++ /etc/passwd\n" + hunk:                                                         "/etc/passwd",
	}
	for text, bad := range cases {
		p := filepath.Join(dir, "p.patch")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadSeries(p)
		if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), p) || strings.Contains(err.Error(), "\n") {
			t.Errorf("patch naming %s: error %v, want one line naming the patch and the path", bad, err)
		}
	}
	ok := "diff --git a/net/core/x.c b/net/core/x.c\n--- a/net/core/x.c\n+++ b/net/core/x.c\n@@ -1 +1 @@\n-a\n+b\n"
	p := filepath.Join(dir, "ok.patch")
	if err := os.WriteFile(p, []byte(ok), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSeries(p); err != nil {
		t.Errorf("an in-tree patch refused: %v", err)
	}
}

func subjects(ps []Patch) []string {
	var s []string
	for _, p := range ps {
		s = append(s, p.Subject)
	}
	return s
}

// A real git repo holding the one file the fixtures touch: apply failures
// must name the patch, subject, file and hunk, for mails and plain diffs.
func TestApplySeriesFailureNamesHunk(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	ctx := context.Background()
	src := findBaseSkbuff(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "net/core"), 0o755)
	data, _ := os.ReadFile(src)
	os.WriteFile(filepath.Join(dir, "net/core/skbuff.c"), data, 0o644)
	g := command{dir: dir, env: gitEnv}
	for _, a := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-qm", "base"}} {
		if _, err := g.run(ctx, "git", a...); err != nil {
			t.Fatal(err)
		}
	}
	good, _ := LoadSeries("testdata/one-file.patch")
	if err := applySeries(ctx, dir, good); err != nil {
		t.Fatalf("good mail patch: %v", err)
	}
	bad, _ := LoadSeries("testdata/does-not-apply.diff")
	err := applySeries(ctx, dir, bad)
	var ae *ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("got %v, want *ApplyError", err)
	}
	if ae.File != "net/core/skbuff.c" || !strings.HasPrefix(ae.Hunk, "@@ -6166,7") || !strings.Contains(ae.Error(), "does-not-apply.diff") {
		t.Errorf("apply error lacks file/hunk/patch: %q (file %q hunk %q)", ae.Error(), ae.File, ae.Hunk)
	}
	// Same stale patch as a mail, through git am -3: still named, and am aborted.
	mail := filepath.Join(t.TempDir(), "stale.patch")
	body, _ := os.ReadFile("testdata/does-not-apply.diff")
	os.WriteFile(mail, []byte("From 2222222222222222222222222222222222222222 Mon Sep 17 00:00:00 2001\nFrom: a <a@b>\nSubject: [PATCH] stale\n\n---\n"+string(body)), 0o644)
	ms, err := LoadSeries(mail)
	if err != nil {
		t.Fatal(err)
	}
	err = applySeries(ctx, dir, ms)
	if !errors.As(err, &ae) || ae.Subject != "stale" || ae.File == "" {
		t.Logf("output: %s", ae.Output)
		t.Fatalf("mail: got %v (%+v)", err, ae)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "rebase-apply")); err == nil {
		t.Error("git am left a half-applied session behind")
	}
}

// findBaseSkbuff finds net/core/skbuff.c of 6.12 for the apply test: from
// the imported base in the cache, or by reading the Debian tarball.
func findBaseSkbuff(t *testing.T) string {
	t.Helper()
	c, err := DefaultCache()
	if err == nil {
		m, _ := filepath.Glob(filepath.Join(c.Root, "base", "debian-*", "src", "net", "core", "skbuff.c"))
		if len(m) > 0 {
			return m[0]
		}
	}
	if _, err := os.Stat(DebianTarball); err != nil {
		t.Skip("needs the linux-source-6.12 package (skbuff.c of 6.12)")
	}
	dir := t.TempDir()
	cmd := exec.Command("tar", "xf", DebianTarball, "-C", dir, "--wildcards", "*/net/core/skbuff.c")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tar: %v %s", err, out)
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*", "net", "core", "skbuff.c"))
	if len(m) == 0 {
		t.Fatal("skbuff.c not in tarball")
	}
	return m[0]
}
