package doctor

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/internal/cachedir"
)

func TestCheckCacheNamesTheSize(t *testing.T) {
	c := &cachedir.Cache{Root: t.TempDir()}
	for rel, n := range map[string]int{"builds/k/vmlinux.o": 6 << 20, "results/a.json": 2 << 20} {
		p := filepath.Join(c.Root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, randomBytes(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ck := CheckCache(context.Background(), c)
	if ck.Status != OK || ck.Detail != "8.0 MiB on disk: builds 6.0 MiB, results 2.0 MiB" {
		t.Errorf("%+v", ck)
	}
	p := filepath.Join(c.Root, "trash", "t-1", "x")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, randomBytes(1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if ck := CheckCache(context.Background(), c); ck.Status != Warn || ck.Fix != "kci cache prune --kind trash" ||
		!strings.HasSuffix(ck.Detail, ", 1.0 MiB of it trash a killed run left") {
		t.Errorf("with trash: %+v", ck)
	}
}

// randomBytes are n bytes no filesystem compresses: the sizes on disk
// the tests expect are the bytes written.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}
