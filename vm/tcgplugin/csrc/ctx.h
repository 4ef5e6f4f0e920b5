/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Call contexts (ctx=lo-hi; by default the x86-64 kernel's module area,
 * where the BPF JIT puts programs and trampolines): what ran inside each
 * call whose code entered the range, the callee's own code, whatever it
 * called and any interrupt that landed meanwhile: bpf_stats' scope for a
 * BPF program.
 *
 * API v1 reads no registers, so the plugin follows the stack by the
 * accesses of near calls and rets (x86_callret): a call's store is where
 * its return address went, its frame's slot; a ret's load takes one back.
 * Each vCPU keeps a shadow stack of the frames it saw. A ret pops its own
 * frame and the newer ones on the same stack below it (frames left
 * without a ret: longjmp-like paths); a
 * call's store pops the frames it shows dead (at or below it on the same
 * stack). "The same stack" is the same 16 KiB-aligned region: x86-64
 * task stacks are 16 KiB and aligned to it, so another task's stack never
 * shares one's region.
 *
 * Opening: when a block in the range starts, the newest frame is a call
 * no context was opened for, and it lies at or above the stack pointer
 * the last call or ret left (on the same stack), that call opens a
 * context named by the block's address: the program's entry. So a
 * direct call, a jump thunk (lfence; jmp *%reg) and a retpoline (whose
 * inner call and ret have come and gone when the target starts) open one
 * at their target, and an interrupt between a call and its target changes
 * nothing (its calls are gone when it returns); a return into the range,
 * a jump within it (a BPF tail call) or a block reached while the newest
 * frame is already open opens none. A context closes when its frame pops.
 *
 * Counting: a target's counts on a vCPU are what the vCPU ran while at
 * least one call of it was open there: its totals (vcpus.h) when the last
 * such call closed minus those when the first opened. So contexts nested
 * in a call count in its target's too, and a call nested in (or, its
 * caller asleep, beside) a call of the same target adds its call, not
 * its instructions twice: a target never counts more than its vCPU ran.
 * Windows snapshot every context's totals as they do the slots', after
 * flushing the open ones (ctx_flush).
 *
 * Everything here runs on the vCPUs' one thread (icount is single
 * threaded TCG), as the window markers do.
 */
#ifndef KCI_CTX_H
#define KCI_CTX_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nest.h"
#include "vcpus.h"

#define CTX_REGION_BITS 14 /* x86-64 THREAD_SIZE: 16 KiB */
#define CTX_FRAMES 512     /* per vCPU; the oldest frame goes when full */
#define CTX_SCAN 64        /* frames a ret's unmatched load looks through */
#define CTX_MAX 65536      /* distinct targets */

/* The x86-64 kernel's module area (MODULES_VADDR..MODULES_END). */
#define CTX_DEFAULT_LO 0xffffffffa0000000ull
#define CTX_DEFAULT_HI 0xffffffffff000000ull

enum { FRAME_NONE, FRAME_OPEN, FRAME_FULL };

struct ctot {
	uint64_t calls, insns, mem, pen;
};

/* Stack classes (mark=<class>@<addr>): the kind of work a vCPU runs,
 * told by the newest marked call on its stack. A call of a marked
 * function gives its frame the mark's class; any other call's frame
 * takes the class of the code that made it. So the innermost marked
 * call decides (RCU callbacks inside a softirq are deferred work), and
 * the first call on another stack (the IRQ stack) inherits from the
 * code it interrupted. The code running is in the class of the newest
 * frame on the stack the last call or ret left: a task switched out
 * mid-call keeps its frames, and its class, on its own stack. Apart
 * from its class, an entry inside call contexts is told by the
 * innermost one's target (a BPF program's, or a trampoline's, inside
 * which the traced function runs: the Go side tells them apart). */
enum { CLS_NONE, CLS_HARDIRQ, CLS_SOFTIRQ, CLS_SYSCALL, CLS_DEFERRED, CLS_N };
#define MARKS_MAX 256
#define CTX_OPEN_MAX 16 /* innermost open contexts kept per vCPU */

static const char *const cls_names[CLS_N] = {"none", "hardirq", "softirq", "syscall", "deferred"};

struct mark_fn {
	uint64_t addr;
	uint16_t cls;
};

struct frame {
	uint64_t slot;  /* where the call stored its return address */
	uint32_t ctx;   /* with FRAME_OPEN: the context's index */
	uint16_t state; /* FRAME_NONE, FRAME_OPEN, FRAME_FULL (no room) */
	uint16_t cls;   /* the stack class of the callee's code */
	/* With FRAME_OPEN: the window it opened in (nest.h's win, 0 for
	 * none), the context open around it (its index + 1, 0 for none),
	 * and its vCPU's totals then. */
	uint64_t win;
	uint32_t outer;
	struct vtot at;
};

struct vctx {
	struct frame f[CTX_FRAMES];
	int n;
	uint64_t sp; /* the stack pointer the last call or ret left */
	int depth;   /* FRAME_OPEN frames */
	uint32_t open[CTX_OPEN_MAX]; /* their contexts, innermost last (the first CTX_OPEN_MAX) */
};

/* One target's counts, per vCPU, since boot and when the window opened;
 * its calls open on each vCPU, and that vCPU's totals when the first of
 * them opened (or at the last flush). */
struct cacc {
	uint64_t target;
	struct ctot *now, *base;
	uint32_t *open;
	struct vtot *snap;
};

struct ctxs {
	bool on;          /* ctx= is not off */
	bool blocks;      /* ctxblocks=on: slots count entries inside contexts */
	uint64_t lo, hi;  /* the entry range */
	uint64_t seq;     /* inline: +1 before every call and ret */
	uint64_t taken;   /* seq when the last call or ret access was taken */
	int nvcpu;
	struct vctx *v;
	struct cacc *acc;
	uint32_t n, cap;
	uint32_t open_n; /* contexts that existed when the window opened */
	uint32_t *hash;  /* target -> index + 1, open addressing */
	uint32_t hcap;
	struct mark_fn marks[MARKS_MAX];
	int nmarks;
	struct nests nest;
};

static inline bool ctx_in(const struct ctxs *c, uint64_t addr)
{
	return addr >= c->lo && addr < c->hi;
}

static inline bool same_stack(uint64_t a, uint64_t b)
{
	return (a >> CTX_REGION_BITS) == (b >> CTX_REGION_BITS);
}

static void ctx_oom(void)
{
	fprintf(stderr, "kcicount: out of memory for call contexts\n");
	abort();
}

static int ctx_init(struct ctxs *c, int nvcpu)
{
	c->nvcpu = nvcpu;
	c->v = calloc((size_t)nvcpu, sizeof(*c->v));
	c->hcap = 1024;
	c->hash = calloc(c->hcap, sizeof(*c->hash));
	return c->v && c->hash ? 0 : -1;
}

static uint32_t ctx_hslot(uint64_t t, uint32_t cap)
{
	return (uint32_t)((t * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static void ctx_rehash(struct ctxs *c)
{
	free(c->hash);
	c->hcap *= 2;
	c->hash = calloc(c->hcap, sizeof(*c->hash));
	if (!c->hash) {
		ctx_oom();
	}
	for (uint32_t i = 0; i < c->n; i++) {
		uint32_t h = ctx_hslot(c->acc[i].target, c->hcap);
		while (c->hash[h]) {
			h = (h + 1) & (c->hcap - 1);
		}
		c->hash[h] = i + 1;
	}
}

/* ctx_index is target's context, made on first use; -1 when too many. */
static int64_t ctx_index(struct ctxs *c, uint64_t target)
{
	uint32_t h = ctx_hslot(target, c->hcap);
	for (; c->hash[h]; h = (h + 1) & (c->hcap - 1)) {
		if (c->acc[c->hash[h] - 1].target == target) {
			return c->hash[h] - 1;
		}
	}
	if (c->n >= CTX_MAX) {
		return -1;
	}
	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 64;
		c->acc = realloc(c->acc, c->cap * sizeof(*c->acc));
		if (!c->acc) {
			ctx_oom();
		}
	}
	struct cacc *a = &c->acc[c->n];
	a->target = target;
	a->now = calloc((size_t)c->nvcpu, sizeof(*a->now));
	a->base = calloc((size_t)c->nvcpu, sizeof(*a->base));
	a->open = calloc((size_t)c->nvcpu, sizeof(*a->open));
	a->snap = calloc((size_t)c->nvcpu, sizeof(*a->snap));
	if (!a->now || !a->base || !a->open || !a->snap) {
		ctx_oom();
	}
	c->hash[h] = ++c->n;
	if (c->n * 2 > c->hcap) {
		ctx_rehash(c);
	}
	return c->n - 1;
}

/* ctx_charge adds what vCPU v ran since context k's snapshot to it, and
 * late accesses the totals do not hold yet. */
static void ctx_charge(struct ctxs *c, struct vcpus *vc, int v, uint32_t k, unsigned late)
{
	struct cacc *a = &c->acc[k];
	struct vtot t = vc_now(vc, v);
	a->now[v].insns += t.insns - a->snap[v].insns;
	a->now[v].mem += t.mem - a->snap[v].mem + late;
	a->now[v].pen += t.pen - a->snap[v].pen;
	a->snap[v] = t;
}

/* ctx_close ends f's call; its target counts until its last call ends. */
static void ctx_close(struct ctxs *c, struct vcpus *vc, int v, struct frame *f, unsigned late)
{
	if (f->state != FRAME_OPEN) {
		return;
	}
	struct vctx *x = &c->v[v];
	int n = x->depth < CTX_OPEN_MAX ? x->depth : CTX_OPEN_MAX;
	for (int i = n - 1; i >= 0; i--) {
		if (x->open[i] == f->ctx) { /* innermost first: contexts close out of order across tasks */
			memmove(&x->open[i], &x->open[i + 1], (size_t)(n - 1 - i) * sizeof(x->open[0]));
			break;
		}
	}
	x->depth--;
	if (--c->acc[f->ctx].open[v] == 0) {
		ctx_charge(c, vc, v, f->ctx, late);
	}
	if (c->nest.on && f->win == c->nest.win && f->outer != 0 && f->outer - 1 != f->ctx) {
		struct vtot t = vc_now(vc, v);
		nest_add(&c->nest, f->outer - 1, f->ctx,
			 (struct vtot){t.insns - f->at.insns, t.mem - f->at.mem + late, t.pen - f->at.pen,
				       t.fetch - f->at.fetch});
	}
}

/* ctx_cls is the stack class of the code vCPU v runs: the newest frame's
 * on the stack the last call or ret left, CLS_NONE if it holds none. */
static uint16_t ctx_cls(const struct ctxs *c, int v)
{
	const struct vctx *x = &c->v[v];
	for (int i = x->n - 1; i >= 0 && x->n - i <= CTX_SCAN; i--) {
		if (same_stack(x->f[i].slot, x->sp)) {
			return x->f[i].cls;
		}
	}
	return CLS_NONE;
}

/* ctx_inner is the innermost open context on vCPU v, -1 for none. */
static int64_t ctx_inner(const struct ctxs *c, int v)
{
	const struct vctx *x = &c->v[v];
	if (x->depth <= 0) {
		return -1;
	}
	return x->open[(x->depth < CTX_OPEN_MAX ? x->depth : CTX_OPEN_MAX) - 1];
}

/* ctx_mark is a marked function's first block starting on vCPU v: the
 * call that reached it (the newest frame, if at or above the stack
 * pointer, as for ctx_enter) takes the mark's class. */
static void ctx_mark(struct ctxs *c, int v, uint16_t cls)
{
	struct vctx *x = &c->v[v];
	if (x->n == 0) {
		return;
	}
	struct frame *f = &x->f[x->n - 1];
	if (same_stack(f->slot, x->sp) && f->slot >= x->sp) {
		f->cls = cls;
	}
}

/* ctx_mark_of is the class marked at addr, CLS_NONE if none. */
static uint16_t ctx_mark_of(const struct ctxs *c, uint64_t addr)
{
	for (int i = 0; i < c->nmarks; i++) {
		if (c->marks[i].addr == addr) {
			return c->marks[i].cls;
		}
	}
	return CLS_NONE;
}

/* ctx_parse_mark reads mark=<class>@<hex addr>'s value. */
static int ctx_parse_mark(struct ctxs *c, const char *s)
{
	const char *at = strchr(s, '@');
	if (!at || c->nmarks == MARKS_MAX) {
		return -1;
	}
	uint16_t k = CLS_NONE;
	for (uint16_t i = 1; i < CLS_N; i++) {
		if (strlen(cls_names[i]) == (size_t)(at - s) && strncmp(s, cls_names[i], (size_t)(at - s)) == 0) {
			k = i;
		}
	}
	char *end;
	errno = 0;
	unsigned long long a = strtoull(at + 1, &end, 16);
	if (k == CLS_NONE || errno != 0 || end == at + 1 || *end != '\0' || at[1] == '-') {
		return -1;
	}
	c->marks[c->nmarks++] = (struct mark_fn){.addr = a, .cls = k};
	return 0;
}

/* ctx_call is a call's store at slot on vCPU v: the frames at or below
 * it on its stack are dead (their rets went unseen; their contexts count
 * up to this store, late as for ctx_ret), then it is pushed, in the
 * class of the code that called. */
static void ctx_call(struct ctxs *c, struct vcpus *vc, int v, uint64_t slot, unsigned late)
{
	struct vctx *x = &c->v[v];
	while (x->n > 0 && same_stack(x->f[x->n - 1].slot, slot) && x->f[x->n - 1].slot <= slot) {
		ctx_close(c, vc, v, &x->f[--x->n], late);
	}
	if (x->n == CTX_FRAMES) {
		ctx_close(c, vc, v, &x->f[0], 0);
		memmove(&x->f[0], &x->f[1], (CTX_FRAMES - 1) * sizeof(x->f[0]));
		x->n--;
	}
	uint16_t cls = ctx_cls(c, v);
	x->f[x->n++] = (struct frame){.slot = slot, .cls = cls};
	x->sp = slot;
}

/* ctx_ret is a ret's load of slot (size bytes) on vCPU v: it pops its
 * frame and the newer ones below it on the same stack, looking past
 * frames of other stacks (a task switched out mid-call) up to CTX_SCAN;
 * a load of no frame's slot pops only those below it. late is 1 when
 * the totals count the ret's load only after this (inline adds). */
static void ctx_ret(struct ctxs *c, struct vcpus *vc, int v, uint64_t slot, unsigned size, unsigned late)
{
	struct vctx *x = &c->v[v];
	x->sp = slot + size;
	if (x->n > 0 && x->f[x->n - 1].slot == slot) {
		ctx_close(c, vc, v, &x->f[--x->n], late);
		return;
	}
	int keep = x->n; /* frames from keep up are looked at */
	for (int i = x->n - 1; i >= 0 && x->n - i <= CTX_SCAN; i--) {
		struct frame *f = &x->f[i];
		if (!same_stack(f->slot, slot)) {
			continue;
		}
		if (f->slot > slot) {
			break;
		}
		keep = i;
		if (f->slot == slot) {
			break;
		}
	}
	/* Close the dead frames newest first, keep the other stacks'. */
	int w = keep;
	for (int i = x->n - 1; i >= keep; i--) {
		if (same_stack(x->f[i].slot, slot) && x->f[i].slot <= slot) {
			ctx_close(c, vc, v, &x->f[i], late);
		}
	}
	for (int i = keep; i < x->n; i++) {
		if (!(same_stack(x->f[i].slot, slot) && x->f[i].slot <= slot)) {
			x->f[w++] = x->f[i];
		}
	}
	x->n = w;
}

/* ctx_enter is a block of the range starting at addr on vCPU v: the
 * newest frame opens a context for addr if it may (see the top). */
static void ctx_enter(struct ctxs *c, struct vcpus *vc, int v, uint64_t addr)
{
	struct vctx *x = &c->v[v];
	if (x->n == 0) {
		return;
	}
	struct frame *f = &x->f[x->n - 1];
	if (f->state != FRAME_NONE || !same_stack(f->slot, x->sp) || f->slot < x->sp) {
		return;
	}
	int64_t k = ctx_index(c, addr);
	if (k < 0) {
		f->state = FRAME_FULL; /* uncounted: CTX_MAX targets already */
		return;
	}
	f->state = FRAME_OPEN;
	f->ctx = (uint32_t)k;
	f->win = c->nest.on ? c->nest.win : 0;
	f->outer = x->depth > 0 && x->depth <= CTX_OPEN_MAX ? x->open[x->depth - 1] + 1 : 0;
	f->at = vc_now(vc, v);
	if (x->depth < CTX_OPEN_MAX) {
		x->open[x->depth] = (uint32_t)k;
	}
	struct cacc *a = &c->acc[k];
	if (a->open[v]++ == 0) {
		a->snap[v] = vc_now(vc, v);
	}
	a->now[v].calls++;
	x->depth++;
}

/* ctx_flush charges every open context its counts so far. */
static void ctx_flush(struct ctxs *c, struct vcpus *vc)
{
	for (uint32_t k = 0; k < c->n; k++) {
		for (int v = 0; v < c->nvcpu; v++) {
			if (c->acc[k].open[v] > 0) {
				ctx_charge(c, vc, v, k, 0);
			}
		}
	}
}

/* ctx_drop forgets every frame (a reset stops instrumenting: their rets
 * would go unseen), charging the open contexts first. */
static void ctx_drop(struct ctxs *c, struct vcpus *vc)
{
	ctx_flush(c, vc);
	for (uint32_t k = 0; k < c->n; k++) {
		memset(c->acc[k].open, 0, (size_t)c->nvcpu * sizeof(*c->acc[k].open));
	}
	for (int v = 0; v < c->nvcpu; v++) {
		c->v[v].n = 0;
		c->v[v].depth = 0;
	}
}

static void ctx_window_open(struct ctxs *c, struct vcpus *vc)
{
	c->nest.win++;
	c->nest.on = true;
	c->nest.n = 0;
	ctx_flush(c, vc);
	for (uint32_t i = 0; i < c->n; i++) {
		memcpy(c->acc[i].base, c->acc[i].now, (size_t)c->nvcpu * sizeof(struct ctot));
	}
	c->open_n = c->n;
}

/* ctx_diff is context i's counts on vCPU v since the window opened. */
static struct ctot ctx_diff(const struct ctxs *c, uint32_t i, int v)
{
	struct ctot d = c->acc[i].now[v];
	if (i < c->open_n) {
		struct ctot b = c->acc[i].base[v];
		d.calls -= b.calls;
		d.insns -= b.insns;
		d.mem -= b.mem;
		d.pen -= b.pen;
	}
	return d;
}

static bool ctot_zero(struct ctot d)
{
	return d.calls == 0 && d.insns == 0 && d.mem == 0 && d.pen == 0;
}

static const struct ctxs *ctx_sorting;

static int ctx_by_target(const void *a, const void *b)
{
	uint64_t x = ctx_sorting->acc[*(const uint32_t *)a].target;
	uint64_t y = ctx_sorting->acc[*(const uint32_t *)b].target;
	return x < y ? -1 : x > y;
}

/* ctx_lines is the window's ctx lines' count (with lines NULL) or text:
 * "ctx <target> <vcpu> <calls> <insns> <mem> <cycles>" for each target
 * and vCPU that counted something, by target then vCPU. A line is at
 * most 4 + 17 + 3 + 4 * 21 = 108 bytes. */
static uint32_t ctx_lines(struct ctxs *c, bool cache, char *buf, size_t cap, size_t *len)
{
	uint32_t *idx = malloc((c->n + 1) * sizeof(*idx));
	if (!idx) {
		ctx_oom();
	}
	for (uint32_t i = 0; i < c->n; i++) {
		idx[i] = i;
	}
	ctx_sorting = c;
	qsort(idx, c->n, sizeof(*idx), ctx_by_target);
	uint32_t lines = 0;
	for (uint32_t k = 0; k < c->n; k++) {
		for (int v = 0; v < c->nvcpu; v++) {
			struct ctot d = ctx_diff(c, idx[k], v);
			if (ctot_zero(d)) {
				continue;
			}
			lines++;
			if (buf) {
				*len += (size_t)snprintf(buf + *len, cap - *len, "ctx %lx %d %lu %lu %lu %lu\n",
							 (unsigned long)c->acc[idx[k]].target, v, (unsigned long)d.calls,
							 (unsigned long)d.insns, (unsigned long)d.mem,
							 (unsigned long)(cache ? d.insns + d.pen : 0));
			}
		}
	}
	free(idx);
	return lines;
}

#endif
