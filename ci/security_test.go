package ci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Row 1: a commenter who posts the marker first must not get kci to edit
// their comment. The fake, like GitHub, lets a write token edit anyone's.
func TestOthersMarkerCommentIsNeverEdited(t *testing.T) {
	h := newHarness(t)
	mal := h.gh.seed(12, "mallory", Marker("gtp")+"\nall green, merge it")
	for _, md := range []string{"real report", "real report v2"} {
		if _, err := h.p.Post(context.Background(), target, report("gtp", md, Failure)); err != nil {
			t.Fatal(err)
		}
	}
	cs := h.gh.prComments(12)
	if len(cs) != 2 || cs[0].ID != mal || cs[0].Body != Marker("gtp")+"\nall green, merge it" {
		t.Fatalf("comments %+v: mallory's must be untouched", cs)
	}
	if cs[1].User.Login != h.gh.bot || cs[1].Body != CommentBody(report("gtp", "real report v2", Failure)) {
		t.Errorf("kci's comment %+v", cs[1])
	}
	if n := h.gh.count("PATCH", fmt.Sprintf("/issues/comments/%d", mal)) + h.gh.count("DELETE", fmt.Sprintf("/issues/comments/%d", mal)); n != 0 {
		t.Errorf("%d edits or deletes of mallory's comment", n)
	}
	if n := h.gh.count("GET", "/user"); n != 1 {
		t.Errorf("%d GET /user, want 1 (looked up once)", n)
	}
}

func TestBotLoginConfiguredOrDefault(t *testing.T) {
	// Configured: no lookup.
	h := newHarness(t, WithBotLogin("kci-bot[bot]"))
	h.gh.seed(12, "mallory", Marker("gtp")+"\nfake")
	own := h.gh.seed(12, h.gh.bot, Marker("gtp")+"\nold")
	if _, err := h.p.Post(context.Background(), target, report("gtp", "new", Success)); err != nil {
		t.Fatal(err)
	}
	if h.gh.count("GET", "/user") != 0 || h.gh.count("PATCH", fmt.Sprintf("/comments/%d", own)) != 1 {
		t.Errorf("configured login: %d lookups, %d edits of the bot's comment", h.gh.count("GET", "/user"), h.gh.count("PATCH", fmt.Sprintf("/comments/%d", own)))
	}

	// An installation token may not ask GET /user: the default is taken.
	h = newHarness(t, WithDefaultBotLogin("kci-bot[bot]"))
	h.gh.userRefused = true
	own = h.gh.seed(12, h.gh.bot, Marker("gtp")+"\nold")
	if _, err := h.p.Post(context.Background(), target, report("gtp", "new", Success)); err != nil {
		t.Fatal(err)
	}
	if h.gh.count("PATCH", fmt.Sprintf("/comments/%d", own)) != 1 {
		t.Errorf("default login: the bot's comment was not edited")
	}

	// Neither: refuse, saying what to do, and change nothing.
	h = newHarness(t)
	h.gh.userRefused = true
	h.gh.seed(12, h.gh.bot, Marker("gtp")+"\nold")
	_, err := h.p.Post(context.Background(), target, report("gtp", "new", Success))
	if err == nil || !strings.Contains(err.Error(), "--bot-login") || !strings.Contains(err.Error(), "403") {
		t.Errorf("unknown bot: %v, want a refusal naming --bot-login", err)
	}
	if h.gh.count("POST", "") != 0 || h.gh.count("PATCH", "") != 0 {
		t.Errorf("posted without knowing whose comments are kci's")
	}

	if _, err := NewGitHub(NewToken(testToken), WithBotLogin("x\n::error::")); err == nil {
		t.Errorf("a bad login was accepted")
	}
}

// Row 5: GitHub stored the comment but answered 502 (or the connection
// dropped): kci must look before creating again, never leave two.
func TestCreateStoredButFailedIsNotRepeated(t *testing.T) {
	for _, ft := range []fault{
		{method: "POST", suffix: "/issues/12/comments", status: 502, body: "<html>bad gateway</html>", stored: true},
		{method: "POST", suffix: "/issues/12/comments", stored: true, drop: true},
	} {
		h := newHarness(t)
		h.gh.inject(ft)
		res, err := h.p.Post(context.Background(), target, report("gtp", "r", Success))
		if err != nil {
			t.Fatal(err)
		}
		if n := len(markerComments(h.gh.prComments(12), "gtp")); n != 1 {
			t.Errorf("drop=%v: %d kci comments, want 1", ft.drop, n)
		}
		if n := h.gh.count("POST", "/issues/12/comments"); n != 1 {
			t.Errorf("drop=%v: %d creates, want 1", ft.drop, n)
		}
		if !res.Created || res.CommentURL == "" {
			t.Errorf("drop=%v: result %+v, want the stored comment", ft.drop, res)
		}
	}

	// The same for a check run, found again by its external id.
	h := newHarness(t)
	h.gh.inject(fault{method: "POST", suffix: "/check-runs", status: 504, stored: true})
	res, err := h.p.Post(context.Background(), target, report("gtp", "r", Success))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.gh.checkRuns) != 1 || res.CheckURL == "" || h.gh.count("POST", "/check-runs") != 1 {
		t.Errorf("%d check runs after a stored 504 (%d POSTs), result %+v", len(h.gh.checkRuns), h.gh.count("POST", "/check-runs"), res)
	}
}

// A POST that failed without being stored is made again, after a look.
func TestCreateNotStoredIsRetriedAfterLooking(t *testing.T) {
	h := newHarness(t)
	h.gh.inject(fault{method: "POST", suffix: "/issues/12/comments", status: 500})
	if _, err := h.p.Post(context.Background(), target, report("gtp", "r", Success)); err != nil {
		t.Fatal(err)
	}
	reqs := h.gh.allRequests()
	var seq []string
	for _, r := range reqs {
		if strings.HasSuffix(r.Path, "/issues/12/comments") {
			seq = append(seq, r.Method)
		}
	}
	if strings.Join(seq, " ") != "GET POST GET POST" {
		t.Errorf("comment requests %v, want GET POST GET POST (look before creating again)", seq)
	}
	if n := len(markerComments(h.gh.prComments(12), "gtp")); n != 1 {
		t.Errorf("%d kci comments", n)
	}
}

// Row 6: tree names are validated, counted, and the PR's comments are
// listed once for all trees.
func TestPostAllBoundsTrees(t *testing.T) {
	h := newHarness(t)
	h.gh.seed(12, h.gh.bot, Marker("ext")+"\nold")
	reports := []Report{report("ext", "e", Success), report("gtp", "g", Success), report("stock", "s", Success)}
	if _, err := PostAll(context.Background(), h.p, target, reports); err != nil {
		t.Fatal(err)
	}
	if n := h.gh.count("GET", "/issues/12/comments"); n != 1 {
		t.Errorf("comments listed %d times for 3 trees, want once", n)
	}
	if n := len(h.gh.prComments(12)); n != 3 {
		t.Errorf("%d comments, want 3 (one edited, two created)", n)
	}

	// Too many trees: refused before any request.
	h = newHarness(t)
	var many []Report
	for i := range MaxTrees + 1 {
		many = append(many, report(fmt.Sprintf("t%d", i), "r", Success))
	}
	if _, err := PostAll(context.Background(), h.p, target, many); err == nil || !strings.Contains(err.Error(), "more than 32") {
		t.Errorf("PostAll of %d trees: %v", len(many), err)
	}
	if n := len(h.gh.allRequests()); n != 0 {
		t.Errorf("%d requests for a refused post", n)
	}

	// "a b" would share a_b's marker; a newline would forge a workflow
	// command in the log; a duplicate would post twice.
	h = newHarness(t)
	bad := []Report{report("a_b", "r", Success), report("a b", "r", Success), report("x\n::error::all green", "r", Success), report("a_b", "again", Success)}
	res, err := PostAll(context.Background(), h.p, target, bad)
	if len(res) != 1 || res[0].Tree != "a_b" || err == nil {
		t.Fatalf("PostAll: %+v, %v; want only a_b posted", res, err)
	}
	for _, want := range []string{`post "a b": report: tree name "a b"`, "post a_b: the tree is in the run twice"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	for _, line := range strings.Split(err.Error(), "\n") {
		if strings.Contains(line, "::") {
			t.Errorf("error line can forge a workflow command: %q", line)
		}
	}
	if len(h.gh.prComments(12)) != 1 {
		t.Errorf("comments %+v", h.gh.prComments(12))
	}
}

// Row 2, the poster's own guard: whatever reaches CommentBody cannot
// mention anyone or hide the rest behind an HTML comment.
func TestCommentBodyDefangs(t *testing.T) {
	md := "### ❌ gtp\n- @org/team please look\n- subject <!-- hidden\n**regression**: mark\n```\n@alice in a log\n```\nmail a@b.example, see #12"
	for _, body := range []string{CommentBody(report("gtp", md, Failure)), defang(md)} {
		rest := strings.TrimPrefix(body, Marker("gtp"))
		if strings.Contains(rest, "<!--") || strings.Contains(rest, "-->") {
			t.Errorf("an HTML comment survives:\n%s", body)
		}
		if m := regexp.MustCompile(`(^|[^\w])[@#][A-Za-z0-9]`).FindString(rest); m != "" {
			t.Errorf("a mention or reference survives (%q):\n%s", m, body)
		}
		if !strings.Contains(rest, "**regression**: mark") || !strings.Contains(rest, "a@b.example") {
			t.Errorf("defang changed ordinary Markdown:\n%s", body)
		}
	}
}

func TestDryRunInActionsStopsCommands(t *testing.T) {
	var out bytes.Buffer
	md := "report\n::error file=x::all green\n"
	if _, err := (DryRun{W: &out, Actions: true}).Post(context.Background(), target, report("gtp", md, Failure)); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	m := regexp.MustCompile(`(?m)^::stop-commands::([0-9a-f]{32})$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no stop-commands before the body:\n%s", s)
	}
	stop, resume, bad := strings.Index(s, m[0]), strings.Index(s, "::"+m[1]+"::"), strings.Index(s, "::error")
	if !(stop < bad && bad < resume) {
		t.Errorf("the body is not between stop-commands and its resume token:\n%s", s)
	}
}

// Row 8: no client-wide timeout spanning the retry loop; each attempt has
// its own deadline, and the whole request a budget.
func TestTimeoutsArePerAttempt(t *testing.T) {
	h := newHarness(t)
	if to := h.p.client.Client().Timeout; to != 0 {
		t.Errorf("http.Client.Timeout %s spans every retry and Retry-After wait", to)
	}

	// Real clock: a hung first attempt is cut at 200 ms and retried.
	var mu sync.Mutex
	calls := 0
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		h.gh.srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer hang.Close()
	p, err := NewGitHub(NewToken(testToken), WithAPIURL(hang.URL), WithTimeouts(200*time.Millisecond, time.Minute),
		WithRetry(3, 10*time.Millisecond, time.Minute), WithLog(h.log))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := p.Post(context.Background(), Target{Owner: "octo", Repo: "bench", PR: 12}, report("gtp", "r", Success)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second || calls < 2 {
		t.Errorf("hung attempt: %d calls in %s, want a retry after 200 ms", calls, d)
	}
}

func TestTotalBudgetBoundsWaits(t *testing.T) {
	h := newHarness(t, WithTimeouts(time.Minute, 3*time.Minute))
	for range 3 {
		h.gh.inject(fault{method: "GET", suffix: "/comments", status: 503, header: map[string]string{"Retry-After": "100"}})
	}
	_, err := h.p.Post(context.Background(), target, report("gtp", "r", Success))
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 503 {
		t.Fatalf("error %v, want the 503", err)
	}
	if got := h.clock.slept(); len(got) != 1 || got[0] != 100*time.Second {
		t.Errorf("slept %v, want one 100 s wait (a second would pass the 3 min budget)", got)
	}
	if !strings.Contains(h.log.String(), "budget") {
		t.Errorf("stopping for the budget is not logged: %q", h.log.String())
	}
	if _, err := NewGitHub(NewToken(testToken), WithTimeouts(time.Minute, time.Second)); err == nil {
		t.Errorf("total < attempt accepted")
	}
}
