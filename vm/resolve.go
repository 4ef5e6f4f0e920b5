package vm

import "context"

// Resolve turns cfg.Accel auto into kvm or tcg, probing KVM with a
// bounded boot of cfg's kernel and initramfs when no choice is cached for
// this host, and picks the -cpu model: the choice says which and why.
func Resolve(ctx context.Context, cfg Config) (AccelChoice, error) {
	return resolveAccel(ctx, cfg.withDefaults())
}
