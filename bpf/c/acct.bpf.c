// SPDX-License-Identifier: GPL-2.0
/* acct: where a CPU's time goes, by context, in ns of the CPU's clock
 * (instruction-time under icount). Every transition between contexts
 * (task switch, the traffic threads' read/write syscalls, softirq and
 * hardirq entry and exit) charges the time since the last transition to
 * the context that was running, so the categories partition each CPU's
 * time exactly, up to the few instructions of entry code before a
 * tracepoint fires.
 *
 * CAT_PATH is the kernel time of the traffic threads' read and write
 * syscalls, without the interrupts that land in them; beside it are the
 * softirqs by vector (NET_RX carries the receive path, RCU the deferred
 * frees), the hardirqs, and the rest of the guest's tasks. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

/* Only the two fields read; CO-RE finds them in the running kernel. */
struct task_struct {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

enum acct_cat {
	CAT_UNSYNCED = 0, /* before the CPU's first task switch since attach */
	CAT_IDLE = 1,
	CAT_PATH = 2,    /* traffic threads inside read/write */
	CAT_TRAFFIC = 3, /* traffic threads otherwise (user, Go runtime) */
	CAT_AGENT = 4,   /* the agent's other threads */
	CAT_OTHER = 5,   /* every other task (kthreads, init) */
	CAT_HARDIRQ = 6,
	CAT_SOFTIRQ = 7, /* + vector: 10 of them */
	CAT_MAX = 17,
};

#define NR_VEC 10

/* Set by the loader: the agent's process. */
volatile const __u32 agent_tgid = 0;

#define MAX_NEST 4

struct cpu_state {
	__u64 ts;
	__u32 cat;      /* charged now */
	__u32 task_cat; /* the current task's category */
	__u32 soft_saved;         /* what the running softirq interrupted */
	__u32 hard_depth;
	__u32 saved[MAX_NEST];    /* what each nested hardirq interrupted */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_state);
} state SEC(".maps");

/* ns charged to each category, and how many times it was entered. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} acct_ns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, CAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} acct_entries SEC(".maps");

/* Datagrams the traffic threads wrote: the packets of the accountant's
 * own window, whatever the other counters' edges. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} sent SEC(".maps");

/* The traffic threads (tid → 1; 2 while inside read/write), filled by
 * the agent. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, __u32);
} traffic SEC(".maps");

static __always_inline struct cpu_state *cur(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&state, &zero);
}

/* charge ends the running context at now and starts cat. */
static __always_inline void charge(struct cpu_state *s, __u32 cat)
{
	__u64 now = bpf_ktime_get_ns();
	__u32 old = s->cat;
	__u64 *v;

	if (s->ts && old < CAT_MAX) {
		v = bpf_map_lookup_elem(&acct_ns, &old);
		if (v)
			*v += now - s->ts;
	}
	if (cat != old && cat < CAT_MAX) {
		v = bpf_map_lookup_elem(&acct_entries, &cat);
		if (v)
			*v += 1;
	}
	s->ts = now;
	s->cat = cat;
}

static __always_inline __u32 task_category(struct task_struct *t)
{
	__u32 pid = BPF_CORE_READ(t, pid);
	__u32 *f;

	if (pid == 0)
		return CAT_IDLE;
	f = bpf_map_lookup_elem(&traffic, &pid);
	if (f)
		return *f == 2 ? CAT_PATH : CAT_TRAFFIC;
	if ((__u32)BPF_CORE_READ(t, tgid) == agent_tgid)
		return CAT_AGENT;
	return CAT_OTHER;
}

SEC("tp_btf/sched_switch")
int acct_switch(__u64 *ctx)
{
	struct task_struct *next = (struct task_struct *)ctx[2];
	struct cpu_state *s = cur();

	if (!s)
		return 0;
	s->task_cat = task_category(next);
	s->hard_depth = 0;
	charge(s, s->task_cat);
	return 0;
}

/* The traffic threads' read and write: the packet path's syscalls.
 * fentry/fexit on ksys_read and ksys_write rather than the raw syscall
 * tracepoints, which would fire for every syscall of every task. */
static __always_inline int path_edge(__u32 to)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct cpu_state *s;
	__u32 *f;

	f = bpf_map_lookup_elem(&traffic, &tid);
	if (!f)
		return 0;
	*f = to == CAT_PATH ? 2 : 1;
	s = cur();
	if (!s || s->cat == CAT_UNSYNCED)
		return 0;
	s->task_cat = to;
	charge(s, to);
	return 0;
}

SEC("fentry/ksys_read")
int acct_read_entry(__u64 *ctx) { return path_edge(CAT_PATH); }
SEC("fexit/ksys_read")
int acct_read_exit(__u64 *ctx) { return path_edge(CAT_TRAFFIC); }
SEC("fentry/ksys_write")
int acct_write_entry(__u64 *ctx) { return path_edge(CAT_PATH); }
/* A datagram is counted when its write returns it sent: a write refused
 * (ENOBUFS, EAGAIN, ECONNREFUSED, which the clients ride out) sent none. */
SEC("fexit/ksys_write")
int acct_write_exit(__u64 *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), zero = 0;
	__s64 ret = (__s64)ctx[3];
	__u64 *n;

	if (ret > 0 && bpf_map_lookup_elem(&traffic, &tid)) {
		n = bpf_map_lookup_elem(&sent, &zero);
		if (n)
			*n += 1;
	}
	return path_edge(CAT_TRAFFIC);
}

SEC("tp_btf/softirq_entry")
int acct_softirq_entry(__u64 *ctx)
{
	__u32 vec = (__u32)ctx[0];
	struct cpu_state *s = cur();

	if (!s || s->cat == CAT_UNSYNCED || vec >= NR_VEC)
		return 0;
	s->soft_saved = s->cat;
	charge(s, CAT_SOFTIRQ + vec);
	return 0;
}

SEC("tp_btf/softirq_exit")
int acct_softirq_exit(__u64 *ctx)
{
	struct cpu_state *s = cur();

	if (!s || s->cat == CAT_UNSYNCED)
		return 0;
	charge(s, s->soft_saved);
	return 0;
}

/* Every hardirq entry charges the time so far to what it interrupted and
 * every exit gives the CPU back to it, nested or not: a hardirq that
 * lands in a softirq run from another's exit is still the hardirq's. */
static __always_inline int hard_entry(void)
{
	struct cpu_state *s = cur();
	__u32 d;

	if (!s || s->cat == CAT_UNSYNCED)
		return 0;
	d = s->hard_depth;
	if (d >= MAX_NEST)
		return 0;
	s->saved[d] = s->cat;
	s->hard_depth = d + 1;
	charge(s, CAT_HARDIRQ);
	return 0;
}

static __always_inline int hard_exit(void)
{
	struct cpu_state *s = cur();
	__u32 d;

	if (!s || s->cat == CAT_UNSYNCED || s->hard_depth == 0)
		return 0;
	d = s->hard_depth - 1;
	if (d >= MAX_NEST)
		return 0;
	s->hard_depth = d;
	charge(s, s->saved[d]);
	return 0;
}

/* irq_enter_rcu and irq_exit_rcu bracket every x86 device interrupt and
 * system vector (and the softirqs run on the way out), so the interrupt
 * is charged from its first traceable instruction to its last; the
 * tracepoint pairs below are for a kernel whose brackets cannot be
 * traced, and nest harmlessly inside them. */
SEC("fentry/irq_enter_rcu")
int acct_irq_enter(__u64 *ctx) { return hard_entry(); }
SEC("fexit/irq_exit_rcu")
int acct_irq_exit(__u64 *ctx) { return hard_exit(); }

/* One pair per x86 hardirq tracepoint the guest's interrupts use. */
#define HARDIRQ(name)                                    \
	SEC("tp_btf/" #name "_entry")                    \
	int acct_##name##_entry(__u64 *ctx) { return hard_entry(); } \
	SEC("tp_btf/" #name "_exit")                     \
	int acct_##name##_exit(__u64 *ctx) { return hard_exit(); }

HARDIRQ(irq_handler)
HARDIRQ(local_timer)
HARDIRQ(irq_work)
HARDIRQ(reschedule)
HARDIRQ(call_function)
HARDIRQ(call_function_single)

char LICENSE[] SEC("license") = "GPL";
