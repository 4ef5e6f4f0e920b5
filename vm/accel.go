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

	"github.com/kci-dev/kci/internal/cachedir"
	"github.com/kci-dev/kci/internal/lines"
	"github.com/kci-dev/kci/internal/proc"
)

// probeVersion is bumped when the probe learns something its earlier
// choices lack: version 2 retries -cpu host's MSR failures and names PVM,
// so a version-1 "QEMU fails under KVM" (MSR 0x10a) is probed again.
const probeVersion = 2

// AccelChoice is the accelerator a run boots with, the -cpu model and
// why: the outcome of the KVM probe on one host (remembered per host), or
// of a request.
type AccelChoice struct {
	Probe  int    `json:"probe"`
	Accel  Accel  `json:"accel"`
	Reason string `json:"reason"`
	// Case is what the probe found (CaseKVM, CaseMSR, CasePVM, ...).
	Case string `json:"case,omitempty"`
	// CPU is QEMU's -cpu model for this accelerator, CPUReason why it is
	// not the default one ("" when it is).
	CPU       string    `json:"cpu,omitempty"`
	CPUReason string    `json:"cpu_reason,omitempty"`
	Host      string    `json:"host"` // hostname, host kernel, qemu version
	Time      time.Time `json:"time"`
}

// resolveAccel turns auto into kvm or tcg with the -cpu model to boot, and
// says why.
func resolveAccel(ctx context.Context, cfg Config) (AccelChoice, error) {
	var v AccelChoice
	switch cfg.Accel {
	case AccelKVM, AccelTCG:
		v = AccelChoice{Accel: cfg.Accel, Reason: "requested"}
		if cfg.Accel == AccelKVM && IsPVM(hostRoot) {
			return v, infra("accel", errors.New("--accel kvm on a PVM host: "+PVMReason+"; use --accel auto or tcg"))
		}
	case AccelAuto:
		var err error
		if v, err = probeOrRecall(ctx, cfg); err != nil {
			return v, err
		}
	default:
		return v, infra("accel", fmt.Errorf("unknown accelerator %q", cfg.Accel))
	}
	switch {
	case cfg.CPUModel != "":
		v.CPU, v.CPUReason = cfg.CPUModel, "configured"
	case v.CPU == "" && v.Accel == AccelKVM:
		v.CPU = "host"
	case v.Accel == AccelTCG:
		id, err := LookupIdentity(cfg.Identity)
		if err != nil {
			return v, infra("accel", err)
		}
		v.CPU, v.CPUReason = id.TCG(cfg.withDefaults().CPUs)
	}
	return v, nil
}

// probeOrRecall settles auto: no usable /dev/kvm or a PVM host is TCG at
// once, else the host's remembered choice, else a probe boot.
func probeOrRecall(ctx context.Context, cfg Config) (AccelChoice, error) {
	if err := kvmDevice(); err != nil {
		return AccelChoice{Accel: AccelTCG, Reason: err.Error()}, nil
	}
	if IsPVM(hostRoot) {
		return AccelChoice{Probe: probeVersion, Accel: AccelTCG, Case: CasePVM, Reason: PVMReason}, nil
	}
	host, err := HostID(ctx, cfg.QEMU)
	if err != nil {
		return AccelChoice{}, err
	}
	dir, err := choiceDir(cfg.CacheDir)
	if err != nil {
		return AccelChoice{}, err
	}
	if v, ok := LoadChoice(dir, host); ok {
		v.Reason += " (probed " + v.Time.Format(time.DateOnly) + ")"
		return v, nil
	}
	v, conclusive, err := ProbeKVM(ctx, cfg)
	if err != nil {
		return AccelChoice{}, err
	}
	v.Host = host
	if conclusive {
		if err := saveChoice(dir, v); err != nil {
			return AccelChoice{}, err
		}
	}
	return v, nil
}

// kvmDevice is KVMDevice, but for the fake-QEMU tests, which play hosts
// with a working /dev/kvm on machines without one.
var kvmDevice = KVMDevice

// KVMDevice checks that /dev/kvm can be opened and speaks the stable API.
// That KVM also runs a guest is what ProbeKVM finds out. The error wraps
// the open's (fs.ErrNotExist: no KVM module; fs.ErrPermission: no
// access).
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

// HostID names what a KVM probe's choice depends on: the machine, its kernel
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

func choiceDir(cacheDir string) (string, error) {
	if cacheDir == "" {
		d, err := cachedir.DefaultRoot()
		if err != nil {
			return "", infra("cache dir", err)
		}
		cacheDir = d
	}
	return filepath.Join(cacheDir, cachedir.Accel), nil
}

func choicePath(dir, host string) string {
	sum := sha256.Sum256([]byte(host))
	return filepath.Join(dir, hex.EncodeToString(sum[:8])+".json")
}

// LoadChoice returns the choice the KVM probe made for host and dir
// remembers, if any (and if a probe of this version made it).
func LoadChoice(dir, host string) (AccelChoice, bool) {
	var v AccelChoice
	b, err := os.ReadFile(choicePath(dir, host))
	if err != nil || json.Unmarshal(b, &v) != nil || v.Host != host {
		return v, false
	}
	return v, v.Probe == probeVersion && (v.Accel == AccelKVM || v.Accel == AccelTCG)
}

// ChoiceFile is where host's probed choice is kept under cacheDir ("" =
// $KCI_CACHE or ~/.cache/kci): deleting it makes the next run probe again.
func ChoiceFile(cacheDir, host string) (string, error) {
	dir, err := choiceDir(cacheDir)
	if err != nil {
		return "", err
	}
	return choicePath(dir, host), nil
}

// CachedChoice is LoadChoice for the default cache layout.
func CachedChoice(ctx context.Context, cacheDir, qemu string) (AccelChoice, bool, error) {
	host, err := HostID(ctx, qemu)
	if err != nil {
		return AccelChoice{}, false, err
	}
	dir, err := choiceDir(cacheDir)
	if err != nil {
		return AccelChoice{}, false, err
	}
	v, ok := LoadChoice(dir, host)
	return v, ok, nil
}

func saveChoice(dir string, v AccelChoice) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return infra("save kvm verdict", err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return infra("save kvm verdict", err)
	}
	p := choicePath(dir, v.Host)
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
