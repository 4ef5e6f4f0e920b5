package kernel

import "github.com/kci-dev/kci/internal/keyhash"

// hashStrings is the one key hash of kci's caches, shared with vmimage/.
func hashStrings(parts ...string) string { return keyhash.Strings(parts...) }
