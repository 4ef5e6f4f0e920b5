package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/results"
)

// badInput is one command line kci must refuse before any work.
type badInput struct {
	args []string
	want string            // the message names the input
	not  string            // the message must not say this (a flag the verb lacks)
	code int               // 0: job.ExitUsage
	yaml string            // kci.yaml in the working directory, if any
	env  map[string]string // beside the GitHub variables, which are unset
	// stdin makes kci's standard input, for "-" (nil: none given).
	stdin func() io.Reader
}

// Every verb checks all of its input first: exit 64 (2 for a patch kci or
// git cannot read, on every verb), one line naming the input, in under a second from an
// empty cache, with no run directory and nothing built or imported.
func TestBadInputRefusedFirst(t *testing.T) {
	fakeMeminfo(t, 23*1024*1024) // a 23 GiB host, whatever this one has
	top := t.TempDir()
	patch := filepath.Join(top, "p.patch")
	write(t, patch, "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
	corrupt := filepath.Join(top, "corrupt.patch")
	write(t, corrupt, "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n")
	emptyPatch := filepath.Join(top, "empty.patch")
	write(t, emptyPatch, "")
	outside := filepath.Join(top, "outside.patch")
	write(t, outside, "diff --git a/../evil.c b/../evil.c\nnew file mode 100644\n--- /dev/null\n+++ b/../evil.c\n@@ -0,0 +1 @@\n+int x;\n")
	runDir := filepath.Join(top, "run")
	if err := results.Save(runDir, &results.Run{Schema: results.SchemaVersion, ID: "run00001"}); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(top, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(top, "nonexistent")
	co := devCheckout(t) // base.git must be a checkout
	token := map[string]string{"GITHUB_TOKEN": "t0ken"}
	many, n := strconv.Itoa(runtime.NumCPU()+1), strconv.Itoa(runtime.NumCPU())
	for _, tc := range []badInput{
		{args: []string{"bench", "--variants", "nosuch"}, want: `--variants: unknown variant "nosuch"`},
		{args: []string{"bench", "--reps", "0"}, want: "--reps 0"},
		{args: []string{"test", "--reps", "100000", patch}, want: "--reps 100000: at most 100"},
		{args: []string{"bench", "--parallel", "0"}, want: "--parallel 0"},
		{args: []string{"bench", "--accel", "kvm", "--cpus", many}, want: "--cpus " + many + ": the host has"},
		{args: []string{"bench", "--clock", "host", "--cpus", many}, want: "--cpus " + many + ": the host has"},
		{args: []string{"bench", "--cpus", "65"}, want: "--cpus 65: at most 64"},
		{args: []string{"bench", "--cpus", "6", "--smt"}, want: "--smt: hardware threads are the cache model's: it needs --cache-model"},
		{args: []string{"test", "--cache-model", "--smt", patch}, want: "--smt: a core's two hardware threads need --cpus 2 or more"},
		{args: []string{"bench", empty}, want: "bench: " + empty + ": not a kci run directory"},
		{args: []string{"bench", "--out", runDir}, want: "--out " + runDir, not: "--force"},
		{args: []string{"test", "--out", runDir, patch}, want: "--force"},
		{args: []string{"test", "--cpus", "0", patch}, want: "--cpus 0"},
		{args: []string{"test", "--seed", "0", patch}, want: "--seed 0: seeds start at 1"},
		{args: []string{"test", "--seed", "abc", patch}, want: `--seed "abc": want a whole number, 1 or more`},
		{args: []string{"test", "--memory", "2T", patch}, want: "--memory 2097152M: more than the host's 23.0 GiB"},
		{args: []string{"test", "--pin", "0-" + many, patch}, want: "--pin: CPU " + n},
		{args: []string{"test", "--post", patch}, want: "kci test --post-dry-run", env: map[string]string{"GITHUB_REPOSITORY": "o/r"}},
		{args: []string{"test", "--post-dry-run", patch}, want: "post: no repository"},
		{args: []string{"test", "--shard", "3/2", patch}, want: `--shard "3/2"`},
		{args: []string{"test", patch}, want: `$KCI_RESULT_CACHE="maybe"`, env: map[string]string{"KCI_RESULT_CACHE": "maybe"}},
		{args: []string{"test", corrupt}, want: "corrupt.patch does not apply (\"corrupt.patch\"): corrupt patch at line 5\nerror: corrupt patch at line 5\n", code: job.ExitApply},
		{args: []string{"test", "--tree", "stock", patch}, yaml: "base:\n  tarball: /nonexistent/linux-source-6.12.tar.xz\ntrees:\n  - name: stock\n",
			want: "kci.yaml:2: base.tarball: /nonexistent/linux-source-6.12.tar.xz: no such file: Debian's linux-source-6.12 package provides it"},
		{args: []string{"build"}, yaml: "base:\n  git: /nonexistent\ntrees:\n  - name: stock\n", want: "kci.yaml:2: base.git"},
		{args: []string{"test", "--tree", "stock", patch}, yaml: "base:\n  git: " + co + "\nvm:\n  memory_mib: 40000\ntrees:\n  - name: stock\n",
			want: "kci.yaml: vm.memory_mib 40000M: more than the host's"},
		{args: []string{"series", "--each", patch}, want: "--each"},
		{args: []string{"profile", "--top", "0"}, want: "--top 0"},
		{args: []string{"profile", runDir}, want: "no profiles in " + filepath.Join(runDir, "profiles")},
		{args: []string{"test"}, want: "kci test: name a patch"},
		{args: []string{"report", "--agg", empty}, want: "report --agg: " + empty + ": no .bpfstats files and no run.json"},
		{args: []string{"profile", missing}, want: "patch " + missing},
		{args: []string{"profile", "--tree", "nope"}, want: `no tree "nope"`},
		{args: []string{"build", "-j", "-1"}, want: "--jobs -1: want 1 or more, or 0 for the host's CPUs"},
		{args: []string{"build", "--tree", "stock", "--tree", "ext"}, want: `--tree "ext": given twice (stock, then ext): kci build builds one tree`},
		{args: []string{"build", missing}, want: "patch " + missing + ": no such file or directory"},
		{args: []string{"test", missing}, want: "kci: patch " + missing + ": no such file or directory\n"},
		{args: []string{"series", missing}, want: "kci: patch " + missing + ": no such file or directory\n"},
		{args: []string{"build", emptyPatch}, want: "patch " + emptyPatch + ": holds no diff", code: job.ExitApply},
		{args: []string{"build", outside}, want: outside + ": it writes outside the kernel tree: ../evil.c", code: job.ExitApply},
		{args: []string{"test", outside}, want: outside + ": it writes outside the kernel tree: ../evil.c", code: job.ExitApply},
		{args: []string{"series", outside}, want: outside + ": it writes outside the kernel tree: ../evil.c", code: job.ExitApply},
		{args: []string{"run", "--patch", emptyPatch}, want: "patch " + emptyPatch + ": holds no diff", code: job.ExitApply},
		{args: []string{"run", "--kernel", missing}, want: "--kernel " + missing + ": no such file"},
		{args: []string{"run", "--kernel", patch, "--patch", patch}, want: "patches are for --tree's kernel"},
		{args: []string{"run", "--plan", missing}, want: "--plan " + missing},
		{args: []string{"run", "--step-timeout", "0s"}, want: "--step-timeout 0s"},
		{args: []string{"run", "--boot-timeout", "-1s"}, want: "--boot-timeout -1s"},
		{args: []string{"shell", "--kernel", missing}, want: "--kernel " + missing},
		{args: []string{"doctor", "--kernel", missing}, want: "--kernel " + missing},
		{args: []string{"doctor", "--pin", "0-" + many}, want: "--pin: CPU " + n},
		{args: []string{"report", "--format", "xml", runDir}, want: `--format "xml"`},
		{args: []string{"report", empty}, want: "report: " + empty + ": not a kci run directory"},
		{args: []string{"report", missing}, want: "report: " + missing + ": no such file"},
		{args: []string{"report", "--tree", "nope", runDir}, want: "--tree nope"},
		{args: []string{"report", "--brief", "--format", "json", runDir}, want: "--brief"},
		{args: []string{"report", "--out", empty, runDir}, want: "--out is for --merge"},
		{args: []string{"cache", "prune", "--older-than", "banana"}, want: `--older-than "banana"`},
		{args: []string{"cache", "bogus"}, want: `unknown command "bogus"`},
		{args: []string{"config", "extra-arg"}, want: `unknown command "extra-arg" for "kci config"`},
		{args: []string{"doctor", "extra-arg"}, want: `unknown command "extra-arg" for "kci doctor"`},
		{args: []string{"post", runDir}, want: "post: no repository", env: token},
		{args: []string{"post", "--repo", "noslash", runDir}, want: "noslash", env: token},
		{args: []string{"post", "--repo", "o/r", runDir}, want: "no GITHUB_TOKEN"},
		{args: []string{"post", "--repo", "o/r", "--pr", "1", empty}, want: "post: " + empty + ": not a kci run directory", env: token},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) { tc.check(t) })
	}
}

func (tc badInput) check(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, k := range []string{"GITHUB_TOKEN", "GITHUB_REPOSITORY", "GITHUB_EVENT_PATH", "GITHUB_ACTIONS", "KCI_RESULT_CACHE"} {
		t.Setenv(k, "")
	}
	for k, v := range tc.env {
		t.Setenv(k, v)
	}
	if tc.yaml != "" {
		write(t, filepath.Join(dir, "kci.yaml"), tc.yaml)
	}
	cache := filepath.Join(dir, "cache")
	t.Setenv("KCI_CACHE", cache)
	want := tc.code
	if want == 0 {
		want = job.ExitUsage
	}
	start := time.Now()
	var code int
	var msg string
	if tc.stdin != nil {
		var out strings.Builder
		code = runStdin(context.Background(), tc.args, tc.stdin(), &out, &out)
		msg = out.String()
	} else {
		code, msg = kci(t, tc.args...)
	}
	took := time.Since(start)
	if code != want || !strings.Contains(msg, tc.want) {
		t.Errorf("exit %d, %q; want exit %d naming %q", code, msg, want, tc.want)
	}
	if tc.not != "" && strings.Contains(msg, tc.not) {
		t.Errorf("message %q says %q", msg, tc.not)
	}
	if first, _, _ := strings.Cut(msg, "\n"); want == job.ExitUsage && strings.Count(strings.TrimSpace(msg), "\n") > 0 {
		t.Errorf("%d lines, want one: %q (first %q)", strings.Count(msg, "\n"), msg, first)
	}
	// The directory checks below say no work was started; this bound only
	// catches work that leaves nothing behind (an import takes a minute),
	// and stays far above a loaded host's scheduling noise (1.7 s seen).
	if took > 15*time.Second {
		t.Errorf("refused after %s, want it before any work", took)
	}
	if _, err := os.Stat(filepath.Join(dir, "kci-results")); err == nil {
		t.Errorf("a run directory was created")
	}
	for _, d := range []string{"source", "builds", "kernels", "images", "results"} {
		// An empty results/ is the result cache opened, no entry.
		if ents, err := os.ReadDir(filepath.Join(cache, d)); err == nil && (d != "results" || len(ents) > 0) {
			t.Errorf("the cache got %s/ before the refusal", d)
		}
	}
}

// fakeMeminfo makes the host's memory kb kB for the test.
func fakeMeminfo(t *testing.T, kb int) {
	p := filepath.Join(t.TempDir(), "meminfo")
	write(t, p, "MemTotal:       "+strconv.Itoa(kb)+" kB\nMemFree:  1 kB\n")
	old := meminfo
	meminfo = p
	t.Cleanup(func() { meminfo = old })
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
