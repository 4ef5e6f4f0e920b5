// SPDX-License-Identifier: GPL-2.0
/* profile: a CPU sampler. One perf_event program, attached to a
 * cpu-clock software event per sampled CPU, counts (task name, kernel
 * stack) pairs; the stacks themselves live in a stack-trace map and are
 * symbolised by the agent from /proc/kallsyms. Samples taken in user mode
 * have no kernel stack (bpf_get_stackid returns -EFAULT) and are counted
 * under that error, so every sample lands somewhere. */
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <bpf/bpf_helpers.h>

#define PROFILE_STACK_DEPTH 127
#define PROFILE_COMM_LEN 16

struct profile_key {
	__s32 kstack; /* stack id, or a negative errno */
	__u32 pid;    /* tgid */
	char comm[PROFILE_COMM_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, PROFILE_STACK_DEPTH * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct profile_key);
	__type(value, __u64);
} counts SEC(".maps");

/* dropped counts samples whose key did not fit in counts. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} dropped SEC(".maps");

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data *ctx)
{
	struct profile_key key = {};
	__u64 one = 1, *n;
	__u32 zero = 0;

	key.pid = bpf_get_current_pid_tgid() >> 32;
	bpf_get_current_comm(key.comm, sizeof(key.comm));
	key.kstack = bpf_get_stackid(ctx, &stacks, 0);

	n = bpf_map_lookup_elem(&counts, &key);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return 0;
	}
	if (bpf_map_update_elem(&counts, &key, &one, BPF_NOEXIST) == 0)
		return 0;
	/* Another CPU inserted the same key first, or the map is full. */
	n = bpf_map_lookup_elem(&counts, &key);
	if (n) {
		__sync_fetch_and_add(n, 1);
		return 0;
	}
	n = bpf_map_lookup_elem(&dropped, &zero);
	if (n)
		(*n)++;
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
