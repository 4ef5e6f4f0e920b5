package kernel

import (
	"embed"
	"os"
	"path/filepath"

	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/internal/keyhash"
)

//go:embed config/kci.config config/production.config
var builtinFragments embed.FS

// RequiredFragments materialises kci's own fragments (what the suite needs,
// then the production-like performance settings) in the cache and returns
// their paths, so violations can cite file:line.
func (c *Cache) RequiredFragments() ([]string, error) {
	var paths []string
	for _, name := range []string{"kci.config", "production.config"} {
		data, err := builtinFragments.ReadFile("config/" + name)
		if err != nil {
			return nil, err
		}
		p := c.path(cachedir.Fragments, keyhash.Strings(string(data))[:12], name)
		if _, err := os.Stat(p); err != nil {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, infra("fragments", err)
			}
			tmp := p + ".tmp"
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				return nil, infra("fragments", err)
			}
			if err := os.Rename(tmp, p); err != nil {
				return nil, infra("fragments", err)
			}
		}
		paths = append(paths, p)
	}
	return paths, nil
}
