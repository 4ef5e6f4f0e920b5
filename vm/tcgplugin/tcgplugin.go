// Package tcgplugin builds kcicount, a QEMU TCG plugin that counts the
// instructions, memory accesses and (optionally) modelled cycles a guest
// executes inside measurement windows it marks with two multi-byte NOPs,
// and parses what the plugin writes. The plugin's C sources are embedded;
// README.md describes the output format and the cache model.
package tcgplugin

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/internal/proc"
)

// The markers are `nopl disp32(%rax,%rax,1)` with these displacements:
// eight bytes no compiler emits, harmless on real hardware and under KVM.
const (
	MarkStart = 0x4b430001 // opens the next window
	MarkEnd   = 0x4b430002 // closes the open window
	MarkArm   = 0x4b430003 // with arm=marker, instrumenting starts here
)

// MarkBytes is the encoding of the marker with displacement disp, the
// bytes the plugin matches at translation time.
func MarkBytes(disp uint32) [8]byte {
	b := [8]byte{0x0f, 0x1f, 0x84, 0x00}
	binary.LittleEndian.PutUint32(b[4:], disp)
	return b
}

// Options are the plugin's settings.
type Options struct {
	// Cache runs the cache model (modelled cycles): one core's, or with
	// Coherent the multi-core model (a core per vCPU, MESI states), which
	// a guest of several vCPUs needs.
	Cache    bool
	Coherent bool
	// SMT2, with Coherent, makes vCPUs 2k and 2k+1 hardware threads of
	// one core, sharing its L1i, L1d and L2 (the guest is not told).
	SMT2 bool
	// Quantum, for a guest of several vCPUs, ends a vCPU's turn after it
	// ran that many instructions of instrumented code (0: QEMU's turns,
	// which last until the vCPU halts or a timer is due); with it, under
	// ArmAtMarker, a guard outside instrumented code ends a turn after a
	// million instructions with no other vCPU running, as QEMU's turns
	// can starve every vCPU but the first.
	Quantum uint64
	// ArmAtMarker instruments nothing but the markers until the guest
	// runs the arm marker (MarkArm): the firmware and the kernel's boot
	// run at TCG's own speed. A window that starts before it stops QEMU.
	ArmAtMarker bool
	// Ctx is the call contexts' (README.md): a call whose code enters
	// [Lo, Hi) opens one; Lo and Hi zero are the plugin's default, the
	// x86-64 kernel's module area, where the BPF JIT puts programs.
	// Blocks counts each block's entries inside a context (PC.CExecs),
	// a callback per block entry. NoCtx turns contexts off.
	Ctx   CtxRange
	NoCtx bool
	// Marks, with Ctx.Blocks, are the functions that begin a stack class
	// (README.md, Stack classes); Ctx.Marks is ignored.
	Marks []Mark
}

// Args is QEMU's command-line arguments that load the plugin at so,
// writing its counts to out. Commas in the paths are doubled, QEMU's
// escape for a comma inside an option value.
func Args(so, out string, o Options) []string {
	esc := func(s string) string { return strings.ReplaceAll(s, ",", ",,") }
	opt := "file=" + esc(so) + ",out=" + esc(out)
	switch {
	case o.Cache && o.Coherent:
		opt += ",cache=coherent"
	case o.Cache:
		opt += ",cache=on"
	}
	if o.SMT2 {
		opt += ",smt=2"
	}
	if o.Quantum > 0 {
		opt += ",quantum=" + strconv.FormatUint(o.Quantum, 10)
	}
	if o.ArmAtMarker {
		opt += ",arm=marker"
	}
	switch {
	case o.NoCtx:
		opt += ",ctx=off"
	case o.Ctx.Hi > o.Ctx.Lo:
		opt += ",ctx=" + strconv.FormatUint(o.Ctx.Lo, 16) + "-" + strconv.FormatUint(o.Ctx.Hi, 16)
	}
	if o.Ctx.Blocks && !o.NoCtx {
		opt += ",ctxblocks=on"
		for _, m := range o.Marks {
			opt += ",mark=" + m.Class.String() + "@" + strconv.FormatUint(m.Addr, 16)
		}
	}
	return []string{"-plugin", opt}
}

//go:embed csrc/*
var csrc embed.FS

// MissingError is a host without what building the plugin needs: the
// machine's fault, not the kernel's.
type MissingError struct {
	What string // "gcc", or the failing header
	Err  error
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("tcgplugin: %s is missing (install build-essential): %v", e.What, e.Err)
}

func (e *MissingError) Unwrap() error { return e.Err }

const compileTimeout = 2 * time.Minute

// Build compiles the plugin into cacheDir/plugins, named by a hash of its
// sources and of the compiler's version, and returns the .so's path. A
// present one is reused; a new one appears atomically (temp file, rename)
// so concurrent builds never see a partial file.
//
// Only gcc is needed: QEMU 7.2's qemu-plugin.h includes nothing beyond
// the C library (later QEMUs also need glib's headers).
func Build(ctx context.Context, cacheDir string) (string, error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", &MissingError{What: "gcc", Err: err}
	}
	ver, err := proc.Cmd{Name: gcc, Args: []string{"--version"}, Timeout: 30 * time.Second, StdoutOnly: true}.Run(ctx)
	if err != nil {
		return "", fmt.Errorf("tcgplugin: gcc --version: %w", err)
	}
	files, err := sources()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(ver)
	for _, f := range files {
		fmt.Fprintf(h, "%s\x00%d\x00", f.name, len(f.data))
		h.Write(f.data)
	}
	dir := filepath.Join(cacheDir, cachedir.Plugins)
	so := filepath.Join(dir, "kcicount-"+hex.EncodeToString(h.Sum(nil))[:24]+".so")
	if _, err := os.Stat(so); err == nil {
		return so, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("tcgplugin: %w", err)
	}
	src, err := os.MkdirTemp(dir, "src-")
	if err != nil {
		return "", fmt.Errorf("tcgplugin: %w", err)
	}
	defer func() { _ = os.RemoveAll(src) }() // scratch: a leftover is harmless
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(src, f.name), f.data, 0o644); err != nil {
			return "", fmt.Errorf("tcgplugin: %w", err)
		}
	}
	tmp := filepath.Join(src, "kcicount.so")
	args := []string{"-shared", "-fPIC", "-O2", "-Wall", "-o", tmp, filepath.Join(src, "kcicount.c")}
	if _, err := (proc.Cmd{Name: gcc, Args: args, Timeout: compileTimeout}).Run(ctx); err != nil {
		if code, ok := proc.ExitCode(err); ok && code != 0 && headerMissing(err) {
			return "", &MissingError{What: "C library headers", Err: err}
		}
		return "", fmt.Errorf("tcgplugin: compile plugin: %w", err)
	}
	if err := os.Rename(tmp, so); err != nil {
		return "", fmt.Errorf("tcgplugin: %w", err)
	}
	return so, nil
}

type file struct {
	name string
	data []byte
}

// sources is the embedded C sources in name order, the order they hash in.
func sources() ([]file, error) {
	ents, err := fs.ReadDir(csrc, "csrc")
	if err != nil {
		return nil, fmt.Errorf("tcgplugin: embedded sources: %w", err)
	}
	var files []file
	for _, e := range ents {
		b, err := csrc.ReadFile("csrc/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("tcgplugin: embedded sources: %w", err)
		}
		files = append(files, file{e.Name(), b})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return files, nil
}

// headerMissing says whether gcc failed on a system header it could not
// find (libc6-dev absent), which is the host's fault, not the plugin's.
func headerMissing(err error) bool {
	var pe *proc.Error
	if !errors.As(err, &pe) {
		return false
	}
	return strings.Contains(pe.Tail, "fatal error:") && strings.Contains(pe.Tail, "No such file or directory")
}
