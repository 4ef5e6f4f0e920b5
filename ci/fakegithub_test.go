package ci

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGitHub is an httptest server that behaves like GitHub's REST API for
// the endpoints ci uses, keeps state (comments, check runs, statuses), and
// records every request so tests can assert what GitHub received.
type fakeGitHub struct {
	t     *testing.T
	token string
	bot   string // login of the token's identity
	srv   *httptest.Server

	mu          sync.Mutex
	nextID      int64
	comments    map[int][]*fakeComment // PR number → comments, oldest first
	checkRuns   []fakeCheckRun
	statuses    []fakeStatus
	pulls       []fakePull
	faults      []fault
	requests    []fakeRequest
	maxPerPage  int  // GitHub's is 100; tests lower it to exercise pagination
	noChecks    bool // refuse check runs like a token without checks: write
	userRefused bool // refuse GET /user like an installation token
}

type fakeComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
	HTMLURL string `json:"html_url"`
}

type fakeCheckRun struct {
	ID          int    `json:"id"`
	HTMLURL     string `json:"html_url"`
	ExternalID  string `json:"external_id"`
	Name        string `json:"name"`
	HeadSHA     string `json:"head_sha"`
	Status      string `json:"status"`
	Conclusion  string `json:"conclusion"`
	DetailsURL  string `json:"details_url"`
	CompletedAt string `json:"completed_at"`
	Output      struct {
		Title   string `json:"title"`
		Summary string `json:"summary"`
	} `json:"output"`
}

type fakeStatus struct {
	SHA         string `json:"-"`
	State       string `json:"state"`
	Description string `json:"description"`
	Context     string `json:"context"`
	TargetURL   string `json:"target_url"`
}

type fakePull struct {
	Number int
	Head   string // owner:branch
	SHA    string
}

type fakeRequest struct {
	Method, Path, Query, Auth, Body string
}

// fault is a canned response served instead of the real one to the next
// request matching method and path suffix. With stored, the request is
// carried out first and its answer replaced (GitHub stored the comment
// but a proxy answered 502); with drop, the connection is closed instead
// of any answer.
type fault struct {
	method, suffix string
	status         int
	header         map[string]string
	body           string
	stored, drop   bool
}

func newFakeGitHub(t *testing.T, token string) *fakeGitHub {
	f := &fakeGitHub{t: t, token: token, bot: "kci-bot[bot]", comments: map[int][]*fakeComment{}, maxPerPage: 100, nextID: 1000}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/{owner}/{repo}/issues/{num}/comments", f.listComments)
	mux.HandleFunc("POST /repos/{owner}/{repo}/issues/{num}/comments", f.createComment)
	mux.HandleFunc("PATCH /repos/{owner}/{repo}/issues/comments/{id}", f.editComment)
	mux.HandleFunc("DELETE /repos/{owner}/{repo}/issues/comments/{id}", f.deleteComment)
	mux.HandleFunc("POST /repos/{owner}/{repo}/check-runs", f.createCheckRun)
	mux.HandleFunc("POST /repos/{owner}/{repo}/statuses/{sha}", f.createStatus)
	mux.HandleFunc("GET /repos/{owner}/{repo}/pulls", f.listPulls)
	mux.HandleFunc("GET /repos/{owner}/{repo}/commits/{ref}/check-runs", f.listCheckRuns)
	mux.HandleFunc("GET /user", f.user)
	f.srv = httptest.NewServer(f.middleware(mux))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitHub) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		f.mu.Lock()
		f.requests = append(f.requests, fakeRequest{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), string(body)})
		var ft *fault
		for i := range f.faults {
			if f.faults[i].method == r.Method && strings.HasSuffix(r.URL.Path, f.faults[i].suffix) {
				c := f.faults[i]
				ft = &c
				f.faults = append(f.faults[:i], f.faults[i+1:]...)
				break
			}
		}
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
			return
		}
		if ft != nil && ft.stored {
			next.ServeHTTP(httptest.NewRecorder(), r)
		}
		if ft != nil && ft.drop {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
			return
		}
		if ft != nil {
			for k, v := range ft.header {
				w.Header().Set(k, v)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(ft.status)
			io.WriteString(w, ft.body)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func (f *fakeGitHub) inject(ft fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, ft)
}

func (f *fakeGitHub) seed(pr int, login, body string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.addComment(pr, login, body).ID
}

func (f *fakeGitHub) addComment(pr int, login, body string) *fakeComment {
	f.nextID++
	c := &fakeComment{ID: f.nextID, Body: body, HTMLURL: fmt.Sprintf("%s/pr/%d#issuecomment-%d", f.srv.URL, pr, f.nextID)}
	c.User.Login = login
	f.comments[pr] = append(f.comments[pr], c)
	return c
}

func (f *fakeGitHub) listComments(w http.ResponseWriter, r *http.Request) {
	pr, _ := strconv.Atoi(r.PathValue("num"))
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 {
		per = 30
	}
	f.mu.Lock()
	per = min(per, f.maxPerPage)
	all := f.comments[pr]
	f.mu.Unlock()
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if page < 1 {
		page = 1
	}
	last := max((len(all)+per-1)/per, 1)
	lo, hi := min((page-1)*per, len(all)), min(page*per, len(all))
	link := func(p int, rel string) string {
		return fmt.Sprintf(`<%s%s?page=%d&per_page=%d>; rel="%s"`, f.srv.URL, r.URL.Path, p, per, rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(page-1, "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	writeJSON(w, http.StatusOK, all[lo:hi])
}

func (f *fakeGitHub) createComment(w http.ResponseWriter, r *http.Request) {
	pr, _ := strconv.Atoi(r.PathValue("num"))
	var in struct{ Body string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Body == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
		return
	}
	if len(in.Body) > 65536 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed: body is too long (maximum is 65536 characters)"})
		return
	}
	f.mu.Lock()
	c := f.addComment(pr, f.bot, in.Body)
	f.mu.Unlock()
	writeJSON(w, http.StatusCreated, c)
}

func (f *fakeGitHub) find(id int64) (int, int) {
	for pr, cs := range f.comments {
		for i, c := range cs {
			if c.ID == id {
				return pr, i
			}
		}
	}
	return 0, -1
}

func (f *fakeGitHub) editComment(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	var in struct{ Body string }
	json.NewDecoder(r.Body).Decode(&in)
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, i := f.find(id)
	switch {
	case i < 0:
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
	case len(in.Body) > 65536:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
	default:
		f.comments[pr][i].Body = in.Body
		writeJSON(w, http.StatusOK, f.comments[pr][i])
	}
}

func (f *fakeGitHub) deleteComment(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	f.mu.Lock()
	defer f.mu.Unlock()
	pr, i := f.find(id)
	switch {
	case i < 0:
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
	default:
		f.comments[pr] = append(f.comments[pr][:i], f.comments[pr][i+1:]...)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (f *fakeGitHub) createCheckRun(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noChecks {
		writeJSON(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration", "documentation_url": "https://docs.github.com/rest/checks/runs#create-a-check-run"})
		return
	}
	var cr fakeCheckRun
	if err := json.NewDecoder(r.Body).Decode(&cr); err != nil || cr.Name == "" || cr.HeadSHA == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Invalid request"})
		return
	}
	if len(cr.Output.Summary) > 65535 {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Invalid request: summary too long"})
		return
	}
	cr.ID = len(f.checkRuns) + 1
	cr.HTMLURL = fmt.Sprintf("%s/runs/%d", f.srv.URL, cr.ID)
	f.checkRuns = append(f.checkRuns, cr)
	writeJSON(w, http.StatusCreated, cr)
}

func (f *fakeGitHub) listCheckRuns(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("check_name")
	out := []fakeCheckRun{}
	f.mu.Lock()
	for _, cr := range f.checkRuns {
		if cr.HeadSHA == r.PathValue("ref") && (name == "" || cr.Name == name) {
			out = append(out, cr)
		}
	}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"total_count": len(out), "check_runs": out})
}

// user answers GET /user: the token's identity, or the refusal an
// installation token gets.
func (f *fakeGitHub) user(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	refused, bot := f.userRefused, f.bot
	f.mu.Unlock()
	if refused {
		writeJSON(w, http.StatusForbidden, map[string]string{"message": "Resource not accessible by integration"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"login": bot, "type": "Bot"})
}

func (f *fakeGitHub) createStatus(w http.ResponseWriter, r *http.Request) {
	var st fakeStatus
	if err := json.NewDecoder(r.Body).Decode(&st); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Invalid request"})
		return
	}
	switch st.State {
	case "error", "failure", "pending", "success":
	default:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed: state"})
		return
	}
	st.SHA = r.PathValue("sha")
	f.mu.Lock()
	f.statuses = append(f.statuses, st)
	f.mu.Unlock()
	writeJSON(w, http.StatusCreated, st)
}

func (f *fakeGitHub) listPulls(w http.ResponseWriter, r *http.Request) {
	head := r.URL.Query().Get("head")
	type pr struct {
		Number int `json:"number"`
		Head   struct {
			SHA string `json:"sha"`
		} `json:"head"`
	}
	out := []pr{}
	f.mu.Lock()
	for _, p := range f.pulls {
		if p.Head == head {
			var x pr
			x.Number, x.Head.SHA = p.Number, p.SHA
			out = append(out, x)
		}
	}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// prComments returns a copy of a PR's comments.
func (f *fakeGitHub) prComments(pr int) []fakeComment {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeComment
	for _, c := range f.comments[pr] {
		out = append(out, *c)
	}
	return out
}

// count returns how many requests matched method and path suffix.
func (f *fakeGitHub) count(method, suffix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, r := range f.requests {
		if r.Method == method && strings.HasSuffix(r.Path, suffix) {
			n++
		}
	}
	return n
}

func (f *fakeGitHub) allRequests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

// fakeClock records sleeps and advances time by them, so backoff and
// rate-limit waits are asserted without taking real time.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.t = c.t.Add(d)
	return nil
}

func (c *fakeClock) slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}
