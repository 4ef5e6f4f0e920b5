package vmimage

import (
	"fmt"
	"io"
	"os"
)

// concatFiles appends cpio archives, each padded to 4 bytes: the kernel
// only recognises the next archive's header at an aligned offset.
func concatFiles(w io.Writer, paths ...string) error {
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		n, err := io.Copy(w, f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("copy %s: %w", p, err)
		}
		if pad := (4 - n%4) % 4; pad > 0 {
			if _, err := w.Write(make([]byte, pad)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Compose writes the initrd for one run to dst: the image followed by a
// small cpio holding files (e.g. the plan at wire.PlanPath). Later
// archives override earlier ones when the kernel unpacks them.
func (img *Image) Compose(dst string, files ...File) error {
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("vmimage: run image: %w", err)
	}
	err = concatFiles(f, img.Path)
	if err == nil && len(files) > 0 {
		err = writeCPIO(f, files)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("vmimage: run image %s: %w", dst, err)
	}
	return nil
}
