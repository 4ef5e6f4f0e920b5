package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/kci-dev/kci/vm"
)

func init() { commands = append(commands, newShellCmd) }

func newShellCmd() *cobra.Command {
	var bf bootFlags
	cmd := &cobra.Command{
		Use:   "shell [--kernel BZIMAGE | --tree NAME] [PATCH...]",
		Short: "Boot a kernel into an interactive u-root shell, for debugging a patch by hand",
		Long: `Boot a kernel (a bzImage, or a tree's kernel plus patches, built and cached
as by kci build) with kci's initramfs, and attach the serial console to this
terminal. Without a plan the guest agent says ready and becomes u-root's
shell. Leave with "shutdown reboot" (QEMU runs with -no-reboot; kci's kernels
have no ACPI, so poweroff only halts) or Ctrl-A x. The console is also written
to console.log.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			bf.patches = args
			errOut := cmd.ErrOrStderr()
			cfg, err := bf.prepare(cmd.Context(), errOut)
			if err != nil {
				return err
			}
			cfg.Interactive = true
			// QEMU puts the terminal in raw mode; should it die without
			// restoring it, this does.
			if fd := int(os.Stdin.Fd()); term.IsTerminal(fd) {
				if st, err := term.GetState(fd); err == nil {
					defer func() { _ = term.Restore(fd, st) }() // nothing left to do if the terminal is gone
				}
			}
			fmt.Fprintln(errOut, "kci: booting; leave the shell with 'shutdown reboot' or Ctrl-A x")
			res, err := vm.Run(cmd.Context(), cfg, nil)
			if res != nil {
				printResult(errOut, res, res.Console)
			}
			return runExit(err)
		},
	}
	bf.register(cmd)
	return cmd
}
