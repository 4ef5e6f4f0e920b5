package ci

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
)

// DryRun prints what GitHub would receive and sends nothing: it holds no
// client and no token.
type DryRun struct {
	W io.Writer
	// Actions: W is a GitHub Actions log, where a line of the report
	// starting with "::" would be run as a workflow command; the body is
	// printed between ::stop-commands:: and its resume token.
	Actions bool
}

// Post prints the comment body exactly as it would be posted and the check
// run's name, conclusion, title and summary.
func (d DryRun) Post(_ context.Context, t Target, r Report) (Result, error) {
	if err := r.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Tree: r.Tree, DryRun: true}
	if t.PR != 0 {
		body := CommentBody(r)
		fmt.Fprintf(d.W, "--- dry run: comment on %s, tree %s (%d bytes; creates the comment marked %s or edits it)\n", t, r.Tree, len(body), Marker(r.Tree))
		if err := d.printBody(body); err != nil {
			return res, err
		}
	}
	if t.SHA != "" {
		fmt.Fprintf(d.W, "--- dry run: check run %q on %s: conclusion %s, title %q (commit status fallback: %s, %q)\n",
			CheckName(r.Tree), t.commit(), r.Conclusion, CheckTitle(r), StatusState(r.Conclusion), StatusDescription(r))
		summary := CheckSummary(r)
		fmt.Fprintf(d.W, "--- dry run: check run summary (%d bytes):\n", len(summary))
		if err := d.printBody(summary); err != nil {
			return res, err
		}
		res.Check = "check run"
	}
	if t.PR == 0 && t.SHA == "" {
		fmt.Fprintf(d.W, "--- dry run: tree %s: no pull request and no commit given, nothing would be posted\n", r.Tree)
	}
	return res, nil
}

// printBody writes the comment body, fenced off from the Actions runner's
// command parser when in Actions.
func (d DryRun) printBody(body string) error {
	if !d.Actions {
		_, err := fmt.Fprintf(d.W, "%s\n", body)
		return err
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		return fmt.Errorf("dry run: %w", err)
	}
	resume := hex.EncodeToString(tok)
	_, err := fmt.Fprintf(d.W, "::stop-commands::%s\n%s\n::%s::\n", resume, body, resume)
	return err
}
