package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kci-dev/kci/boot"
	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/job"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/project"
	"github.com/kci-dev/kci/vm"
	"github.com/kci-dev/kci/vm/event"
	"github.com/kci-dev/kci/vmimage"
	"github.com/kci-dev/kci/wire"
)

func init() { commands = append(commands, newRunCmd) }

// bootFlags pick the kernel and the guest for run and shell.
type bootFlags struct {
	kernel      string
	tree        string
	patches     []string
	bootTimeout time.Duration
	dir         string
	appendArgs  []string
	vmo         vmFlags
}

func (b *bootFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&b.kernel, "kernel", "", "boot this bzImage instead of building a tree's kernel")
	f.StringVar(&b.tree, "tree", "stock", "tree from kci.yaml whose kernel to build (cached) and boot")
	f.DurationVar(&b.bootTimeout, "boot-timeout", 0, "deadline for the guest agent to be ready (default 60s)")
	f.StringArrayVar(&b.appendArgs, "append", nil, "extra kernel command line argument (repeatable)")
	f.StringVar(&b.dir, "dir", "", "directory for the console log (kci shell: and the initramfs) (default: a new temporary directory)")
	b.vmo.register(f)
}

// check refuses what run and shell could not use, before the cache or
// a build: a --kernel that is not there, patches beside it, a negative
// deadline.
func (b *bootFlags) check() error {
	if b.kernel != "" {
		if err := statInput("--kernel", b.kernel); err != nil {
			return err
		}
		if len(b.patches) > 0 {
			return job.Usagef("--kernel %s boots that kernel as it is: patches are for --tree's kernel", b.kernel)
		}
	}
	for _, p := range b.patches {
		if kernel.ParseInput(p).Kind != kernel.InputPath {
			continue // - and CHECKOUT:RANGE: resolvePatches checks them
		}
		if err := statInput("patch", p); err != nil {
			return err
		}
	}
	if b.bootTimeout < 0 {
		return job.Usagef("--boot-timeout %s: want a positive duration (leave it out for 60s)", b.bootTimeout)
	}
	if b.dir != "" {
		if st, err := os.Stat(b.dir); err == nil && !st.IsDir() {
			return job.Usagef("--dir %s: not a directory", b.dir)
		}
	}
	return b.vmo.validate()
}

// resolve finds the kernel (a path, or the tree's cached build plus
// patches) and the booter kci test boots with, its initramfs built.
func (b *bootFlags) resolve(ctx context.Context, log io.Writer) (*kernel.Artifacts, *boot.VMBooter, error) {
	if err := b.check(); err != nil {
		return nil, nil, err
	}
	var builder *job.Builder
	var tree *project.Tree
	var err error
	if b.kernel != "" {
		builder, err = loadProject() // a kernel of its own: no base needed
	} else {
		builder, tree, err = newBuilder(b.tree, 0)
	}
	if err != nil {
		return nil, nil, err
	}
	booter, err := b.vmo.booter(builder.Cache.Root, builder.Project)
	if err != nil {
		return nil, nil, err
	}
	k := &kernel.Artifacts{BzImage: b.kernel}
	if b.kernel == "" {
		if k, err = b.build(ctx, builder, tree); err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(log, "kci: kernel %s\n", k.BzImage)
	}
	img, err := booter.Image(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("initramfs: %w", err)
	}
	state := "built"
	if img.Cached {
		state = "cached"
	}
	fmt.Fprintf(log, "kci: initramfs %s (%s in %v)\n", img.Path, state, img.Duration.Round(time.Millisecond))
	return k, booter, nil
}

// build is the tree's kernel plus the patches, checked before the
// tree's kernel is built, as kci test does, with its exit codes.
func (b *bootFlags) build(ctx context.Context, builder *job.Builder, tree *project.Tree) (*kernel.Artifacts, error) {
	var ps []kernel.Patch
	var err error
	if len(b.patches) > 0 {
		if ps, err = kernel.LoadSeries(b.patches...); err != nil {
			return nil, job.PatchFile(err)
		}
		if err := checkApplies(ctx, builder, tree, ps); err != nil {
			return nil, err
		}
	}
	k, err := builder.Tree(ctx, tree)
	if err != nil {
		return nil, job.Classify("tree "+tree.Name, err)
	}
	if len(ps) > 0 {
		if k, err = builder.Patched(ctx, tree, k, ps); err != nil {
			return nil, job.Classify("patched kernel of tree "+tree.Name, err)
		}
	}
	return k, nil
}

// runDir is --dir, made if missing, or a new temporary directory.
func (b *bootFlags) runDir() (string, error) {
	if b.dir == "" {
		return os.MkdirTemp("", "kci-run-")
	}
	return b.dir, os.MkdirAll(b.dir, 0o755)
}

// prepare is kci shell's guest: the kernel, the image with files
// appended, and the config with the accelerator settled through the
// booter kci test boots with.
func (b *bootFlags) prepare(ctx context.Context, log io.Writer, files ...vmimage.File) (vm.Config, error) {
	var none vm.Config
	k, booter, err := b.resolve(ctx, log)
	if err != nil {
		return none, err
	}
	img, err := booter.Image(ctx)
	if err != nil {
		return none, fmt.Errorf("initramfs: %w", err)
	}
	dir, err := b.runDir()
	if err != nil {
		return none, err
	}
	initrd := filepath.Join(dir, "initrd.cpio")
	if err := img.Compose(initrd, files...); err != nil {
		return none, err
	}
	accel, why, err := booter.ResolveAccel(ctx, k)
	if err != nil {
		return none, err
	}
	fmt.Fprintf(log, "kci: accelerator %s (%s)\n", accel, why)
	cfg := booter.VM
	cfg.Kernel, cfg.Initrd, cfg.Dir, cfg.BootTimeout = k.BzImage, initrd, dir, b.bootTimeout
	cfg.Append = append(cfg.Append, b.appendArgs...)
	return cfg, nil
}

func newRunCmd() *cobra.Command {
	var (
		bf       bootFlags
		planFile string
		stepTO   time.Duration
		quiet    bool
	)
	cmd := &cobra.Command{
		Use:   "run [--kernel BZIMAGE | --tree NAME [--patch P]...] [-- CMD...]",
		Short: "Boot a kernel and run the guest suite, or one command, printing the agent's events",
		Long: `Boot a kernel in QEMU with kci's initramfs and run, inside the guest, either
CMD (after --) or a plan: the sanity check and the survival matrix by default,
or the JSON wire.Plan in --plan. The console goes to the terminal (unless
--quiet) and to console/<tree>-run.log under --dir; the agent's events are
printed as they arrive. The boot goes through kci test's engine: the same
accelerator choice, initramfs, plan delivery and failure classes.
A run succeeds only when the agent's final done event arrives and says ok.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if stepTO <= 0 {
				return job.Usagef("--step-timeout %s: want a positive duration", stepTO)
			}
			plan := wire.Plan{Sanity: true, Survival: true, StepTimeout: stepTO}
			if planFile != "" {
				if len(args) > 0 {
					return job.Usagef("--plan and a command after --: pick one")
				}
				b, err := os.ReadFile(planFile)
				if err != nil {
					return job.Usagef("--plan %s: %v", planFile, unwrapPath(err))
				}
				if err := json.Unmarshal(b, &plan); err != nil {
					return job.Usagef("--plan %s: not a wire.Plan: %v", planFile, err)
				}
			}
			if len(args) > 0 {
				plan = wire.Plan{Command: args, StepTimeout: stepTO}
			}
			return bf.boot(cmd, plan, quiet)
		},
	}
	bf.register(cmd)
	f := cmd.Flags()
	f.StringSliceVar(&bf.patches, "patch", nil, "patches to apply to --tree's kernel first (a file, directory, mbox, series file, - for standard input, or CHECKOUT:BASE..TIP)")
	f.StringVar(&planFile, "plan", "", "a wire.Plan as JSON (default: sanity + survival)")
	f.DurationVar(&stepTO, "step-timeout", 10*time.Minute, "deadline for a guest step that sets none")
	f.BoolVarP(&quiet, "quiet", "q", false, "do not copy the console to the terminal")
	return cmd
}

// boot is kci run's one boot, through the engine kci test boots with
// (job.BootOnce): the console copied to the terminal unless quiet, the
// agent's events printed as they arrive.
func (b *bootFlags) boot(cmd *cobra.Command, plan wire.Plan, quiet bool) error {
	errOut := cmd.ErrOrStderr()
	if err := b.check(); err != nil {
		return err
	}
	in, err := verbPatches(cmd, b.patches)
	if err != nil {
		return err
	}
	defer in.Close()
	b.patches = in.paths
	k, booter, err := b.resolve(cmd.Context(), errOut)
	if err != nil {
		return err
	}
	booter.PluginDir = "" // kci run shows the agent's events, not exact counts
	dir, err := b.runDir()
	if err != nil {
		return err
	}
	o := job.OnceOptions{Dir: dir, Tree: b.tree, Log: errOut, Watch: func(ev event.Event) { printEvent(cmd.OutOrStdout(), ev) },
		Append: b.appendArgs, BootTimeout: b.bootTimeout}
	if b.kernel != "" {
		o.Tree = "kernel"
	}
	if !quiet {
		o.Tee = errOut
	}
	once, err := job.BootOnce(cmd.Context(), booter, k, plan, o)
	if once.Result != nil {
		printResult(errOut, once.Result.VM, once.Console)
	}
	return err
}

// runExit gives a failed boot kci test's exit code for its class.
func runExit(err error) error {
	if err == nil {
		return nil
	}
	code := job.BootExitCode(vm.Kind(err)) // kci test's table
	return &job.ExitError{Code: code, Cause: vm.Kind(err) + ": " + lines.First(err.Error()), Err: err}
}

// printEvent shows one agent event on one line.
func printEvent(w io.Writer, ev event.Event) {
	// decode says so when the guest sent what this kci cannot read.
	decode := func(v any) bool {
		if err := ev.Decode(v); err != nil {
			fmt.Fprintf(w, "%v: undecodable event: %v\n", ev.Type, err)
			return false
		}
		return true
	}
	switch ev.Type {
	case event.Ready:
		var h event.Hello
		if !decode(&h) {
			return
		}
		fmt.Fprintf(w, "ready: %s on %s (guest uptime %.2fs)\n", h.Agent, h.Release, h.Uptime)
	case event.StepBeg:
		var s event.StepData
		if !decode(&s) {
			return
		}
		fmt.Fprintf(w, "step: %s (timeout %v)\n", s.Name, s.Timeout)
	case event.Log:
		var s string
		if !decode(&s) {
			return
		}
		fmt.Fprintf(w, "log: %s\n", s)
	case event.Error:
		var e event.ErrorData
		if !decode(&e) {
			return
		}
		fmt.Fprintf(w, "error: %s: %s\n", e.Step, e.Message)
	case event.Cell:
		var c wire.Cell
		if !decode(&c) {
			return
		}
		verdict := "ok"
		if !c.Pass {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "cell: %-12s %-14s %-8s (expected %s) %s\n", c.Carrier, c.Path, c.Observed, c.Expected, verdict)
	case event.Variant:
		var v wire.VariantResult
		if !decode(&v) {
			return
		}
		if v.Skipped != "" {
			fmt.Fprintf(w, "variant: %s skipped: %s\n", v.Variant, v.Skipped)
			break
		}
		fmt.Fprintf(w, "variant: %s %.0f pps over %v, valid %v %s\n", v.Variant, v.PPS, v.Window, v.Valid, v.Invalid)
	default:
		data := string(ev.Data)
		if len(data) > 400 {
			data = data[:400] + "…"
		}
		fmt.Fprintf(w, "%s: %s\n", ev.Type, data)
	}
}

// printResult sums up a boot on one line, then where its console is.
func printResult(w io.Writer, res *vm.Result, console string) {
	if res == nil {
		return
	}
	var parts []string
	if res.Accel != "" {
		parts = append(parts, "accel "+strings.ToUpper(string(res.Accel)))
	}
	if res.BootToReady > 0 {
		parts = append(parts, fmt.Sprintf("boot-to-ready %v", res.BootToReady.Round(time.Millisecond)))
	}
	for _, p := range res.Pins {
		parts = append(parts, fmt.Sprintf("vCPU%d (thread %d) on CPU %d", p.VCPU, p.Thread, p.CPU))
	}
	parts = append(parts, fmt.Sprintf("done %v", res.Done), fmt.Sprintf("total %v", res.Duration.Round(time.Millisecond)))
	fmt.Fprintf(w, "kci: %s\n", strings.Join(parts, ", "))
	if console != "" {
		fmt.Fprintf(w, "kci: console log %s\n", console)
	}
}
