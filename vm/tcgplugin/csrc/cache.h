/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A deterministic set-associative true-LRU cache hierarchy modelled on the
 * Intel Xeon Platinum 8180 (Skylake-SP); numbers and sources are in
 * vm/tcgplugin/README.md. Simplifications, on purpose:
 *  - every level fills on a miss and none evicts from another (neither
 *    inclusive nor exclusive; the real LLC is non-inclusive);
 *  - the LLC is one 57344-set array (the real one is 28 slices of 2048
 *    sets behind an undocumented hash), indexed by a multiplicative hash
 *    of the line;
 *  - no prefetchers, no TLBs, no write-back traffic, no coherence;
 *  - a data access touching two lines costs the worse of the two;
 *  - instruction fetch uses virtual line addresses (the TB's), tagged with
 *    bit 63 of the line number so they never alias a physical data line
 *    in the shared L2 and LLC.
 * Each set is an array of tags, most recently used first: a hit moves its
 * tag to the front, a miss drops the last and puts the new one in front.
 * With at most 16 ways a linear scan is as fast as anything cleverer.
 */
#ifndef KCI_CACHE_H
#define KCI_CACHE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINE_BITS 6
#define FETCH_TAG (1ull << 63)

#define LAT_L2 13
#define LAT_LLC 77
#define LAT_DRAM 240

struct level {
	uint64_t size;
	uint32_t ways;
	uint32_t sets;
	uint32_t mask; /* sets - 1 when sets is a power of two, else 0 */
	uint64_t *tags; /* sets * ways, MRU first; UINT64_MAX is empty */
};

struct model {
	struct level l1i, l1d, l2, llc;
};

static int level_init(struct level *l, uint64_t size, uint32_t ways)
{
	l->size = size;
	l->ways = ways;
	l->sets = (uint32_t)(size / ways >> LINE_BITS);
	l->mask = (l->sets & (l->sets - 1)) == 0 ? l->sets - 1 : 0;
	l->tags = malloc((size_t)l->sets * ways * sizeof(*l->tags));
	if (!l->tags) {
		return -1;
	}
	memset(l->tags, 0xff, (size_t)l->sets * ways * sizeof(*l->tags));
	return 0;
}

static inline int level_access(struct level *l, uint64_t line)
{
	/* The LLC's set count is not a power of two: its set is a
	 * multiplicative hash of the line scaled to [0, sets), which costs a
	 * multiply where a modulo cost a 64-bit division. */
	uint64_t set = l->mask ? line & l->mask
			       : (uint64_t)(((unsigned __int128)(line * 0x9e3779b97f4a7c15ull) * l->sets) >> 64);
	uint64_t *t = l->tags + (size_t)set * l->ways;
	if (t[0] == line) {
		return 1; /* already most recently used: the common case */
	}
	/* Shift tags down until the hit (or the last way, evicted on a miss)
	 * and put line in front. An open loop: ways are few, and libc's
	 * memmove costs more than it saves at this size. */
	uint64_t prev = t[0];
	for (uint32_t i = 1; i < l->ways; i++) {
		uint64_t cur = t[i];
		t[i] = prev;
		if (cur == line) {
			t[0] = line;
			return 1;
		}
		prev = cur;
	}
	t[0] = line;
	return 0;
}

/* model_line is the penalty of one line's access starting at l1. */
static inline uint64_t model_line(struct model *m, struct level *l1, uint64_t line)
{
	if (level_access(l1, line)) {
		return 0;
	}
	if (level_access(&m->l2, line)) {
		return LAT_L2;
	}
	if (level_access(&m->llc, line)) {
		return LAT_LLC;
	}
	return LAT_DRAM;
}

static inline uint64_t model_data(struct model *m, uint64_t first, uint64_t last)
{
	uint64_t p = model_line(m, &m->l1d, first);
	if (last != first) {
		uint64_t q = model_line(m, &m->l1d, last);
		p = q > p ? q : p;
	}
	return p;
}

static inline uint64_t model_fetch(struct model *m, uint64_t line, uint64_t n)
{
	uint64_t p = 0;
	for (uint64_t i = 0; i < n; i++) {
		p += model_line(m, &m->l1i, (line + i) | FETCH_TAG);
	}
	return p;
}

static int model_init(struct model *m)
{
	if (level_init(&m->l1i, 32 << 10, 8) || level_init(&m->l1d, 32 << 10, 8) ||
	    level_init(&m->l2, 1 << 20, 16) || level_init(&m->llc, 38u * (1 << 20) + (1 << 19), 11)) {
		return -1;
	}
	return 0;
}

static void model_describe(const struct model *m, char *buf, size_t n)
{
	snprintf(buf, n,
		 "model xeon-platinum-8180 l1i=%lu:%u:%d l1d=%lu:%u:%d l2=%lu:%u:%d llc=%lu:%u:%d "
		 "lat l2=%d llc=%d dram=%d",
		 (unsigned long)m->l1i.size, m->l1i.ways, 1 << LINE_BITS,
		 (unsigned long)m->l1d.size, m->l1d.ways, 1 << LINE_BITS,
		 (unsigned long)m->l2.size, m->l2.ways, 1 << LINE_BITS,
		 (unsigned long)m->llc.size, m->llc.ways, 1 << LINE_BITS,
		 LAT_L2, LAT_LLC, LAT_DRAM);
}

#endif
