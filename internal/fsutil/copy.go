// Package fsutil holds the one file copy kci uses.
package fsutil

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// CopyFile copies from to to, creating to's directory and replacing to.
// A nil root is the plain filesystem; a non-nil one confines the name to it
// (e.g. shards of a merge, whose names come from files kci did not write).
// Every error is returned, the destination's Close included: a short copy
// must not pass for a whole one.
func CopyFile(srcRoot *os.Root, from string, dstRoot *os.Root, to string) (err error) {
	in, err := open(srcRoot, from)
	if err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	defer func() {
		// Read-only: a close error loses nothing, but is still reported.
		if cerr := in.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("copy %s: %w", from, cerr)
		}
	}()
	if err := mkdirAll(dstRoot, filepath.Dir(to)); err != nil {
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	out, err := create(dstRoot, to)
	if err != nil {
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	_, werr := io.Copy(out, in)
	if err := errors.Join(werr, out.Close()); err != nil {
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	return nil
}

func open(r *os.Root, name string) (*os.File, error) {
	if r == nil {
		return os.Open(name)
	}
	return r.Open(name)
}

func create(r *os.Root, name string) (*os.File, error) {
	if r == nil {
		return os.Create(name)
	}
	return r.Create(name)
}

func mkdirAll(r *os.Root, dir string) error {
	if r == nil {
		return os.MkdirAll(dir, 0o755)
	}
	return r.MkdirAll(dir, 0o755)
}
