/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-vCPU totals for a guest of several vCPUs. Under icount QEMU 7.2
 * runs every vCPU on one host thread, in turns (round-robin TCG), so one
 * vCPU executes at a time. The slots' inline counters are shared by the
 * vCPUs (API v1 inline ops are not per vCPU) and stay exact as totals;
 * beside them two more inline adds count every instruction and (without
 * the cache model) every access into one global pair, and each
 * instrumented block's exec callback, which carries the vCPU's index,
 * charges what the pair counted since the last change of vCPU to the vCPU
 * that ran it. With the cache model the memory callbacks charge accesses
 * and penalties to their vCPU directly.
 *
 * Turns: with quantum=K the same callback ends a vCPU's turn once it has
 * run K instructions (QEMU's cpu_exit, honoured at the next block
 * boundary), so the vCPUs alternate every K instructions instead of at
 * each halt or timer deadline. Both points are functions of the
 * instruction stream: the interleaving stays deterministic.
 */
#ifndef KCI_VCPUS_H
#define KCI_VCPUS_H

#include <stdint.h>

#include "coherent.h"

struct vtot {
	uint64_t insns, mem, pen;
	uint64_t fetch; /* the part of pen charged to instruction fetches */
};

struct vcpus {
	unsigned cur;           /* the vCPU the global pair's news belong to */
	uint64_t all_insns;     /* inline: every instrumented instruction */
	uint64_t all_mem;       /* inline: every access, without the cache model */
	/* (with one vCPU the pair is counted only for call contexts, and
	 * the model's callbacks keep v[0]'s accesses and penalties) */
	uint64_t seen_insns;    /* all_insns when last charged */
	uint64_t seen_mem;
	uint64_t slice_start;   /* all_insns when the current turn began */
	uint64_t exits;         /* turns ended by the quantum */
	struct vtot v[MAX_CORES];
	struct vtot open[MAX_CORES]; /* v when the open window started */
};

/* vc_charge gives the global pair's news to the vCPU that ran them. */
static inline void vc_charge(struct vcpus *vc)
{
	vc->v[vc->cur].insns += vc->all_insns - vc->seen_insns;
	vc->v[vc->cur].mem += vc->all_mem - vc->seen_mem;
	vc->seen_insns = vc->all_insns;
	vc->seen_mem = vc->all_mem;
}

/* vc_enter is a block of vcpu starting: true when the turn is over. */
static inline int vc_enter(struct vcpus *vc, unsigned vcpu, uint64_t quantum)
{
	if (vcpu != vc->cur) {
		vc_charge(vc);
		vc->cur = vcpu;
		vc->slice_start = vc->all_insns;
		return 0;
	}
	if (quantum == 0 || vc->all_insns - vc->slice_start < quantum) {
		return 0;
	}
	vc->slice_start = vc->all_insns;
	vc->exits++;
	return 1;
}

/* vc_now is vcpu's totals so far, the global pair's news included when
 * they are its (call contexts snapshot them; see ctx.h). */
static inline struct vtot vc_now(const struct vcpus *vc, unsigned vcpu)
{
	struct vtot t = vc->v[vcpu];
	if (vcpu == vc->cur) {
		t.insns += vc->all_insns - vc->seen_insns;
		t.mem += vc->all_mem - vc->seen_mem;
	}
	return t;
}

static inline void vc_open(struct vcpus *vc, int n)
{
	vc_charge(vc);
	for (int i = 0; i < n; i++) {
		vc->open[i] = vc->v[i];
	}
}

/* vc_window is vcpu's counts since the window opened. */
static inline struct vtot vc_window(struct vcpus *vc, int vcpu)
{
	struct vtot d = vc->v[vcpu], b = vc->open[vcpu];
	return (struct vtot){d.insns - b.insns, d.mem - b.mem, d.pen - b.pen, d.fetch - b.fetch};
}

#endif
