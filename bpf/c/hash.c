// SPDX-License-Identifier: GPL-2.0
/* hash: stock-kernel map variant. A preallocated hash keyed by skb
 * pointer, reaped by the ungated kfree_skb and consume_skb tracepoints
 * (which fire for every skb in the system, not only armed ones). */
#include "skbmap.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct meta);
} skbhash SEC(".maps");

SEC("tc/egress")
int hash_write(struct __sk_buff *skb)
{
	return skbmap_write(&skbhash, skb, 0);
}

SEC("tc/ingress")
int hash_read(struct __sk_buff *skb)
{
	return skbmap_read(&skbhash, skb);
}

SEC("tp_btf/kfree_skb")
int hash_kfree(__u64 *ctx)
{
	return skbmap_free(&skbhash, ctx);
}

SEC("tp_btf/consume_skb")
int hash_consume(__u64 *ctx)
{
	return skbmap_free(&skbhash, ctx);
}
