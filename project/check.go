package project

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/names"
	"github.com/kci-dev/kci/kernel"
	"github.com/kci-dev/kci/vm"
	"github.com/kci-dev/kci/wire"
)

// at is an error about the value at path, with its line.
func (f *File) at(path, format string, a ...any) error {
	return &lineError{file: f.Path, line: f.lines[path], msg: path + ": " + fmt.Sprintf(format, a...)}
}

// yamlLine is the line yaml.v3 puts in its syntax errors.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func syntaxError(name string, err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		// yaml.v3 counts a parser error's line from 0 (its scanner errors
		// from 1): the parser's problems are all "did not find expected …".
		if strings.HasPrefix(m[2], "did not find expected") {
			line++
		}
		return &lineError{file: name, line: line, msg: m[2]}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// check refuses values out of range, before any build: what kci would
// otherwise find (or silently replace by a default) much later.
func (f *File) check() error {
	if err := f.checkTrees(); err != nil {
		return err
	}
	if f.Reps < 0 {
		return f.at("reps", "%d: want 1 or more (0 or leave it out: by the clock)", f.Reps)
	}
	if err := f.checkVM(); err != nil {
		return err
	}
	return f.checkBench()
}

func (f *File) checkTrees() error {
	seen := map[string]bool{}
	for i, t := range f.Trees {
		p := fmt.Sprintf("trees[%d]", i)
		if t.Name == "" {
			return f.at(p, "has no name")
		}
		// The name becomes a file name, a comment marker and a check
		// name; refusing here names the line's author, not the poster.
		if err := names.Tree(t.Name); err != nil {
			return f.at(p+".name", "%v", err)
		}
		if seen[t.Name] {
			return f.at(p+".name", "tree %q defined twice", t.Name)
		}
		seen[t.Name] = true
	}
	if len(f.Trees) == 0 {
		return &lineError{file: f.Path, msg: "no trees (want at least one, e.g. trees: [{name: stock}])"}
	}
	return nil
}

func (f *File) checkVM() error {
	v := f.VM
	switch {
	case v.CPUs < 0:
		return f.at("vm.cpus", "%d: want 1 or more (0 or leave it out: the default)", v.CPUs)
	case v.MemoryMiB < 0 || (v.MemoryMiB > 0 && v.MemoryMiB < 64):
		return f.at("vm.memory_mib", "%d: want 64 or more (MiB)", v.MemoryMiB)
	}
	if _, err := vm.ParseAccel(v.Accel); err != nil {
		return f.at("vm.accel", "%v", err)
	}
	if _, err := vm.ParseClock(v.Clock); err != nil {
		return f.at("vm.clock", "%v", err)
	}
	if v.Pin != "" {
		if _, err := vm.ParseCPUList(v.Pin); err != nil {
			return f.at("vm.pin", "%v", err)
		}
	}
	return nil
}

func (f *File) checkBench() error {
	b := f.Bench
	seen := map[string]bool{}
	for i, n := range b.Variants {
		p := fmt.Sprintf("bench.variants[%d]", i)
		if err := wire.CheckVariant(n); err != nil {
			return f.at(p, "%v", err)
		}
		if seen[n] {
			return f.at(p, "variant %q named twice", n)
		}
		seen[n] = true
	}
	for path, v := range map[string]float64{"bench.pairs": float64(b.Pairs), "bench.payload_size": float64(b.PayloadSize),
		"bench.rate_mbit": b.RateMbit, "bench.emulated_rate_mbit": b.EmulatedRateMbit} {
		if v < 0 {
			return f.at(path, "%g: must not be negative (0 or leave it out: the default)", v)
		}
	}
	for path, d := range map[string]time.Duration{"bench.server_lead": b.ServerLead, "bench.warmup": b.Warmup, "bench.window": b.Window,
		"bench.emulated_lead": b.EmulatedLead, "bench.emulated_warmup": b.EmulatedWarmup, "bench.emulated_window": b.EmulatedWindow} {
		if d < 0 {
			return f.at(path, "%s: must not be negative (0 or leave it out: the default)", d)
		}
	}
	return nil
}

// checkPaths refuses series and fragments that are not there, resolved
// against the project file's directory (as the build will), before the
// build finds out.
func (f *File) checkPaths() error {
	exists := func(path, p string) error {
		_, err := os.Stat(f.Abs(p))
		if errors.Is(err, fs.ErrNotExist) {
			return f.at(path, "%s: no such file or directory (%s)", p, f.Abs(p))
		}
		if err != nil {
			return f.at(path, "%v", err)
		}
		return nil
	}
	for i, t := range f.Trees {
		for j, s := range t.Series {
			if err := exists(fmt.Sprintf("trees[%d].series[%d]", i, j), s); err != nil {
				return err
			}
		}
		for j, s := range t.Fragments {
			if err := exists(fmt.Sprintf("trees[%d].fragments[%d]", i, j), s); err != nil {
				return err
			}
		}
	}
	for j, s := range f.Config.Fragments {
		if err := exists(fmt.Sprintf("config.fragments[%d]", j), s); err != nil {
			return err
		}
	}
	if c := f.Config.Base; c != "" && c != "tinyconfig" && c != "defconfig" {
		return exists("config.base", c)
	}
	return nil
}

// debPackage is the Debian package that ships /usr/src/NAME.tar.xz:
// linux-source-6.12 for linux-source-6.12.tar.xz; "" for other files.
var debPackage = regexp.MustCompile(`^(linux-source-[0-9.]+)\.tar(\.[a-z0-9]+)?$`)

// CheckBase refuses a base that is not there (a tarball or a git
// checkout), with its line and, for Debian's tarball, the package that
// provides it: the build would otherwise find out inside a run, after
// minutes. Only verbs that build call it (kci run --kernel needs none).
func (f *File) CheckBase() error {
	b := f.Base
	switch {
	case b.Tarball == "" && b.Git == "":
		return &lineError{file: f.Path, msg: "base: want tarball: FILE or git: DIR"}
	case b.Tarball != "":
		p := f.Abs(b.Tarball)
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			hint := "name a kernel source tarball, or base.git a checkout of yours"
			if m := debPackage.FindStringSubmatch(filepath.Base(p)); m != nil {
				hint = fmt.Sprintf("Debian's %s package provides it: apt-get install %s (or base.git: a checkout of yours)", m[1], m[1])
			}
			return f.at("base.tarball", "%s: no such file: %s", b.Tarball, hint)
		}
		if err == nil && st.IsDir() {
			return f.at("base.tarball", "%s: a directory, not a tarball (a checkout goes in base.git)", b.Tarball)
		}
		if err != nil {
			return f.at("base.tarball", "%v", err)
		}
	default:
		st, err := os.Stat(f.Abs(b.Git))
		if err != nil {
			return f.at("base.git", "%v", err)
		}
		if !st.IsDir() {
			return f.at("base.git", "%s: not a directory (a tarball goes in base.tarball)", b.Git)
		}
		return f.checkRef()
	}
	return nil
}

// checkRef refuses a base.git that is not a checkout and a base.ref that
// is not a commit of it, as the missing tarball is: named with its line,
// before the import fetches it.
func (f *File) checkRef() error {
	dir := f.Abs(f.Base.Git)
	err := kernel.CheckRef(context.Background(), dir, f.Base.Ref) // git rev-parse, bounded by kernel's timeout
	var ie *kernel.InputError
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &ie):
		return err
	case ie.What == "base.git":
		return f.at("base.git", "%s: %s", f.Base.Git, ie.Msg)
	}
	return f.at(ie.What, "%s: %s", ie.Arg, ie.Msg)
}
