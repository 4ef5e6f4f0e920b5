// SPDX-License-Identifier: GPL-2.0
/* ext: the BPF skb extension. Create it and write the metadata at egress,
 * find it and check the magic at ingress. */
#include "common.h"

SEC("tc/egress")
int ext_write(struct __sk_buff *skb)
{
	struct bpf_dynptr d;
	struct meta *m;

	stat_inc(STAT_EGRESS);
	if (bpf_dynptr_from_skb_ext(skb, sizeof(*m), BPF_SKB_EXT_F_CREATE, &d)) {
		stat_inc(STAT_CREATE_FAIL);
		return TC_ACT_OK;
	}
	m = bpf_dynptr_slice_rdwr(&d, 0, NULL, sizeof(*m));
	if (!m) {
		stat_inc(STAT_SLICE_FAIL);
		return TC_ACT_OK;
	}
	m->ts = bpf_ktime_get_ns();
	m->len = skb->len;
	m->magic = META_MAGIC;
	return TC_ACT_OK;
}

SEC("tc/ingress")
int ext_read(struct __sk_buff *skb)
{
	struct bpf_dynptr d;
	struct meta *m;

	stat_inc(STAT_INGRESS);
	if (bpf_dynptr_from_skb_ext(skb, sizeof(*m), 0, &d)) {
		stat_inc(STAT_FIND_FAIL);
		return TC_ACT_OK;
	}
	m = bpf_dynptr_slice(&d, 0, NULL, sizeof(*m));
	if (!m) {
		stat_inc(STAT_SLICE_FAIL);
		return TC_ACT_OK;
	}
	if (m->magic != META_MAGIC) {
		stat_inc(STAT_BADMAGIC);
		return TC_ACT_OK;
	}
	stat_inc(STAT_FOUND);
	return TC_ACT_OK;
}
