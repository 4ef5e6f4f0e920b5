// SPDX-License-Identifier: GPL-2.0
/* gtp: rhashtable map keyed by skb pointer, reaped by the gated skb_free
 * tracepoint. BPF_MAP_TYPE_RHASH is not in the stock UAPI headers, so the
 * map is declared as a HASH here and the loader sets the real type from
 * the running kernel's BTF (enum bpf_map_type). The loader also turns this
 * object into gtpchurn (map_extra 0, 1M entries). */
#include "skbmap.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH); /* placeholder for BPF_MAP_TYPE_RHASH */
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__uint(map_extra, 16384); /* nelem hint */
	__type(key, __u64);
	__type(value, struct meta);
} rhash SEC(".maps");

SEC("tc/egress")
int gtp_write(struct __sk_buff *skb)
{
	return skbmap_write(&rhash, skb, 1);
}

SEC("tc/ingress")
int gtp_read(struct __sk_buff *skb)
{
	return skbmap_read(&rhash, skb);
}

SEC("tp_btf/skb_free")
int gtp_skb_free(__u64 *ctx)
{
	return skbmap_free(&rhash, ctx);
}

SEC("tp_btf/skb_copy")
int gtp_skb_copy(__u64 *ctx)
{
	return skbmap_copy(&rhash, ctx);
}
