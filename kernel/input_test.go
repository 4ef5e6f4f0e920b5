package kernel

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkout is a small git checkout, as a kernel developer's: tag base,
// then two commits on top (one edits a file, one adds a file), then a
// staged change and an unstaged one that are nobody's business but his.
func checkout(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "linux")
	if err := os.MkdirAll(filepath.Join(dir, "net/core"), 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) {
		if out, err := (command{dir: dir, env: gitEnv}).run(context.Background(), "git", args...); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	put("Makefile", "VERSION = 6\nPATCHLEVEL = 12\n")
	put("net/core/skbuff.c", "int a;\nint b;\nint c;\n")
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-qm", "base")
	git("tag", "base")
	put("net/core/skbuff.c", "int a;\nint b2;\nint c;\n")
	git("commit", "-qam", "net: skbuff: rename b")
	put("net/core/gtp.c", "int gtp;\n")
	git("add", "net/core/gtp.c")
	git("commit", "-qm", "net: add gtp.c")
	put("Makefile", "VERSION = 6\nPATCHLEVEL = 13\n")
	git("add", "Makefile")
	put("net/core/skbuff.c", "dirty\n")
	return dir
}

// state is what a user sees of his checkout: HEAD, status, the index
// file's bytes and modification time.
func state(t *testing.T, dir string) string {
	t.Helper()
	g := command{dir: dir, env: []string{"GIT_OPTIONAL_LOCKS=0"}}
	head, err := g.run(context.Background(), "git", "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	st, err := g.run(context.Background(), "git", "status", "--porcelain")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := os.ReadFile(filepath.Join(dir, ".git/index"))
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(dir, ".git/index"))
	return head + st + fmt.Sprintf("%x", sha256.Sum256(idx)) + fi.ModTime().String()
}

func TestParseInput(t *testing.T) {
	co := checkout(t)
	file := filepath.Join(t.TempDir(), "a:b..c.patch") // exists: a path, colon or not
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arg     string
		kind    InputKind
		co, rng string
	}{
		{"-", InputStdin, "", ""},
		{file, InputPath, "", ""},
		{"patches/x.patch", InputPath, "", ""},
		{co + ":base..HEAD", InputRange, co, "base..HEAD"},
		{co + ":origin/main...topic", InputRange, co, "origin/main...topic"},
		{co + ":HEAD~2..", InputRange, co, "HEAD~2.."},
		{"/nonexistent:base..HEAD", InputRange, "/nonexistent", "base..HEAD"},
		{co + ":HEAD", InputPath, "", ""}, // no range: a (missing) path
	} {
		got := ParseInput(c.arg)
		if got.Kind != c.kind || got.Checkout != c.co || got.Range != c.rng || got.Arg != c.arg {
			t.Errorf("ParseInput(%q) = %+v, want kind %d %q %q", c.arg, got, c.kind, c.co, c.rng)
		}
	}
}

// The range is exported, loads as a series of mails, applies on the
// base to give the tip's files, and the checkout is left as it was.
func TestExportRangeAppliesOnBase(t *testing.T) {
	ctx := context.Background()
	co := checkout(t)
	before := state(t, co)
	out := filepath.Join(t.TempDir(), "range")
	n, err := ExportRange(ctx, ParseInput(co+":base..HEAD"), out)
	if err != nil || n != 2 {
		t.Fatalf("ExportRange: %d, %v; want 2 commits", n, err)
	}
	if after := state(t, co); after != before {
		t.Errorf("the checkout changed:\n%s\nthen\n%s", before, after)
	}
	ps, err := LoadSeries(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || !ps[0].Mail || ps[0].Subject != "net: skbuff: rename b" || ps[1].Subject != "net: add gtp.c" {
		t.Fatalf("series: %q", subjects(ps))
	}
	tree := filepath.Join(t.TempDir(), "tree")
	if out, err := (command{env: gitEnv}).run(ctx, "git", "clone", "-q", "--branch", "base", co, tree); err != nil {
		t.Fatalf("clone: %v\n%s", err, out)
	}
	if err := applySeries(ctx, tree, ps); err != nil {
		t.Fatalf("apply: %v", err)
	}
	for name, want := range map[string]string{"net/core/skbuff.c": "int a;\nint b2;\nint c;\n", "net/core/gtp.c": "int gtp;\n", "Makefile": "VERSION = 6\nPATCHLEVEL = 12\n"} {
		if got, _ := os.ReadFile(filepath.Join(tree, name)); string(got) != want {
			t.Errorf("%s after the series: %q, want %q (the tip's, not the working tree's)", name, got, want)
		}
	}
}

// Every bad range is the user's input, named with the range and the
// checkout, and leaves nothing exported.
func TestExportRangeRefusals(t *testing.T) {
	ctx := context.Background()
	co := checkout(t)
	plain := t.TempDir()
	g := command{dir: co, env: gitEnv}
	for _, a := range [][]string{{"stash", "-q"}, {"checkout", "-q", "-b", "side", "base"}, {"commit", "-q", "--allow-empty", "-m", "side"},
		{"checkout", "-q", "main"}, {"merge", "-q", "--no-edit", "side"}, {"tag", "merged"}} {
		if out, err := g.run(ctx, "git", a...); err != nil {
			t.Fatalf("git %v: %v\n%s", a, err, out)
		}
	}
	for _, c := range []struct{ arg, want string }{
		{co + ":nosuch..HEAD", `range nosuch..HEAD in ` + co + `: "nosuch" is not a commit there`},
		{co + ":base..nosuch", `"nosuch" is not a commit there`},
		{co + ":HEAD..HEAD", "range HEAD..HEAD in " + co + " holds no commits"},
		{co + ":base..merged", "range base..merged in " + co + " holds 1 merge commit(s)"},
		{plain + ":base..HEAD", plain + ": not a git checkout"},
		{"/nonexistent/linux:base..HEAD", "/nonexistent/linux: no such directory"},
	} {
		out := filepath.Join(t.TempDir(), "range")
		_, err := ExportRange(ctx, ParseInput(c.arg), out)
		var ie *InputError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "patch "+c.arg+": ") {
			t.Errorf("%s: %v (%T), want an *InputError naming %q", c.arg, err, err, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: exported something", c.arg)
		}
	}
}

// "-" is read once into a file that loads as the mbox it was; an empty
// standard input is the user's mistake.
func TestSaveStdin(t *testing.T) {
	ctx := context.Background()
	co := checkout(t)
	mbox, err := (command{dir: co}).run(ctx, "git", "format-patch", "--stdout", "base..HEAD")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "input", "stdin.mbox")
	if err := SaveStdin(strings.NewReader(mbox), path); err != nil {
		t.Fatal(err)
	}
	ps, err := LoadSeries(path)
	if err != nil || len(ps) != 2 || ps[1].Subject != "net: add gtp.c" || ps[1].Index != 2 {
		t.Fatalf("stdin mbox: %q, %v", subjects(ps), err)
	}
	empty := filepath.Join(t.TempDir(), "stdin.mbox")
	err = SaveStdin(strings.NewReader(" \n"), empty)
	var ie *InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "standard input is empty") {
		t.Errorf("empty stdin: %v", err)
	}
	if _, err := os.Stat(empty); err == nil {
		t.Errorf("empty stdin saved")
	}
}

// b4 am writes its series as NAME.mbx: a directory holding one is read.
func TestLoadSeriesB4Mbx(t *testing.T) {
	co := checkout(t)
	mbox, err := (command{dir: co}).run(context.Background(), "git", "format-patch", "--stdout", "base..HEAD")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "v2_20261205_dev_net_two_changes.mbx"), []byte(mbox), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, err := LoadSeries(dir)
	if err != nil || len(ps) != 2 || ps[0].Subject != "net: skbuff: rename b" {
		t.Fatalf("b4's .mbx in a directory: %q, %v", subjects(ps), err)
	}
}

// base.ref takes what importGit's fetch takes, and names what it cannot.
func TestCheckRef(t *testing.T) {
	ctx := context.Background()
	co := checkout(t)
	head, err := (command{dir: co}).run(ctx, "git", "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := (command{dir: co}).run(ctx, "git", "update-ref", "refs/remotes/net-next/main", "base"); err != nil {
		t.Fatal(err, out)
	}
	for _, ref := range []string{"", "HEAD", "main", "base", "net-next/main", strings.TrimSpace(head)} {
		if err := CheckRef(ctx, co, ref); err != nil {
			t.Errorf("CheckRef(%q): %v", ref, err)
		}
	}
	plain := t.TempDir()
	for _, c := range []struct{ dir, ref, want string }{
		{co, "nosuch", "base.ref nosuch: not a commit in " + co},
		{co, "HEAD~1", "base.ref HEAD~1: a revision expression"},
		{plain, "main", "base.git " + plain + ": not a git checkout"},
	} {
		var ie *InputError
		if err := CheckRef(ctx, c.dir, c.ref); !errors.As(err, &ie) || err.Error() != c.want && !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("CheckRef(%s, %q) = %v, want %q", c.dir, c.ref, err, c.want)
		}
	}
}
