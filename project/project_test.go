package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseRejectsUnknownKeys(t *testing.T) {
	_, err := Parse("kci.yaml", []byte("trees:\n  - name: a\nrepz: 3\n"))
	if err == nil || !strings.Contains(err.Error(), "repz") || !strings.Contains(err.Error(), "kci.yaml") {
		t.Fatalf("got %v, want an error naming the unknown key and the file", err)
	}
	if _, err := Parse("k", []byte("trees:\n  - name: a\n  - name: a\n")); err == nil {
		t.Fatal("duplicate tree accepted")
	}
}

func TestEmbeddedDefault(t *testing.T) {
	cache := t.TempDir()
	f, err := Embedded(cache)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"stock", "ext", "gtp"} {
		if _, err := f.Tree(n); err != nil {
			t.Error(err)
		}
	}
	gtp, _ := f.Tree("gtp")
	if len(gtp.Series) == 0 {
		t.Fatal("gtp tree has no series")
	}
	if _, err := os.Stat(f.Abs(gtp.Series[0])); err != nil {
		t.Errorf("gtp series not materialised: %v", err)
	}
	g, err := Embedded(cache)
	if err != nil || g.Dir != f.Dir {
		t.Fatalf("second materialisation: %v (dir %s vs %s)", err, g.Dir, f.Dir)
	}
	if !strings.HasPrefix(f.Dir, filepath.Join(cache, "embedded")+"/") {
		t.Errorf("embedded dir %s not content-addressed under the cache", f.Dir)
	}
	b := f.BenchParams("tcg")
	k := f.BenchParams("kvm")
	if b.RateMbit >= k.RateMbit || k.RateMbit != 14 {
		t.Errorf("emulated rate %v should be below the user's %v (14)", b.RateMbit, k.RateMbit)
	}
	if b.Window >= k.Window || k.Window.Seconds() != 60 {
		t.Errorf("emulated window %v should be shorter than the KVM window %v (60s)", b.Window, k.Window)
	}
}
