package ci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// Target is where reports go.
type Target struct {
	Owner, Repo string
	PR          int    // pull request number; 0 = no comment
	SHA         string // head commit for the check run; "" = no check run
}

func (t Target) String() string {
	s := t.Owner + "/" + t.Repo
	if t.PR != 0 {
		s += fmt.Sprintf("#%d", t.PR)
	}
	return s
}

func (t Target) commit() string {
	return fmt.Sprintf("%s/%s@%s", t.Owner, t.Repo, shortSHA(t.SHA))
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// ParseRepo splits "owner/name".
func ParseRepo(s string) (owner, repo string, err error) {
	owner, repo, ok := strings.Cut(s, "/")
	if !ok || owner == "" || repo == "" || strings.Contains(repo, "/") {
		return "", "", fmt.Errorf("repository %q is not OWNER/NAME", s)
	}
	return owner, repo, nil
}

// Result says what a post did.
type Result struct {
	Tree       string
	CommentURL string
	Created    bool   // a new comment, rather than an edit of the existing one
	Check      string // "check run", "commit status", or "" when no SHA
	CheckURL   string
	DryRun     bool // nothing was sent
}

// Poster posts one tree's report. GitHub talks to the API; DryRun prints.
type Poster interface {
	Post(ctx context.Context, t Target, r Report) (Result, error)
}

// PostAll posts every report, continuing past failures so one refused tree
// does not hide the others, and returns what succeeded plus the joined
// errors.
func PostAll(ctx context.Context, p Poster, t Target, reports []Report) ([]Result, error) {
	var (
		out  []Result
		errs []error
	)
	for _, r := range reports {
		res, err := p.Post(ctx, t, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("post %s: %w", r.Tree, err))
			continue
		}
		out = append(out, res)
	}
	return out, errors.Join(errs...)
}

// GitHub posts through the REST API.
type GitHub struct {
	client *github.Client
	token  Token
	now    func() time.Time
	log    io.Writer
}

type config struct {
	apiURL string
	base   http.RoundTripper
	policy retryPolicy
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	log    io.Writer
}

// Option configures NewGitHub.
type Option func(*config) error

// WithAPIURL points the client at another API root: GITHUB_API_URL on
// GitHub Enterprise Server, or a test server.
func WithAPIURL(u string) Option {
	return func(c *config) error {
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
			return fmt.Errorf("api url %q is not an http(s) URL", u)
		}
		c.apiURL = strings.TrimSuffix(u, "/") + "/"
		return nil
	}
}

// WithTransport sets the underlying HTTP transport (default
// http.DefaultTransport).
func WithTransport(rt http.RoundTripper) Option {
	return func(c *config) error { c.base = rt; return nil }
}

// WithRetry bounds retries: total attempts per request, the first backoff
// (doubling up to 30 s), and the longest rate-limit wait accepted before
// failing.
func WithRetry(attempts int, backoff, maxWait time.Duration) Option {
	return func(c *config) error {
		if attempts < 1 || backoff <= 0 || maxWait < 0 {
			return fmt.Errorf("retry: %d attempts, backoff %s, max wait %s: want attempts ≥ 1 and positive durations", attempts, backoff, maxWait)
		}
		c.policy.attempts, c.policy.backoff, c.policy.maxWait = attempts, backoff, maxWait
		return nil
	}
}

// WithClock replaces time.Now and the context-aware sleep, so tests of
// rate limits and backoff take no real time.
func WithClock(now func() time.Time, sleep func(context.Context, time.Duration) error) Option {
	return func(c *config) error {
		if now == nil || sleep == nil {
			return errors.New("clock: now and sleep must both be set")
		}
		c.now, c.sleep = now, sleep
		return nil
	}
}

// WithLog sends retry notices to w (default: discarded). The token is
// redacted from everything written.
func WithLog(w io.Writer) Option {
	return func(c *config) error { c.log = w; return nil }
}

// NewGitHub returns a poster authenticated with token (from the
// environment: see FromEnv).
func NewGitHub(token Token, opts ...Option) (*GitHub, error) {
	if token.Empty() {
		return nil, errors.New("no GitHub token: set GITHUB_TOKEN (in Actions: env: GITHUB_TOKEN: ${{ github.token }})")
	}
	c := config{
		apiURL: "https://api.github.com/",
		base:   http.DefaultTransport,
		policy: defaultPolicy(),
		now:    time.Now,
		sleep:  sleepCtx,
		log:    io.Discard,
	}
	for _, o := range opts {
		if err := o(&c); err != nil {
			return nil, fmt.Errorf("ci: %w", token.RedactError(err))
		}
	}
	base, err := url.Parse(c.apiURL)
	if err != nil {
		return nil, fmt.Errorf("ci: api url: %w", err)
	}
	log := redactWriter{w: c.log, t: token}
	tr := &transport{
		base: c.base, token: token, host: base.Host, policy: c.policy,
		now: c.now, sleep: c.sleep,
		logf: func(format string, args ...any) { fmt.Fprintf(log, format+"\n", args...) },
	}
	client := github.NewClient(&http.Client{Transport: tr, Timeout: 2 * time.Minute})
	client.BaseURL = base
	client.UserAgent = "kci"
	return &GitHub{client: client, token: token, now: c.now, log: log}, nil
}

// Post creates or updates the tree's sticky comment and records a check.
func (g *GitHub) Post(ctx context.Context, t Target, r Report) (Result, error) {
	if err := r.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Tree: r.Tree}
	if t.PR != 0 {
		u, created, err := g.upsertComment(ctx, t, r)
		if err != nil {
			return res, err
		}
		res.CommentURL, res.Created = u, created
	}
	if t.SHA != "" {
		kind, u, err := g.check(ctx, t, r)
		if err != nil {
			return res, err
		}
		res.Check, res.CheckURL = kind, u
	}
	return res, nil
}

// upsertComment edits the comment holding the tree's marker, or creates it.
// Comments written by someone else that carry the marker (anyone can paste
// it) cannot be edited; they are skipped, not fatal.
func (g *GitHub) upsertComment(ctx context.Context, t Target, r Report) (string, bool, error) {
	body := CommentBody(r)
	marker := Marker(r.Tree)
	found, err := g.findComments(ctx, t, marker)
	if err != nil {
		return "", false, err
	}
	for i, c := range found {
		if c.GetBody() == body {
			g.dropDuplicates(ctx, t, c, found[i+1:])
			return c.GetHTMLURL(), false, nil
		}
		edited, _, err := g.client.Issues.EditComment(ctx, t.Owner, t.Repo, c.GetID(), &github.IssueComment{Body: &body})
		if err != nil {
			ae := apiError(g.token, "edit comment", fmt.Sprintf("%s (comment %d)", t, c.GetID()), err)
			var e *APIError
			if errors.As(ae, &e) && (e.Status == http.StatusForbidden || e.Status == http.StatusNotFound) {
				fmt.Fprintf(g.log, "ci: %v; skipping it\n", ae)
				continue
			}
			return "", false, ae
		}
		g.dropDuplicates(ctx, t, c, found[i+1:])
		return edited.GetHTMLURL(), false, nil
	}
	created, _, err := g.client.Issues.CreateComment(ctx, t.Owner, t.Repo, t.PR, &github.IssueComment{Body: &body})
	if err != nil {
		return "", false, apiError(g.token, "post comment", t.String(), err)
	}
	return created.GetHTMLURL(), true, nil
}

// findComments lists every page of the PR's comments and returns those
// whose body starts with marker, oldest first. A quoted marker ("> <!--")
// does not count.
func (g *GitHub) findComments(ctx context.Context, t Target, marker string) ([]*github.IssueComment, error) {
	var found []*github.IssueComment
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; ; page++ {
		if page > 1000 { // 100k comments: a broken Link header, not a PR
			return nil, fmt.Errorf("list comments on %s: pagination did not end", t)
		}
		cs, resp, err := g.client.Issues.ListComments(ctx, t.Owner, t.Repo, t.PR, opts)
		if err != nil {
			return nil, apiError(g.token, "list comments", t.String(), err)
		}
		for _, c := range cs {
			if strings.HasPrefix(strings.TrimSpace(c.GetBody()), marker) {
				found = append(found, c)
			}
		}
		if resp.NextPage == 0 {
			return found, nil
		}
		opts.Page = resp.NextPage
	}
}

// dropDuplicates deletes later copies of the sticky comment by the same
// author. They appear only when a create was retried after GitHub had
// already stored it (a 502 on POST); deleting keeps "one comment per tree"
// true. Failures are logged: duplicates are untidy, not wrong.
func (g *GitHub) dropDuplicates(ctx context.Context, t Target, kept *github.IssueComment, rest []*github.IssueComment) {
	for _, c := range rest {
		if c.GetUser().GetLogin() != kept.GetUser().GetLogin() {
			continue
		}
		if _, err := g.client.Issues.DeleteComment(ctx, t.Owner, t.Repo, c.GetID()); err != nil {
			fmt.Fprintf(g.log, "ci: %v\n", apiError(g.token, "delete duplicate comment", fmt.Sprintf("%s (comment %d)", t, c.GetID()), err))
		}
	}
}

// check creates a completed check run; where the token may not (a PAT, a
// token without checks: write), it sets a commit status instead.
func (g *GitHub) check(ctx context.Context, t Target, r Report) (kind, u string, err error) {
	now := github.Timestamp{Time: g.now()}
	summary := Trim(r.Markdown, CheckSummaryLimit, trimNote(r.DetailsURL))
	opts := github.CreateCheckRunOptions{
		Name:        CheckName(r.Tree),
		HeadSHA:     t.SHA,
		Status:      github.String("completed"),
		Conclusion:  github.String(r.Conclusion),
		CompletedAt: &now,
		Output: &github.CheckRunOutput{
			Title:   github.String(CheckTitle(r)),
			Summary: github.String(summary),
		},
	}
	if r.DetailsURL != "" {
		opts.DetailsURL = github.String(r.DetailsURL)
	}
	cr, _, err := g.client.Checks.CreateCheckRun(ctx, t.Owner, t.Repo, opts)
	if err == nil {
		return "check run", cr.GetHTMLURL(), nil
	}
	checkErr := apiError(g.token, "create check run", t.commit(), err)
	var e *APIError
	if !errors.As(checkErr, &e) || (e.Status != http.StatusForbidden && e.Status != http.StatusNotFound) {
		return "", "", checkErr
	}
	fmt.Fprintf(g.log, "ci: %v; falling back to a commit status\n", checkErr)
	st := &github.RepoStatus{
		State:       github.String(StatusState(r.Conclusion)),
		Description: github.String(StatusDescription(r)),
		Context:     github.String(CheckName(r.Tree)),
	}
	if r.DetailsURL != "" {
		st.TargetURL = github.String(r.DetailsURL)
	}
	if _, _, err := g.client.Repositories.CreateStatus(ctx, t.Owner, t.Repo, t.SHA, st); err != nil {
		return "", "", fmt.Errorf("%w; fallback: %w", checkErr, apiError(g.token, "create commit status", t.commit(), err))
	}
	return "commit status", "", nil
}

// ResolvePR finds the open pull request whose head is headOwner:headBranch
// at headSHA. A workflow_run event from a fork lists no pull requests;
// these three fields of the event are GitHub's, not the fork's, so the
// answer can be trusted (unlike a PR number read from an artifact).
func (g *GitHub) ResolvePR(ctx context.Context, owner, repo, headOwner, headBranch, headSHA string) (int, error) {
	res := fmt.Sprintf("%s/%s (head %s:%s)", owner, repo, headOwner, headBranch)
	opts := &github.PullRequestListOptions{State: "open", Head: headOwner + ":" + headBranch, ListOptions: github.ListOptions{PerPage: 100}}
	prs, _, err := g.client.PullRequests.List(ctx, owner, repo, opts)
	if err != nil {
		return 0, apiError(g.token, "find pull request", res, err)
	}
	for _, pr := range prs {
		if pr.GetHead().GetSHA() == headSHA {
			return pr.GetNumber(), nil
		}
	}
	return 0, fmt.Errorf("find pull request on %s: no open pull request at %s", res, shortSHA(headSHA))
}
