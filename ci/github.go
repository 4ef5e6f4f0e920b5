package ci

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
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

// MaxTrees bounds the trees of one post. Each costs a few API calls; a
// run record (written by the pull request's own job) with thousands would
// spend the repository's rate limit.
const MaxTrees = 32

// PostAll posts every report, continuing past failures so one refused tree
// does not hide the others, and returns what succeeded plus the joined
// errors. More than MaxTrees reports, or one tree twice, is refused.
func PostAll(ctx context.Context, p Poster, t Target, reports []Report) ([]Result, error) {
	if len(reports) > MaxTrees {
		return nil, fmt.Errorf("post: %d trees, more than %d: refusing to post (the run record is broken or forged)", len(reports), MaxTrees)
	}
	if s, ok := p.(interface{ session() Poster }); ok {
		p = s.session() // one listing of the PR's comments for every tree
	}
	var (
		out  []Result
		errs []error
		seen = map[string]bool{}
	)
	for _, r := range reports {
		if seen[r.Tree] {
			errs = append(errs, fmt.Errorf("post %s: the tree is in the run twice", logName(r.Tree)))
			continue
		}
		seen[r.Tree] = true
		res, err := p.Post(ctx, t, r)
		if err != nil {
			errs = append(errs, fmt.Errorf("post %s: %w", logName(r.Tree), err))
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
	policy retryPolicy
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	log    io.Writer

	bot *botID // whose marker comments are kci's
}

// botID is the bot's login, looked up once. A pointer: GitHub values may
// be copied (printed), a mutex may not.
type botID struct {
	mu       sync.Mutex
	login    string // "" = not known yet
	fallback string // taken when GET /user is refused
}

type config struct {
	apiURL       string
	base         http.RoundTripper
	policy       retryPolicy
	now          func() time.Time
	sleep        func(context.Context, time.Duration) error
	log          io.Writer
	login        string
	defaultLogin string
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

// WithTimeouts bounds one attempt (connect, send, read the answer) and
// the whole request with its retries and waits. There is deliberately no
// http.Client.Timeout: it would span the retry loop and cut off the
// Retry-After waits the policy allows.
func WithTimeouts(attempt, total time.Duration) Option {
	return func(c *config) error {
		if attempt <= 0 || total < attempt {
			return fmt.Errorf("timeouts: %s per attempt, %s in total: want positive, total ≥ attempt", attempt, total)
		}
		c.policy.attemptTimeout, c.policy.budget = attempt, total
		return nil
	}
}

// WithBotLogin names the account whose comments are kci's (the token's
// user: a GitHub App's "name[bot]", or a PAT's owner). Only its marker
// comments are edited or deleted. Without it the token's user is looked
// up (GET /user).
func WithBotLogin(login string) Option {
	return func(c *config) error {
		if !loginRE.MatchString(login) {
			return fmt.Errorf("bot login %q is not a GitHub login", login)
		}
		c.login = login
		return nil
	}
}

// WithDefaultBotLogin is the account taken when GET /user is refused, as
// it is for installation tokens: "github-actions[bot]" for the Actions
// GITHUB_TOKEN.
func WithDefaultBotLogin(login string) Option {
	return func(c *config) error {
		if !loginRE.MatchString(login) {
			return fmt.Errorf("default bot login %q is not a GitHub login", login)
		}
		c.defaultLogin = login
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
	// No Timeout: the transport bounds each attempt and the total.
	client := github.NewClient(&http.Client{Transport: tr})
	client.BaseURL = base
	client.UserAgent = "kci"
	return &GitHub{
		client: client, token: token, policy: c.policy, now: c.now, sleep: c.sleep, log: log,
		bot: &botID{login: c.login, fallback: c.defaultLogin},
	}, nil
}

// Post creates or updates the tree's sticky comment and records a check.
func (g *GitHub) Post(ctx context.Context, t Target, r Report) (Result, error) {
	return g.post(ctx, t, r, &comments{})
}

// ghSession posts several trees to one target over one listing of the
// PR's comments.
type ghSession struct {
	g  *GitHub
	cc comments
}

func (g *GitHub) session() Poster { return &ghSession{g: g} }

func (s *ghSession) Post(ctx context.Context, t Target, r Report) (Result, error) {
	return s.g.post(ctx, t, r, &s.cc)
}

func (g *GitHub) post(ctx context.Context, t Target, r Report, cc *comments) (Result, error) {
	if err := r.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Tree: r.Tree}
	if t.PR != 0 {
		u, created, err := g.upsertComment(ctx, t, r, cc)
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

// check creates a completed check run; where the token may not (a PAT, a
// token without checks: write), it sets a commit status instead.
func (g *GitHub) check(ctx context.Context, t Target, r Report) (kind, u string, err error) {
	now := github.Timestamp{Time: g.now()}
	summary := CheckSummary(r)
	// external_id tells this post's check run from any other of the same
	// name, so a create that failed with a 5xx can be looked up.
	nonce := make([]byte, 12)
	if _, err := rand.Read(nonce); err != nil {
		return "", "", fmt.Errorf("create check run: %w", err)
	}
	extID := "kci-" + hex.EncodeToString(nonce)
	opts := github.CreateCheckRunOptions{
		Name:        CheckName(r.Tree),
		HeadSHA:     t.SHA,
		ExternalID:  github.String(extID),
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
	create := func() error {
		cr, _, err := g.client.Checks.CreateCheckRun(ctx, t.Owner, t.Repo, opts)
		if err == nil {
			u = cr.GetHTMLURL()
		}
		return err
	}
	stored := func() (bool, error) {
		lo := &github.ListCheckRunsOptions{CheckName: github.String(opts.Name), Filter: github.String("all"), ListOptions: github.ListOptions{PerPage: 100}}
		res, _, err := g.client.Checks.ListCheckRunsForRef(ctx, t.Owner, t.Repo, t.SHA, lo)
		if err != nil {
			return false, apiError(g.token, "list check runs", t.commit(), err)
		}
		for _, cr := range res.CheckRuns {
			if cr.GetExternalID() == extID {
				u = cr.GetHTMLURL()
				return true, nil
			}
		}
		return false, nil
	}
	checkErr := g.createOnce(ctx, "create check run", t.commit(), create, stored)
	if checkErr == nil {
		return "check run", u, nil
	}
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
	// A status is replaced by the next one of the same context, so making
	// it twice is harmless: nothing to look up before retrying.
	err = g.createOnce(ctx, "create commit status", t.commit(), func() error {
		_, _, err := g.client.Repositories.CreateStatus(ctx, t.Owner, t.Repo, t.SHA, st)
		return err
	}, func() (bool, error) { return false, nil })
	if err != nil {
		return "", "", fmt.Errorf("%w; fallback: %w", checkErr, err)
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
