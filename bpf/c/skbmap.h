/* The map variants (gtp, gtpchurn, gtplru, hash, lru): metadata in a map
 * keyed by skb pointer, written at egress, looked up at ingress, deleted
 * when the skb is freed. Each object defines its map and thin program
 * wrappers around these. */
#ifndef KCI_SKBMAP_H
#define KCI_SKBMAP_H

#include "common.h"

static __always_inline int skbmap_write(void *map, struct __sk_buff *skb, int arm)
{
	__u64 key = skb_key(skb);
	struct meta m = {
		.ts = bpf_ktime_get_ns(),
		.len = skb->len,
		.magic = META_MAGIC,
	};

	stat_inc(STAT_EGRESS);
	if (bpf_map_update_elem(map, &key, &m, BPF_ANY)) {
		stat_inc(STAT_UPDATE_ERROR);
		return TC_ACT_OK;
	}
	/* Gated tracepoints fire only for skbs armed here. */
	if (arm)
		bpf_trace_skb(bpf_cast_to_kern_ctx(skb), 0);
	return TC_ACT_OK;
}

static __always_inline int skbmap_read(void *map, struct __sk_buff *skb)
{
	__u64 key = skb_key(skb);
	struct meta *m;

	stat_inc(STAT_INGRESS);
	m = bpf_map_lookup_elem(map, &key);
	if (m && m->magic == META_MAGIC)
		stat_inc(STAT_MAP_FOUND);
	else
		stat_inc(STAT_MAP_MISS);
	return TC_ACT_OK;
}

/* ctx[0] of skb_free, kfree_skb and consume_skb is the skb. */
static __always_inline int skbmap_free(void *map, __u64 *ctx)
{
	__u64 key = ctx[0];

	if (bpf_map_delete_elem(map, &key) == 0)
		stat_inc(STAT_FREE_REAPED);
	return 0;
}

/* skb_copy(dst, src): the copy inherits the original's metadata. */
static __always_inline int skbmap_copy(void *map, __u64 *ctx)
{
	__u64 dst = ctx[0], src = ctx[1];
	struct meta *m;

	m = bpf_map_lookup_elem(map, &src);
	if (!m)
		return 0;
	if (bpf_map_update_elem(map, &dst, m, BPF_ANY))
		stat_inc(STAT_UPDATE_ERROR);
	else
		stat_inc(STAT_COPY);
	return 0;
}

#endif
