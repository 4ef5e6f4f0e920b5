// SPDX-License-Identifier: GPL-2.0
/* cnt: the floor. Count packets at tc ingress and egress and do nothing
 * else, so every other variant's cost is relative to this one. */
#include "common.h"

SEC("tc/ingress")
int cnt_ingress(struct __sk_buff *skb)
{
	stat_inc(STAT_INGRESS);
	return TC_ACT_OK;
}

SEC("tc/egress")
int cnt_egress(struct __sk_buff *skb)
{
	stat_inc(STAT_EGRESS);
	return TC_ACT_OK;
}
