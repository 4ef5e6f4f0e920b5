// SPDX-License-Identifier: GPL-2.0
/* survive: the survival matrix. One writer per metadata carrier attaches
 * just before the path under test, one reader at the final receive hook.
 * Test packets end in a 16-byte trailer {SURV_MAGIC, token}; the token is
 * what the writer stores in the carrier and what the reader expects back,
 * so a stale entry (say, a recycled skb address) cannot pass for a
 * survivor. Reading the trailer from the end of the packet works at L2
 * and L3 hooks and before or after encapsulation alike. */
#include "common.h"

#define SURV_MAGIC 0x5652555349434bULL /* "KCISURV" little-endian */

struct trailer {
	__u64 magic;
	__u64 token;
};

/* What a carrier holds: the token and the benchmark's magic. */
struct surv_meta {
	__u64 token;
	__u32 magic;
	__u32 pad;
};

/* Result counters, shared by every program of a cell. */
enum {
	RES_WRITTEN = 0,
	RES_WRITE_FAIL = 1,
	RES_SEEN = 2,
	RES_OK = 3,
	RES_ABSENT = 4,
	RES_MISMATCH = 5,
	RES_REDIRECTED = 6,
	RES_MAX = 8,
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, RES_MAX);
	__type(key, __u32);
	__type(value, __u64);
} res SEC(".maps");

/* How a writer hands the packet on: 0 = continue, 1 = bpf_redirect to
 * ifindex's egress, 2 = bpf_redirect_peer into ifindex's peer. */
struct cfg {
	__u32 mode;
	__u32 ifindex;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cfg);
} cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct surv_meta);
} carrier SEC(".maps");

static __always_inline void res_inc(__u32 key)
{
	__u64 *v = bpf_map_lookup_elem(&res, &key);

	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline int skb_token(struct __sk_buff *skb, __u64 *token)
{
	struct trailer t;

	if (skb->len < sizeof(t))
		return -1;
	if (bpf_skb_load_bytes(skb, skb->len - sizeof(t), &t, sizeof(t)))
		return -1;
	if (t.magic != SURV_MAGIC)
		return -1;
	*token = t.token;
	return 0;
}

static __always_inline int finish(void)
{
	__u32 zero = 0;
	struct cfg *c = bpf_map_lookup_elem(&cfg, &zero);

	if (!c || !c->mode)
		return TC_ACT_OK;
	res_inc(RES_REDIRECTED);
	if (c->mode == 2)
		return bpf_redirect_peer(c->ifindex, 0);
	return bpf_redirect(c->ifindex, 0);
}

/* Writers. */

SEC("tc")
int surv_ext_write(struct __sk_buff *skb)
{
	struct bpf_dynptr d;
	struct surv_meta *m;
	__u64 token;

	if (skb_token(skb, &token))
		return finish();
	if (bpf_dynptr_from_skb_ext(skb, sizeof(*m), BPF_SKB_EXT_F_CREATE, &d)) {
		res_inc(RES_WRITE_FAIL);
		return finish();
	}
	m = bpf_dynptr_slice_rdwr(&d, 0, NULL, sizeof(*m));
	if (!m) {
		res_inc(RES_WRITE_FAIL);
		return finish();
	}
	m->token = token;
	m->magic = META_MAGIC;
	res_inc(RES_WRITTEN);
	return finish();
}

SEC("tc")
int surv_map_write(struct __sk_buff *skb)
{
	struct surv_meta m = { .magic = META_MAGIC };
	__u64 key = skb_key(skb);

	if (skb_token(skb, &m.token))
		return finish();
	if (bpf_map_update_elem(&carrier, &key, &m, BPF_ANY))
		res_inc(RES_WRITE_FAIL);
	else
		res_inc(RES_WRITTEN);
	return finish();
}

SEC("tc")
int surv_mark_write(struct __sk_buff *skb)
{
	__u64 token;

	if (skb_token(skb, &token))
		return finish();
	skb->mark = (__u32)token; /* the host picks tokens with nonzero low bits */
	res_inc(RES_WRITTEN);
	return finish();
}

/* The XDP carrier's writer runs as generic XDP; a tc program on the same
 * hook can still redirect, which is what surv_redirect is for. */
SEC("xdp")
int surv_xdp_write(struct xdp_md *ctx)
{
	struct trailer t;
	struct surv_meta *m;
	void *data;
	__u32 len = bpf_xdp_get_buff_len(ctx);

	if (len < sizeof(t) || bpf_xdp_load_bytes(ctx, len - sizeof(t), &t, sizeof(t)))
		return XDP_PASS;
	if (t.magic != SURV_MAGIC)
		return XDP_PASS;
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(*m))) {
		res_inc(RES_WRITE_FAIL);
		return XDP_PASS;
	}
	m = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if ((void *)(m + 1) > data) {
		res_inc(RES_WRITE_FAIL);
		return XDP_PASS;
	}
	m->token = t.token;
	m->magic = META_MAGIC;
	m->pad = 0;
	res_inc(RES_WRITTEN);
	return XDP_PASS;
}

SEC("tc")
int surv_redirect(struct __sk_buff *skb)
{
	return finish();
}

/* Readers, at tc ingress of the final receiving device. */

static __always_inline void judge(struct surv_meta *m, __u64 token)
{
	if (!m)
		res_inc(RES_ABSENT);
	else if (m->magic == META_MAGIC && m->token == token)
		res_inc(RES_OK);
	else
		res_inc(RES_MISMATCH);
}

SEC("tc")
int surv_ext_read(struct __sk_buff *skb)
{
	struct bpf_dynptr d;
	__u64 token;

	if (skb_token(skb, &token))
		return TC_ACT_OK;
	res_inc(RES_SEEN);
	if (bpf_dynptr_from_skb_ext(skb, sizeof(struct surv_meta), 0, &d)) {
		res_inc(RES_ABSENT);
		return TC_ACT_OK;
	}
	judge(bpf_dynptr_slice(&d, 0, NULL, sizeof(struct surv_meta)), token);
	return TC_ACT_OK;
}

SEC("tc")
int surv_map_read(struct __sk_buff *skb)
{
	__u64 key = skb_key(skb);
	__u64 token;

	if (skb_token(skb, &token))
		return TC_ACT_OK;
	res_inc(RES_SEEN);
	judge(bpf_map_lookup_elem(&carrier, &key), token);
	bpf_map_delete_elem(&carrier, &key);
	return TC_ACT_OK;
}

SEC("tc")
int surv_mark_read(struct __sk_buff *skb)
{
	__u64 token;

	if (skb_token(skb, &token))
		return TC_ACT_OK;
	res_inc(RES_SEEN);
	if (skb->mark == 0)
		res_inc(RES_ABSENT);
	else if (skb->mark == (__u32)token)
		res_inc(RES_OK);
	else
		res_inc(RES_MISMATCH);
	return TC_ACT_OK;
}

SEC("tc")
int surv_xdp_read(struct __sk_buff *skb)
{
	void *meta = (void *)(long)skb->data_meta;
	void *data = (void *)(long)skb->data;
	struct surv_meta *m = meta;
	__u64 token;

	if (skb_token(skb, &token))
		return TC_ACT_OK;
	res_inc(RES_SEEN);
	if (meta == data) {
		res_inc(RES_ABSENT);
		return TC_ACT_OK;
	}
	if ((void *)(m + 1) > data) {
		res_inc(RES_MISMATCH);
		return TC_ACT_OK;
	}
	judge(m, token);
	return TC_ACT_OK;
}
