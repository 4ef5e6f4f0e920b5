/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A window's calls split by block (ctxblocks=on): what each block ran
 * while a call context was the innermost one open on its vCPU, per
 * (block, target). The Go side names the blocks by function, so a BPF
 * program's calls read as a profile's children do: the program's own
 * code and the kernel functions it called, each with its instructions
 * and modelled cycles.
 *
 * Charging: a vCPU's totals (vcpus.h's vc_now) gain between two of its
 * block entries what the earlier block ran: its instructions, its
 * accesses' and fetches' penalties, and those of any helper access QEMU
 * made on that vCPU before its next block began (an interrupt frame).
 * Each block entry (on_cexec) charges its vCPU's pending (block,
 * target) pair and makes its own pending when a context is open there.
 * A block whose context is entered at its start counts in it
 * (on_ctx_entry runs first); the innermost context closing (on_callret)
 * ends its pair too, so what follows before the next block is in
 * neither. So a target's pairs sum to what ran while it was innermost:
 * its context's counts less those of the contexts nested in it.
 */
#ifndef KCI_SPLIT_H
#define KCI_SPLIT_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "vcpus.h"

struct spair {
	uint32_t slot, ctx;
	uint64_t execs, insns, pen;
	uint64_t fetch; /* the part of pen charged to instruction fetches */
};

struct splits {
	struct spair *p;
	uint32_t n, cap;
	uint32_t *hash; /* (slot, ctx) -> index + 1, open addressing */
	uint32_t hcap;
	int64_t pending[MAX_CORES]; /* the pair each vCPU's block charges, -1 for none */
	struct vtot at[MAX_CORES];  /* the vCPU's totals when it began */
};

static void split_oom(void)
{
	fprintf(stderr, "kcicount: out of memory for the calls' split\n");
	abort();
}

static uint32_t split_hslot(uint32_t slot, uint32_t ctx, uint32_t cap)
{
	uint64_t k = (uint64_t)ctx << 32 | slot;
	return (uint32_t)((k * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static void split_rehash(struct splits *s)
{
	free(s->hash);
	s->hcap = s->hcap ? s->hcap * 2 : 4096;
	s->hash = calloc(s->hcap, sizeof(*s->hash));
	if (!s->hash) {
		split_oom();
	}
	for (uint32_t i = 0; i < s->n; i++) {
		uint32_t h = split_hslot(s->p[i].slot, s->p[i].ctx, s->hcap);
		while (s->hash[h]) {
			h = (h + 1) & (s->hcap - 1);
		}
		s->hash[h] = i + 1;
	}
}

/* split_pair is the index of (slot, ctx), made on first use. */
static uint32_t split_pair(struct splits *s, uint32_t slot, uint32_t ctx)
{
	if (s->n * 2 >= s->hcap) {
		split_rehash(s);
	}
	uint32_t h = split_hslot(slot, ctx, s->hcap);
	for (; s->hash[h]; h = (h + 1) & (s->hcap - 1)) {
		struct spair *q = &s->p[s->hash[h] - 1];
		if (q->slot == slot && q->ctx == ctx) {
			return s->hash[h] - 1;
		}
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4096;
		s->p = realloc(s->p, s->cap * sizeof(*s->p));
		if (!s->p) {
			split_oom();
		}
	}
	s->p[s->n] = (struct spair){.slot = slot, .ctx = ctx};
	s->hash[h] = ++s->n;
	return s->n - 1;
}

/* split_charge gives vcpu's pending pair what its totals (now) gained
 * since the pair began; nothing is pending there after it. */
static void split_charge(struct splits *s, int vcpu, struct vtot now)
{
	int64_t k = s->pending[vcpu];
	if (k >= 0) {
		s->p[k].insns += now.insns - s->at[vcpu].insns;
		s->p[k].pen += now.pen - s->at[vcpu].pen;
		s->p[k].fetch += now.fetch - s->at[vcpu].fetch;
	}
	s->pending[vcpu] = -1;
}

/* split_enter is a block (slot) entered on vcpu in a window, with ctx
 * (or -1) the innermost context open there. */
static void split_enter(struct splits *s, int vcpu, uint32_t slot, int64_t ctx, struct vtot now)
{
	split_charge(s, vcpu, now);
	if (ctx < 0) {
		return;
	}
	int64_t k = split_pair(s, slot, (uint32_t)ctx);
	s->pending[vcpu] = k;
	s->p[k].execs++;
	s->at[vcpu] = now;
}

/* split_reset starts a window: every pair at zero, none pending. */
static void split_reset(struct splits *s)
{
	for (uint32_t i = 0; i < s->n; i++) {
		s->p[i].execs = s->p[i].insns = s->p[i].pen = s->p[i].fetch = 0;
	}
	for (int v = 0; v < MAX_CORES; v++) {
		s->pending[v] = -1;
	}
}

#endif
