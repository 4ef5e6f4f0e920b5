// Package kci embeds the default project (kci.yaml and the fixture series
// under patches/) so the kci binary works outside a checkout.
package kci

import "embed"

//go:embed kci.yaml patches
var Default embed.FS
