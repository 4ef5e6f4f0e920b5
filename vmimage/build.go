package vmimage

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/internal/proc"
	"github.com/u-root/u-root/pkg/cpio"
)

// buildFlags build the agent: static, reproducible, small.
const buildFlags = "-trimpath -ldflags=-s -w"

// Deadlines for the Go toolchain; a cold busybox build on two busy cores
// takes a few minutes.
const (
	goQueryTimeout = 2 * time.Minute
	goBuildTimeout = 15 * time.Minute
)

const urootCmds = "github.com/u-root/u-root/cmds/core/"

// buildURootLayer builds (or finds) the cached u-root busybox cpio at path.
func buildURootLayer(ctx context.Context, o Options, env toolEnv, path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := hasInit(o.Commands); err != nil {
		return err
	}
	fmt.Fprintf(o.Log, "vmimage: building u-root %s busybox (%d commands)\n", env.URoot, len(o.Commands))
	var pkgs []string
	for _, c := range o.Commands {
		pkgs = append(pkgs, urootCmds+c)
	}
	err := cachedir.PublishFile(path, func(w io.Writer) error {
		tmp, err := os.MkdirTemp("", "kci-uroot-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		out := filepath.Join(tmp, "uroot.cpio")
		if err := runURootBuilder(ctx, o, tmp, out, pkgs); err != nil {
			return err
		}
		f, err := os.Open(out)
		if err != nil {
			return err
		}
		defer func() { _ = f.Close() }()
		_, err = io.Copy(w, f)
		return err
	})
	if err != nil {
		return fmt.Errorf("vmimage: %w", err)
	}
	return nil
}

// URootBuilder is the command that builds the u-root layer. It runs as a
// child, not linked into kci: mkuimage runs the Go toolchain without a
// context, so a canceled kci could only wait for its builds to end, and
// SIGKILL would leave them running; as a child of proc its whole group is
// killed on cancel and when kci dies.
const URootBuilder = "github.com/kci-dev/kci/cmd/kci-uroot"

// runURootBuilder compiles URootBuilder into tmp and runs it to write the
// u-root busybox cpio out.
func runURootBuilder(ctx context.Context, o Options, tmp, out string, pkgs []string) error {
	bin := filepath.Join(tmp, "kci-uroot")
	if _, err := goCmd(ctx, o.SourceDir, []string{"CGO_ENABLED=0"}, "build", "-o", bin, URootBuilder); err != nil {
		return err
	}
	args := append([]string{"-o", out, "-tmp", tmp, "-src", o.SourceDir, "-shell", shellOf(o.Commands)}, pkgs...)
	_, err := proc.Cmd{Name: bin, Args: args, Dir: o.SourceDir, Timeout: goBuildTimeout, Tee: o.Log}.Run(ctx)
	if err != nil {
		return fmt.Errorf("u-root busybox: %w", err)
	}
	return nil
}

func hasInit(cmds []string) error {
	for _, c := range cmds {
		if c == "init" {
			return nil
		}
	}
	return fmt.Errorf("vmimage: command set %v lacks u-root's init", cmds)
}

// shellOf picks the default shell among the commands; none is allowed
// (an image that only runs plans).
func shellOf(cmds []string) string {
	for _, c := range cmds {
		if c == "gosh" {
			return c
		}
	}
	return ""
}

// buildAgentLayer compiles the agent and wraps it in a cpio with the
// /bin/uinit link u-root's init runs.
func buildAgentLayer(ctx context.Context, o Options, env toolEnv, key, path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	fmt.Fprintf(o.Log, "vmimage: building %s\n", AgentPackage)
	err := cachedir.PublishFile(path, func(w io.Writer) error {
		tmp, err := os.MkdirTemp("", "kci-agent-")
		if err != nil {
			return err
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		bin := filepath.Join(tmp, "kci-guest")
		if _, err := goCmd(ctx, o.SourceDir, []string{"CGO_ENABLED=0", "GOOS=linux"},
			"build", "-trimpath", "-ldflags=-s -w -X main.version="+key[:12],
			"-o", bin, AgentPackage); err != nil {
			return err
		}
		b, err := os.ReadFile(bin)
		if err != nil {
			return err
		}
		return writeCPIO(w, []File{
			{Path: AgentPath, Data: b, Mode: 0o755},
			{Path: "bin/uinit", Link: filepath.Base(AgentPath)},
		})
	})
	if err != nil {
		return fmt.Errorf("vmimage: agent: %w", err)
	}
	return nil
}

// goCmd runs the go tool in dir under a deadline, killing its process
// group on cancel; its stdout is returned, and its stderr's tail carried
// in the error.
func goCmd(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	timeout := goQueryTimeout
	if len(args) > 0 && args[0] == "build" {
		timeout = goBuildTimeout
	}
	// The default environment: the go tool runs code from the module
	// graph (go generate, cgo, toolchain downloads), which gets no secrets.
	out, err := proc.Cmd{Name: "go", Args: args, Dir: dir, Env: env, Timeout: timeout, StdoutOnly: true}.Run(ctx)
	if err != nil {
		return "", fmt.Errorf("vmimage: %w", err)
	}
	return string(out), nil
}

// File is one entry of a cpio layer: a regular file with Data, or a
// symlink to Link.
type File struct {
	Path string // relative to /, e.g. "kci/plan.json"
	Data []byte
	Mode os.FileMode // permission bits; 0 means 0644
	Link string      // symlink target; Data and Mode are then ignored
}

// writeCPIO writes files (and their parent directories) as one newc
// archive with a trailer. Timestamps are zero so equal inputs give equal
// bytes.
func writeCPIO(w io.Writer, files []File) error {
	var recs []cpio.Record
	for _, f := range files {
		p := strings.TrimPrefix(filepath.Clean(f.Path), "/")
		if f.Link != "" {
			recs = append(recs, cpio.Symlink(p, f.Link))
			continue
		}
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		recs = append(recs, cpio.StaticFile(p, string(f.Data), uint64(mode)))
	}
	cw := cpio.NewDedupWriter(cpio.Newc.Writer(w))
	if err := cpio.WriteRecordsAndDirs(cw, recs); err != nil {
		return fmt.Errorf("cpio: %w", err)
	}
	if err := cpio.WriteTrailer(cw); err != nil {
		return fmt.Errorf("cpio: %w", err)
	}
	return nil
}
