package vm

import "context"

// ResolveAccel turns cfg.Accel auto into kvm or tcg, probing KVM with a
// bounded boot of cfg's kernel and initramfs when no verdict is cached for
// this host, and says why.
func ResolveAccel(ctx context.Context, cfg Config) (Accel, string, error) {
	return resolveAccel(ctx, cfg.withDefaults())
}
