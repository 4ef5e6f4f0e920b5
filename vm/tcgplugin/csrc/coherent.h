/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A coherent multi-core cache model (cache=coherent): each vCPU is a core
 * with private L1i, L1d and L2 of cache.h's geometry and latencies, and
 * the cores share one LLC. Data lines carry MESI states in the private
 * caches; README.md lists the latencies and their sources.
 *
 *  - a load or store that hits its core's L1d or L2 costs what cache.h's
 *    model charges (0 or LAT_L2);
 *  - a store to a line held Shared first invalidates every other copy:
 *    LAT_UPGRADE (an upgrade);
 *  - a miss in the core's private caches snoops the other cores: a line
 *    another core holds Modified or Exclusive comes from that core's
 *    cache, LAT_XFER (a transfer); else from the LLC (LAT_LLC) or DRAM;
 *    a store also invalidates every other copy;
 *  - a locked read-modify-write (the plugin sees a lock-prefixed
 *    instruction's load, then its store) reads for ownership: its load
 *    acts as a store, and it adds LAT_LOCK.
 * Instruction fetch has no coherence (kernel text is not written while a
 * window runs): per-core L1i, then the core's L2, then the shared LLC.
 *
 * With smt=T the vCPUs are hardware threads, T to a core: vCPUs kT to
 * kT+T-1 share core k's L1i, L1d and L2, so a line one of them wrote is
 * a hit for its sibling, while each vCPU keeps its own counts.
 *
 * A line's state lives beside its tag in every private level that holds
 * it; levels stay neither inclusive nor exclusive, as in cache.h, and an
 * eviction loses the state with the line (no write-back traffic). With
 * one core the model is cache.h's plus LAT_LOCK per locked instruction.
 */
#ifndef KCI_COHERENT_H
#define KCI_COHERENT_H

#include "cache.h"

#define MAX_CORES 64

/* Latencies in core cycles of the Xeon Platinum 8180 (2.5 GHz base). */
#define LAT_XFER 119   /* 47.5 ns core-to-core, Skylake-SP, at 2.5 GHz */
#define LAT_UPGRADE 77 /* a request to the line's home agent: an LLC hit's */
#define LAT_LOCK 18    /* lock xadd/cmpxchg latency, Skylake */

enum mesi { MESI_I = 0, MESI_S = 1, MESI_E = 2, MESI_M = 3 };

/* A state-carrying level: tags as cache.h's, and a state per way. */
struct clevel {
	struct level l;
	uint8_t *st;
};

struct core {
	struct level l1i;
	struct clevel l1d, l2;
};

struct cmodel {
	int n;   /* cores */
	int smt; /* vCPUs (hardware threads) a core: 1 or 2 */
	int shift; /* vCPU >> shift is its core (per access: no division) */
	struct core *c;
	struct level llc;
	uint64_t xfers, upgrades, invals, locks; /* since boot, for the header */
};

static int clevel_init(struct clevel *cl, uint64_t size, uint32_t ways)
{
	if (level_init(&cl->l, size, ways)) {
		return -1;
	}
	cl->st = calloc((size_t)cl->l.sets * ways, 1);
	return cl->st ? 0 : -1;
}

static inline uint64_t cset(const struct level *l, uint64_t line)
{
	return l->mask ? line & l->mask
		       : (uint64_t)(((unsigned __int128)(line * 0x9e3779b97f4a7c15ull) * l->sets) >> 64);
}

/* clevel_find is the way of line, or -1; no LRU update. */
static inline int clevel_find(const struct clevel *cl, uint64_t line, size_t *base)
{
	*base = (size_t)cset(&cl->l, line) * cl->l.ways;
	for (uint32_t i = 0; i < cl->l.ways; i++) {
		if (cl->l.tags[*base + i] == line) {
			return (int)i;
		}
	}
	return -1;
}

/* clevel_access is level_access with the states moved along: it returns
 * the line's state before the access (MESI_I on a miss, which fills it
 * as fill) and leaves the line most recently used. */
static inline int clevel_access(struct clevel *cl, uint64_t line, int fill)
{
	size_t b;
	int w = clevel_find(cl, line, &b);
	uint64_t *t = cl->l.tags + b;
	uint8_t *s = cl->st + b;
	int old = w >= 0 ? s[w] : MESI_I;
	int last = w >= 0 ? w : (int)cl->l.ways - 1;
	for (int i = last; i > 0; i--) {
		t[i] = t[i - 1];
		s[i] = s[i - 1];
	}
	t[0] = line;
	s[0] = (uint8_t)(w >= 0 ? old : fill);
	return old;
}

/* clevel_set changes line's state where cl holds it; MESI_I drops it. */
static inline void clevel_set(struct clevel *cl, uint64_t line, int state)
{
	size_t b;
	int w = clevel_find(cl, line, &b);
	if (w < 0) {
		return;
	}
	cl->st[b + w] = (uint8_t)state;
	if (state == MESI_I) {
		cl->l.tags[b + w] = UINT64_MAX;
	}
}

static inline int core_state(const struct core *c, uint64_t line)
{
	size_t b;
	int w = clevel_find(&c->l1d, line, &b);
	if (w >= 0) {
		return c->l1d.st[b + w];
	}
	w = clevel_find(&c->l2, line, &b);
	return w >= 0 ? c->l2.st[b + w] : MESI_I;
}

static inline void core_set(struct core *c, uint64_t line, int state)
{
	clevel_set(&c->l1d, line, state);
	clevel_set(&c->l2, line, state);
}

/* snoop looks at every other core's copy of line: it returns the
 * strongest state found, and for a store (excl) invalidates them all,
 * else downgrades an owner to Shared. */
static int snoop(struct cmodel *m, int self, uint64_t line, int excl)
{
	int best = MESI_I;
	for (int i = 0; i < m->n; i++) {
		if (i == self) {
			continue;
		}
		int s = core_state(&m->c[i], line);
		if (s == MESI_I) {
			continue;
		}
		best = s > best ? s : best;
		if (excl) {
			core_set(&m->c[i], line, MESI_I);
			m->invals++;
		} else if (s != MESI_S) {
			core_set(&m->c[i], line, MESI_S);
		}
	}
	return best;
}

/* cm_line is the penalty of core self's access to one data line (self
 * is a core: cm_data and cm_fetch take a vCPU). */
static uint64_t cm_line(struct cmodel *m, int self, uint64_t line, int store)
{
	struct core *c = &m->c[self];
	int s = core_state(c, line);
	if (s != MESI_I) {
		uint64_t p = 0;
		if (clevel_access(&c->l1d, line, s) == MESI_I) {
			clevel_access(&c->l2, line, s); /* held, so an L2 hit */
			p = LAT_L2;
		}
		if (store && s == MESI_S) {
			snoop(m, self, line, 1);
			m->upgrades++;
			p += LAT_UPGRADE;
		}
		if (store && s != MESI_M) {
			core_set(c, line, MESI_M);
		}
		return p;
	}
	int other = m->n > 1 ? snoop(m, self, line, store) : MESI_I;
	uint64_t p;
	int hit = level_access(&m->llc, line);
	if (other == MESI_M || other == MESI_E) {
		m->xfers++;
		p = LAT_XFER;
	} else {
		p = hit ? LAT_LLC : LAT_DRAM;
	}
	int now = store ? MESI_M : other == MESI_I ? MESI_E : MESI_S;
	clevel_access(&c->l1d, line, now);
	clevel_access(&c->l2, line, now);
	return p;
}

/* cm_data is the penalty of an access touching lines first..last (the
 * worse of two), as cache.h's model_data; locked marks a lock-prefixed
 * instruction's access, its load reading for ownership. */
static inline uint64_t cm_data(struct cmodel *m, int vcpu, uint64_t first, uint64_t last, int store, int locked)
{
	int self = vcpu >> m->shift;
	int excl = store || locked;
	uint64_t p = cm_line(m, self, first, excl);
	if (last != first) {
		uint64_t q = cm_line(m, self, last, excl);
		p = q > p ? q : p;
	}
	if (locked && !store) {
		m->locks++;
		p += LAT_LOCK;
	}
	return p;
}

static inline uint64_t cm_fetch(struct cmodel *m, int vcpu, uint64_t line, uint64_t n)
{
	struct core *c = &m->c[vcpu >> m->shift];
	uint64_t p = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t l = (line + i) | FETCH_TAG;
		if (level_access(&c->l1i, l)) {
			continue;
		}
		if (level_access(&c->l2.l, l)) {
			p += LAT_L2;
		} else {
			p += level_access(&m->llc, l) ? LAT_LLC : LAT_DRAM;
		}
	}
	return p;
}

/* cm_init makes the model of nvcpu vCPUs, smt to a core. */
static int cm_init(struct cmodel *m, int nvcpu, int smt)
{
	int n = (nvcpu + smt - 1) / smt;
	m->n = n;
	m->smt = smt;
	m->shift = smt == 2;
	m->c = calloc((size_t)n, sizeof(*m->c));
	if (!m->c || level_init(&m->llc, 38u * (1 << 20) + (1 << 19), 11)) {
		return -1;
	}
	for (int i = 0; i < n; i++) {
		struct core *c = &m->c[i];
		if (level_init(&c->l1i, 32 << 10, 8) || clevel_init(&c->l1d, 32 << 10, 8) ||
		    clevel_init(&c->l2, 1 << 20, 16)) {
			return -1;
		}
	}
	return 0;
}

static void cm_describe(const struct cmodel *m, char *buf, size_t n)
{
	const struct core *c = &m->c[0];
	snprintf(buf, n,
		 "model xeon-platinum-8180-coherent%s l1i=%lu:%u:%d l1d=%lu:%u:%d l2=%lu:%u:%d llc=%lu:%u:%d "
		 "lat l2=%d llc=%d dram=%d xfer=%d upgrade=%d lock=%d cores=%d",
		 m->smt == 2 ? "-smt2" : "", (unsigned long)c->l1i.size, c->l1i.ways, 1 << LINE_BITS,
		 (unsigned long)c->l1d.l.size, c->l1d.l.ways, 1 << LINE_BITS,
		 (unsigned long)c->l2.l.size, c->l2.l.ways, 1 << LINE_BITS,
		 (unsigned long)m->llc.size, m->llc.ways, 1 << LINE_BITS,
		 LAT_L2, LAT_LLC, LAT_DRAM, LAT_XFER, LAT_UPGRADE, LAT_LOCK, m->n);
}

#endif
