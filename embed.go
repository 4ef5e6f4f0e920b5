// Package kci embeds what an installed kci binary needs outside a
// checkout: the default project (kci.yaml and the fixture series under
// patches/) and the sources of the guest agent, which kci builds into the
// initramfs with the Go toolchain.
package kci

import "embed"

//go:embed kci.yaml patches
var Default embed.FS

// AgentSource is the module context the guest agent and u-root's commands
// are built in: go.mod, go.sum and every package of this module the agent
// imports, with their embedded files, and cmd/kci-uroot, which builds
// u-root's layer. It is the source this binary was built from, so host and
// guest always speak the same protocol.
// TestAgentSourceComplete keeps the list in step with the imports.
//
//go:embed go.mod go.sum cmd/kci-guest/*.go suite/*.go suite/*/*.go suite/bench/*.s wire/*.go vm/event/*.go
//go:embed bpf/*.go bpf/*.o internal/childenv/*.go internal/kconfig/*.go
//go:embed internal/lines/*.go internal/proc/*.go cmd/kci-uroot/*.go
var AgentSource embed.FS
