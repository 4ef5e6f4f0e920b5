package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/doctor"
	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/vmimage"
)

func init() { commands = append(commands, newDoctorCmd) }

func newDoctorCmd() *cobra.Command {
	var (
		kernelPath string
		pin        string
		clang      bool
	)
	cmd := &cobra.Command{
		Use:   "doctor [--kernel BZIMAGE] [--pin CPUS]",
		Short: "Check the host: KVM for real, halt polling, CPU frequency, disk, memory, toolchain, base source",
		Long: `Check what makes kci's numbers valid or possible: whether KVM really runs a
guest (a bounded probe boot, remembered per host; --kernel probes now if no
verdict is cached), KVM halt polling, CPU frequency clamping on the CPUs vCPUs
are pinned to, room for a kernel build, the toolchain, and the default base
source. Exits 1 only when something makes results invalid or impossible;
warnings say what the numbers will lack.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			// The inputs first: the probe's initramfs takes a minute to build.
			pinned, err := checkPin(pin)
			if err != nil {
				return err
			}
			if kernelPath != "" {
				if err := statInput("--kernel", kernelPath); err != nil {
					return err
				}
			}
			cache, err := kernel.DefaultCache()
			if err != nil {
				return err
			}
			o := doctor.Options{CacheDir: cache.Root, NeedClang: clang, Pin: pinned}
			if kernelPath != "" {
				img, err := vmimage.Build(ctx, vmimage.Options{CacheDir: cache.Root, Log: cmd.ErrOrStderr()})
				if err != nil {
					return err
				}
				o.Kernel, o.Initrd = kernelPath, img.Path
			}
			checks := doctor.Run(ctx, o)
			// The size first: Repair moves what it clears to the trash, which
			// the size line would then count as a killed run's leftover.
			checks = append(checks, doctor.CheckCache(ctx, &cachedir.Cache{Root: cache.Root}), cacheHealth(cache.Repair(ctx)))
			if err := doctor.Write(cmd.OutOrStdout(), checks); err != nil {
				return err
			}
			if doctor.Failed(checks) {
				return &job.ExitError{Code: job.ExitInternal, Cause: "doctor: results would be invalid or impossible on this host"}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&kernelPath, "kernel", "", "probe KVM by booting this bzImage if no verdict is cached")
	f.StringVar(&pin, "pin", "", "host CPUs vCPUs are pinned to (checked for frequency clamping; default: all)")
	f.BoolVar(&clang, "clang", false, "also require clang (rebuilding the BPF objects)")
	return cmd
}

// cacheHealth is the doctor's line for what interrupted runs left in the
// cache, which Repair has just cleared.
func cacheHealth(fixed []string, err error) doctor.Check {
	c := doctor.Check{Name: "cache health", Status: doctor.OK, Detail: "nothing left by interrupted runs"}
	switch {
	case err != nil:
		c.Status, c.Detail = doctor.Warn, err.Error()
	case len(fixed) > 0:
		c.Detail = fmt.Sprintf("repaired %d things interrupted runs left: %s", len(fixed), strings.Join(fixed, "; "))
	}
	return c
}
