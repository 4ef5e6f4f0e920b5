// Package kernel is kci's first stage: from a tree of kci.yaml to a
// bootable, verified kernel. It unpacks the base source (source.go), keeps
// a worktree per tree and a build directory per kernel (workspace.go),
// loads and applies patches, series files and mboxes (patch.go), merges the
// tree's config fragments and verifies every requested option and every
// forbidden debug option after olddefconfig (config.go, verify.go, the
// list in internal/kconfig that the guest checks too), builds
// incrementally with ccache when there is one (build.go, buildsteps.go,
// cc.go), checks the bzImage boots the vmlinux just built (bzimage.go),
// and caches each kernel under the hash of its inputs (cache.go; the
// cache's layout, locks, listing and pruning are internal/cachedir's,
// and repair.go clears what killed builds left in build trees). A
// build's new compiler warnings (warnings.go), checkpatch.pl's findings
// (checkpatch.go) and the config's drift from a production config
// (drift.go) are facts of the build for the stages after it. It imports no
// later stage.
package kernel
