package bpf

import "github.com/cilium/ebpf"

// The profiler is not a benchmark object, so it is generated here rather
// than in gen.go (whose lines are one per benchmark object) and is not
// listed by Objects.

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target amd64 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" profile c/profile.bpf.c

// Profile object layout (c/profile.bpf.c).
const (
	ProfileProgram    = "profile_sample"
	ProfileStacksMap  = "stacks"
	ProfileCountsMap  = "counts"
	ProfileDroppedMap = "dropped"
	// ProfileStackDepth is the frames per stack-trace map value.
	ProfileStackDepth = 127
)

// ProfileKey is the counts map key: a task name and its kernel stack id
// (negative: the errno bpf_get_stackid returned, -EFAULT for a sample
// taken in user mode).
type ProfileKey = profileProfileKey

// ProfileSpec returns a fresh, unloaded spec of the CPU sampler.
func ProfileSpec() (*ebpf.CollectionSpec, error) {
	return loadProfile()
}
