// Command kci-uroot builds u-root's busybox initramfs layer for kci's
// vmimage: the u-root commands given as arguments, with init, in one newc
// cpio. vmimage builds and runs it as a child rather than linking
// mkuimage: mkuimage runs the Go toolchain without a context, so only a
// child's process group can be killed on ^C, and its dependencies (x/tools)
// create a cache directory in $HOME when kci merely starts.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/u-root/gobusybox/src/pkg/golang"
	"github.com/u-root/mkuimage/uimage"
	"github.com/u-root/uio/llog"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kci-uroot:", err)
		os.Exit(1)
	}
}

// run parses -o, -tmp, -src and -shell and builds the packages named by
// the arguments (full import paths) into the cpio -o.
func run(args []string, log io.Writer) error {
	fs := flag.NewFlagSet("kci-uroot", flag.ContinueOnError)
	fs.SetOutput(log)
	out := fs.String("o", "", "the cpio to write")
	tmp := fs.String("tmp", "", "a directory for the build's temporary files")
	src := fs.String("src", ".", "the module context the commands are built in")
	shell := fs.String("shell", "", "the default shell among the commands (none: no shell)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || *tmp == "" || fs.NArg() == 0 {
		return errors.New("usage: kci-uroot -o CPIO -tmp DIR [-src DIR] [-shell CMD] PKG [PKG]")
	}
	l := llog.New(slog.LevelInfo, func(format string, v ...any) {
		fmt.Fprintf(log, "vmimage: "+format+"\n", v...)
	})
	return uimage.Create(l,
		uimage.WithReplaceEnv(golang.Default(golang.WithWorkingDir(*src), golang.DisableCGO())),
		uimage.WithTempDir(*tmp),
		uimage.WithBaseArchive(uimage.DefaultRamfs()),
		uimage.WithBusyboxCommands(fs.Args()...),
		uimage.WithInit("init"),
		uimage.WithShell(*shell),
		uimage.WithSkipLDD(),
		uimage.WithCPIOOutput(*out),
	)
}
