package results_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kci-dev/kci/results"
	"github.com/kci-dev/kci/results/internal/runtest"
)

// forgedShard writes a shard whose record is otherwise valid, after mod
// has tampered with it.
func forgedShard(t *testing.T, dir, id string, mod func(r *results.Run)) {
	t.Helper()
	r := runtest.AbRun("gtp", results.AccelKVM, runtest.Normal(51, 3, 100, 0.01), runtest.Normal(52, 3, 100, 0.01))
	r.ID = id
	if err := os.MkdirAll(filepath.Join(dir, "console"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "console", "boot-1.log"), []byte("Linux version\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Boots[0].ConsoleLog = "console/boot-1.log"
	mod(r)
	if err := results.Save(dir, r); err != nil {
		t.Fatal(err)
	}
}

// A shard's run.json comes from the pull request's job: its ID, console
// log paths and tree names must not steer reads or writes outside the
// shard and the output directory.
func TestMergeDirsRefusesForgedPaths(t *testing.T) {
	cases := []struct {
		name, want string
		mod        func(r *results.Run)
	}{
		{"id climbs out", `run id "../../PWNED"`, func(r *results.Run) { r.ID = "../../PWNED" }},
		{"id is absolute", `run id "/tmp/PWNED"`, func(r *results.Run) { r.ID = "/tmp/PWNED" }},
		{"log outside the shard", `console log "../../secret.txt"`, func(r *results.Run) { r.Boots[0].ConsoleLog = "../../secret.txt" }},
		{"absolute log", `console log "/etc/hostname"`, func(r *results.Run) { r.Boots[0].ConsoleLog = "/etc/hostname" }},
		{"tree name is a path", `tree name "../../evil"`, func(r *results.Run) {
			r.Trees[0].Name = "../../evil"
			for i := range r.Boots {
				r.Boots[i].Tree = "../../evil"
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.WriteFile(filepath.Join(root, "secret.txt"), []byte("SECRET"), 0o600); err != nil {
				t.Fatal(err)
			}
			shard := filepath.Join(root, "in", "shard")
			forgedShard(t, shard, "aaaa0001", c.mod)
			out := filepath.Join(root, "out", "merged")
			_, err := results.MergeDirs(out, shard)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("MergeDirs: %v, want a refusal naming %s", err, c.want)
			}
			assertNothingEscaped(t, root, out)
		})
	}
}

// A symlink inside the shard that points outside it is refused by os.Root.
func TestMergeDirsRefusesSymlinkOutOfShard(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "secret.txt"), []byte("SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	shard := filepath.Join(root, "in", "shard")
	forgedShard(t, shard, "aaaa0001", func(r *results.Run) { r.Boots[0].ConsoleLog = "console/link.log" })
	if err := os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(shard, "console", "link.log")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(root, "out", "merged")
	if _, err := results.MergeDirs(out, shard); err == nil || !strings.Contains(err.Error(), "shard aaaa0001") {
		t.Errorf("MergeDirs through an escaping symlink: %v, want a refusal", err)
	}
	assertNothingEscaped(t, root, out)
}

// assertNothingEscaped checks that no file outside out holds the secret
// copy or a PWNED/evil name, and that nothing in out holds the secret.
func assertNothingEscaped(t *testing.T, root, out string) {
	t.Helper()
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		if strings.Contains(p, "PWNED") || strings.Contains(filepath.Base(p), "evil") {
			t.Errorf("merge wrote %s", p)
		}
		if p != filepath.Join(root, "secret.txt") && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), "SECRET") {
				t.Errorf("secret copied to %s", p)
			}
		}
		return nil
	})
	if _, err := os.Stat("/tmp/PWNED"); err == nil {
		t.Errorf("merge wrote /tmp/PWNED")
	}
}
