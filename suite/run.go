// Package suite is the guest agent's runner: inside the VM it carries
// out the host's plan for cmd/kci-guest, step by step: the sanity check
// (sanity.go), the capability probe (suite/caps), the survival matrix
// (suite/survival) and the benchmark's variants (suite/bench), each
// reported as events. What it reports are wire's types; the host never
// imports suite or the packages under it.
package suite

import (
	"context"

	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"

	"github.com/kci-dev/kci/internal/proc"
	"github.com/kci-dev/kci/suite/bench"
	"github.com/kci-dev/kci/suite/caps"
	"github.com/kci-dev/kci/suite/survival"
	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/wire"
)

// Emit sends one event to the host.
type Emit func(typ string, v any) error

// Default step timeouts, generous for TCG; Plan.StepTimeout overrides.
const (
	sanityTimeout   = time.Minute
	capsTimeout     = 2 * time.Minute
	survivalTimeout = 10 * time.Minute
	variantSlack    = 2 * time.Minute // load, attach, drain on top of the traffic phases
)

// Run carries out plan in the guest, reporting through emit: sanity first
// (a debug kernel stops the run before any number exists), then the
// capability probe, the survival matrix and the benchmark variants. It
// returns an error when the run could not be carried out; failed cells
// and invalid repetitions are results, reported in their events.
func Run(ctx context.Context, plan wire.Plan, emit Emit) error {
	if len(plan.Command) > 0 {
		// The user's own command, shown on the console as it runs. The
		// guest holds no secrets of kci's: it keeps the agent's whole
		// environment, as a shell would give it.
		// No reaper: the VM ends with the agent.
		c := proc.Cmd{Name: plan.Command[0], Args: plan.Command[1:], FullEnv: true, Tee: os.Stdout, NoReaper: true}
		if _, err := c.Run(ctx); err != nil {
			return fmt.Errorf("command %q: %w", plan.Command, err)
		}
		return nil
	}
	r := &runner{plan: plan, emit: emit}
	return r.run(ctx)
}

type runner struct {
	plan wire.Plan
	emit Emit
}

func (r *runner) step(name string, def time.Duration) error {
	d := def
	if r.plan.StepTimeout > 0 {
		d = r.plan.StepTimeout
	}
	return r.emit(event.StepBeg, event.StepData{Name: name, Timeout: d})
}

func (r *runner) logf(format string, args ...any) {
	_ = r.emit(event.Log, fmt.Sprintf(format, args...)) // progress only: a lost line is no failure
}

func (r *runner) run(ctx context.Context) error {
	if err := r.step("sanity", sanityTimeout); err != nil {
		return err
	}
	s := checkSanity(gatherSanity())
	if err := r.emit(event.Sanity, s); err != nil {
		return err
	}
	if len(s.Problems) > 0 && r.plan.Sanity {
		return fmt.Errorf("sanity: refusing to measure: %s", strings.Join(s.Problems, "; "))
	}
	if !r.plan.Survival && len(r.plan.Variants) == 0 {
		return nil
	}
	have, env, err := r.caps(s)
	if err != nil {
		return err
	}
	if env != nil {
		defer func() { _ = env.Close() }() // the guest powers off next: a failed detach loses nothing
	}
	if r.plan.Survival {
		if err := r.survival(ctx, have); err != nil {
			return err
		}
	}
	p := bench.WithDefaults(r.plan.Bench)
	for i, name := range r.plan.Variants {
		v, err := bench.Lookup(name)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		if err := r.step("bench/"+name, p.ServerLead+p.Warmup+p.Window+variantSlack); err != nil {
			return err
		}
		r.logf("bench: variant %d/%d %s", i+1, len(r.plan.Variants), name)
		res, err := env.Run(ctx, v, p, name)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		if err := r.emit(event.Variant, res); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// caps probes what the kernel offers BPF and reports it: what the
// measuring steps may run. With variants to run it also starts the
// bench's environment, from before the survival matrix as it always was
// (nil without variants).
func (r *runner) caps(s wire.Sanity) (wire.Caps, *bench.Env, error) {
	var have wire.Caps
	if err := r.step("caps", capsTimeout); err != nil {
		return have, nil, err
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		return have, nil, fmt.Errorf("caps: %w", err)
	}
	kernel, err := btf.LoadKernelSpec()
	if err != nil {
		return have, nil, fmt.Errorf("caps: kernel BTF (/sys/kernel/btf/vmlinux): %w", err)
	}
	if have, err = caps.Probe(kernel); err != nil {
		return have, nil, fmt.Errorf("caps: %w", err)
	}
	if err := r.emit(event.Caps, have); err != nil {
		return have, nil, err
	}
	if len(r.plan.Variants) == 0 {
		return have, nil, nil
	}
	set := bench.Setup{Kernel: kernel, Caps: have, NCPU: max(s.NumCPU, 1), Logf: r.logf}
	if r.plan.Profile {
		set.Profile = func(p wire.Profile) error { return r.emit(event.Profile, p) }
	}
	env := bench.Start(set)
	r.logf("bench: GODEBUG=%q (the traffic wants asyncpreemptoff=1)", os.Getenv("GODEBUG"))
	return have, env, nil
}

// survival runs the matrix, a cell event each, and logs the failures.
func (r *runner) survival(ctx context.Context, have wire.Caps) error {
	if err := r.step("survival", survivalTimeout); err != nil {
		return err
	}
	var total int
	var failures []string
	err := survival.Run(ctx, have, func(c wire.Cell) error {
		total++
		if !c.Pass {
			failures = append(failures, c.Carrier+"×"+c.Path)
		}
		return r.emit(event.Cell, c)
	})
	if err != nil {
		return fmt.Errorf("survival: %w", err)
	}
	if len(failures) > 0 {
		r.logf("survival: %d of %d cells failed: %s", len(failures), total, strings.Join(failures, ", "))
	} else {
		r.logf("survival: %d cells as expected", total)
	}
	return nil
}
