// Package keyhash computes the content keys of kci's caches (kernels,
// fragments, initramfs layers). Every cache hashes its parts the same way,
// so a key never changes with the package that computes it.
package keyhash

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Strings is the hex SHA-256 of parts, each written as "len:part\n": the
// length prefix keeps ("ab", "c") and ("a", "bc") apart.
func Strings(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s\n", len(p), p)
	}
	return hex.EncodeToString(h.Sum(nil))
}
