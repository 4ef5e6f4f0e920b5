// Package suite is the guest side of kci: sanity checks, capability probe,
// survival matrix and benchmark, run by cmd/kci-guest inside the VM.
package suite

import (
	"context"
	"fmt"
	"os"
	"os/exec"
)

// Emit sends one event to the host.
type Emit func(typ string, v any) error

// Run carries out plan in the guest, reporting through emit.
func Run(ctx context.Context, plan Plan, emit Emit) error {
	if len(plan.Command) > 0 {
		cmd := exec.CommandContext(ctx, plan.Command[0], plan.Command[1:]...)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("command %q: %w", plan.Command, err)
		}
	}
	return nil
}
