package ci

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/google/go-github/v60/github"
)

// markerPrefix starts every kci marker; a comment whose body starts with
// it is a candidate, and is kci's only if the bot wrote it.
const markerPrefix = "<!-- kci:tree="

// loginRE is a GitHub login, or an app's "[bot]" account.
var loginRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,38}(\[bot\])?$`)

// comments is what kci knows of one pull request's comments: those that
// carry a kci marker and were written by the bot, oldest first. One
// snapshot serves every tree of a PostAll (one listing, not one per
// tree), and is updated by the edits and creations made through it.
type comments struct {
	listed bool
	mine   []*github.IssueComment
}

func (cc *comments) withMarker(marker string) []*github.IssueComment {
	var out []*github.IssueComment
	for _, c := range cc.mine {
		if hasMarker(c, marker) {
			out = append(out, c)
		}
	}
	return out
}

func (cc *comments) remove(id int64) {
	for i, c := range cc.mine {
		if c.GetID() == id {
			cc.mine = append(cc.mine[:i], cc.mine[i+1:]...)
			return
		}
	}
}

// hasMarker: the marker must open the body. A quoted marker ("> <!--")
// does not count.
func hasMarker(c *github.IssueComment, marker string) bool {
	return strings.HasPrefix(strings.TrimSpace(c.GetBody()), marker)
}

// upsertComment edits the bot's comment holding the tree's marker, or
// creates it. Comments by anyone else are never touched, whatever they
// carry: anyone can paste a marker, and a write token could edit theirs.
func (g *GitHub) upsertComment(ctx context.Context, t Target, r Report, cc *comments) (string, bool, error) {
	body := CommentBody(r)
	marker := Marker(r.Tree)
	if err := g.listMine(ctx, t, cc, false); err != nil {
		return "", false, err
	}
	for _, c := range cc.withMarker(marker) {
		u, err := g.keep(ctx, t, c, body, cc)
		if errors.Is(err, errGone) {
			continue
		}
		if err != nil {
			return "", false, err
		}
		return u, false, nil
	}
	var made *github.IssueComment
	stored := func() (bool, error) {
		if err := g.listMine(ctx, t, cc, true); err != nil {
			return false, err
		}
		if found := cc.withMarker(marker); len(found) > 0 {
			made = found[0]
			return true, nil
		}
		return false, nil
	}
	create := func() error {
		c, _, err := g.client.Issues.CreateComment(ctx, t.Owner, t.Repo, t.PR, &github.IssueComment{Body: &body})
		if err != nil {
			return err
		}
		made = c
		cc.mine = append(cc.mine, c)
		return nil
	}
	if err := g.createOnce(ctx, "post comment", t.String(), create, stored); err != nil {
		return "", false, err
	}
	if made.GetBody() != body { // found on re-listing, written by another post
		u, err := g.keep(ctx, t, made, body, cc)
		return u, false, err
	}
	return made.GetHTMLURL(), true, nil
}

// errGone: the comment was deleted between listing and editing.
var errGone = errors.New("comment gone")

// keep makes c (the bot's marker comment) hold body, and deletes later
// copies of it.
func (g *GitHub) keep(ctx context.Context, t Target, c *github.IssueComment, body string, cc *comments) (string, error) {
	u := c.GetHTMLURL()
	if c.GetBody() != body {
		edited, _, err := g.client.Issues.EditComment(ctx, t.Owner, t.Repo, c.GetID(), &github.IssueComment{Body: &body})
		if err != nil {
			ae := apiError(g.token, "edit comment", fmt.Sprintf("%s (comment %d)", t, c.GetID()), err)
			var e *APIError
			if errors.As(ae, &e) && e.Status == http.StatusNotFound {
				cc.remove(c.GetID())
				return "", errGone
			}
			return "", ae
		}
		c.Body = &body
		u = edited.GetHTMLURL()
	}
	g.dropDuplicates(ctx, t, c, cc)
	return u, nil
}

// listMine lists every page of the PR's comments (once per snapshot
// unless fresh) and keeps the bot's marker comments. The bot's login is
// looked up only when a marker comment exists at all.
func (g *GitHub) listMine(ctx context.Context, t Target, cc *comments, fresh bool) error {
	if cc.listed && !fresh {
		return nil
	}
	var candidates []*github.IssueComment
	opts := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for page := 0; ; page++ {
		if page > 1000 { // 100k comments: a broken Link header, not a PR
			return fmt.Errorf("list comments on %s: pagination did not end", t)
		}
		cs, resp, err := g.client.Issues.ListComments(ctx, t.Owner, t.Repo, t.PR, opts)
		if err != nil {
			return apiError(g.token, "list comments", t.String(), err)
		}
		for _, c := range cs {
			if hasMarker(c, markerPrefix) {
				candidates = append(candidates, c)
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	cc.mine = nil
	if len(candidates) > 0 {
		login, err := g.botLogin(ctx)
		if err != nil {
			return err
		}
		for _, c := range candidates {
			if strings.EqualFold(c.GetUser().GetLogin(), login) {
				cc.mine = append(cc.mine, c)
			}
		}
	}
	cc.listed = true
	return nil
}

// botLogin is the account whose comments are kci's: the configured one,
// else the token's own user. Installation tokens (the Actions
// GITHUB_TOKEN) may not ask GET /user; then the default login, if set,
// is taken.
func (g *GitHub) botLogin(ctx context.Context) (string, error) {
	g.bot.mu.Lock()
	defer g.bot.mu.Unlock()
	if g.bot.login != "" {
		return g.bot.login, nil
	}
	u, _, err := g.client.Users.Get(ctx, "")
	if err != nil {
		ae := apiError(g.token, "look up the token's user", "GET /user", err)
		var e *APIError
		if errors.As(ae, &e) && (e.Status == http.StatusForbidden || e.Status == http.StatusNotFound) && g.bot.fallback != "" {
			fmt.Fprintf(g.log, "ci: %v; taking comments by %s as kci's\n", ae, g.bot.fallback)
			g.bot.login = g.bot.fallback
			return g.bot.login, nil
		}
		return "", fmt.Errorf("cannot tell kci's comments from others': %w (name the bot account: kci post --bot-login LOGIN)", ae)
	}
	if !loginRE.MatchString(u.GetLogin()) {
		return "", fmt.Errorf("look up the token's user: GitHub answered login %q", u.GetLogin())
	}
	g.bot.login = u.GetLogin()
	return g.bot.login, nil
}

// dropDuplicates deletes the bot's later copies of kept. They appear when
// two posts raced; deleting keeps "one comment per tree" true. Failures
// are logged: duplicates are untidy, not wrong.
func (g *GitHub) dropDuplicates(ctx context.Context, t Target, kept *github.IssueComment, cc *comments) {
	marker := markerOf(kept)
	for _, c := range cc.withMarker(marker) {
		if c.GetID() == kept.GetID() {
			continue
		}
		if _, err := g.client.Issues.DeleteComment(ctx, t.Owner, t.Repo, c.GetID()); err != nil {
			fmt.Fprintf(g.log, "ci: %v\n", apiError(g.token, "delete duplicate comment", fmt.Sprintf("%s (comment %d)", t, c.GetID()), err))
			continue
		}
		cc.remove(c.GetID())
	}
}

// markerOf is the marker line that opens c.
func markerOf(c *github.IssueComment) string {
	first, _, _ := strings.Cut(strings.TrimSpace(c.GetBody()), "\n")
	return first
}

// createOnce makes a POST that must not happen twice. The transport never
// retries a POST on a 5xx or a dropped connection, since GitHub may have
// stored it; here, after such a failure, stored asks GitHub whether it
// did before create is tried again.
func (g *GitHub) createOnce(ctx context.Context, op, resource string, create func() error, stored func() (bool, error)) error {
	for attempt := 1; ; attempt++ {
		err := create()
		if err == nil {
			return nil
		}
		ae := apiError(g.token, op, resource, err)
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w", ae, ctx.Err())
		}
		var e *APIError
		unknown := errors.As(ae, &e) && (e.Status == 0 || e.Status >= 500)
		if !unknown || attempt >= g.policy.attempts {
			return ae
		}
		wait := g.policy.backoffFor(attempt)
		fmt.Fprintf(g.log, "ci: %v; checking whether GitHub stored it before trying again (%d/%d) in %s\n", ae, attempt+1, g.policy.attempts, wait)
		if err := g.sleep(ctx, wait); err != nil {
			return fmt.Errorf("%w: %w", ae, err)
		}
		ok, err := stored()
		if err != nil {
			return fmt.Errorf("%w; then: %w", ae, err)
		}
		if ok {
			return nil
		}
	}
}
