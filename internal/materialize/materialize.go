// Package materialize writes an embedded file tree into kci's cache once
// per content, so an installed kci binary carries what it needs (the
// default project, the guest agent's sources) and works from any
// directory on a machine that has never seen kci.
package materialize

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Dir returns root/kind/<content hash>, holding every file of fsys. It is
// written through a temporary directory and renamed into place, so
// concurrent first uses (test packages starting at once on an empty
// cache) are safe and readers never see half a tree. One directory per
// content: files a newer kci dropped never linger.
func Dir(fsys fs.FS, root, kind string) (string, error) {
	var files []string
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		files = append(files, p)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("materialize %s: %w", kind, err)
	}
	dir := filepath.Join(root, kind, hex.EncodeToString(h.Sum(nil))[:16])
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := write(fsys, files, dir); err != nil {
		return "", fmt.Errorf("materialize %s in %s: %w", kind, root, err)
	}
	return dir, nil
}

func write(fsys fs.FS, files []string, dir string) error {
	// The cache root may not exist yet: a brand-new machine.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tmp-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }() // no-op after the rename
	for _, p := range files {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(tmp, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process published the same content first.
		if _, serr := os.Stat(dir); serr == nil {
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}
