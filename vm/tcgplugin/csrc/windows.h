/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kcicount's windows: their snapshots at a start marker, and the block
 * each writes when it closes (README.md, Output format). Part of
 * kcicount.c's one translation unit, included where its state (st) is
 * defined.
 */
#ifndef KCI_WINDOWS_H
#define KCI_WINDOWS_H

/* out_write writes a whole record with one write(2) per buffer, so a
 * killed QEMU leaves whole windows behind. */
static void out_write(const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(st.out, buf, n);
		if (w < 0 && errno == EINTR) {
			continue;
		}
		if (w <= 0) {
			fprintf(stderr, "kcicount: write: %s\n", strerror(errno));
			return;
		}
		buf += w;
		n -= (size_t)w;
	}
}

static void out_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void out_printf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0) {
		out_write(buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
	}
}

static void window_open(void)
{
	st.open_n = st.nslots;
	for (uint32_t c = 0; c * CHUNK < st.open_n; c++) {
		struct chunk *ch = st.chunks[c];
		uint32_t n = st.open_n - c * CHUNK < CHUNK ? st.open_n - c * CHUNK : CHUNK;
		for (uint32_t j = 0; j < n; j++) {
			ch->b[j] = (struct snap){ch->s[j].insns, ch->s[j].mem, ch->s[j].pen, ch->s[j].execs,
						 ch->s[j].coh};
			if (ch->cc) {
				memcpy(ch->cc[j].base, ch->cc[j].now, sizeof(ch->cc[j].now));
			}
		}
	}
	if (st.nvcpu > 1) {
		vc_open(&st.vc, st.nvcpu);
	}
	if (st.ctx.on) {
		ctx_window_open(&st.ctx, &st.vc);
	}
	if (st.ctx.blocks) {
		split_reset(&st.split);
	}
	st.open = true;
}

/* diff is slot i's counts since the window opened. */
static struct snap diff(uint32_t i)
{
	struct slot *s = slot_at(i);
	struct snap d = {s->insns, s->mem, s->pen, s->execs, s->coh};
	if (i < st.open_n) {
		struct snap *b = snap_at(i);
		d.insns -= b->insns;
		d.mem -= b->mem;
		d.pen -= b->pen;
		d.execs -= b->execs;
		d.coh -= b->coh;
	}
	return d;
}

static int by_addr(const void *a, const void *b)
{
	uint64_t x = slot_at(*(const uint32_t *)a)->addr;
	uint64_t y = slot_at(*(const uint32_t *)b)->addr;
	return x < y ? -1 : x > y;
}

static void sort_by_addr(uint32_t *idx, uint32_t n)
{
	qsort(idx, n, sizeof(*idx), by_addr);
}

/* touched is the window's slots that counted something, entries
 * included, in address order (qsort), with their totals added to t. */
static uint32_t *touched(uint32_t *np, struct snap *t)
{
	uint32_t n = 0, cap = 1024;
	uint32_t *idx = malloc(cap * sizeof(*idx));
	for (uint32_t i = 0; i < st.nslots && idx; i++) {
		struct snap d = diff(i);
		if (d.insns == 0 && d.mem == 0 && d.pen == 0 && d.execs == 0) {
			continue;
		}
		if (n == cap) {
			cap *= 2;
			idx = realloc(idx, cap * sizeof(*idx));
			if (!idx) {
				break;
			}
		}
		idx[n++] = i;
		t->insns += d.insns;
		t->mem += d.mem;
		t->pen += st.cache ? d.insns + d.pen : 0;
	}
	if (!idx) {
		fprintf(stderr, "kcicount: out of memory\n");
		abort();
	}
	sort_by_addr(idx, n);
	*np = n;
	return idx;
}

/* pc_line appends slot i's pc line; with cache=coherent it goes on with
 * the block's cross-core events, with ctxblocks=on it ends in the
 * block's entries by context (struct ccount): per stack class, then per
 * innermost call context's target (two, "0 0" for none) and the rest. */
static size_t pc_line(char *buf, size_t cap, uint32_t i)
{
	struct snap d = diff(i);
	struct slot *s = slot_at(i);
	int n = snprintf(buf, cap, "pc %lx %lu %lu %lu %lu %lx", (unsigned long)s->addr,
			 (unsigned long)d.insns, (unsigned long)d.mem,
			 (unsigned long)(st.cache ? d.insns + d.pen : 0), (unsigned long)d.execs,
			 (unsigned long)s->end);
	if (st.coherent) {
		n += snprintf(buf + n, cap - (size_t)n, " %lu", (unsigned long)d.coh);
	}
	for (int k = 0; st.ctx.blocks && k < CC_N; k++) {
		struct ccount *c = cc_at(i);
		if (k == CC_CALLS || k == CC_CALLS + 1) {
			uint32_t t = c->tgt[k - CC_CALLS];
			n += snprintf(buf + n, cap - (size_t)n, " %lx",
				      (unsigned long)(t ? st.ctx.acc[t - 1].target : 0));
		}
		n += snprintf(buf + n, cap - (size_t)n, " %lu",
			      (unsigned long)(c->now[k] - (i < st.open_n ? c->base[k] : 0)));
	}
	return (size_t)n + (size_t)snprintf(buf + n, cap - (size_t)n, "\n");
}

static int by_target_pc(const void *a, const void *b)
{
	const struct spair *p = &st.split.p[*(const uint32_t *)a], *q = &st.split.p[*(const uint32_t *)b];
	uint64_t x = st.ctx.acc[p->ctx].target, y = st.ctx.acc[q->ctx].target;
	if (x != y) {
		return x < y ? -1 : 1;
	}
	x = slot_at(p->slot)->addr;
	y = slot_at(q->slot)->addr;
	return x < y ? -1 : x > y;
}

/* split_pairs is the window's (block, target) pairs that ran, by target
 * then block address; the pending one is charged first. */
static uint32_t *split_pairs(uint32_t *np)
{
	for (int v = 0; v < st.nvcpu; v++) {
		split_charge(&st.split, v, vc_now(&st.vc, (unsigned)v));
	}
	uint32_t *idx = malloc(((size_t)st.split.n + 1) * sizeof(*idx)), n = 0;
	if (!idx) {
		split_oom();
	}
	for (uint32_t i = 0; i < st.split.n; i++) {
		if (st.split.p[i].execs > 0) {
			idx[n++] = i;
		}
	}
	qsort(idx, n, sizeof(*idx), by_target_pc);
	*np = n;
	return idx;
}

/* split_line appends pair i's split line. */
static size_t split_line(char *buf, size_t cap, uint32_t i)
{
	const struct spair *q = &st.split.p[i];
	return (size_t)snprintf(buf, cap, "split %lx %lx %lu %lu %lu %lu\n", (unsigned long)st.ctx.acc[q->ctx].target,
				(unsigned long)slot_at(q->slot)->addr, (unsigned long)q->execs,
				(unsigned long)q->insns, (unsigned long)(st.cache ? q->insns + q->pen : 0),
				(unsigned long)q->fetch);
}

static int by_nest(const void *a, const void *b)
{
	const struct npair *p = a, *q = b;
	uint64_t x = st.ctx.acc[p->outer].target, y = st.ctx.acc[q->outer].target;
	if (x == y) {
		x = st.ctx.acc[p->inner].target;
		y = st.ctx.acc[q->inner].target;
	}
	return x < y ? -1 : x > y;
}

/* nest_line appends nested pair i's nest line (nest.h). */
static size_t nest_line(char *buf, size_t cap, const struct npair *q)
{
	return (size_t)snprintf(buf, cap, "nest %lx %lx %lu %lu %lu %lu\n", (unsigned long)st.ctx.acc[q->outer].target,
				(unsigned long)st.ctx.acc[q->inner].target, (unsigned long)q->calls,
				(unsigned long)q->insns, (unsigned long)q->mem,
				(unsigned long)(st.cache ? q->insns + q->pen : 0));
}

/* window_close writes the open window as one block: a window line with
 * the totals, a vcpu line per vCPU (with several), a ctx line per call
 * context and vCPU that counted something, one pc line per slot that
 * did, in address order, then (ctxblocks=on) one split line per block
 * and innermost target that ran, by target then block, and a nest line
 * per pair of targets one's calls ran inside the other's. */
static void window_close(bool complete)
{
	struct snap t = {0}; /* pen holds the cycles */
	uint32_t n;
	uint32_t *idx = touched(&n, &t);
	if (st.nvcpu > 1) {
		vc_charge(&st.vc);
	}
	uint32_t nctx = 0, nsplit = 0, nnest = 0, *sidx = NULL;
	if (st.ctx.on) {
		ctx_flush(&st.ctx, &st.vc);
		nctx = ctx_lines(&st.ctx, st.cache, NULL, 0, NULL);
		nnest = st.ctx.nest.n;
		qsort(st.ctx.nest.p, nnest, sizeof(*st.ctx.nest.p), by_nest);
		st.ctx.nest.on = false;
	}
	if (st.ctx.blocks) {
		sidx = split_pairs(&nsplit);
	}
	/* A pc line is at most 3 + 17 + 4 * 21 + 17 + 21 + 7 * 21 + 2 * 17
	 * = 323 bytes, a vcpu line 5 + 3 + 3 * 27 = 89, a ctx line 108, a
	 * split line 6 + 2 * 17 + 4 * 21 = 124, a nest line 5 + 2 * 17 + 4 *
	 * 21 = 123. */
	size_t bcap = 192 + (size_t)n * 324 + (size_t)st.nvcpu * 96 + (size_t)nctx * 112 + (size_t)nsplit * 125 +
		      (size_t)nnest * 124,
	       blen = 0;
	char *buf = malloc(bcap);
	if (!buf) {
		fprintf(stderr, "kcicount: out of memory\n");
		abort();
	}
	blen += (size_t)snprintf(buf, bcap, "window %lu %s insns %lu mem %lu cycles %lu pcs %u ctxs %u splits %u nests %u\n",
				 (unsigned long)(st.windows - 1), complete ? "complete" : "incomplete",
				 (unsigned long)t.insns, (unsigned long)t.mem, (unsigned long)t.pen, n, nctx, nsplit, nnest);
	for (int v = 0; st.nvcpu > 1 && v < st.nvcpu; v++) {
		struct vtot d = vc_window(&st.vc, v);
		blen += (size_t)snprintf(buf + blen, bcap - blen, "vcpu %d insns %lu mem %lu cycles %lu\n", v,
					 (unsigned long)d.insns, (unsigned long)d.mem,
					 (unsigned long)(st.cache ? d.insns + d.pen : 0));
	}
	if (nctx > 0) {
		ctx_lines(&st.ctx, st.cache, buf, bcap, &blen);
	}
	for (uint32_t k = 0; k < n; k++) {
		blen += pc_line(buf + blen, bcap - blen, idx[k]);
	}
	for (uint32_t k = 0; k < nsplit; k++) {
		blen += split_line(buf + blen, bcap - blen, sidx[k]);
	}
	for (uint32_t k = 0; k < nnest; k++) {
		blen += nest_line(buf + blen, bcap - blen, &st.ctx.nest.p[k]);
	}
	out_write(buf, blen);
	free(buf);
	free(idx);
	free(sidx);
	st.open = false;
}

#endif
