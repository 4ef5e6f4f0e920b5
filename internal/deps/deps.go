// Package deps pins the project's third-party modules while the stages that
// use them are written in parallel; it is deleted once every one is imported
// by real code.
package deps

import (
	_ "github.com/cilium/ebpf"
	_ "github.com/digitalocean/go-qemu/qmp"
	_ "github.com/google/go-github/v60/github"
	_ "github.com/rhysd/actionlint"
	_ "github.com/schollz/progressbar/v3"
	_ "github.com/spf13/cobra"
	_ "github.com/u-root/mkuimage/uimage"
	_ "github.com/u-root/u-root/pkg/cpio"
	_ "golang.org/x/perf/benchmath"
	_ "gopkg.in/yaml.v3"
)
