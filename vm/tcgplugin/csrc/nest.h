/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Nested calls: per window, what the calls of one target ran inside the
 * calls of another, for each call that opened and closed in the window
 * inside another target's (the innermost context open on its vCPU when
 * it opened). A call nested in one of its own target's is not one (its
 * context counts it once). The Go side takes kci's own programs (the
 * context accountant's, run by interrupts landing in a BPF program's
 * call) out of the program's counts with them. Part of ctx.h.
 */
#ifndef KCI_NEST_H
#define KCI_NEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "vcpus.h"

struct npair {
	uint32_t outer, inner; /* contexts' indexes */
	uint64_t calls, insns, mem, pen;
};

struct nests {
	struct npair *p;
	uint32_t n, cap;
	uint64_t win; /* windows opened so far: a frame opened in the open one has its number */
	bool on;      /* a window is open */
};

static void nest_oom(void)
{
	fprintf(stderr, "kcicount: out of memory for nested calls\n");
	abort();
}

/* nest_add adds one call of inner, nested in outer's, that ran d. The
 * pairs are few (a program, the accountant's programs): a linear scan. */
static void nest_add(struct nests *s, uint32_t outer, uint32_t inner, struct vtot d)
{
	for (uint32_t i = 0; i < s->n; i++) {
		struct npair *q = &s->p[i];
		if (q->outer == outer && q->inner == inner) {
			q->calls++;
			q->insns += d.insns;
			q->mem += d.mem;
			q->pen += d.pen;
			return;
		}
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->p = realloc(s->p, s->cap * sizeof(*s->p));
		if (!s->p) {
			nest_oom();
		}
	}
	s->p[s->n++] = (struct npair){outer, inner, 1, d.insns, d.mem, d.pen};
}

#endif
