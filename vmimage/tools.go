//go:build tools

// This file is never built. It records the u-root commands vmimage compiles
// into the initramfs (from the module context, via go list) as imports, so
// `go mod tidy` keeps their dependencies in go.mod and go.sum.
package vmimage

import (
	_ "github.com/u-root/u-root/cmds/core/cat"
	_ "github.com/u-root/u-root/cmds/core/chmod"
	_ "github.com/u-root/u-root/cmds/core/cp"
	_ "github.com/u-root/u-root/cmds/core/cpio"
	_ "github.com/u-root/u-root/cmds/core/df"
	_ "github.com/u-root/u-root/cmds/core/dmesg"
	_ "github.com/u-root/u-root/cmds/core/echo"
	_ "github.com/u-root/u-root/cmds/core/false"
	_ "github.com/u-root/u-root/cmds/core/find"
	_ "github.com/u-root/u-root/cmds/core/free"
	_ "github.com/u-root/u-root/cmds/core/gosh"
	_ "github.com/u-root/u-root/cmds/core/grep"
	_ "github.com/u-root/u-root/cmds/core/head"
	_ "github.com/u-root/u-root/cmds/core/hexdump"
	_ "github.com/u-root/u-root/cmds/core/init"
	_ "github.com/u-root/u-root/cmds/core/ip"
	_ "github.com/u-root/u-root/cmds/core/kill"
	_ "github.com/u-root/u-root/cmds/core/ln"
	_ "github.com/u-root/u-root/cmds/core/ls"
	_ "github.com/u-root/u-root/cmds/core/mkdir"
	_ "github.com/u-root/u-root/cmds/core/mknod"
	_ "github.com/u-root/u-root/cmds/core/more"
	_ "github.com/u-root/u-root/cmds/core/mount"
	_ "github.com/u-root/u-root/cmds/core/mv"
	_ "github.com/u-root/u-root/cmds/core/poweroff"
	_ "github.com/u-root/u-root/cmds/core/ps"
	_ "github.com/u-root/u-root/cmds/core/pwd"
	_ "github.com/u-root/u-root/cmds/core/rm"
	_ "github.com/u-root/u-root/cmds/core/shutdown"
	_ "github.com/u-root/u-root/cmds/core/sleep"
	_ "github.com/u-root/u-root/cmds/core/strace"
	_ "github.com/u-root/u-root/cmds/core/sync"
	_ "github.com/u-root/u-root/cmds/core/tail"
	_ "github.com/u-root/u-root/cmds/core/true"
	_ "github.com/u-root/u-root/cmds/core/umount"
	_ "github.com/u-root/u-root/cmds/core/uname"
	_ "github.com/u-root/u-root/cmds/core/uptime"
	_ "github.com/u-root/u-root/cmds/core/wc"
)
