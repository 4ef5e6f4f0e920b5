package cachedir

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPrune(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	// 7 images: ages 0..6 days; the 4 newest stay, and so does anything
	// younger than a day.
	for i := 0; i < 7; i++ {
		p := filepath.Join(dir, fmt.Sprintf("img%d.cpio", i))
		os.WriteFile(p, nil, 0o444)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("img%d.lock", i)), nil, 0o644)
		at := now.Add(-time.Duration(i) * 24 * time.Hour)
		os.Chtimes(p, at, at)
	}
	other := filepath.Join(dir, "keep.txt")
	os.WriteFile(other, nil, 0o644)
	prune(filepath.Join(dir, "*.cpio"), now)
	for i := 0; i < 7; i++ {
		_, err := os.Stat(filepath.Join(dir, fmt.Sprintf("img%d.cpio", i)))
		_, lerr := os.Stat(filepath.Join(dir, fmt.Sprintf("img%d.lock", i)))
		if kept := err == nil; kept != (i < keepImages) || (lerr == nil) != kept {
			t.Errorf("img%d (%d days old): kept %v, lock kept %v", i, i, kept, lerr == nil)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Error("prune removed a file outside its pattern")
	}
}
