/* Shared by every kci BPF object: types, the stats layout and the kfuncs.
 *
 * Only UAPI headers are used: no program reads a kernel-internal struct
 * field, the skb is only ever used as an opaque pointer (map key, kfunc
 * argument), so no vmlinux.h is needed.
 */
#ifndef KCI_COMMON_H
#define KCI_COMMON_H

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

/* A struct, not a forward declaration: loaders check kfunc prototypes
 * against kernel BTF kind by kind, and cilium/ebpf refuses a Fwd where
 * bpf_trace_skb() takes the kernel's struct sk_buff. No field is used. */
struct sk_buff {
	__u64 opaque;
};

/* Stats keys, per-CPU array "stats". 0 and 1 are common to all objects. */
enum stat_common {
	STAT_INGRESS = 0,
	STAT_EGRESS = 1,
};

/* ext: the BPF skb extension variant. */
enum stat_ext {
	STAT_CREATE_FAIL = 2,
	STAT_FIND_FAIL = 3,
	STAT_SLICE_FAIL = 4,
	STAT_BADMAGIC = 5,
	STAT_FOUND = 6,
};

/* Map variants (gtp, gtpchurn, gtplru, hash, lru): keyed by skb pointer. */
enum stat_map {
	STAT_FREE_REAPED = 2,
	STAT_COPY = 3,
	STAT_UPDATE_ERROR = 4,
	STAT_MAP_FOUND = 5,
	STAT_MAP_MISS = 6,
};

#define STAT_MAX 8

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 key)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &key);

	if (v)
		(*v)++; /* per-CPU slot: no atomics needed */
}

/* The 16-byte metadata every benchmark variant attaches to a packet. */
#define META_MAGIC 0x5ebee55eU

struct meta {
	__u64 ts;
	__u32 len;
	__u32 magic;
};

/* From the "BPF skb extension" series: F_CREATE creates, 0 finds. */
#define BPF_SKB_EXT_F_CREATE (1ULL << 0)

/* kfuncs are weak: an object still loads its other programs on a kernel
 * without them, and a call to a missing one is rejected by the verifier,
 * which is how a missing capability shows up when we try. */
extern int bpf_dynptr_from_skb_ext(struct __sk_buff *skb, __u32 size, __u64 flags,
				   struct bpf_dynptr *ptr) __ksym __weak;
extern int bpf_trace_skb(struct sk_buff *skb, __u64 flags) __ksym __weak;
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym __weak;
extern void *bpf_dynptr_slice(const struct bpf_dynptr *p, __u32 offset,
			      void *buffer, __u32 buffer__szk) __ksym __weak;
extern void *bpf_dynptr_slice_rdwr(const struct bpf_dynptr *p, __u32 offset,
				   void *buffer, __u32 buffer__szk) __ksym __weak;

/* skb_key turns the skb into a map key. tc's context pointer is the
 * struct sk_buff itself, and tracepoints pass the same pointer, so both
 * sides agree on the key. Storing a pointer as a scalar needs a
 * privileged loader (allow_ptr_leaks), which the guest agent is. */
static __always_inline __u64 skb_key(void *skb)
{
	return (__u64)(unsigned long)skb;
}

char LICENSE[] SEC("license") = "GPL";

#endif
