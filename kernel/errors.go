package kernel

import (
	"fmt"
	"strings"
)

// The errors below say whose fault a failure is by their type; job.Classify
// maps each to kci's exit code (the patch's: apply, config, build; the
// machine's: verify, infra).

// ApplyError: a patch of the series does not apply.
type ApplyError struct {
	Patch   string // patch file
	Subject string
	File    string // failing file, when git says
	Hunk    string // failing hunk header or line, when git says
	Output  string // git's output
	// Tree, when set, is the tree the patch was checked against before
	// any build (the message then leads with the patch and the tree).
	Tree string
	// HunkNo and Line place the failing hunk: the HunkNo-th of File's
	// hunks in the patch, at Line of the old file; 0 when git did not say.
	HunkNo, Line int
}

func (e *ApplyError) Error() string {
	if e.Tree != "" {
		return e.treeError()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "patch %s does not apply", e.Patch)
	if e.Subject != "" {
		fmt.Fprintf(&b, " (%q)", e.Subject)
	}
	if e.File != "" {
		fmt.Fprintf(&b, ": %s", e.File)
		if e.Hunk != "" {
			fmt.Fprintf(&b, " %s", e.Hunk)
		}
	} else if reason := gitReason(e.Output); reason != "" {
		fmt.Fprintf(&b, ": %s", reason) // e.g. "corrupt patch at line 5"
	}
	return b.String()
}

// treeError: "patches/x.patch: does not apply to tree stock:
// net/core/skbuff.c: hunk #2 at line 6210: error: patch failed:
// net/core/skbuff.c:6210".
func (e *ApplyError) treeError() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: does not apply to tree %s", e.Patch, e.Tree)
	if e.File != "" {
		fmt.Fprintf(&b, ": %s", e.File)
		switch {
		case e.HunkNo > 0:
			fmt.Fprintf(&b, ": hunk #%d at line %d", e.HunkNo, e.Line)
		case e.Hunk != "":
			fmt.Fprintf(&b, ": %s", e.Hunk)
		}
	}
	if reason := gitReason(e.Output); reason != "" {
		fmt.Fprintf(&b, ": error: %s", reason)
	}
	return b.String()
}

// gitReason is the first "error: " line of git's output, without the
// prefix.
func gitReason(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if _, r, ok := strings.Cut(l, "error: "); ok {
			return strings.TrimSpace(r)
		}
	}
	return ""
}

// ConfigError: the final .config breaks the policy. Every violation is
// listed, never just the first.
type ConfigError struct {
	Violations []Violation
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "config policy: %d violation(s)", len(e.Violations))
	for _, v := range e.Violations {
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	return b.String()
}

// BuildError: make failed. First is the first compiler/linker error line.
type BuildError struct {
	First string
	Log   string // path of the full build log
	Tail  string // last lines of the log
}

func (e *BuildError) Error() string {
	if e.First == "" {
		return fmt.Sprintf("kernel build failed (log: %s)", e.Log)
	}
	return fmt.Sprintf("kernel build failed: %s (log: %s)", e.First, e.Log)
}

// VerifyError: the built kernel does not carry what the series adds, i.e.
// the build is stale or the series was not applied.
type VerifyError struct {
	Missing []string
}

func (e *VerifyError) Error() string {
	return "built kernel lacks what the series adds: " + strings.Join(e.Missing, ", ")
}

// InfraError: the machine, not the patch, failed us.
type InfraError struct {
	Op  string
	Err error
}

func (e *InfraError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *InfraError) Unwrap() error { return e.Err }

func infra(op string, err error) error {
	if err == nil {
		return nil
	}
	return &InfraError{Op: op, Err: err}
}
