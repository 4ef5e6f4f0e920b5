package kernel

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kci-dev/kci/internal/proc"
)

// DebianProductionConfig is the reference a kci kernel is compared with
// when kci.yaml's config.production names none: the config Debian ships
// its amd64 6.12 kernel with (linux-config-6.12).
const DebianProductionConfig = "/usr/src/linux-config-6.12/config.amd64_none_amd64.xz"

// perfOption is a performance-relevant option the drift report watches.
// Why is set where kci differs from production on purpose.
type perfOption struct {
	Name string
	Why  string
}

// perfOptions is the curated list: options that change what a per-packet
// cost or a CPU-accounting number means.
var perfOptions = []perfOption{
	{"CC_OPTIMIZE_FOR_PERFORMANCE", ""},
	{"HZ", ""},
	{"HIGH_RES_TIMERS", ""},
	{"NO_HZ_IDLE", ""},
	{"NO_HZ_FULL", ""},
	{"PREEMPT_NONE", ""},
	{"PREEMPT_VOLUNTARY", ""},
	{"PREEMPT", ""},
	{"PREEMPT_DYNAMIC", ""},
	{"PREEMPT_RCU", ""},
	{"JUMP_LABEL", ""},
	{"MODULES", ""},
	{"BUG", ""},
	{"CPU_MITIGATIONS", ""},
	{"MITIGATION_RETPOLINE", ""},
	{"MITIGATION_RETHUNK", ""},
	{"MITIGATION_PAGE_TABLE_ISOLATION", ""},
	{"MITIGATION_SRSO", ""},
	{"MITIGATION_IBRS_ENTRY", ""},
	{"MITIGATION_CALL_DEPTH_TRACKING", ""},
	{"X86_KERNEL_IBT", ""},
	{"STACKPROTECTOR_STRONG", ""},
	{"RANDOMIZE_BASE", ""},
	{"UNWINDER_ORC", ""},
	{"SLUB_TINY", ""},
	{"SLAB_FREELIST_RANDOM", ""},
	{"SLAB_FREELIST_HARDENED", ""},
	{"INIT_ON_ALLOC_DEFAULT_ON", ""},
	{"HARDENED_USERCOPY", ""},
	{"VIRT_CPU_ACCOUNTING_GEN", ""},
	{"PSI", ""},
	{"SCHEDSTATS", ""},
	{"X86_X2APIC", ""},
	{"ACPI", ""},
	{"IRQ_TIME_ACCOUNTING", ""},
	{"PARAVIRT", ""},
	{"KVM_GUEST", ""},
	{"RPS", ""},
	{"XPS", ""},
	{"NET_RX_BUSY_POLL", ""},
	{"BPF_JIT", ""},
	{"BPF_JIT_ALWAYS_ON", "kci refuses to measure the interpreter; production enables the JIT by sysctl, so JIT'd code is what both run"},
	{"NR_CPUS", "only sizes per-CPU areas; the guest has a handful of vCPUs"},
	{"NUMA", "the guest is a single memory node; NUMA code paths would be idle anyway"},
	{"CGROUPS", "the guest runs everything in the root cgroup, where production also charges no socket memory"},
	{"MEMCG", "root-cgroup sockets are not charged to a memcg, so no per-packet accounting cost either way"},
	{"CGROUP_BPF", "no cgroup BPF programs attached: its static key keeps the hooks off in production too"},
	{"SECURITY", "LSM hooks cost per socket syscall (the traffic generator), not per BPF program run; bpf_stats numbers are unaffected"},
	{"SECURITY_NETWORK", "as SECURITY"},
	{"SECURITY_APPARMOR", "as SECURITY"},
	{"SECURITY_SELINUX", "as SECURITY"},
	{"BPF_LSM", "no BPF LSM programs attached"},
	{"NETFILTER", "no netfilter rules on the loopback path: without rules no hooks are registered"},
	{"TRANSPARENT_HUGEPAGE", "no effect on skb/BPF map allocation paths measured here"},
}

// Drift is one performance-relevant option that differs from production.
type Drift struct {
	Option     string `json:"option"`
	Here       string `json:"here"`
	Production string `json:"production"`
	Why        string `json:"why,omitempty"` // empty: not deliberate
}

// CompareProduction lists the curated options where final differs from prod.
func CompareProduction(final, prod Values) []Drift {
	var ds []Drift
	for _, o := range perfOptions {
		h, p := final.Get(o.Name), prod.Get(o.Name)
		if h != p {
			ds = append(ds, Drift{Option: o.Name, Here: h, Production: p, Why: o.Why})
		}
	}
	return ds
}

// ProductionDrift compares the final .config at config with the production
// config at prod. Either failing to read is an error: an unreadable
// reference must not pass for a kernel without drift.
func ProductionDrift(ctx context.Context, config, prod string) ([]Drift, error) {
	final, err := ReadConfigFile(ctx, config)
	if err != nil {
		return nil, fmt.Errorf("production drift: %w", err)
	}
	ref, err := ReadConfigFile(ctx, prod)
	if err != nil {
		return nil, fmt.Errorf("production drift: %w", err)
	}
	return CompareProduction(final, ref), nil
}

// ReadConfigFile reads a .config, decompressing .xz/.gz by extension.
func ReadConfigFile(ctx context.Context, path string) (Values, error) {
	var data []byte
	var err error
	switch {
	case strings.HasSuffix(path, ".xz"):
		data, err = decompress(ctx, "xz", path)
	case strings.HasSuffix(path, ".gz"):
		data, err = decompress(ctx, "gzip", path)
	default:
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	return ParseValues(data), nil
}

func decompress(ctx context.Context, tool, path string) ([]byte, error) {
	return proc.Cmd{Name: tool, Args: []string{"-dc", path}, Timeout: time.Minute, StdoutOnly: true}.Run(ctx)
}
