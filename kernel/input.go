package kernel

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/proc"
)

// A patch argument of kci test, series, build, profile and run --patch is
// one of three things (ParseInput): a path (a patch, an mbox, a directory,
// a series file: LoadSeries reads it), "-" (an mbox on standard input,
// e.g. from `b4 am -o - MSGID`), or CHECKOUT:RANGE, a commit range of the
// user's git checkout (`~/linux:net-next/main..HEAD`), which ExportRange
// turns into patch files without touching the checkout.

// StdinArg is the patch argument that reads an mbox from standard input.
const StdinArg = "-"

// InputKind says what a patch argument names.
type InputKind int

const (
	InputPath  InputKind = iota // a file, directory or series file
	InputStdin                  // "-": an mbox on standard input
	InputRange                  // CHECKOUT:RANGE: commits of a git checkout
)

// Input is one patch argument, parsed.
type Input struct {
	Arg      string
	Kind     InputKind
	Checkout string // InputRange: the checkout's directory
	Range    string // InputRange: e.g. base..HEAD
}

// InputError is an input kci cannot use (a patch argument, kci.yaml's
// base.git or base.ref): the user's, not the patch's fault nor the
// machine's (job.Classify: a usage error).
type InputError struct {
	What string // "patch" when empty, "base.git", "base.ref"
	Arg  string
	Msg  string
}

func (e *InputError) Error() string {
	what := e.What
	if what == "" {
		what = "patch"
	}
	return what + " " + e.Arg + ": " + e.Msg
}

// ParseInput reads a patch argument. A path that exists is a path, even
// with a colon in its name; CHECKOUT:RANGE needs ".." in the range. An
// argument that is neither is left a path, for LoadSeries to name.
func ParseInput(arg string) Input {
	if arg == StdinArg {
		return Input{Arg: arg, Kind: InputStdin}
	}
	if _, err := os.Stat(arg); err == nil {
		return Input{Arg: arg, Kind: InputPath}
	}
	// The first colon whose left side is a directory; failing that, the
	// first colon: ExportRange then says the checkout is not there.
	var first *Input
	for i := strings.IndexByte(arg, ':'); i >= 0; {
		co, rng := arg[:i], arg[i+1:]
		if co != "" && strings.Contains(rng, "..") {
			in := Input{Arg: arg, Kind: InputRange, Checkout: co, Range: rng}
			if st, err := os.Stat(co); err == nil && st.IsDir() {
				return in
			}
			if first == nil {
				first = &in
			}
		}
		j := strings.IndexByte(arg[i+1:], ':')
		if j < 0 {
			break
		}
		i += j + 1
	}
	if first != nil {
		return *first
	}
	return Input{Arg: arg, Kind: InputPath}
}

// gitExport runs git in the user's checkout: reads only, and with
// GIT_OPTIONAL_LOCKS=0 git does not even refresh its index.
func gitExport(ctx context.Context, dir string, args ...string) (string, error) {
	return command{dir: dir, env: []string{"GIT_OPTIONAL_LOCKS=0"}, timeout: 5 * time.Minute}.run(ctx, "git", args...)
}

// userError says whether git refused the request (exit 128 or 1: not a
// repository, not a revision), as opposed to failing to run.
func userError(ctx context.Context, err error) bool {
	code, ok := proc.ExitCode(err)
	return ok && (code == 128 || code == 1) && ctx.Err() == nil
}

// ExportRange writes the commits of in.Range in in.Checkout into dir as
// numbered patch files (git format-patch), oldest first, and returns how
// many. The checkout's working tree, index and refs are left as they
// are. A checkout or range that is not one, a range with no commits or
// with merges (format-patch would silently drop them) is an *InputError.
func ExportRange(ctx context.Context, in Input, dir string) (int, error) {
	bad := func(format string, a ...any) error {
		return &InputError{Arg: in.Arg, Msg: fmt.Sprintf(format, a...)}
	}
	if st, err := os.Stat(in.Checkout); err != nil || !st.IsDir() {
		return 0, bad("%s: no such directory (CHECKOUT:BASE..TIP exports a range of a git checkout)", in.Checkout)
	}
	if _, err := gitExport(ctx, in.Checkout, "rev-parse", "--git-dir"); err != nil {
		if userError(ctx, err) {
			return 0, bad("%s: not a git checkout", in.Checkout)
		}
		return 0, infra("export "+in.Arg, err)
	}
	if err := checkRangeEnds(ctx, in, bad); err != nil {
		return 0, err
	}
	count := func(which string) (int, error) {
		out, err := gitExport(ctx, in.Checkout, "rev-list", "--count", which, in.Range, "--")
		if err != nil {
			if userError(ctx, err) {
				return 0, bad("range %s in %s: %s", in.Range, in.Checkout, gitReason128(out))
			}
			return 0, infra("export "+in.Arg, err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(tail(out, 1))) // after any warning
		if err != nil {
			return 0, infra("export "+in.Arg+": git rev-list --count", err)
		}
		return n, nil
	}
	merges, err := count("--merges")
	if err != nil {
		return 0, err
	}
	if merges > 0 {
		return 0, bad("range %s in %s holds %d merge commit(s): git format-patch cannot export a merge; give a range without merges", in.Range, in.Checkout, merges)
	}
	n, err := count("--no-merges")
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, bad("range %s in %s holds no commits", in.Range, in.Checkout)
	}
	if err := formatPatch(ctx, in, dir); err != nil {
		return 0, err
	}
	return n, nil
}

// checkRangeEnds names the end of the range that is not a commit.
func checkRangeEnds(ctx context.Context, in Input, bad func(string, ...any) error) error {
	ends := strings.Split(strings.Replace(in.Range, "...", "..", 1), "..")
	for _, end := range ends {
		if end == "" {
			continue // A.. or ..B: HEAD
		}
		_, err := gitExport(ctx, in.Checkout, "rev-parse", "--verify", "-q", end+"^{commit}")
		if err == nil {
			continue
		}
		if userError(ctx, err) {
			return bad("range %s in %s: %q is not a commit there", in.Range, in.Checkout, end)
		}
		return infra("export "+in.Arg, err)
	}
	return nil
}

// formatPatch runs git format-patch into dir, its output options pinned
// against the user's format.* settings (a suffix, a cover letter,
// attachments, base-commit lookups, no-prefix diffs) that would make
// patches kci cannot read or git format-patch fail.
func formatPatch(ctx context.Context, in Input, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return infra("export "+in.Arg, err)
	}
	out, err := gitExport(ctx, in.Checkout, "-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
		"format-patch", "-q", "--no-cover-letter", "--no-attach", "--no-thread", "--no-base", "--no-notes",
		"--suffix=.patch", "-o", dir, in.Range, "--")
	if err != nil {
		if userError(ctx, err) {
			return &InputError{Arg: in.Arg, Msg: fmt.Sprintf("git format-patch %s in %s: %s", in.Range, in.Checkout, gitReason128(out))}
		}
		return infra("export "+in.Arg, err)
	}
	return nil
}

// gitReason128 is git's fatal or error line, else its last line.
func gitReason128(out string) string {
	for _, l := range strings.Split(out, "\n") {
		for _, p := range []string{"fatal: ", "error: "} {
			if _, r, ok := strings.Cut(l, p); ok {
				return strings.TrimSpace(r)
			}
		}
	}
	return strings.TrimSpace(tail(out, 1))
}

// SaveStdin reads r (standard input) once, whole, into path: the mbox
// of "-". Nothing on it is an *InputError.
func SaveStdin(r io.Reader, path string) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return infra("read standard input", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &InputError{Arg: StdinArg, Msg: "standard input is empty: pipe an mbox in (b4 am -o - MSGID | kci test -)"}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return infra("save standard input", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return infra("save standard input", err)
	}
	return nil
}

// CheckRef says why ref cannot be base.ref of the checkout dir (""
// meaning HEAD): dir is not a git checkout, or ref names no commit there
// that git fetch can take (a branch, a tag, a remote-tracking branch or a
// full commit id; not HEAD~1). nil when it can; an *InfraError when git
// could not tell.
func CheckRef(ctx context.Context, dir, ref string) error {
	if ref == "" {
		ref = "HEAD"
	}
	if _, err := gitExport(ctx, dir, "rev-parse", "--git-dir"); err != nil {
		if userError(ctx, err) {
			return &InputError{What: "base.git", Arg: dir, Msg: "not a git checkout"}
		}
		return infra("base.git "+dir, err)
	}
	// What importGit fetches: a ref name or a full commit id, no
	// revision expressions.
	if strings.ContainsAny(ref, "~^:@{}") && ref != "HEAD" {
		return &InputError{What: "base.ref", Arg: ref, Msg: "a revision expression: give a branch, tag or full commit id"}
	}
	if _, err := gitExport(ctx, dir, "rev-parse", "--verify", "-q", ref+"^{commit}"); err != nil {
		if userError(ctx, err) {
			return &InputError{What: "base.ref", Arg: ref, Msg: "not a commit in " + dir}
		}
		return infra("base.git "+dir, err)
	}
	return nil
}
