package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/rcache"
)

func runCacheCmd(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newCacheCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// kci cache list, prune and clear on a cache with one fresh, one old and
// one corrupt entry; the cache directory is created on first use.
func TestCacheCommand(t *testing.T) {
	root := filepath.Join(t.TempDir(), "new")
	t.Setenv("KCI_CACHE", root)
	s, err := rcache.Open(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	fresh := rcache.Key{Kernel: "k", Release: "6.12.0-kci", Plan: `{"variants":["hash","lru"],"survival":true}`, Seed: 2}
	old := fresh
	old.Seed = 3
	for _, k := range []rcache.Key{fresh, old} {
		if err := s.Save(k, map[string]int{"x": 1}, ""); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-10 * 24 * time.Hour)
	if err := os.Chtimes(filepath.Join(s.Dir, old.ID()+".json"), long, long); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "0badc0de.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCacheCmd(t, "list", "--kind", "results")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fresh.ID(), "6.12.0-kci", "hash,lru,survival", "CORRUPT", "3 entries"} {
		if !strings.Contains(out, want) {
			t.Errorf("list lacks %q:\n%s", want, out)
		}
	}
	if _, err := runCacheCmd(t, "prune", "--older-than", "soon"); err == nil || !strings.Contains(err.Error(), "--older-than") {
		t.Errorf("bad --older-than: %v", err)
	}
	// The corrupt entry is as new as the fresh one: the result cache drops
	// it when it is read.
	if out, err := runCacheCmd(t, "prune", "--older-than", "7d"); err != nil || !strings.Contains(out, "removed 1 item,") {
		t.Errorf("prune: %v\n%s", err, out)
	}
	if out, err := runCacheCmd(t, "clear", "--kind", "results"); err != nil || !strings.Contains(out, "removed 2 items") {
		t.Errorf("clear: %v\n%s", err, out)
	}
}

func TestResultCacheEnv(t *testing.T) {
	var b boot.Booter = &boot.VMBooter{}
	t.Setenv(resultCacheEnv, "off")
	if got, err := withResultCache(b, t.TempDir(), false); err != nil || got != b {
		t.Errorf("KCI_RESULT_CACHE=off: %T, %v; want the booter itself", got, err)
	}
	t.Setenv(resultCacheEnv, "")
	if got, err := withResultCache(b, t.TempDir(), true); err != nil || got != b {
		t.Errorf("--no-result-cache: %T, %v; want the booter itself", got, err)
	}
	if got, err := withResultCache(b, t.TempDir(), false); err != nil || got == b {
		t.Errorf("default: %T, %v; want the cache in front", got, err)
	}
	t.Setenv(resultCacheEnv, "maybe")
	if _, err := withResultCache(b, t.TempDir(), false); err == nil || !strings.Contains(err.Error(), "KCI_RESULT_CACHE") {
		t.Errorf("bad env value: %v", err)
	}
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "12h": 12 * time.Hour, "1.5d": 36 * time.Hour, "0d": 0} {
		if got, err := parseAge(in); err != nil || got != want {
			t.Errorf("parseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "-1d", "-3h", "x"} {
		if _, err := parseAge(in); err == nil {
			t.Errorf("parseAge(%q) accepted", in)
		}
	}
}
