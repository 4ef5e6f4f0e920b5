package tcgplugin

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

func TestBuild(t *testing.T) {
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("building the plugin needs gcc (package build-essential)")
	}
	dir := t.TempDir()
	so, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := regexp.MatchString(`^kcicount-[0-9a-f]{24}\.so$`, filepath.Base(so)); !ok || filepath.Dir(so) != filepath.Join(dir, "plugins") {
		t.Errorf("Build = %s, want %s/plugins/kcicount-<24 hex>.so", so, dir)
	}
	st, err := os.Stat(so)
	if err != nil {
		t.Fatal(err)
	}
	// Back-date the file: a rebuild would give it a new mtime.
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(so, old, old); err != nil {
		t.Fatal(err)
	}
	so2, err := Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	st2, err := os.Stat(so2)
	if err != nil {
		t.Fatal(err)
	}
	if so2 != so || !st2.ModTime().Equal(old) || st2.Size() != st.Size() {
		t.Errorf("second Build = %s (mtime %v), want the first one %s untouched (mtime %v)", so2, st2.ModTime(), so, old)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Errorf("plugins dir holds %d entries, want only the .so (temp dirs left behind?)", len(ents))
	}
}

// A host without gcc gets a MissingError naming it, so the caller can say
// the machine, not the kernel, lacks something.
func TestBuildNoGCC(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Build(context.Background(), t.TempDir())
	var me *MissingError
	if !errors.As(err, &me) || me.What != "gcc" {
		t.Fatalf("Build without gcc: %v, want a MissingError for gcc", err)
	}
}
