package project

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kci-dev/kci/wire"
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

// Under TCG the warm-up is emulated_warmup when set, else emulated_lead
// (as before the key existed); the servers' lead stays emulated_lead, and
// KVM keeps the user's phases.
func TestEmulatedPhases(t *testing.T) {
	const head = "trees:\n  - name: stock\nbench:\n  emulated_lead: 1s\n"
	for _, tc := range []struct {
		yaml         string
		lead, warmup time.Duration
	}{
		{head, time.Second, time.Second},
		{head + "  emulated_warmup: 250ms\n", time.Second, 250 * time.Millisecond},
	} {
		f, err := Parse("kci.yaml", []byte(tc.yaml))
		if err != nil {
			t.Fatal(err)
		}
		b, k := f.BenchParams("tcg"), f.BenchParams("kvm")
		if b.ServerLead != tc.lead || b.Warmup != tc.warmup {
			t.Errorf("%q: tcg lead %v warm-up %v, want %v and %v", tc.yaml, b.ServerLead, b.Warmup, tc.lead, tc.warmup)
		}
		if d := wire.DefaultBench(); k.ServerLead != d.ServerLead || k.Warmup != d.Warmup {
			t.Errorf("%q: kvm lead %v warm-up %v, want the user's %v and %v", tc.yaml, k.ServerLead, k.Warmup, d.ServerLead, d.Warmup)
		}
	}
}

// A brand-new machine has no cache root; the test packages start at once
// and all materialise the embedded project there.
func TestEmbeddedFirstUseConcurrent(t *testing.T) {
	root := filepath.Join(t.TempDir(), "no", "cache", "yet")
	const n = 8
	errs := make(chan error, n)
	dirs := make(chan string, n)
	for i := 0; i < n; i++ {
		go func() {
			f, err := Embedded(root)
			if err == nil {
				dirs <- f.Dir
			}
			errs <- err
		}()
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatalf("first use of a missing cache root: %v", err)
		}
	}
	close(dirs)
	first := ""
	for d := range dirs {
		if first == "" {
			first = d
		} else if d != first {
			t.Fatalf("concurrent first uses disagree: %s vs %s", first, d)
		}
	}
	if _, err := os.Stat(filepath.Join(first, "patches", "rht-no-shrink.patch")); err != nil {
		t.Fatalf("materialised project lacks the demo patch: %v", err)
	}
	left, _ := filepath.Glob(filepath.Join(root, "embedded", ".embedded-*"))
	if len(left) != 0 {
		t.Fatalf("temporary directories left behind: %v", left)
	}
}

// A syntax error names the line the mistake is on: yaml.v3 says one line
// early for its parser's errors, not for its scanner's.
func TestSyntaxErrorLine(t *testing.T) {
	for text, want := range map[string]string{
		"base:\n  tarball: /x\n bad: indent\ntrees: []\n":               "kci.yaml:3: did not find expected key",
		"base:\n  tarball: /x\ntrees:\n  - name: stock\n    reps: [1\n": "kci.yaml:5: did not find expected ',' or ']'",
		"base:\n  tarball: /x\n  key: @bad\n":                           "kci.yaml:3: found character that cannot start any token",
		"base:\n  tarball: /x\nvm: {a: 1\n":                             "kci.yaml:3: did not find expected ',' or '}'",
	} {
		_, err := Parse("kci.yaml", []byte(text))
		if err == nil || err.Error() != want {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
}
