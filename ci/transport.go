package ci

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryPolicy bounds how hard the transport tries.
type retryPolicy struct {
	attempts int           // total tries per request, ≥ 1
	backoff  time.Duration // first wait after a 5xx or network error; doubles
	maxDelay time.Duration // cap on one backoff step
	maxWait  time.Duration // a rate limit asking for longer than this fails instead
	// secondaryWait is GitHub's advice for a secondary rate limit that
	// names no time: wait at least a minute.
	secondaryWait  time.Duration
	attemptTimeout time.Duration // one attempt: connect, send, read the answer
	budget         time.Duration // the whole request: attempts and waits
}

func defaultPolicy() retryPolicy {
	return retryPolicy{
		attempts: 5, backoff: time.Second, maxDelay: 30 * time.Second, maxWait: 2 * time.Minute, secondaryWait: time.Minute,
		attemptTimeout: time.Minute, budget: 10 * time.Minute,
	}
}

// backoffFor is the wait after failed attempt n (1-based): backoff
// doubling, capped at maxDelay.
func (p retryPolicy) backoffFor(n int) time.Duration {
	d := p.backoff << (n - 1)
	if d > p.maxDelay || d <= 0 {
		d = p.maxDelay
	}
	return d
}

// transport authenticates requests to the API host and retries what GitHub
// says is worth retrying. It sits below go-github, so the client only ever
// sees final answers and its own rate-limit bookkeeping (real clock) is
// not involved in retries.
type transport struct {
	base   http.RoundTripper
	token  Token
	host   string // the API host: the token is never sent anywhere else
	policy retryPolicy
	now    func() time.Time
	sleep  func(context.Context, time.Duration) error
	logf   func(format string, args ...any)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	start := t.now()
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, t.attemptTimeout())
		r := req.Clone(actx)
		if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
			body, err := req.GetBody()
			if err != nil {
				cancel()
				return nil, fmt.Errorf("rewind request body for retry: %w", err)
			}
			r.Body = body
		}
		if !t.token.Empty() && r.URL.Host == t.host {
			r.Header.Set("Authorization", "Bearer "+t.token.value())
		}
		resp, err := t.base.RoundTrip(r)
		if err != nil || resp == nil {
			cancel()
		} else {
			// The attempt's deadline covers reading the body too.
			resp.Body = cancelOnClose{resp.Body, cancel}
		}
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		wait, why, retry := t.classify(resp, err, attempt)
		replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
		if !retry || attempt >= t.policy.attempts || !replayable {
			return resp, err
		}
		// A POST that failed with a 5xx or a lost connection may have been
		// stored: repeating it could make a second comment. The caller
		// looks before creating again (GitHub.createOnce). A rate-limit
		// refusal, or a connection never made, did nothing: retry those.
		if !idempotent(req.Method) && !rejected(resp, err) {
			return resp, err
		}
		if wait > t.policy.maxWait {
			t.logf("ci: %s %s: %s; not waiting %s (limit %s)", req.Method, req.URL.Path, why, wait.Round(time.Second), t.policy.maxWait)
			return resp, err
		}
		if spent := t.now().Sub(start); t.policy.budget > 0 && spent+wait > t.policy.budget {
			t.logf("ci: %s %s: %s; not waiting %s (%s of the %s budget spent)", req.Method, req.URL.Path, why, wait.Round(time.Second), spent.Round(time.Second), t.policy.budget)
			return resp, err
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			_ = resp.Body.Close()
		}
		t.logf("ci: %s %s: %s; retry %d/%d in %s", req.Method, req.URL.Path, why, attempt+1, t.policy.attempts, wait.Round(time.Millisecond))
		if err := t.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

func (t *transport) attemptTimeout() time.Duration {
	if t.policy.attemptTimeout > 0 {
		return t.policy.attemptTimeout
	}
	return defaultPolicy().attemptTimeout
}

// cancelOnClose ends an attempt's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// idempotent methods may be repeated blindly. PATCH is here because kci
// only ever PATCHes a whole comment body: twice is the same as once.
func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete, http.MethodPatch:
		return true
	}
	return false
}

// rejected reports an answer that says the request was not acted on: a
// rate limit, or a connection that was never established.
func rejected(resp *http.Response, err error) bool {
	if err != nil {
		var oe *net.OpError
		return errors.As(err, &oe) && oe.Op == "dial"
	}
	return resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusForbidden
}

// classify decides whether a response or error deserves another attempt
// and how long to wait first.
func (t *transport) classify(resp *http.Response, err error, attempt int) (time.Duration, string, bool) {
	backoff := t.policy.backoffFor(attempt)
	if err != nil {
		var te interface{ Timeout() bool }
		if (errors.As(err, &te) && te.Timeout()) || isTransient(err) {
			return backoff, "network error: " + err.Error(), true
		}
		return 0, "", false
	}
	code := resp.StatusCode
	switch {
	case code >= 500 && code <= 599:
		if d, ok := t.retryAfter(resp); ok {
			return d, resp.Status, true
		}
		return backoff, resp.Status, true
	case code == http.StatusTooManyRequests || code == http.StatusForbidden:
		if d, ok := t.retryAfter(resp); ok {
			return d, "rate limited (" + resp.Status + ")", true
		}
		if resp.Header.Get("X-RateLimit-Remaining") == "0" {
			if d, ok := t.resetIn(resp); ok {
				return d, "rate limit exhausted (" + resp.Status + ")", true
			}
		}
		if code == http.StatusTooManyRequests || isSecondaryLimit(resp) {
			return t.policy.secondaryWait, "secondary rate limit (" + resp.Status + ")", true
		}
	}
	return 0, "", false
}

// isTransient recognises connection failures worth one more try.
func isTransient(err error) bool {
	s := err.Error()
	for _, m := range []string{"connection reset", "connection refused", "EOF", "broken pipe"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// retryAfter reads Retry-After (seconds or an HTTP date).
func (t *transport) retryAfter(resp *http.Response) (time.Duration, bool) {
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if when, err := http.ParseTime(v); err == nil {
		return max(when.Sub(t.now()), 0), true
	}
	return 0, false
}

// resetIn reads X-RateLimit-Reset (epoch seconds), plus a second of slack
// for clock skew.
func (t *transport) resetIn(resp *http.Response) (time.Duration, bool) {
	sec, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
	if err != nil {
		return 0, false
	}
	return max(time.Unix(sec, 0).Sub(t.now()), 0) + time.Second, true
}

// isSecondaryLimit tells a secondary rate limit from a real 403 by the
// body, and puts the body back for go-github to parse.
func isSecondaryLimit(resp *http.Response) bool {
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(b), resp.Body), resp.Body}
	if err != nil {
		return false
	}
	s := strings.ToLower(string(b))
	return strings.Contains(s, "secondary rate limit") || strings.Contains(s, "abuse")
}
