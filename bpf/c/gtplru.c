// SPDX-License-Identifier: GPL-2.0
/* gtplru: like gtp, with an LRU per-CPU hash instead of the rhashtable. */
#include "skbmap.h"

struct {
	__uint(type, BPF_MAP_TYPE_LRU_PERCPU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct meta);
} lru SEC(".maps");

SEC("tc/egress")
int gtplru_write(struct __sk_buff *skb)
{
	return skbmap_write(&lru, skb, 1);
}

SEC("tc/ingress")
int gtplru_read(struct __sk_buff *skb)
{
	return skbmap_read(&lru, skb);
}

SEC("tp_btf/skb_free")
int gtplru_skb_free(__u64 *ctx)
{
	return skbmap_free(&lru, ctx);
}

SEC("tp_btf/skb_copy")
int gtplru_skb_copy(__u64 *ctx)
{
	return skbmap_copy(&lru, ctx);
}
