// SPDX-License-Identifier: GPL-2.0
/* lru: stock-kernel map variant with an LRU per-CPU hash, reaped by the
 * ungated kfree_skb and consume_skb tracepoints. */
#include "skbmap.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct meta);
} skblru SEC(".maps");

SEC("tc/egress")
int lru_write(struct __sk_buff *skb)
{
	return skbmap_write(&skblru, skb, 0);
}

SEC("tc/ingress")
int lru_read(struct __sk_buff *skb)
{
	return skbmap_read(&skblru, skb);
}

SEC("tp_btf/kfree_skb")
int lru_kfree(__u64 *ctx)
{
	return skbmap_free(&skblru, ctx);
}

SEC("tp_btf/consume_skb")
int lru_consume(__u64 *ctx)
{
	return skbmap_free(&skblru, ctx);
}
