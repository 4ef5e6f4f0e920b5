package kernel

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// recordMake puts a make first on PATH that appends its arguments to a
// file before running the real one, and returns a reader of those lines.
func recordMake(t *testing.T) func() []string {
	t.Helper()
	real, err := exec.LookPath("make")
	if err != nil {
		t.Skip("needs make")
	}
	bin, log := t.TempDir(), filepath.Join(t.TempDir(), "make.log")
	script := "#!/bin/sh\necho \"$*\" >> " + log + "\nexec " + real + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "make"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		data, err := os.ReadFile(log)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(data)), "\n")
	}
}

// kci config's path: the config is resolved with config targets only,
// kept for the next call, and a built kernel's own config is preferred.
func TestResolveConfigNeverBuilds(t *testing.T) {
	c, base := fakeBase(t)
	made := recordMake(t)
	frag := filepath.Join(t.TempDir(), "perf.config")
	if err := os.WriteFile(frag, []byte("CONFIG_FAKE=y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	req := Request{Base: base, Fragments: []string{frag}, Patches: []Patch{diffPatch("p.patch", "hello: b2", helloPatch)}}
	ctx := context.Background()
	a, err := c.ResolveConfig(ctx, req, Options{Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	calls := made()
	if len(calls) == 0 {
		t.Fatal("make never ran: the config was not resolved")
	}
	for _, l := range calls {
		if !strings.HasSuffix(l, " tinyconfig") && !strings.HasSuffix(l, " olddefconfig") {
			t.Errorf("make %s: only config targets may run", l)
		}
	}
	if data, err := os.ReadFile(a.Config); err != nil || !strings.Contains(string(data), "CONFIG_FAKE=y") {
		t.Errorf("config %s: %q, %v", a.Config, data, err)
	}
	if a.BzImage != "" || exists(c.path("kernels", a.Key)) {
		t.Errorf("a kernel was published: %+v", a)
	}
	if exists(c.path("builds", "config-"+a.Key)) {
		t.Error("the config worktree was left behind")
	}
	if ents, _ := os.ReadDir(c.path("trash")); len(ents) > 0 {
		t.Errorf("the config worktree went to the trash, for a later build to sweep: %v", ents)
	}
	again, err := c.ResolveConfig(ctx, req, Options{Jobs: 1})
	if err != nil || again.ConfigHash != a.ConfigHash || len(made()) != len(calls) {
		t.Errorf("second call: %+v, %v; make ran %d times, want %d (the kept config)", again, err, len(made()), len(calls))
	}
	k, err := c.Build(ctx, req, Options{Jobs: 1})
	if err != nil {
		t.Fatal(err)
	}
	built, err := c.ResolveConfig(ctx, req, Options{Jobs: 1})
	if err != nil || built.Config != k.Config || built.ConfigHash != a.ConfigHash {
		t.Errorf("after the build: config %+v, %v; want the kernel's %s with hash %s", built, err, k.Config, a.ConfigHash)
	}
}

// The policy is checked as a build checks it: a forbidden option from the
// base config survives the fake olddefconfig.
func TestResolveConfigViolation(t *testing.T) {
	c, base := fakeBase(t)
	req := Request{Base: base, Fragments: []string{writeConfig(t, "CONFIG_FAKE=y\n")}, BaseConfig: writeConfig(t, "CONFIG_LOCKDEP=y\n")}
	_, err := c.ResolveConfig(context.Background(), req, Options{Jobs: 1})
	var ce *ConfigError
	if !errors.As(err, &ce) || len(ce.Violations) != 1 || ce.Violations[0].Option != "LOCKDEP" {
		t.Fatalf("err = %v, want a ConfigError for LOCKDEP", err)
	}
	if exists(c.path("configs", "")) {
		if ents, _ := os.ReadDir(c.path("configs")); len(ents) > 0 {
			t.Errorf("a config that breaks the policy was kept: %v", ents)
		}
	}
}
