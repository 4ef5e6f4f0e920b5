package kernel

import (
	"bytes"
	_ "embed"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kci-dev/kci/internal/cachedir"
)

//go:embed kci-cc.sh
var ccScript []byte

// compiler is the CC (and HOSTCC) of kci's kernel builds: kci-cc, ccache
// in depend mode but for the sources it cannot cache (kci-cc.sh says
// why), when ccache is installed. A cache path make could not take as
// one word falls back to ccache's default mode: as safe, slower when cold.
func (c *Cache) compiler() (string, error) {
	if _, err := exec.LookPath("ccache"); err != nil {
		return "gcc", nil
	}
	p := c.path(cachedir.Bin, "kci-cc")
	if strings.ContainsAny(p, " \t\n'\"\\$#%;&|<>()`*?[]{}~=:") {
		return "ccache gcc", nil
	}
	if cur, err := os.ReadFile(p); err == nil && bytes.Equal(cur, ccScript) {
		return p, nil
	}
	// Another process may write it at the same time: each renames a
	// whole file into place.
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return "", infra("compiler wrapper", err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".kci-cc-*")
	if err != nil {
		return "", infra("compiler wrapper", err)
	}
	defer func() { _ = os.Remove(f.Name()) }() // gone after the rename; else a leftover
	_, werr := f.Write(ccScript)
	cerr := f.Close()
	for _, err := range []error{werr, cerr, os.Chmod(f.Name(), 0o755), os.Rename(f.Name(), p)} {
		if err != nil {
			return "", infra("compiler wrapper", err)
		}
	}
	return p, nil
}
