package vm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/internal/proc"
)

// ProbeTimeout bounds the KVM probe: a guest that works under KVM reaches
// the agent in a second or two; one that hangs (nested virtualisation)
// never does.
const ProbeTimeout = 20 * time.Second

// Verdict is the outcome of the KVM probe on one host.
type Verdict struct {
	Accel  Accel     `json:"accel"`
	Reason string    `json:"reason"`
	Host   string    `json:"host"` // hostname, host kernel, qemu version
	Time   time.Time `json:"time"`
}

// resolveAccel turns auto into kvm or tcg, and says why.
func resolveAccel(ctx context.Context, cfg Config) (Accel, string, error) {
	switch cfg.Accel {
	case AccelKVM, AccelTCG:
		return cfg.Accel, "requested", nil
	case AccelAuto:
	default:
		return "", "", infra("accel", fmt.Errorf("unknown accelerator %q", cfg.Accel))
	}
	if err := KVMDevice(); err != nil {
		return AccelTCG, err.Error(), nil
	}
	host, err := HostID(ctx, cfg.QEMU)
	if err != nil {
		return "", "", err
	}
	dir, err := verdictDir(cfg.CacheDir)
	if err != nil {
		return "", "", err
	}
	if v, ok := LoadVerdict(dir, host); ok {
		return v.Accel, v.Reason + " (probed " + v.Time.Format(time.DateOnly) + ")", nil
	}
	v, conclusive, err := ProbeKVM(ctx, cfg)
	if err != nil {
		return "", "", err
	}
	v.Host = host
	if conclusive {
		if err := saveVerdict(dir, v); err != nil {
			return "", "", err
		}
	}
	return v.Accel, v.Reason, nil
}

// KVMDevice checks that /dev/kvm can be opened and speaks the stable API.
// That KVM also runs a guest is what ProbeKVM finds out.
func KVMDevice() error {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("no usable /dev/kvm: %w", err)
	}
	defer func() { _ = f.Close() }()
	const kvmGetAPIVersion = 0xAE00
	v, err := unix.IoctlRetInt(int(f.Fd()), kvmGetAPIVersion)
	if err != nil {
		return fmt.Errorf("/dev/kvm: KVM_GET_API_VERSION: %w", err)
	}
	if v != 12 {
		return fmt.Errorf("/dev/kvm: API version %d, want 12", v)
	}
	return nil
}

// ProbeKVM boots cfg's kernel and initramfs under KVM, bounded by
// ProbeTimeout, and reports whether the agent got ready. conclusive is
// false when the boot failed for a reason that says nothing about KVM
// (the kernel crashed, QEMU could not start); the verdict is TCG then,
// but not worth remembering.
func ProbeKVM(ctx context.Context, cfg Config) (v Verdict, conclusive bool, err error) {
	cfg = cfg.withDefaults()
	cfg.Accel, cfg.Interactive, cfg.Console, cfg.Pin = AccelKVM, false, nil, nil
	cfg.BootTimeout, cfg.Dir = ProbeTimeout, ""
	dir, err := os.MkdirTemp("", "kci-kvm-probe-")
	if err != nil {
		return v, false, infra("kvm probe", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	cfg.Dir = dir
	res := &Result{}
	berr := boot(ctx, cfg, res, nil, true)
	v.Time = time.Now().UTC()
	switch {
	case berr == nil:
		return Verdict{Accel: AccelKVM, Reason: fmt.Sprintf("KVM guest reached the agent in %v", res.BootToReady.Round(time.Millisecond)), Time: v.Time}, true, nil
	case ctx.Err() != nil:
		return v, false, ctxError(ctx, "kvm probe")
	case Kind(berr) == KindBoot:
		return Verdict{Accel: AccelTCG, Reason: fmt.Sprintf("a KVM guest did not reach the agent within %v (nested virtualisation?)", ProbeTimeout), Time: v.Time}, true, nil
	case errors.Is(berr, errQEMUExited):
		// The same QEMU runs this machine under TCG; under KVM it died.
		return Verdict{Accel: AccelTCG, Reason: "QEMU fails under KVM: " + errorLine(berr.Error()), Time: v.Time}, true, nil
	default:
		return Verdict{Accel: AccelTCG, Reason: "KVM probe inconclusive: " + lines.First(berr.Error()), Time: v.Time}, false, nil
	}
}

// errorLine picks QEMU's first "error" line from a message carrying its
// stderr, else the last line.
func errorLine(s string) string {
	ls := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range ls[1:] {
		if strings.Contains(strings.ToLower(l), "error") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(ls[len(ls)-1])
}

// HostID names what a KVM verdict depends on: the machine, its kernel
// and the QEMU build.
func HostID(ctx context.Context, qemu string) (string, error) {
	if qemu == "" {
		qemu = "qemu-system-x86_64"
	}
	host, _ := os.Hostname()
	var u unix.Utsname
	_ = unix.Uname(&u)
	out, err := proc.Cmd{Name: qemu, Args: []string{"--version"}, Timeout: 10 * time.Second, StdoutOnly: true}.Run(ctx)
	if err != nil {
		return "", infra("host id", err)
	}
	return strings.Join([]string{host, unix.ByteSliceToString(u.Release[:]),
		unix.ByteSliceToString(u.Version[:]), lines.First(string(out))}, " | "), nil
}

func verdictDir(cacheDir string) (string, error) {
	if cacheDir == "" {
		cacheDir = os.Getenv("KCI_CACHE")
	}
	if cacheDir == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return "", infra("cache dir", err)
		}
		cacheDir = filepath.Join(d, "kci")
	}
	return filepath.Join(cacheDir, "accel"), nil
}

func verdictPath(dir, host string) string {
	sum := sha256.Sum256([]byte(host))
	return filepath.Join(dir, hex.EncodeToString(sum[:8])+".json")
}

// LoadVerdict returns the remembered KVM verdict for host, if any.
func LoadVerdict(dir, host string) (Verdict, bool) {
	var v Verdict
	b, err := os.ReadFile(verdictPath(dir, host))
	if err != nil || json.Unmarshal(b, &v) != nil || v.Host != host {
		return v, false
	}
	return v, v.Accel == AccelKVM || v.Accel == AccelTCG
}

// CachedVerdict is LoadVerdict for the default cache layout.
func CachedVerdict(ctx context.Context, cacheDir, qemu string) (Verdict, bool, error) {
	host, err := HostID(ctx, qemu)
	if err != nil {
		return Verdict{}, false, err
	}
	dir, err := verdictDir(cacheDir)
	if err != nil {
		return Verdict{}, false, err
	}
	v, ok := LoadVerdict(dir, host)
	return v, ok, nil
}

func saveVerdict(dir string, v Verdict) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return infra("save kvm verdict", err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return infra("save kvm verdict", err)
	}
	p := verdictPath(dir, v.Host)
	tmp := p + fmt.Sprintf(".tmp%d", os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return infra("save kvm verdict", err)
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return infra("save kvm verdict", err)
	}
	return nil
}
