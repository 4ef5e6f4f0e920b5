package ci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const testToken = "ghs_TESTt0ken0123456789abcdefSECRET"

// lockedBuffer is a log sink safe for the transport's writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type harness struct {
	gh    *fakeGitHub
	clock *fakeClock
	log   *lockedBuffer
	p     *GitHub
}

func newHarness(t *testing.T, opts ...Option) *harness {
	t.Helper()
	h := &harness{gh: newFakeGitHub(t, testToken), clock: newFakeClock(), log: &lockedBuffer{}}
	all := append([]Option{WithAPIURL(h.gh.srv.URL), WithClock(h.clock.now, h.clock.sleep), WithLog(h.log)}, opts...)
	p, err := NewGitHub(NewToken(testToken), all...)
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	t.Cleanup(func() {
		// Whatever a test did, the token must not be in the log.
		if strings.Contains(h.log.String(), testToken) {
			t.Errorf("token in log:\n%s", h.log.String())
		}
	})
	return h
}

var target = Target{Owner: "octo", Repo: "bench", PR: 12, SHA: "0123456789abcdef0123456789abcdef01234567"}

func report(tree, md, conclusion string) Report {
	return Report{Tree: tree, Markdown: md, Conclusion: conclusion, Title: tree + ": " + conclusion, Summary: "gtp-gtp −3.1 %", DetailsURL: "https://github.com/octo/bench/actions/runs/7"}
}

func markerComments(cs []fakeComment, tree string) []fakeComment {
	var out []fakeComment
	for _, c := range cs {
		if strings.HasPrefix(c.Body, Marker(tree)) {
			out = append(out, c)
		}
	}
	return out
}

func TestPostCreatesThenEdits(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.gh.seed(12, "alice", "looks good")

	res, err := h.p.Post(ctx, target, report("gtp", "first report", Success))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.CommentURL == "" {
		t.Errorf("first post: %+v, want a created comment", res)
	}
	res, err = h.p.Post(ctx, target, report("gtp", "second report", Failure))
	if err != nil {
		t.Fatal(err)
	}
	if res.Created {
		t.Errorf("second post created a comment, want an edit")
	}
	cs := h.gh.prComments(12)
	mine := markerComments(cs, "gtp")
	if len(cs) != 2 || len(mine) != 1 {
		t.Fatalf("comments after two posts: %+v, want alice's and exactly one kci comment", cs)
	}
	if want := CommentBody(report("gtp", "second report", Failure)); mine[0].Body != want || !strings.Contains(want, "actions/runs/7") {
		t.Errorf("comment body %q, want %q", mine[0].Body, want)
	}
	if n := h.gh.count("POST", "/issues/12/comments"); n != 1 {
		t.Errorf("%d comment creations, want 1", n)
	}
	if n := h.gh.count("PATCH", fmt.Sprintf("/issues/comments/%d", mine[0].ID)); n != 1 {
		t.Errorf("%d edits of comment %d, want 1", n, mine[0].ID)
	}

	// Another tree gets its own comment; the gtp one is untouched.
	if _, err := h.p.Post(ctx, target, report("ext", "ext report", Neutral)); err != nil {
		t.Fatal(err)
	}
	cs = h.gh.prComments(12)
	if len(markerComments(cs, "ext")) != 1 || len(markerComments(cs, "gtp")) != 1 || len(cs) != 3 {
		t.Errorf("after posting tree ext: %+v", cs)
	}

	// Posting the same report again changes nothing and sends no edit.
	before := h.gh.count("PATCH", "")
	if _, err := h.p.Post(ctx, target, report("ext", "ext report", Neutral)); err != nil {
		t.Fatal(err)
	}
	if h.gh.count("PATCH", "") != before {
		t.Errorf("identical report was re-sent as an edit")
	}
	for _, r := range h.gh.allRequests() {
		if r.Auth != "Bearer "+testToken {
			t.Errorf("%s %s sent without the token", r.Method, r.Path)
		}
	}
}

func TestMarkerCommentOnSecondPage(t *testing.T) {
	h := newHarness(t)
	h.gh.maxPerPage = 30 // GitHub would page at 100; same Link mechanics
	for i := range 45 {
		if i == 40 {
			h.gh.seed(12, h.gh.bot, Marker("gtp")+"\nold report")
			continue
		}
		h.gh.seed(12, "alice", fmt.Sprintf("comment %d", i))
	}
	// A quote of the marker by someone else is not the sticky comment.
	h.gh.seed(12, "bob", "> "+Marker("gtp")+"\n> old report\nwhy?")

	res, err := h.p.Post(context.Background(), target, report("gtp", "new report", Success))
	if err != nil {
		t.Fatal(err)
	}
	if res.Created {
		t.Fatalf("created a new comment although the marker comment was on page 2")
	}
	pages := 0
	for _, r := range h.gh.allRequests() {
		if r.Method == "GET" && strings.HasSuffix(r.Path, "/comments") {
			pages++
			if pages == 2 && !strings.Contains(r.Query, "page=2") {
				t.Errorf("second list request %q does not ask for page 2", r.Query)
			}
		}
	}
	if pages != 2 {
		t.Errorf("listed %d pages, want 2", pages)
	}
	mine := markerComments(h.gh.prComments(12), "gtp")
	if len(mine) != 1 || mine[0].Body != CommentBody(report("gtp", "new report", Success)) {
		t.Errorf("marker comments: %+v", mine)
	}
	if h.gh.count("POST", "/comments") != 0 {
		t.Errorf("a comment was created")
	}
}

func TestRetryOn502(t *testing.T) {
	h := newHarness(t)
	h.gh.inject(fault{method: "GET", suffix: "/issues/12/comments", status: 502, body: "<html>bad gateway</html>"})
	h.gh.inject(fault{method: "POST", suffix: "/issues/12/comments", status: 502, body: "<html>bad gateway</html>"})
	h.gh.inject(fault{method: "POST", suffix: "/issues/12/comments", status: 503, body: `{"message":"unavailable"}`})
	if _, err := h.p.Post(context.Background(), target, report("gtp", "r", Success)); err != nil {
		t.Fatal(err)
	}
	if n := h.gh.count("POST", "/issues/12/comments"); n != 3 {
		t.Errorf("%d comment POSTs, want 3 (502, 503, 201)", n)
	}
	if got := len(markerComments(h.gh.prComments(12), "gtp")); got != 1 {
		t.Errorf("%d kci comments, want 1", got)
	}
	want := []time.Duration{time.Second, time.Second, 2 * time.Second}
	if got := h.clock.slept(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("backoff sleeps %v, want %v", got, want)
	}
	if !strings.Contains(h.log.String(), "502") {
		t.Errorf("retry not logged: %q", h.log.String())
	}
}

func TestRetriesAreBounded(t *testing.T) {
	h := newHarness(t, WithRetry(3, 10*time.Millisecond, time.Minute))
	for range 5 {
		h.gh.inject(fault{method: "GET", suffix: "/comments", status: 500, body: `{"message":"boom"}`})
	}
	_, err := h.p.Post(context.Background(), target, report("gtp", "r", Success))
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 500 || ae.Op != "list comments" {
		t.Fatalf("error %v, want list comments APIError 500", err)
	}
	if n := h.gh.count("GET", "/comments"); n != 3 {
		t.Errorf("%d attempts, want 3", n)
	}
}

func Test403IsAClearError(t *testing.T) {
	h := newHarness(t)
	h.gh.inject(fault{method: "POST", suffix: "/issues/12/comments", status: 403,
		body: `{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest/issues/comments#create-an-issue-comment"}`})
	_, err := h.p.Post(context.Background(), target, report("gtp", "r", Success))
	if err == nil {
		t.Fatal("403 was not an error")
	}
	want := "post comment on octo/bench#12: 403 forbidden: Resource not accessible by integration"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
	var ae *APIError
	if !errors.As(err, &ae) || !ae.Refused() {
		t.Errorf("error %v is not a refused APIError", err)
	}
	if n := h.gh.count("POST", "/issues/12/comments"); n != 1 {
		t.Errorf("a plain 403 was tried %d times, want once", n)
	}
	if len(h.clock.slept()) != 0 {
		t.Errorf("slept %v on a plain 403", h.clock.slept())
	}
}

func TestWrongTokenIs401(t *testing.T) {
	gh := newFakeGitHub(t, testToken)
	p, err := NewGitHub(NewToken("ghs_wrong0000000000000000"), WithAPIURL(gh.srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Post(context.Background(), target, report("gtp", "r", Success))
	if err == nil || !strings.Contains(err.Error(), "list comments on octo/bench#12: 401 unauthorized: Bad credentials") {
		t.Errorf("error %v, want a 401 naming the operation", err)
	}
	if err != nil && strings.Contains(err.Error(), "ghs_wrong") {
		t.Errorf("error shows the token: %v", err)
	}
}

func TestSecondaryRateLimitHonoursRetryAfter(t *testing.T) {
	h := newHarness(t)
	h.gh.inject(fault{method: "POST", suffix: "/issues/12/comments", status: 403,
		header: map[string]string{"Retry-After": "7"},
		body:   `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`})
	h.gh.inject(fault{method: "POST", suffix: "/check-runs", status: 429,
		header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": strconv.FormatInt(h.clock.now().Add(30*time.Second).Unix(), 10)},
		body:   `{"message":"API rate limit exceeded"}`})
	if _, err := h.p.Post(context.Background(), target, report("gtp", "r", Success)); err != nil {
		t.Fatal(err)
	}
	// 7 s from Retry-After; reset is 30 s after the clock, which had moved
	// 7 s by then, plus one second of slack.
	want := []time.Duration{7 * time.Second, 24 * time.Second}
	if got := h.clock.slept(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("slept %v, want %v", got, want)
	}
	if len(h.gh.checkRuns) != 1 || len(markerComments(h.gh.prComments(12), "gtp")) != 1 {
		t.Errorf("after rate limits: %d check runs, comments %+v", len(h.gh.checkRuns), h.gh.prComments(12))
	}
}

func TestSecondaryRateLimitWithoutHeadersWaitsAMinute(t *testing.T) {
	h := newHarness(t)
	h.gh.inject(fault{method: "GET", suffix: "/comments", status: 403,
		body: `{"message":"You have exceeded a secondary rate limit."}`})
	if _, err := h.p.Post(context.Background(), Target{Owner: "octo", Repo: "bench", PR: 12}, report("gtp", "r", Success)); err != nil {
		t.Fatal(err)
	}
	if got := h.clock.slept(); len(got) != 1 || got[0] != time.Minute {
		t.Errorf("slept %v, want [1m0s]", got)
	}
}

func TestRateLimitLongerThanMaxWaitFails(t *testing.T) {
	h := newHarness(t, WithRetry(5, time.Second, time.Minute))
	h.gh.inject(fault{method: "GET", suffix: "/comments", status: 403,
		header: map[string]string{"X-RateLimit-Remaining": "0", "X-RateLimit-Limit": "1000", "X-RateLimit-Reset": strconv.FormatInt(h.clock.now().Add(time.Hour).Unix(), 10)},
		body:   `{"message":"API rate limit exceeded for installation."}`})
	_, err := h.p.Post(context.Background(), target, report("gtp", "r", Success))
	if err == nil || !strings.Contains(err.Error(), "list comments on octo/bench#12: 403 forbidden: API rate limit exceeded") {
		t.Fatalf("error %v, want a rate-limit error naming the operation", err)
	}
	if len(h.clock.slept()) != 0 {
		t.Errorf("slept %v although the wait exceeds the limit", h.clock.slept())
	}
}

func TestCancelledContextStopsRetries(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A sleep interrupted by cancellation, as sleepCtx reports it.
	interrupted := func(context.Context, time.Duration) error {
		cancel()
		return context.Canceled
	}
	h := newHarness(t, WithClock(time.Now, interrupted))
	h.gh.inject(fault{method: "GET", suffix: "/comments", status: 502})
	_, err := h.p.Post(ctx, target, report("gtp", "r", Success))
	if !errors.Is(err, context.Canceled) && (err == nil || !strings.Contains(err.Error(), "context canceled")) {
		t.Errorf("error %v, want context canceled", err)
	}
	if n := h.gh.count("GET", "/comments"); n != 1 {
		t.Errorf("%d attempts after cancel, want 1", n)
	}
}

func TestCheckRun(t *testing.T) {
	h := newHarness(t)
	if _, err := h.p.Post(context.Background(), target, report("gtp", "## A/B\n| a | b |", Neutral)); err != nil {
		t.Fatal(err)
	}
	if len(h.gh.checkRuns) != 1 {
		t.Fatalf("%d check runs, want 1", len(h.gh.checkRuns))
	}
	cr := h.gh.checkRuns[0]
	if cr.Name != "kci / gtp" || cr.HeadSHA != target.SHA || cr.Status != "completed" || cr.Conclusion != "neutral" {
		t.Errorf("check run %+v", cr)
	}
	if cr.Output.Summary != "## A/B\n| a | b |" || cr.Output.Title != "gtp: neutral" || cr.DetailsURL == "" || cr.CompletedAt == "" {
		t.Errorf("check run output %+v", cr)
	}
	if len(h.gh.statuses) != 0 {
		t.Errorf("statuses %+v without a refusal", h.gh.statuses)
	}

	// A report too big for GitHub is trimmed, never rejected.
	big := strings.Repeat("| gtp-gtp | 920.9 | 921.3 | +0.0 % | 0.81 | ~ |\n", 3000)
	res, err := h.p.Post(context.Background(), target, report("ext", big, Failure))
	if err != nil {
		t.Fatal(err)
	}
	if res.Check != "check run" {
		t.Errorf("result %+v", res)
	}
	cr = h.gh.checkRuns[1]
	if cr.Conclusion != "failure" || len(cr.Output.Summary) > CheckSummaryLimit || !strings.Contains(cr.Output.Summary, "trimmed") {
		t.Errorf("big check run: conclusion %s, summary %d bytes", cr.Conclusion, len(cr.Output.Summary))
	}
	c := markerComments(h.gh.prComments(12), "ext")
	if len(c) != 1 || len(c[0].Body) > CommentLimit || !strings.Contains(c[0].Body, "trimmed") {
		t.Errorf("big comment not trimmed to the limit")
	}
}

func TestCheckRunFallsBackToCommitStatus(t *testing.T) {
	h := newHarness(t)
	h.gh.noChecks = true
	res, err := h.p.Post(context.Background(), target, report("gtp", "r", Neutral))
	if err != nil {
		t.Fatal(err)
	}
	if res.Check != "commit status" {
		t.Errorf("result %+v, want a commit status", res)
	}
	if len(h.gh.statuses) != 1 {
		t.Fatalf("statuses %+v", h.gh.statuses)
	}
	st := h.gh.statuses[0]
	if st.SHA != target.SHA || st.State != "success" || st.Context != "kci / gtp" || !strings.HasPrefix(st.Description, "neutral: ") || st.TargetURL == "" {
		t.Errorf("status %+v", st)
	}
	if !strings.Contains(h.log.String(), "create check run on octo/bench@0123456789ab: 403 forbidden") {
		t.Errorf("fallback not explained in the log: %q", h.log.String())
	}

	// Both refused: the error names both operations.
	h.gh.inject(fault{method: "POST", suffix: "/statuses/" + target.SHA, status: 403, body: `{"message":"Resource not accessible by integration"}`})
	_, err = h.p.Post(context.Background(), target, report("gtp", "r", Failure))
	if err == nil || !strings.Contains(err.Error(), "create check run on") || !strings.Contains(err.Error(), "create commit status on octo/bench@0123456789ab: 403") {
		t.Errorf("error %v, want both refusals named", err)
	}
}

func TestCheckRunServerErrorDoesNotFallBack(t *testing.T) {
	h := newHarness(t, WithRetry(2, time.Second, time.Minute))
	h.gh.inject(fault{method: "POST", suffix: "/check-runs", status: 422, body: `{"message":"Invalid request","errors":[{"resource":"CheckRun","field":"head_sha","code":"invalid"}]}`})
	_, err := h.p.Post(context.Background(), target, report("gtp", "r", Success))
	if err == nil || !strings.Contains(err.Error(), "create check run on octo/bench@0123456789ab: 422 unprocessable entity: Invalid request; invalid CheckRun.head_sha") {
		t.Errorf("error %v", err)
	}
	if len(h.gh.statuses) != 0 {
		t.Errorf("fell back to a status on a 422")
	}
}

func TestDuplicateStickyCommentsCollapse(t *testing.T) {
	h := newHarness(t)
	first := h.gh.seed(12, h.gh.bot, Marker("gtp")+"\nold")
	h.gh.seed(12, h.gh.bot, Marker("gtp")+"\nold, stored twice by a retried create")
	if _, err := h.p.Post(context.Background(), target, report("gtp", "new", Success)); err != nil {
		t.Fatal(err)
	}
	mine := markerComments(h.gh.prComments(12), "gtp")
	if len(mine) != 1 || mine[0].ID != first || mine[0].Body != CommentBody(report("gtp", "new", Success)) {
		t.Errorf("after collapse: %+v, want only comment %d, edited", mine, first)
	}
}

func TestSomeoneElsesMarkerIsNotEdited(t *testing.T) {
	h := newHarness(t)
	h.gh.seed(12, "mallory", Marker("gtp")+"\nall green, merge it")
	for _, md := range []string{"real report", "real report v2"} {
		if _, err := h.p.Post(context.Background(), target, report("gtp", md, Failure)); err != nil {
			t.Fatal(err)
		}
	}
	cs := markerComments(h.gh.prComments(12), "gtp")
	if len(cs) != 2 || cs[0].User.Login != "mallory" || cs[1].Body != CommentBody(report("gtp", "real report v2", Failure)) {
		t.Errorf("comments %+v: want mallory's untouched and one kci comment, edited", cs)
	}
	if h.gh.count("POST", "/issues/12/comments") != 1 {
		t.Errorf("kci comment created more than once")
	}
}

func TestResolvePR(t *testing.T) {
	h := newHarness(t)
	h.gh.pulls = []fakePull{{Number: 3, Head: "fork:main", SHA: "aaa"}, {Number: 9, Head: "fork:rht", SHA: "bbb"}}
	n, err := h.p.ResolvePR(context.Background(), "octo", "bench", "fork", "rht", "bbb")
	if err != nil || n != 9 {
		t.Errorf("ResolvePR = %d, %v; want 9", n, err)
	}
	if _, err := h.p.ResolvePR(context.Background(), "octo", "bench", "fork", "rht", "ccc"); err == nil {
		t.Errorf("a moved head resolved to a PR")
	}
}

func TestNoTokenIsAnError(t *testing.T) {
	_, err := NewGitHub(NewToken(""))
	if err == nil || !strings.Contains(err.Error(), "GITHUB_TOKEN") {
		t.Errorf("NewGitHub without a token: %v", err)
	}
}

func TestTokenOnlyGoesToTheAPIHost(t *testing.T) {
	var got []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	defer other.Close()
	tr := &transport{base: http.DefaultTransport, token: NewToken(testToken), host: "api.example.invalid", policy: defaultPolicy(), now: time.Now, sleep: sleepCtx, logf: func(string, ...any) {}}
	resp, err := (&http.Client{Transport: tr}).Get(other.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(got) != 1 || got[0] != "" {
		t.Errorf("request to another host carried Authorization %q", got)
	}
}

// TestTokenNeverLeaks drives every failure path, including a server that
// echoes the Authorization header back, and checks every captured output.
func TestTokenNeverLeaks(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		json.NewEncoder(w).Encode(map[string]string{"message": "token " + r.Header.Get("Authorization") + " is not allowed"})
	}))
	defer echo.Close()
	var outputs []string
	log := &lockedBuffer{}
	p, err := NewGitHub(NewToken(testToken), WithAPIURL(echo.URL), WithLog(log))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Post(context.Background(), target, report("gtp", "r", Success))
	if err == nil {
		t.Fatal("echo server did not fail")
	}
	outputs = append(outputs, err.Error(), fmt.Sprintf("%v %+v %#v", err, err, err))
	if !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("echoed token not replaced: %v", err)
	}
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		outputs = append(outputs, e.Error())
	}

	h := newHarness(t)
	h.gh.noChecks = true
	h.gh.inject(fault{method: "GET", suffix: "/comments", status: 502})
	h.gh.inject(fault{method: "POST", suffix: "/comments", status: 403, body: `{"message":"Resource not accessible by integration"}`})
	_, err = h.p.Post(context.Background(), target, report("gtp", "r", Success))
	outputs = append(outputs, fmt.Sprint(err), h.log.String(), log.String())

	env, _ := FromLookup(mapLookup(map[string]string{"GITHUB_TOKEN": testToken, "GITHUB_REPOSITORY": "octo/bench"}))
	js, _ := json.Marshal(env)
	outputs = append(outputs, fmt.Sprintf("%v|%+v|%#v|%s|%q", env, env, env, env.Token, env.Token), string(js))
	var dry bytes.Buffer
	DryRun{W: &dry}.Post(context.Background(), target, report("gtp", "r", Success))
	outputs = append(outputs, dry.String(), fmt.Sprintf("%v %+v", h.p, *h.p))

	for i, o := range outputs {
		if strings.Contains(o, testToken) {
			t.Errorf("output %d contains the token: %s", i, o)
		}
	}
	for _, r := range h.gh.allRequests() {
		if strings.Contains(r.Body, testToken) || strings.Contains(r.Query, testToken) {
			t.Errorf("token sent in a request body or URL: %s %s", r.Method, r.Path)
		}
	}
}

func TestPostAllContinuesPastFailures(t *testing.T) {
	h := newHarness(t)
	reports := []Report{report("ext", "e", Success), {Tree: "bad", Conclusion: "maybe"}, report("gtp", "g", Failure)}
	res, err := PostAll(context.Background(), h.p, target, reports)
	if err == nil || !strings.Contains(err.Error(), `post bad: report for tree bad: conclusion "maybe"`) {
		t.Errorf("PostAll error %v", err)
	}
	if len(res) != 2 || len(h.gh.checkRuns) != 2 {
		t.Errorf("PostAll posted %d (%d check runs), want 2", len(res), len(h.gh.checkRuns))
	}
}

func TestDryRunPrintsWithoutHTTP(t *testing.T) {
	var out bytes.Buffer
	res, err := PostAll(context.Background(), DryRun{W: &out}, target, []Report{report("gtp", "| v | Δ |", Failure)})
	if err != nil || len(res) != 1 || !res[0].DryRun {
		t.Fatal(res, err)
	}
	s := out.String()
	for _, want := range []string{Marker("gtp") + "\n| v | Δ |", `check run "kci / gtp"`, "conclusion failure", "octo/bench#12"} {
		if !strings.Contains(s, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, s)
		}
	}
}

func TestRetryAfterHTTPDate(t *testing.T) {
	clock := newFakeClock()
	tr := &transport{policy: defaultPolicy(), now: clock.now}
	resp := &http.Response{StatusCode: 503, Status: "503 Service Unavailable", Header: http.Header{}}
	resp.Header.Set("Retry-After", clock.now().Add(90*time.Second).Format(http.TimeFormat))
	if d, _, ok := tr.classify(resp, nil, 1); !ok || d != 90*time.Second {
		t.Errorf("Retry-After as a date: wait %s, retry %v; want 1m30s", d, ok)
	}
	resp.StatusCode, resp.Status = 404, "404 Not Found"
	if _, _, ok := tr.classify(resp, nil, 1); ok {
		t.Errorf("404 retried")
	}
}

func TestRetryOnDroppedConnection(t *testing.T) {
	h := newHarness(t)
	var drops int
	var mu sync.Mutex
	dropper := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		first := drops == 0
		drops++
		mu.Unlock()
		if first {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // the client sees EOF
			}
			return
		}
		// Then behave like GitHub.
		h.gh.srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer dropper.Close()
	p, err := NewGitHub(NewToken(testToken), WithAPIURL(dropper.URL), WithClock(h.clock.now, h.clock.sleep), WithLog(h.log))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Post(context.Background(), Target{Owner: "octo", Repo: "bench", PR: 12}, report("gtp", "r", Success)); err != nil {
		t.Fatal(err)
	}
	if drops < 2 || len(h.clock.slept()) != 1 || !strings.Contains(h.log.String(), "network error") {
		t.Errorf("dropped connection: %d requests, slept %v, log %q", drops, h.clock.slept(), h.log.String())
	}
}
