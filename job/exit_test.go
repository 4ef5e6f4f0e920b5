package job

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kci-dev/kci/kernel"
)

func TestClassifyBlamesTheRightParty(t *testing.T) {
	cases := []struct {
		err   error
		code  int
		cause string
	}{
		{&kernel.ApplyError{Patch: "p.diff", Subject: "s", File: "net/core/skbuff.c", Hunk: "@@ -1,2"}, ExitApply, "patch p.diff does not apply"},
		{fmt.Errorf("tree gtp: %w", &kernel.ConfigError{Violations: []kernel.Violation{{Option: "LOCKDEP", Want: "n", Got: "y"}}}), ExitBuild, "config policy violated: CONFIG_LOCKDEP=y (wanted n)"},
		{&kernel.BuildError{First: "skbuff.c:1: error: x", Log: "/l"}, ExitBuild, "skbuff.c:1: error: x"},
		{&kernel.InfraError{Op: "cache lock", Err: errors.New("disk full")}, ExitInternal, "cache lock: disk full"},
		{errInterrupted, ExitInterrupted, "interrupted"},
	}
	for _, c := range cases {
		err := classify("stage", c.err)
		var ee *ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%v: not an ExitError", c.err)
		}
		if ee.Code != c.code || !strings.Contains(ee.Cause, c.cause) {
			t.Errorf("%v: code %d cause %q, want %d containing %q", c.err, ee.Code, ee.Cause, c.code, c.cause)
		}
		if strings.Contains(ee.Cause, "\n") {
			t.Errorf("cause must be one line: %q", ee.Cause)
		}
	}
	// An ExitError passes through unchanged.
	orig := &ExitError{Code: ExitSurvival, Cause: "survival regression"}
	if got := classify("x", orig); got != orig {
		t.Errorf("ExitError rewrapped: %v", got)
	}
}
