package ci

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"gopkg.in/yaml.v3"
)

// The repository root, from this package's directory.
const repoRoot = ".."

// workflowFile is one workflow to check: a file of .github/workflows or a
// YAML example from the docs.
type workflowFile struct {
	name    string
	content []byte
}

func workflowFiles(t *testing.T) []workflowFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot, ".github", "workflows", "*.y*ml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no workflows found: %v", err)
	}
	var out []workflowFile
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, workflowFile{p, b})
	}
	return out
}

var fencedYAML = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// docWorkflows are the adoption examples of docs/github-actions.md: they
// are what users copy, so they are linted and checked like real files.
func docWorkflows(t *testing.T) []workflowFile {
	t.Helper()
	p := filepath.Join(repoRoot, "docs", "github-actions.md")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var out []workflowFile
	for i, m := range fencedYAML.FindAllSubmatch(b, -1) {
		out = append(out, workflowFile{fmt.Sprintf("%s#example%d", p, i+1), m[1]})
	}
	if len(out) < 2 {
		t.Fatalf("%s: %d YAML examples, want the two workflows", p, len(out))
	}
	return out
}

func newLinter(t *testing.T, out *bytes.Buffer) *actionlint.Linter {
	t.Helper()
	opts := &actionlint.LinterOptions{Oneline: true}
	// shellcheck is optional; when present it checks every run: script.
	if p, err := exec.LookPath("shellcheck"); err == nil {
		opts.Shellcheck = p
	} else {
		t.Log("shellcheck not installed: run: scripts are not shell-checked")
	}
	l, err := actionlint.NewLinter(out, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestActionlint(t *testing.T) {
	// The workflows use setup-kci from kci's checkout at ./.kci; a project
	// root where .kci is this repository lets actionlint check the inputs
	// they pass against the action's metadata.
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tmp, ".github", "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(root, filepath.Join(tmp, ".kci")); err != nil {
		t.Fatal(err)
	}
	proj, err := actionlint.NewProject(tmp)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	l := newLinter(t, &out)
	files := append(workflowFiles(t), docWorkflows(t)...)
	files = append(files, compositeAsWorkflow(t))
	for _, f := range files {
		errs, err := l.Lint(f.name, f.content, proj)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		for _, e := range errs {
			t.Errorf("%s:%d:%d: %s [%s]", f.name, e.Line, e.Column, e.Message, e.Kind)
		}
	}
}

// TestActionlintCatchesMistakes guards against a linter that checks
// nothing: a broken workflow must produce errors.
func TestActionlintCatchesMistakes(t *testing.T) {
	bad := []byte("on: pull_request\npermissions:\n  contents: raed\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.event.pull_request.title }}\n      - run: cd $DIR\n")
	var out bytes.Buffer
	errs, err := newLinter(t, &out).Lint("bad.yml", bad, nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, e := range errs {
		kinds[e.Kind] = true
	}
	if !kinds["permissions"] || !kinds["expression"] {
		t.Errorf("actionlint missed a bad permission or an injectable expression: %v", errs)
	}
	if _, err := exec.LookPath("shellcheck"); err == nil && !kinds["shellcheck"] {
		t.Errorf("shellcheck is installed but did not flag an unquoted cd $DIR: %v", errs)
	}
}

// compositeAsWorkflow turns the composite action into a reusable workflow
// with the same inputs and steps, so actionlint (which checks a local
// action's metadata but not its steps) checks the steps' expressions,
// action inputs and shell scripts too.
func compositeAsWorkflow(t *testing.T) workflowFile {
	t.Helper()
	p := filepath.Join(repoRoot, ".github", "actions", "setup-kci", "action.yml")
	var a struct {
		Name   string
		Inputs map[string]struct {
			Description string
			Default     string
		}
		Runs struct {
			Using string
			Steps []map[string]any
		}
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	if a.Runs.Using != "composite" || len(a.Runs.Steps) == 0 || a.Name == "" {
		t.Fatalf("%s: not a composite action with steps", p)
	}
	inputs := map[string]any{}
	for k, v := range a.Inputs {
		inputs[k] = map[string]any{"type": "string", "default": v.Default, "description": v.Description}
	}
	wf := map[string]any{
		"name":        a.Name,
		"on":          map[string]any{"workflow_call": map[string]any{"inputs": inputs}},
		"permissions": map[string]any{"contents": "read"},
		"jobs": map[string]any{"action": map[string]any{
			"runs-on": "ubuntu-latest",
			"steps":   a.Runs.Steps,
		}},
	}
	out, err := yaml.Marshal(wf)
	if err != nil {
		t.Fatal(err)
	}
	// github.action_path exists only in actions; the workflow equivalent
	// keeps the expressions type-checkable.
	out = bytes.ReplaceAll(out, []byte("github.action_path"), []byte("github.workspace"))
	return workflowFile{p + " (as a workflow)", out}
}

// The parts of a workflow the security checks read.
type wfDoc struct {
	On          yaml.Node      `yaml:"on"`
	Permissions yaml.Node      `yaml:"permissions"`
	Jobs        map[string]job `yaml:"jobs"`
}

type job struct {
	Permissions yaml.Node      `yaml:"permissions"`
	Uses        string         `yaml:"uses"`
	With        map[string]any `yaml:"with"`
	Secrets     yaml.Node      `yaml:"secrets"`
	Steps       []step         `yaml:"steps"`
}

type step struct {
	Name string         `yaml:"name"`
	Uses string         `yaml:"uses"`
	Run  string         `yaml:"run"`
	With map[string]any `yaml:"with"`
	Env  map[string]any `yaml:"env"`
}

func parseWorkflow(t *testing.T, f workflowFile) wfDoc {
	t.Helper()
	var w wfDoc
	if err := yaml.Unmarshal(f.content, &w); err != nil {
		t.Fatalf("%s: %v", f.name, err)
	}
	if len(w.Jobs) == 0 {
		t.Fatalf("%s: no jobs", f.name)
	}
	return w
}

// triggers lists the workflow's events.
func (w wfDoc) triggers() []string {
	switch w.On.Kind {
	case yaml.ScalarNode:
		return []string{w.On.Value}
	case yaml.SequenceNode:
		var out []string
		for _, n := range w.On.Content {
			out = append(out, n.Value)
		}
		return out
	case yaml.MappingNode:
		var out []string
		for i := 0; i < len(w.On.Content); i += 2 {
			out = append(out, w.On.Content[i].Value)
		}
		return out
	}
	return nil
}

// writes returns the scopes a permissions node grants write on; an absent
// node means the repository default, which may be write-all.
func writes(n yaml.Node) (scopes []string, set bool) {
	switch n.Kind {
	case 0:
		return nil, false
	case yaml.ScalarNode:
		if n.Value == "write-all" {
			return []string{"*"}, true
		}
		return nil, true // read-all, or {} below
	case yaml.MappingNode:
		for i := 0; i < len(n.Content); i += 2 {
			if n.Content[i+1].Value == "write" {
				scopes = append(scopes, n.Content[i].Value)
			}
		}
		sort.Strings(scopes)
		return scopes, true
	}
	return []string{"unparsed"}, true
}

// effectiveWrites is a job's write scopes: its own permissions, else the
// workflow's.
func effectiveWrites(w wfDoc, j job) (scopes []string, set bool) {
	if s, ok := writes(j.Permissions); ok {
		return s, true
	}
	return writes(w.Permissions)
}

var (
	runsBuild   = regexp.MustCompile(`(^|[\s;&|(])(make|kci\s+(test|build|run|shell))\b`)
	secretsRef  = regexp.MustCompile(`\bsecrets\s*\.|\bsecrets\[`)
	tokenRef    = regexp.MustCompile(`github\.token|GITHUB_TOKEN`)
	exprInShell = regexp.MustCompile(`\$\{\{`)
	prHeadRef   = regexp.MustCompile(`pull_request|head_sha|head_branch|head_commit|head_repository|github\.head_ref|github\.sha|github\.ref`)
)

func isCheckout(s step) bool { return strings.HasPrefix(s.Uses, "actions/checkout@") }

// checksOutPR is a checkout of the workspace repository (the PR's code in
// a pull_request or workflow_run context) rather than of a named other
// repository at a ref that does not come from the event.
func checksOutPR(s step) bool {
	if !isCheckout(s) {
		return false
	}
	repo, _ := s.With["repository"].(string)
	ref, _ := s.With["ref"].(string)
	return repo == "" || strings.Contains(repo, "github.repository") || prHeadRef.MatchString(repo+" "+ref)
}

// jobText is everything a job could use a secret or token through.
func jobText(t *testing.T, j job) string {
	b, err := yaml.Marshal(j.Steps)
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + fmt.Sprint(j.Uses)
}

// TestWorkflowSecuritySplit asserts the rule the whole Actions design rests
// on: code from a pull request (checkout, make, kci test) runs only with a
// read token and no secrets, and the job holding a write token runs none.
func TestWorkflowSecuritySplit(t *testing.T) {
	files := append(workflowFiles(t), docWorkflows(t)...)
	var sawUntrusted, sawPoster bool
	for _, f := range files {
		w := parseWorkflow(t, f)
		triggers := w.triggers()
		for _, tr := range triggers {
			if tr == "pull_request_target" {
				t.Errorf("%s: pull_request_target runs PR code with a write token; use pull_request + workflow_run", f.name)
			}
		}
		if _, ok := writes(w.Permissions); !ok {
			t.Errorf("%s: no top-level permissions: the token would get the repository default, possibly write-all", f.name)
		}
		// bench.yml's jobs all handle the PR's code or its output.
		prWorkflow := strings.HasSuffix(f.name, "bench.yml")
		for name, j := range w.Jobs {
			where := f.name + " job " + name
			// A caller of bench.yml lends it its token.
			untrusted := prWorkflow || strings.Contains(j.Uses, "/bench.yml@")
			for _, s := range j.Steps {
				if runsBuild.MatchString(s.Run) || checksOutPR(s) {
					untrusted = true
				}
			}
			scopes, _ := effectiveWrites(w, j)
			text := jobText(t, j)
			if untrusted {
				sawUntrusted = true
				if len(scopes) > 0 {
					t.Errorf("%s runs pull request code with write permissions %v", where, scopes)
				}
				if secretsRef.MatchString(text) || j.Secrets.Kind != 0 {
					t.Errorf("%s runs pull request code and references secrets", where)
				}
				if tokenRef.MatchString(text) {
					t.Errorf("%s runs pull request code and passes the token on", where)
				}
			}
			if len(scopes) > 0 {
				sawPoster = true
				for _, s := range j.Steps {
					if checksOutPR(s) {
						t.Errorf("%s has write permissions %v and checks out the pull request (step %q)", where, scopes, s.Name)
					}
					if runsBuild.MatchString(s.Run) {
						t.Errorf("%s has write permissions %v and builds or tests (step %q)", where, scopes, s.Name)
					}
					if strings.HasPrefix(s.Uses, "./") && !strings.HasPrefix(s.Uses, "./.kci/") {
						t.Errorf("%s has write permissions and runs a workspace action %s", where, s.Uses)
					}
				}
			}
			for _, s := range j.Steps {
				if isCheckout(s) && s.With["persist-credentials"] != false {
					t.Errorf("%s: checkout without persist-credentials: false leaves the token in .git/config", where)
				}
				if exprInShell.MatchString(s.Run) {
					t.Errorf("%s step %q: ${{ }} inside run: is script injection; pass values through env:", where, s.Name)
				}
			}
		}
	}
	if !sawUntrusted || !sawPoster {
		t.Errorf("security split not exercised: untrusted jobs %v, posting jobs %v", sawUntrusted, sawPoster)
	}
}

// TestPostingWorkflowShape pins the posting side: triggered (through the
// caller) by workflow_run, downloads the artifact of the triggering run,
// and its only kci command is kci post.
func TestPostingWorkflowShape(t *testing.T) {
	var post, caller *wfDoc
	for _, f := range append(workflowFiles(t), docWorkflows(t)...) {
		w := parseWorkflow(t, f)
		switch {
		case strings.HasSuffix(f.name, "bench-post.yml"):
			post = &w
		case strings.Contains(string(f.content), "bench-post.yml@"):
			caller = &w
		}
	}
	if post == nil || caller == nil {
		t.Fatalf("posting workflow %v or its documented caller %v missing", post != nil, caller != nil)
	}
	if tr := caller.triggers(); len(tr) != 1 || tr[0] != "workflow_run" {
		t.Errorf("documented posting caller triggers on %v, want workflow_run only", tr)
	}
	j, ok := post.Jobs["post"]
	if !ok {
		t.Fatal("bench-post.yml has no post job")
	}
	var downloads, posts int
	for _, s := range j.Steps {
		if strings.HasPrefix(s.Uses, "actions/download-artifact@") {
			downloads++
			if id, _ := s.With["run-id"].(string); !strings.Contains(id, "github.event.workflow_run.id") {
				t.Errorf("download-artifact run-id %q is not the triggering run", id)
			}
		}
		for _, m := range regexp.MustCompile(`\bkci\s+(\w+)`).FindAllStringSubmatch(s.Run, -1) {
			if m[1] != "post" {
				t.Errorf("posting job runs kci %s", m[1])
			}
			posts++
		}
	}
	if downloads != 1 || posts != 1 {
		t.Errorf("posting job: %d downloads, %d kci post, want 1 and 1", downloads, posts)
	}
	scopes, _ := effectiveWrites(*post, j)
	// No statuses: write: the Actions token may always create check runs,
	// so the commit status fallback is for other tokens (kci post outside
	// Actions).
	if fmt.Sprint(scopes) != "[checks pull-requests]" {
		t.Errorf("posting job writes %v, want exactly checks and pull-requests", scopes)
	}
}

// TestSecurityCheckCatchesViolations feeds the checks a workflow that
// breaks the split, so a check that passes everything is noticed.
func TestSecurityCheckCatchesViolations(t *testing.T) {
	bad := wfDoc{}
	src := `
on: workflow_run
permissions:
  pull-requests: write
jobs:
  post:
    steps:
      - uses: actions/checkout@v4
        with:
          ref: ${{ github.event.workflow_run.head_sha }}
      - run: make && kci test patches/x.patch
`
	if err := yaml.Unmarshal([]byte(src), &bad); err != nil {
		t.Fatal(err)
	}
	j := bad.Jobs["post"]
	scopes, _ := effectiveWrites(bad, j)
	if len(scopes) != 1 || !checksOutPR(j.Steps[0]) || !runsBuild.MatchString(j.Steps[1].Run) {
		t.Errorf("violations not detected: writes %v, checkout-PR %v, build %v", scopes, checksOutPR(j.Steps[0]), runsBuild.MatchString(j.Steps[1].Run))
	}
	kci := step{Uses: "actions/checkout@v4", With: map[string]any{"repository": "${{ inputs.kci-repository }}", "ref": "${{ inputs.kci-ref }}"}}
	if checksOutPR(kci) {
		t.Errorf("checkout of kci's own repository counted as the pull request")
	}
	if runsBuild.MatchString(`kci post "$RUN_DIR"`) || !runsBuild.MatchString("set -e; make -C x") {
		t.Errorf("build detection wrong")
	}
}
