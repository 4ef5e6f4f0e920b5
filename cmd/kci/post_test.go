package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/kci-dev/kci/internal/golden"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/results/render"

	"github.com/kci-dev/kci/ci"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/results"
)

// clearActionsEnv makes the test independent of running inside Actions.
func clearActionsEnv(t *testing.T) {
	for _, k := range []string{"GITHUB_ACTIONS", "GITHUB_REPOSITORY", "GITHUB_EVENT_PATH", "GITHUB_EVENT_NAME", "GITHUB_TOKEN",
		"GITHUB_API_URL", "GITHUB_SERVER_URL", "GITHUB_RUN_ID", "GITHUB_STEP_SUMMARY"} {
		t.Setenv(k, "")
	}
}

func writeRun(t *testing.T, trees ...string) string {
	t.Helper()
	run := results.Run{Schema: results.SchemaVersion, ID: "0badcafe", Start: time.Unix(0, 0).UTC(), Host: results.Host{Accel: results.AccelTCG}}
	for i, tr := range trees {
		run.Trees = append(run.Trees, results.Tree{Name: tr})
		run.Boots = append(run.Boots, results.Boot{Seq: i + 1, Tree: tr, Role: results.RoleBase, Rep: 1, Accel: results.AccelTCG})
	}
	dir := t.TempDir()
	b, err := json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, results.RunFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPostDryRun(t *testing.T) {
	clearActionsEnv(t)
	summary := filepath.Join(t.TempDir(), "summary.md")
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	dir := writeRun(t, "ext", "gtp")
	// What the dry run would post (each tree's marked comment, gtp's
	// check run, to octo/bench#12) and the step summary are the goldens
	// testdata/TestPostDryRun/.
	out := dryRunPost(t, dir)
	golden.Own(t, "dry-run.txt", strings.ReplaceAll(out.String(), dir, "$RUN"))
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatalf("step summary not written: %v", err)
	}
	golden.Own(t, "summary.md", string(b))
}

func TestPostNeedsATarget(t *testing.T) {
	clearActionsEnv(t)
	cmd := newPostCmd()
	cmd.SetArgs([]string{"--dry-run", writeRun(t, "gtp")})
	cmd.SetOut(&bytes.Buffer{})
	err := cmd.ExecuteContext(context.Background())
	// Targeted: each refusal names what is missing (a fact).
	if err == nil || !strings.Contains(err.Error(), "no repository") {
		t.Errorf("post without a repository: %v", err)
	}
	cmd = newPostCmd()
	cmd.SetArgs([]string{"--repo", "octo/bench", "--pr", "3", writeRun(t, "gtp")})
	err = cmd.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GITHUB_TOKEN") {
		t.Errorf("post without a token: %v", err)
	}
}

func TestPostTarget(t *testing.T) {
	env := ci.Env{Repository: "octo/bench", PR: 12, HeadSHA: "abc"}
	cases := []struct {
		o    postOptions
		want ci.Target
	}{
		{postOptions{}, ci.Target{Owner: "octo", Repo: "bench", PR: 12, SHA: "abc"}},
		{postOptions{repo: "me/fork"}, ci.Target{Owner: "me", Repo: "fork", PR: 12, SHA: "abc"}},
		// Another PR than the event's: the event's commit is not its head.
		{postOptions{pr: 7}, ci.Target{Owner: "octo", Repo: "bench", PR: 7}},
		{postOptions{pr: 7, sha: "def"}, ci.Target{Owner: "octo", Repo: "bench", PR: 7, SHA: "def"}},
	}
	for _, c := range cases {
		got, err := postTarget(env, c.o)
		if err != nil || got != c.want {
			t.Errorf("postTarget(%+v) = %+v, %v; want %+v", c.o, got, err, c.want)
		}
	}
	if _, err := postTarget(ci.Env{}, postOptions{repo: "nope"}); err == nil {
		t.Errorf("bad --repo accepted")
	}
}

// A kci series run directory posts one comment and check per tree, marked
// apart from kci test's so neither replaces the other.
func TestPostSeriesDryRun(t *testing.T) {
	clearActionsEnv(t)
	dir := t.TempDir()
	s := &results.Series{Schema: 1, ID: "5e1e5", Trees: []results.SeriesTree{{Tree: "gtp", Patches: []results.PatchResult{
		{Index: 1, Of: 2, Subject: "net: add tracepoints", Apply: results.StepOK, Build: results.StepOK},
		{Index: 2, Of: 2, Subject: "bpf: rhash <b>map</b>", Apply: results.StepOK, Build: results.StepFail, BuildError: "kernel/bpf/rhash.c:9: error: 'x' undeclared"},
	}}}}
	if err := render.WriteSeries(dir, s); err != nil {
		t.Fatal(err)
	}
	// The comment, marked gtp.series, and its failing check run are the
	// golden testdata/TestPostSeriesDryRun/dry-run.txt.
	out := dryRunPost(t, dir)
	golden.Own(t, "dry-run.txt", strings.ReplaceAll(out.String(), dir, "$RUN"))
	// Targeted as well: no golden rewritten by -update may let a
	// subject's HTML through.
	if strings.Contains(out.String(), "<b>map</b>") {
		t.Errorf("a subject's HTML reached the comment unescaped:\n%s", out.String())
	}
}

const testSHA = "0123456789abcdef0123456789abcdef01234567"

// dryRunPost runs kci post --dry-run on dir for octo/bench#12 and returns
// what it printed.
func dryRunPost(t *testing.T, dir string, extra ...string) *bytes.Buffer {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newPostCmd()
	cmd.SetArgs(append(append([]string{"--dry-run", "--repo", "octo/bench", "--pr", "12", "--sha", testSHA}, extra...), dir))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("kci post --dry-run %s: %v\n%s", dir, err, errOut.String())
	}
	return &out
}

// Flags no post could use are refused before the run is read.
func TestPostRefusesBadFlags(t *testing.T) {
	clearActionsEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--pr", "-3"}, "--pr -3"},
		{[]string{"--pr", "3", "--sha", "abc"}, `--sha "abc": want the full 40-hex-digit commit id`},
		{[]string{"--pr", "3", "--sha", strings.ToUpper(testSHA)}, "40-hex-digit"},
		{[]string{"--pr", "3", "--report-url", "javascript:alert(1)"}, "--report-url"},
	} {
		cmd := newPostCmd()
		cmd.SetArgs(append(append([]string{"--dry-run", "--repo", "octo/bench"}, c.args...), "/nonexistent"))
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("kci post %v: %v, want an error naming %q", c.args, err, c.want)
		}
		var ee *job.ExitError
		if !errors.As(err, &ee) || ee.Code != job.ExitUsage {
			t.Errorf("kci post %v: %v, want exit %d (usage)", c.args, err, job.ExitUsage)
		}
	}
}

// The dry run shows the check run's summary too, the comment leads with
// the tree's answer and links report.html; without a commit, the missing
// check run is said in one line.
func TestPostDryRunShowsCheckRunAndLink(t *testing.T) {
	clearActionsEnv(t)
	dir := writeRun(t, "gtp")
	// Both are the golden testdata/TestPostDryRunShowsCheckRunAndLink/with-sha.txt.
	out := dryRunPost(t, dir, "--report-url", "https://example.org/a/report.html").String()
	golden.Own(t, "with-sha.txt", strings.ReplaceAll(out, dir, "$RUN"))

	var stdout, errOut bytes.Buffer
	cmd := newPostCmd()
	cmd.SetArgs([]string{"--dry-run", "--repo", "octo/bench", "--pr", "12", dir})
	cmd.SetOut(&stdout)
	cmd.SetErr(&errOut)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Without --sha: the comment alone, and one line on stderr saying
	// there is no check run: without-sha.txt.
	golden.Own(t, "without-sha.txt", strings.ReplaceAll("stdout:\n"+stdout.String()+"stderr:\n"+errOut.String(), dir, "$RUN"))
}
