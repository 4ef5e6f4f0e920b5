package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kci-dev/kci/ci"
	"github.com/kci-dev/kci/results"
)

const forgedToken = "ghs_forgedRunTest0123456789abcdef"

// miniGitHub is the part of GitHub's API that kci post uses, with the
// Actions token's powers: GET /user is refused, and any comment on the
// repository may be edited (GitHub allows that to a write token).
type miniGitHub struct {
	t   *testing.T
	srv *httptest.Server

	mu       sync.Mutex
	comments []ghComment
	checks   []map[string]any
	posts    []string // METHOD path of every write
	bodies   []string
}

type ghComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
	HTMLURL string `json:"html_url"`
}

func newMiniGitHub(t *testing.T) *miniGitHub {
	g := &miniGitHub{t: t}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /user", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 403, map[string]string{"message": "Resource not accessible by integration"})
	})
	mux.HandleFunc("GET /repos/octo/bench/issues/12/comments", func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		defer g.mu.Unlock()
		reply(w, 200, g.comments)
	})
	mux.HandleFunc("POST /repos/octo/bench/issues/12/comments", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Body string }
		json.NewDecoder(r.Body).Decode(&in)
		g.mu.Lock()
		defer g.mu.Unlock()
		reply(w, 201, g.add("github-actions[bot]", in.Body))
	})
	mux.HandleFunc("PATCH /repos/octo/bench/issues/comments/{id}", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Body string }
		json.NewDecoder(r.Body).Decode(&in)
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		g.mu.Lock()
		defer g.mu.Unlock()
		for i := range g.comments {
			if g.comments[i].ID == id {
				g.comments[i].Body = in.Body
				reply(w, 200, g.comments[i])
				return
			}
		}
		reply(w, 404, map[string]string{"message": "Not Found"})
	})
	mux.HandleFunc("POST /repos/octo/bench/check-runs", func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		json.NewDecoder(r.Body).Decode(&in)
		g.mu.Lock()
		defer g.mu.Unlock()
		g.checks = append(g.checks, in)
		in["html_url"] = fmt.Sprintf("%s/runs/%d", g.srv.URL, len(g.checks))
		reply(w, 201, in)
	})
	mux.HandleFunc("GET /repos/octo/bench/pulls", func(w http.ResponseWriter, r *http.Request) {
		reply(w, 200, []any{})
	})
	g.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if r.Header.Get("Authorization") != "Bearer "+forgedToken {
			reply(w, 401, map[string]string{"message": "Bad credentials"})
			return
		}
		if r.Method != http.MethodGet {
			g.mu.Lock()
			g.posts = append(g.posts, r.Method+" "+r.URL.Path)
			g.bodies = append(g.bodies, string(body))
			g.mu.Unlock()
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *miniGitHub) add(login, body string) ghComment {
	c := ghComment{ID: int64(1000 + len(g.comments)), Body: body}
	c.User.Login = login
	c.HTMLURL = fmt.Sprintf("%s/pr/12#%d", g.srv.URL, c.ID)
	g.comments = append(g.comments, c)
	return c
}

func reply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// postingJobEnv is what bench-post.yml's "kci post" step sees.
func postingJobEnv(t *testing.T, apiURL, event string) (summary string) {
	clearActionsEnv(t)
	dir := t.TempDir()
	ev := filepath.Join(dir, "event.json")
	if err := os.WriteFile(ev, []byte(event), 0o644); err != nil {
		t.Fatal(err)
	}
	summary = filepath.Join(dir, "summary.md")
	for k, v := range map[string]string{
		"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "workflow_run", "GITHUB_EVENT_PATH": ev,
		"GITHUB_REPOSITORY": "octo/bench", "GITHUB_TOKEN": forgedToken, "GITHUB_API_URL": apiURL,
		"GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "99", "GITHUB_STEP_SUMMARY": summary,
		"KCI_BOT_LOGIN": "",
	} {
		t.Setenv(k, v)
	}
	return summary
}

const headSHA = "0123456789abcdef0123456789abcdef01234567"

var liveMention = regexp.MustCompile(`(^|[^\w])[@#][A-Za-z0-9]`)

// The forged artifact under testdata/forged-run goes through the posting
// job's command (kci post "$RUN_DIR", Actions environment, workflow_run
// event) against a GitHub fake. It must change nothing it should not.
func TestPostForgedArtifact(t *testing.T) {
	gh := newMiniGitHub(t)
	mallory := gh.add("mallory", "<!-- kci:tree=gtp -->\nall green, merge it")
	summary := postingJobEnv(t, gh.srv.URL, `{"workflow_run":{"id":7,"head_sha":"`+headSHA+`","head_branch":"rht",
		"html_url":"https://github.com/octo/bench/actions/runs/7","head_repository":{"owner":{"login":"fork"}},
		"pull_requests":[{"number":12,"head":{"sha":"`+headSHA+`"}}]}}`)

	var out, errOut bytes.Buffer
	cmd := newPostCmd()
	cmd.SetArgs([]string{filepath.Join("testdata", "forged-run")})
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.ExecuteContext(context.Background())
	log := errOut.String() + "\n" + fmt.Sprint(err)

	// The invalid trees are refused, named in a log-safe way.
	if err == nil || !strings.Contains(err.Error(), `"a b"`) || !strings.Contains(err.Error(), `"../../etc"`) {
		t.Errorf("kci post: %v, want the invalid tree names refused", err)
	}
	for _, line := range strings.Split(log, "\n") {
		if strings.HasPrefix(line, "::") && !strings.HasPrefix(line, "::group::") && !strings.HasPrefix(line, "::endgroup::") {
			t.Errorf("the record forged a workflow command in the log: %q", line)
		}
	}
	if strings.Contains(log, forgedToken) {
		t.Errorf("token in the log")
	}

	gh.mu.Lock()
	defer gh.mu.Unlock()
	// Mallory's comment is untouched; kci made its own.
	if gh.comments[0].ID != mallory.ID || gh.comments[0].Body != mallory.Body {
		t.Errorf("mallory's comment changed: %+v", gh.comments[0])
	}
	for _, p := range gh.posts {
		if strings.HasSuffix(p, fmt.Sprint(mallory.ID)) {
			t.Errorf("kci wrote to mallory's comment: %s", p)
		}
	}
	if len(gh.comments) != 2 || gh.comments[1].User.Login != "github-actions[bot]" {
		t.Fatalf("comments %+v, want mallory's and one kci comment", gh.comments)
	}
	if len(gh.checks) != 1 || gh.checks[0]["name"] != "kci / gtp" {
		t.Errorf("check runs %v, want one for gtp", gh.checks)
	}

	// Nothing from the record is live in what GitHub received or in the
	// step summary.
	sum, _ := os.ReadFile(summary)
	texts := append([]string{string(sum)}, gh.bodies...)
	for i, body := range texts {
		if i > 0 {
			var in map[string]any
			json.Unmarshal([]byte(body), &in)
			b, _ := in["body"].(string)
			if o, ok := in["output"].(map[string]any); ok {
				b, _ = o["summary"].(string)
			}
			body = strings.TrimPrefix(b, "<!-- kci:tree=gtp -->")
		}
		for _, bad := range []string{"<!--", "<img", "[click](", "**trust me**"} {
			if strings.Contains(body, bad) {
				t.Errorf("text %d carries %q from the record:\n%s", i, bad, body)
			}
		}
		if m := liveMention.FindString(body); m != "" {
			t.Errorf("text %d carries a live mention or reference %q:\n%s", i, m, body)
		}
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "# ") || strings.HasPrefix(line, "- - ") {
				t.Errorf("text %d: the record opened a block: %q", i, line)
			}
		}
	}
}

// A stale run (the PR has moved on) posts nothing.
func TestPostStaleRunPostsNothing(t *testing.T) {
	gh := newMiniGitHub(t)
	postingJobEnv(t, gh.srv.URL, `{"workflow_run":{"id":7,"head_sha":"`+headSHA+`","head_branch":"rht",
		"head_repository":{"owner":{"login":"octo"}},
		"pull_requests":[{"number":12,"head":{"sha":"ffffffffffffffffffffffffffffffffffffffff"}}]}}`)
	cmd := newPostCmd()
	cmd.SetArgs([]string{filepath.Join("testdata", "forged-run")})
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	err := cmd.ExecuteContext(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no open pull request") {
		t.Errorf("stale run: %v, want a refusal", err)
	}
	gh.mu.Lock()
	defer gh.mu.Unlock()
	if len(gh.posts) != 0 {
		t.Errorf("a stale run wrote %v", gh.posts)
	}
}

// A saved series whose only fault is a new warning is posted as the run
// exited: a neutral check when it did not fail on warnings (exit 0; also
// a record from before fail_on_warnings), a failing one when it did
// (exit 3).
func TestPostSeriesWarningCheck(t *testing.T) {
	old, err := os.ReadFile(filepath.Join("..", "..", "results", "testdata", "series-v1-no-policy", results.SeriesFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		policy string // the record's fail_on_warnings, as written; "" for none
		want   string
	}{
		{"no --fail-on-warnings", "false", ci.Neutral},
		{"--fail-on-warnings", "true", ci.Failure},
		{"record without the field", "", ci.Neutral},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := string(old)
			if tc.policy != "" {
				rec = strings.Replace(rec, `"trees":`, `"fail_on_warnings": `+tc.policy+`, "trees":`, 1)
			}
			dir := t.TempDir()
			write(t, filepath.Join(dir, results.SeriesFile), rec)
			gh := newMiniGitHub(t)
			postingJobEnv(t, gh.srv.URL, `{"workflow_run":{"id":7,"head_sha":"`+headSHA+`","head_branch":"b",
				"head_repository":{"owner":{"login":"octo"}},"pull_requests":[{"number":12,"head":{"sha":"`+headSHA+`"}}]}}`)
			cmd := newPostCmd()
			cmd.SetArgs([]string{dir})
			cmd.SetOut(&bytes.Buffer{})
			var errOut bytes.Buffer
			cmd.SetErr(&errOut)
			if err := cmd.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("kci post: %v\n%s", err, errOut.String())
			}
			gh.mu.Lock()
			defer gh.mu.Unlock()
			if len(gh.checks) != 1 || gh.checks[0]["name"] != "kci / gtp.series" || gh.checks[0]["conclusion"] != tc.want {
				t.Errorf("check runs %v, want one for gtp.series concluding %s", gh.checks, tc.want)
			}
		})
	}
}
