package ci

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-github/v60/github"
)

// APIError is a GitHub API call that failed after retries. It is always
// the infrastructure's (token, permissions, GitHub) fault, never the
// patch's.
type APIError struct {
	Op         string        // what was refused: "post comment", "create check run", ...
	Resource   string        // on what: "owner/repo#12", "owner/repo@abc1234"
	Status     int           // HTTP status; 0 when no response came back
	Message    string        // GitHub's message, or the transport error
	RetryAfter time.Duration // for rate limits: how long GitHub asked to wait
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s: ", e.Op, e.Resource)
	if e.Status != 0 {
		fmt.Fprintf(&b, "%d %s", e.Status, strings.ToLower(http.StatusText(e.Status)))
		if e.Message != "" {
			b.WriteString(": ")
		}
	}
	b.WriteString(e.Message)
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (retry after %s)", e.RetryAfter.Round(time.Second))
	}
	if h := e.hint(); h != "" {
		b.WriteString(" (" + h + ")")
	}
	return b.String()
}

// Refused reports an authentication or authorisation failure, or a missing
// resource: retrying will not help, the configuration must change.
func (e *APIError) Refused() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || e.Status == http.StatusNotFound
}

// hint says what usually causes the refusal, since GitHub's messages do not.
func (e *APIError) hint() string {
	switch {
	case e.Status == http.StatusUnauthorized:
		return "the token is missing, invalid or expired"
	case e.Status == http.StatusForbidden && strings.Contains(e.Message, "not accessible by integration"):
		return "the workflow token lacks a permission: pull_request runs from forks get a read-only token, post from a workflow_run job with pull-requests: write and checks: write"
	case e.Status == http.StatusNotFound:
		return "wrong repository or number, or the token cannot see the repository"
	}
	return ""
}

// apiError turns what go-github returned into an APIError naming the
// operation, with every trace of the token removed.
func apiError(tok Token, op, resource string, err error) error {
	if err == nil {
		return nil
	}
	e := &APIError{Op: op, Resource: resource}
	var (
		er  *github.ErrorResponse
		rl  *github.RateLimitError
		arl *github.AbuseRateLimitError
	)
	switch {
	case errors.As(err, &rl):
		e.Message = rl.Message
		if rl.Response != nil {
			e.Status = rl.Response.StatusCode
		}
		if !rl.Rate.Reset.IsZero() {
			e.Message += fmt.Sprintf(" (limit resets at %s)", rl.Rate.Reset.UTC().Format(time.RFC3339))
		}
	case errors.As(err, &arl):
		e.Message = arl.Message
		if arl.Response != nil {
			e.Status = arl.Response.StatusCode
		}
		if arl.RetryAfter != nil {
			e.RetryAfter = *arl.RetryAfter
		}
	case errors.As(err, &er):
		e.Message = er.Message
		if er.Response != nil {
			e.Status = er.Response.StatusCode
		}
		for _, d := range er.Errors {
			if d.Message != "" {
				e.Message += "; " + d.Message
			} else if d.Code != "" {
				e.Message += fmt.Sprintf("; %s %s.%s", d.Code, d.Resource, d.Field)
			}
		}
	default:
		e.Message = err.Error()
	}
	e.Message = tok.Redact(e.Message)
	e.Op, e.Resource = tok.Redact(e.Op), tok.Redact(e.Resource)
	return e
}
