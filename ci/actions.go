package ci

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// Env is what GitHub Actions tells a step about where it runs. Outside
// Actions only Token (and whatever variables the user set) is filled.
type Env struct {
	Actions     bool   // GITHUB_ACTIONS=true
	Repository  string // GITHUB_REPOSITORY, owner/name
	EventName   string // GITHUB_EVENT_NAME
	APIURL      string // GITHUB_API_URL; "" = api.github.com
	ServerURL   string // GITHUB_SERVER_URL
	RunID       string // GITHUB_RUN_ID
	StepSummary string // GITHUB_STEP_SUMMARY: a file to append Markdown to
	Token       Token  // GITHUB_TOKEN; prints as [redacted]

	// From the event payload (GITHUB_EVENT_PATH).
	PR      int    // pull request number, 0 if none
	HeadSHA string // the PR's head commit
	// A workflow_run event for a PR from a fork lists no pull requests;
	// these let GitHub.ResolvePR find it.
	HeadOwner, HeadBranch string
	// The run that produced the results: for workflow_run, the triggering
	// run, whose artifacts the report came from.
	RunURL string
}

// FromEnv reads the process environment.
func FromEnv() (Env, error) { return FromLookup(os.LookupEnv) }

// FromLookup reads the environment through lookup (os.LookupEnv, or a map
// in tests).
func FromLookup(lookup func(string) (string, bool)) (Env, error) {
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	tok, _ := lookup("GITHUB_TOKEN")
	e := Env{
		Actions:     get("GITHUB_ACTIONS") == "true",
		Repository:  get("GITHUB_REPOSITORY"),
		EventName:   get("GITHUB_EVENT_NAME"),
		APIURL:      get("GITHUB_API_URL"),
		ServerURL:   get("GITHUB_SERVER_URL"),
		RunID:       get("GITHUB_RUN_ID"),
		StepSummary: get("GITHUB_STEP_SUMMARY"),
		Token:       NewToken(tok),
	}
	if e.ServerURL != "" && e.Repository != "" && e.RunID != "" {
		e.RunURL = fmt.Sprintf("%s/%s/actions/runs/%s", strings.TrimSuffix(e.ServerURL, "/"), e.Repository, e.RunID)
	}
	if p := get("GITHUB_EVENT_PATH"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return e, fmt.Errorf("ci: read event payload: %w", err)
		}
		if err := e.parseEvent(b); err != nil {
			return e, fmt.Errorf("ci: event payload %s: %w", p, err)
		}
	}
	return e, nil
}

type login struct {
	Login string `json:"login"`
}

// event holds the fields kci uses of the pull_request and workflow_run
// payloads.
type event struct {
	Number      int `json:"number"`
	PullRequest *struct {
		Number int `json:"number"`
		Head   struct {
			SHA string `json:"sha"`
		} `json:"head"`
	} `json:"pull_request"`
	WorkflowRun *struct {
		HeadSHA      string `json:"head_sha"`
		HeadBranch   string `json:"head_branch"`
		HTMLURL      string `json:"html_url"`
		PullRequests []struct {
			Number int `json:"number"`
			Head   struct {
				SHA string `json:"sha"`
			} `json:"head"`
		} `json:"pull_requests"`
		HeadRepository struct {
			Owner login `json:"owner"`
		} `json:"head_repository"`
	} `json:"workflow_run"`
}

func (e *Env) parseEvent(b []byte) error {
	var ev event
	if err := json.Unmarshal(b, &ev); err != nil {
		return err
	}
	switch {
	case ev.PullRequest != nil:
		e.PR = ev.PullRequest.Number
		e.HeadSHA = ev.PullRequest.Head.SHA
	case ev.WorkflowRun != nil:
		wr := ev.WorkflowRun
		e.HeadSHA = wr.HeadSHA
		e.HeadOwner, e.HeadBranch = wr.HeadRepository.Owner.Login, wr.HeadBranch
		if wr.HTMLURL != "" {
			e.RunURL = wr.HTMLURL
		}
		// Several PRs can share a head branch; the one at exactly this SHA
		// is ours. None at it means the PR has moved on since the run: no
		// guess (a stale run would overwrite a newer report). PR stays 0
		// and the poster asks the API (ResolvePR), which refuses too.
		for _, pr := range wr.PullRequests {
			if wr.HeadSHA != "" && pr.Head.SHA == wr.HeadSHA {
				e.PR = pr.Number
				break
			}
		}
	case ev.Number != 0:
		e.PR = ev.Number
	}
	return nil
}

// AppendStepSummary appends Markdown to the file named by
// GITHUB_STEP_SUMMARY ("" = not in Actions: nothing to do), trimmed so the
// file stays under GitHub's 1 MiB.
func AppendStepSummary(path, markdown string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("ci: step summary: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("ci: step summary: %w", err)
	}
	budget := StepSummaryLimit - int(st.Size()) - 2
	text := ""
	if budget > 0 {
		text = Trim(markdown, budget, trimNote(""))
	}
	_, werr := io.WriteString(f, text+"\n\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("ci: step summary: %w", werr)
	}
	return nil
}

// Groups writes GitHub Actions log groups, which fold a long step (a
// kernel build, a boot) in the web log. Outside Actions it writes nothing,
// so callers use it unconditionally.
type Groups struct {
	w  io.Writer
	on bool
}

// NewGroups returns log groups on w, active only when on (Env.Actions).
func NewGroups(w io.Writer, on bool) Groups { return Groups{w: w, on: on} }

// Start opens a group titled title and returns the function that closes
// it. Groups do not nest in Actions; callers close before opening another.
func (g Groups) Start(title string) (end func()) {
	if !g.on || g.w == nil {
		return func() {}
	}
	// A newline would end the command and let the rest of the title be
	// read as another workflow command.
	title = strings.Join(strings.Fields(title), " ")
	fmt.Fprintf(g.w, "::group::%s\n", title)
	return func() { fmt.Fprintln(g.w, "::endgroup::") }
}
