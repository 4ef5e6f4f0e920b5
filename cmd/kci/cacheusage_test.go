package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kci-dev/kci/job"
)

// kci cache on a cache of plain files: every kind a row with its size,
// the total, and --kind naming the items.
func TestCacheListsEveryKind(t *testing.T) {
	root := t.TempDir()
	t.Setenv("KCI_CACHE", root)
	files := map[string]int{
		"base/deb/src/Makefile": 3 << 20, "builds/k1/vmlinux.o": 5 << 20, "kernels/k1/bzImage": 2 << 20,
		"initramfs/img.cpio": 1 << 20, "results/a.json": 1 << 20, "trash/t-1/x": 1 << 20,
		"locks/build-k1.lock": 0,
	}
	for rel, n := range files {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, randomBytes(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"cache"}, &out, &errOut); code != 0 {
		t.Fatalf("kci cache: exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{`source +1 +3\.0 MiB`, `builds +1 +5\.0 MiB`, `kernels +1 +2\.0 MiB`,
		`images +1 +1\.0 MiB`, `results +1 +1\.0 MiB`, `trash +1 +1\.0 MiB`, `locks +1 +0 B`,
		`configs +0 +0 B`, `total +7 +13 MiB +in ` + regexp.QuoteMeta(root)} {
		if !regexp.MustCompile(`(?m)^` + want).MatchString(out.String()) {
			t.Errorf("kci cache lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run(context.Background(), []string{"cache", "list", "--kind", "builds"}, &out, &errOut); code != 0 ||
		!strings.Contains(out.String(), "builds/k1") || !strings.Contains(out.String(), "builds: 1 item, 5.0 MiB") {
		t.Errorf("kci cache list --kind builds: exit %d\n%s", code, out.String())
	}
}

func TestCacheUsageErrors(t *testing.T) {
	t.Setenv("KCI_CACHE", t.TempDir())
	for _, args := range [][]string{{"cache", "bogus"}, {"cache", "prune", "--older-than", "banana"},
		{"cache", "clear", "--kind", "kernel"}, {"cache", "list", "--kind", "nope"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != job.ExitUsage {
			t.Errorf("kci %s: exit %d, want %d: %s", strings.Join(args, " "), code, job.ExitUsage, errOut.String())
		}
	}
}

// randomBytes are n bytes no filesystem compresses: the sizes on disk
// the tests expect are the bytes written.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
