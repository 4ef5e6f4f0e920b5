package ci

import (
	"context"
	"strings"
	"testing"
)

// A workflow_run whose pull_requests entries are all at other commits
// (the PR was pushed to since the run started) must not pick one: the
// stale run's report would overwrite the newer one.
func TestFromEnvWorkflowRunNoExactSHAMatch(t *testing.T) {
	p := writeEvent(t, `{"workflow_run":{"head_sha":"old0","head_branch":"rht","head_repository":{"owner":{"login":"octo"}},
		"pull_requests":[{"number":3,"head":{"sha":"new1"}},{"number":9,"head":{"sha":"new2"}}]}}`)
	e, err := FromLookup(mapLookup(actionsEnv(p)))
	if err != nil {
		t.Fatal(err)
	}
	if e.PR != 0 {
		t.Errorf("stale workflow_run picked PR %d, want none (0)", e.PR)
	}
	// What the poster then does: ask the API, which finds no open PR at
	// that commit and refuses.
	h := newHarness(t)
	h.gh.pulls = []fakePull{{Number: 3, Head: "octo:rht", SHA: "new1"}}
	_, err = h.p.ResolvePR(context.Background(), "octo", "bench", e.HeadOwner, e.HeadBranch, e.HeadSHA)
	if err == nil || !strings.Contains(err.Error(), "no open pull request at old0") {
		t.Errorf("ResolvePR for a stale head: %v, want a refusal", err)
	}
}
