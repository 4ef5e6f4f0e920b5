package vm

import "context"

// Resolve turns cfg.Accel auto into kvm or tcg, probing KVM with a
// bounded boot of cfg's kernel and initramfs when no verdict is cached for
// this host, and picks the -cpu model: the verdict says which and why.
func Resolve(ctx context.Context, cfg Config) (Verdict, error) {
	return resolveAccel(ctx, cfg.withDefaults())
}
