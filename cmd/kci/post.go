package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kci-dev/kci/results/render"
	"github.com/kci-dev/kci/results/verdict"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/ci"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/results"
)

func init() { commands = append(commands, newPostCmd) }

// postOptions override what the GitHub Actions environment says.
type postOptions struct {
	repo   string // OWNER/NAME; default GITHUB_REPOSITORY
	pr     int    // default: the event's pull request
	sha    string // default: the event's head commit
	dryRun bool
	// reportURL is where the run's report.html is served (an artifact's
	// URL); the comment links it. Default: the Actions run page, whose
	// artifacts hold it.
	reportURL string
	// botLogin is the account whose marker comments are kci's; default
	// $KCI_BOT_LOGIN, else the token's user, else (in Actions, where the
	// GITHUB_TOKEN may not ask) github-actions[bot].
	botLogin string
}

func newPostCmd() *cobra.Command {
	var o postOptions
	cmd := &cobra.Command{
		Use:   "post [--pr N] [--repo OWNER/NAME] [--sha SHA] [--dry-run] RUNDIR",
		Short: "Post a saved run's report to a GitHub pull request: one sticky comment and one check run per tree",
		Long: `Post a saved run's report to a GitHub pull request: one comment per tree,
found by a hidden marker and edited on every post, and a check run on the
head commit (a commit status where check runs are refused).

In GitHub Actions the repository, pull request and commit come from the
environment and the event payload (pull_request or workflow_run); the token
only ever from GITHUB_TOKEN. --dry-run prints what would be posted and sends
nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			// The token, the repository and the run, before anything is sent.
			if err := checkPostEnv(o); err != nil {
				return err
			}
			if _, err := os.Stat(filepath.Join(args[0], results.SeriesFile)); err == nil {
				s, err := loadSeries(args[0])
				if err != nil {
					return notRunDir("post", args[0], err)
				}
				return postSeries(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), s, o)
			}
			run, err := results.Load(args[0])
			if err != nil {
				return notRunDir("post", args[0], err)
			}
			if err := checkTreeCount(run); err != nil {
				return err
			}
			return postRun(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), verdict.AnalyzeRun(run), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.repo, "repo", "", "repository OWNER/NAME (default $GITHUB_REPOSITORY)")
	f.IntVar(&o.pr, "pr", 0, "pull request number (default: from the Actions event)")
	f.StringVar(&o.sha, "sha", "", "commit for the check run (default: the pull request's head from the Actions event)")
	f.BoolVar(&o.dryRun, "dry-run", false, "print the comment and check run instead of posting")
	f.StringVar(&o.reportURL, "report-url", "", "http(s) URL where the run's report.html is served, e.g. its artifact's; the comment links it (default: the Actions run page, whose artifacts hold it)")
	f.StringVar(&o.botLogin, "bot-login", os.Getenv("KCI_BOT_LOGIN"), "account whose marker comments are kci's, e.g. my-app[bot] (default $KCI_BOT_LOGIN, else the token's user)")
	return cmd
}

// checkTreeCount refuses a record of more trees than kci posts: it comes
// from the pull request's job, and bounds the work it can cause before
// anything analyses or renders it.
func checkTreeCount(run *results.Run) error {
	if n := len(run.TreeNames()); n > ci.MaxTrees {
		return fmt.Errorf("post: the run has %d trees, more than %d: refusing to post (the run record is broken or forged)", n, ci.MaxTrees)
	}
	return nil
}

// postRun posts every tree of an analysed run to GitHub and appends the
// report to the Actions step summary. kci post and kci test --post both
// end here.
func postRun(ctx context.Context, out, errOut io.Writer, a *verdict.Analysis, o postOptions) error {
	env, err := ci.FromEnv()
	if err != nil {
		return err
	}
	if err := checkTreeCount(a.Run); err != nil {
		return err
	}
	return postReports(ctx, out, errOut, env, runReports(a, env.RunURL, o.reportURL), render.MarkdownRun(a), o)
}

// postSeries posts a kci series run: one comment and check per tree,
// marked "<tree>.series" so that they never replace kci test's.
func postSeries(ctx context.Context, out, errOut io.Writer, s *results.Series, o postOptions) error {
	env, err := ci.FromEnv()
	if err != nil {
		return err
	}
	if n := len(s.Trees); n > ci.MaxTrees {
		return fmt.Errorf("post: the series run has %d trees, more than %d: refusing to post (the record is broken or forged)", n, ci.MaxTrees)
	}
	var reports []ci.Report
	for _, t := range s.Trees {
		c := verdict.SeriesConclude(s, t.Tree)
		reports = append(reports, ci.Report{
			Tree: t.Tree + ".series", Markdown: render.SeriesTreeMarkdown(s, t.Tree),
			Conclusion: c.State, Title: c.Title, Summary: c.Summary, DetailsURL: env.RunURL,
		})
	}
	return postReports(ctx, out, errOut, env, reports, render.SeriesMarkdown(s), o)
}

// postReports sends reports to the pull request (or prints them with
// --dry-run) and appends summary to the Actions step summary.
func postReports(ctx context.Context, out, errOut io.Writer, env ci.Env, reports []ci.Report, summary string, o postOptions) error {
	if len(reports) == 0 {
		return errors.New("post: the run has no trees to report")
	}
	if err := ci.AppendStepSummary(env.StepSummary, summary); err != nil {
		return err
	}
	t, err := postTarget(env, o)
	if err != nil {
		return err
	}

	var poster ci.Poster = ci.DryRun{W: out, Actions: env.Actions}
	if !o.dryRun {
		opts := []ci.Option{ci.WithLog(errOut)}
		if env.APIURL != "" {
			opts = append(opts, ci.WithAPIURL(env.APIURL))
		}
		if o.botLogin != "" {
			opts = append(opts, ci.WithBotLogin(o.botLogin))
		}
		if env.Actions {
			// The Actions token's comments are by github-actions[bot], and
			// it may not ask GET /user who it is.
			opts = append(opts, ci.WithDefaultBotLogin("github-actions[bot]"))
		}
		gh, err := ci.NewGitHub(env.Token, opts...)
		if err != nil {
			return err
		}
		// A workflow_run from a fork names no pull request: find it from
		// the event's head repository, branch and commit.
		if t.PR == 0 && o.pr == 0 && env.HeadOwner != "" && env.HeadBranch != "" && t.SHA != "" {
			if t.PR, err = gh.ResolvePR(ctx, t.Owner, t.Repo, env.HeadOwner, env.HeadBranch, t.SHA); err != nil {
				return err
			}
		}
		poster = gh
	}
	if t.PR == 0 && t.SHA == "" {
		return errors.New("post: nothing to post to: give --pr (and --sha), or run in a pull_request or workflow_run workflow")
	}
	if t.SHA == "" {
		fmt.Fprintf(errOut, "kci: no commit (--sha, or the event's head): no check run, only the comment on %s\n", t)
	}

	end := ci.NewGroups(errOut, env.Actions).Start(fmt.Sprintf("kci post to %s", t))
	res, err := ci.PostAll(ctx, poster, t, reports)
	end()
	for _, r := range res {
		if r.DryRun {
			fmt.Fprintf(errOut, "kci: %s: dry run, nothing posted\n", r.Tree)
			continue
		}
		line := "kci: " + r.Tree + ":"
		if r.CommentURL != "" {
			verb := "updated"
			if r.Created {
				verb = "created"
			}
			line += fmt.Sprintf(" comment %s (%s)", r.CommentURL, verb)
		}
		if r.Check != "" {
			line += " and " + r.Check
		}
		fmt.Fprintln(errOut, line)
	}
	return err
}

// runReports turns each tree of an analysed run into what ci posts: the
// comment leads with the tree's answer and a link to report.html
// (reportURL, else the run page that holds it as an artifact); the check
// run is the tree's conclusion.
func runReports(a *verdict.Analysis, detailsURL, reportURL string) []ci.Report {
	if reportURL == "" {
		reportURL = detailsURL
	}
	var out []ci.Report
	for _, tr := range a.Trees {
		c := tr.Conclusion
		out = append(out, ci.Report{
			Tree:       tr.Tree,
			Markdown:   render.MarkdownComment(a, tr.Tree, reportURL),
			Conclusion: c.State,
			Title:      c.Title,
			Summary:    c.Summary,
			DetailsURL: detailsURL,
		})
	}
	return out
}

// postTarget combines flags with the Actions environment; flags win.
func postTarget(env ci.Env, o postOptions) (ci.Target, error) {
	repo := o.repo
	if repo == "" {
		repo = env.Repository
	}
	if repo == "" {
		return ci.Target{}, errors.New("post: no repository: give --repo OWNER/NAME or set GITHUB_REPOSITORY")
	}
	owner, name, err := ci.ParseRepo(repo)
	if err != nil {
		return ci.Target{}, fmt.Errorf("post: %w", err)
	}
	t := ci.Target{Owner: owner, Repo: name, PR: env.PR, SHA: env.HeadSHA}
	if o.pr != 0 {
		t.PR = o.pr
		// The event's commit belongs to the event's PR, not to another one.
		if o.pr != env.PR {
			t.SHA = ""
		}
	}
	if o.sha != "" {
		t.SHA = o.sha
	}
	return t, nil
}

var fullSHA = regexp.MustCompile(`^[0-9a-f]{40}$`)

// validate refuses flags no post could use, before anything is read.
func (o postOptions) validate() error {
	if o.pr < 0 {
		return job.Usagef("post: --pr %d: a pull request number is positive", o.pr)
	}
	if o.sha != "" && !fullSHA.MatchString(o.sha) {
		return job.Usagef("post: --sha %q: want the full 40-hex-digit commit id (check runs take no abbreviation)", o.sha)
	}
	if o.reportURL != "" {
		u, err := url.Parse(o.reportURL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.ContainsAny(o.reportURL, " \t\n<>") {
			return job.Usagef("post: --report-url %q: want an http(s) URL", o.reportURL)
		}
	}
	return nil
}
