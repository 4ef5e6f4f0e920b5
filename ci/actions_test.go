package ci

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func mapLookup(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeEvent(t *testing.T, payload string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(p, []byte(payload), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func actionsEnv(eventPath string) map[string]string {
	return map[string]string{
		"GITHUB_ACTIONS":    "true",
		"GITHUB_REPOSITORY": "octo/bench",
		"GITHUB_EVENT_PATH": eventPath,
		"GITHUB_TOKEN":      testToken + "\n",
		"GITHUB_API_URL":    "https://ghes.example/api/v3",
		"GITHUB_SERVER_URL": "https://github.com",
		"GITHUB_RUN_ID":     "42",
	}
}

func TestFromEnvPullRequest(t *testing.T) {
	p := writeEvent(t, `{"action":"synchronize","number":12,"pull_request":{"number":12,"head":{"sha":"abc123","ref":"rht"}}}`)
	e, err := FromLookup(mapLookup(actionsEnv(p)))
	if err != nil {
		t.Fatal(err)
	}
	if !e.Actions || e.Repository != "octo/bench" || e.PR != 12 || e.HeadSHA != "abc123" || e.APIURL != "https://ghes.example/api/v3" {
		t.Errorf("env %+v", e)
	}
	if e.RunURL != "https://github.com/octo/bench/actions/runs/42" {
		t.Errorf("run url %q", e.RunURL)
	}
	if e.Token.Empty() || e.Token.value() != testToken {
		t.Errorf("token not read (or newline kept)")
	}
}

func TestFromEnvWorkflowRun(t *testing.T) {
	p := writeEvent(t, `{"action":"completed","workflow_run":{"id":7,"event":"pull_request","head_sha":"bbb","head_branch":"rht",
		"html_url":"https://github.com/octo/bench/actions/runs/7",
		"head_repository":{"owner":{"login":"fork"}},
		"pull_requests":[{"number":3,"head":{"sha":"old"}},{"number":9,"head":{"sha":"bbb"}}]}}`)
	e, err := FromLookup(mapLookup(actionsEnv(p)))
	if err != nil {
		t.Fatal(err)
	}
	if e.PR != 9 || e.HeadSHA != "bbb" || e.HeadOwner != "fork" || e.HeadBranch != "rht" {
		t.Errorf("env %+v", e)
	}
	// The report links to the run that tested the PR, not the posting run.
	if e.RunURL != "https://github.com/octo/bench/actions/runs/7" {
		t.Errorf("run url %q", e.RunURL)
	}

	// From a fork GitHub lists no pull requests: ResolvePR must be used.
	p = writeEvent(t, `{"workflow_run":{"head_sha":"bbb","head_branch":"rht","head_repository":{"owner":{"login":"fork"}},"pull_requests":[]}}`)
	e, err = FromLookup(mapLookup(actionsEnv(p)))
	if err != nil || e.PR != 0 || e.HeadOwner != "fork" {
		t.Errorf("fork workflow_run: %+v, %v", e, err)
	}
}

func TestFromEnvOutsideActions(t *testing.T) {
	e, err := FromLookup(mapLookup(map[string]string{}))
	if err != nil || e.Actions || e.PR != 0 || !e.Token.Empty() {
		t.Errorf("empty env: %+v, %v", e, err)
	}
	_, err = FromLookup(mapLookup(map[string]string{"GITHUB_EVENT_PATH": writeEvent(t, "{not json")}))
	if err == nil || !strings.Contains(err.Error(), "event payload") {
		t.Errorf("bad payload: %v", err)
	}
}

func TestGroups(t *testing.T) {
	var b bytes.Buffer
	end := NewGroups(&b, true).Start("build gtp\n::error::injected")
	b.WriteString("make output\n")
	end()
	want := "::group::build gtp ::error::injected\nmake output\n::endgroup::\n"
	if b.String() != want {
		t.Errorf("groups wrote %q, want %q", b.String(), want)
	}
	b.Reset()
	NewGroups(&b, false).Start("x")()
	if b.Len() != 0 {
		t.Errorf("groups outside Actions wrote %q", b.String())
	}
}

func TestStepSummary(t *testing.T) {
	p := filepath.Join(t.TempDir(), "summary.md")
	if err := AppendStepSummary(p, "# gtp"); err != nil {
		t.Fatal(err)
	}
	if err := AppendStepSummary(p, strings.Repeat("x", 2<<20)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	if !strings.HasPrefix(string(b), "# gtp\n\n") || len(b) > StepSummaryLimit || !strings.Contains(string(b), "trimmed") {
		t.Errorf("summary: %d bytes, starts %q", len(b), string(b[:min(len(b), 20)]))
	}
	if err := AppendStepSummary("", "x"); err != nil {
		t.Errorf("no summary file: %v", err)
	}
}

func TestTrim(t *testing.T) {
	if got := Trim("short", 10, "NOTE"); got != "short" {
		t.Errorf("short text changed: %q", got)
	}
	lines := strings.Repeat("line of text\n", 100)
	got := Trim(lines, 200, "[trimmed]")
	if len(got) > 200 || !strings.HasSuffix(got, "[trimmed]") || !strings.HasSuffix(strings.TrimSuffix(got, "[trimmed]"), "line of text") {
		t.Errorf("Trim at a line: %q", got)
	}
	// Multi-byte runes are never split.
	got = Trim(strings.Repeat("Δ", 100), 51, "!")
	if !utf8.ValidString(got) || len(got) > 51 {
		t.Errorf("Trim split a rune: %q", got)
	}
	// An open code fence is closed before the note.
	got = Trim("```\n"+strings.Repeat("benchstat line\n", 50), 300, "\nNOTE")
	if strings.Count(got, "```") != 2 || len(got) > 300 {
		t.Errorf("fence not closed: %q", got)
	}
}

func TestMarkerIsSafe(t *testing.T) {
	m := Marker("gtp --> <img src=x>")
	if strings.Count(m, "-->") != 1 || !strings.HasSuffix(m, " -->") || strings.Contains(m, "<img") {
		t.Errorf("marker %q lets the tree name escape", m)
	}
	if Marker("gtp") != "<!-- kci:tree=gtp -->" || CheckName("gtp") != "kci / gtp" {
		t.Errorf("marker %q, check %q", Marker("gtp"), CheckName("gtp"))
	}
	body := CommentBody(report("gtp", strings.Repeat("é", CommentLimit), Success))
	if len(body) > CommentLimit || !strings.HasPrefix(body, Marker("gtp")+"\n") || !utf8.ValidString(body) {
		t.Errorf("comment body %d bytes", len(body))
	}
}

func TestStatusMapping(t *testing.T) {
	cases := []struct {
		r           Report
		state, desc string
	}{
		{Report{Tree: "g", Conclusion: Success, Summary: "no change"}, "success", "no change"},
		{Report{Tree: "g", Conclusion: Failure, Title: "regression\n+12 %"}, "failure", "regression +12 %"},
		{Report{Tree: "g", Conclusion: Neutral, Summary: "emulated (TCG)"}, "success", "neutral: emulated (TCG)"},
		{Report{Tree: "g", Conclusion: Neutral, Summary: strings.Repeat("x", 300)}, "success", "neutral: " + strings.Repeat("x", 128) + "…"},
	}
	for _, c := range cases {
		if s, d := StatusState(c.r.Conclusion), StatusDescription(c.r); s != c.state || d != c.desc {
			t.Errorf("%+v: %q %q, want %q %q", c.r, s, d, c.state, c.desc)
		}
		if len(StatusDescription(c.r)) > StatusDescLimit {
			t.Errorf("description over %d bytes", StatusDescLimit)
		}
	}
}

func TestParseRepo(t *testing.T) {
	if o, r, err := ParseRepo("octo/bench"); o != "octo" || r != "bench" || err != nil {
		t.Errorf("ParseRepo: %q %q %v", o, r, err)
	}
	for _, bad := range []string{"", "octo", "/bench", "octo/", "a/b/c"} {
		if _, _, err := ParseRepo(bad); err == nil {
			t.Errorf("ParseRepo(%q) accepted", bad)
		}
	}
}
