package job

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/kci-dev/kci/internal/failure"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/results/verdict"
	"github.com/kci-dev/kci/vm"
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
		err := Classify("stage", c.err)
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
	if got := Classify("x", orig); got != orig {
		t.Errorf("ExitError rewrapped: %v", got)
	}
}

// The exit codes are a published interface (README, CI scripts): each
// value is pinned and no two classes share one.
func TestExitCodeTable(t *testing.T) {
	codes := map[string][2]int{
		"ok": {ExitOK, 0}, "internal": {ExitInternal, 1}, "apply": {ExitApply, 2}, "build": {ExitBuild, 3},
		"boot": {ExitBoot, 4}, "survival": {ExitSurvival, 5}, "performance": {ExitPerformance, 6}, "interrupted": {ExitInterrupted, 130},
	}
	seen := map[int]string{}
	for name, c := range codes {
		if c[0] != c[1] {
			t.Errorf("Exit %s = %d, documented as %d", name, c[0], c[1])
		}
		if other, dup := seen[c[0]]; dup {
			t.Errorf("exit code %d shared by %s and %s", c[0], name, other)
		}
		seen[c[0]] = name
	}

	// Whose fault, by error type: only apply, config and build failures
	// are the patch's; a kernel lacking what the series adds is a stale
	// build (the machine's).
	for _, c := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("tree gtp: %w", &kernel.ApplyError{Patch: "p"}), ExitApply},
		{&kernel.ConfigError{}, ExitBuild},
		{&kernel.BuildError{First: "e"}, ExitBuild},
		{&kernel.VerifyError{Missing: []string{"bpf_x"}}, ExitInternal},
		{&kernel.InputError{Arg: "~/linux:base..HEAD", Msg: "holds no commits"}, ExitUsage},
		{&kernel.InfraError{Op: "make", Err: errors.New("no space")}, ExitInternal},
		{fmt.Errorf("stock kernel: %w", context.Canceled), ExitInterrupted},
		{errors.New("anything else"), ExitInternal},
	} {
		var ee *ExitError
		if err := Classify("s", c.err); !errors.As(err, &ee) || ee.ExitCode() != c.code {
			t.Errorf("Classify(%T %v) = %v, want exit %d", c.err, c.err, err, c.code)
		}
	}

	// Failed boots, by the kind a booter reports: kci test and kci run
	// share this, an agent failure included (it exited 1 from kci run).
	for kind, want := range map[string]int{
		failure.Boot: ExitBoot, failure.Crash: ExitBoot, failure.Timeout: ExitBoot, failure.Agent: ExitBoot,
		failure.Infra: ExitInternal, failure.Interrupted: ExitInterrupted, "no such kind": ExitInternal,
	} {
		if got := BootExitCode(kind); got != want {
			t.Errorf("BootExitCode(%q) = %d, want %d", kind, got, want)
		}
	}
	for _, c := range []struct {
		err  error
		kind string
	}{
		{&vm.CrashError{}, failure.Crash},
		{&vm.BootError{}, failure.Boot},
		{&vm.TimeoutError{}, failure.Timeout},
		{fmt.Errorf("boot: %w", &vm.AgentError{}), failure.Agent},
		{context.Canceled, failure.Interrupted},
		{errors.New("qemu: no such file"), failure.Infra},
	} {
		if got := vm.Kind(c.err); got != c.kind {
			t.Errorf("vm.Kind(%T) = %q, want %q", c.err, got, c.kind)
		}
	}
}

// A series' failing fault exits with its kind's code.
func TestSeriesFaultExit(t *testing.T) {
	for kind, want := range map[verdict.FaultKind]int{
		verdict.FaultApply: ExitApply, verdict.FaultBuild: ExitBuild, verdict.FaultWarning: ExitBuild,
		verdict.FaultBoot: ExitBoot, verdict.FaultSurvival: ExitSurvival,
	} {
		if got := faultExit[kind]; got != want {
			t.Errorf("faultExit[%d] = %d, want %d", kind, got, want)
		}
	}
}

// A step stopped by ^C or SIGTERM did not fail: its progress line says so.
func TestEndWordSaysInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if got := EndWord(ctx, errors.New("make: exit status 2")); got != "failed" {
		t.Errorf("a failed step ends %q, want failed", got)
	}
	if got := EndWord(ctx, fmt.Errorf("git: %w", context.Canceled)); got != "interrupted" {
		t.Errorf("a step whose command was canceled ends %q, want interrupted", got)
	}
	cancel()
	if got := EndWord(ctx, errors.New("signal: killed")); got != "interrupted" {
		t.Errorf("a step that failed after the run was stopped ends %q, want interrupted", got)
	}
}
