/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kcicount: a QEMU TCG plugin (API v1, QEMU 7.2) that counts what a guest
 * executes between two marker instructions, for one vCPU under icount.
 *
 * Counting scheme, and why it is exact. Instructions are counted by
 * inline adds on the counter of their translation block's slot (one slot
 * per TB start address, shared by every translation of that address).
 * Inline ops run just before their instruction, and a TB leaves early
 * only at an instruction that faults or does I/O; so every instruction
 * that can (x86safe.h: anything but register-only forms) gets an add of
 * the instructions since the previous add, itself included, as do the
 * TB's last two and the one before a marker (see on_trans). A TB that leaves early counts
 * the instructions up to the faulting one and none after; a per-TB add
 * would count the whole block. The faulting
 * instruction itself is counted each time it is attempted, as QEMU's own
 * insn plugin counts it. A TB re-executed after an I/O recompile under
 * icount is translated "memory only" (CF_MEMI_ONLY): QEMU drops its exec
 * callbacks and keeps the memory ones, so nothing is counted twice.
 * Memory accesses are counted after they complete, by an inline op per
 * access (or, with the cache model, by its callback). API v1 inline ops
 * are not per vCPU: with several, vcpus.h gives each its share.
 *
 * A slot also counts the block's entries (an inline add of 1 on its first
 * non-marker instruction; see on_trans) and keeps where its code ends, so
 * a window says how many times each block's code ran.
 *
 * Windows are snapshot-and-diff: a start marker copies every slot's
 * counters, an end marker subtracts the copy. Counting itself never looks
 * at the window state, so a window costs O(slots) at its two markers and
 * nothing in between. The marker instructions get no counters, so they
 * are not counted (and, with the cache model, not fetched).
 *
 * Cache model (cache=on): data accesses and instruction-fetch lines go
 * through a deterministic set-associative true-LRU model of a Xeon
 * Platinum 8180 (see cache.h). The model runs from boot to exit; its
 * penalties land on the slots, so only those inside a window reach the
 * window's cycles.
 *
 * Call contexts (ctx=, on by default; ctx.h): what ran inside each call
 * into an entry range (the kernel's module area: JIT'd BPF), counted per
 * call target from the vCPU's totals, which the inline adds of vcpus.h's
 * global pair keep then with one vCPU too; each call and ret feeds a
 * shadow stack per vCPU, each block of the range may open a context.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qemu-plugin.h"
#include "cache.h"
#include "coherent.h"
#include "ctx.h"
#include "split.h"
#include "vcpus.h"
#include "x86safe.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define FORMAT_VERSION 6
#define CHUNK_BITS 14
#define CHUNK (1u << CHUNK_BITS)
#define MAX_CHUNKS 4096

static const uint8_t mark_start[8] = {0x0f, 0x1f, 0x84, 0x00, 0x01, 0x00, 0x43, 0x4b};
static const uint8_t mark_end[8] = {0x0f, 0x1f, 0x84, 0x00, 0x02, 0x00, 0x43, 0x4b};
static const uint8_t mark_arm[8] = {0x0f, 0x1f, 0x84, 0x00, 0x03, 0x00, 0x43, 0x4b};

/* A slot's counters are the targets of inline ops: slots never move.
 * A slot fills one host cache line, aligned, so its address has six low
 * zero bits for a fetch callback's data (see fetch_cb). */
struct slot {
	uint64_t addr;
	uint64_t insns;
	uint64_t mem;
	uint64_t pen;   /* cache-model penalty cycles */
	uint64_t execs; /* entries (see on_trans) */
	uint64_t end;   /* end of the code: the highest over translations */
	uint64_t idx;   /* the slot's index (its ctxblocks counts) */
	uint64_t coh;   /* cache=coherent: transfers and upgrades its accesses made */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct slot) == 64, "a slot is one host cache line");

struct snap {
	uint64_t insns, mem, pen, execs, coh;
};

/* A slot's entries by context (ctxblocks=on), now and when the open
 * window started: per stack class (ctx.h, CLS_HARDIRQ from column 0),
 * then inside call contexts: for the first two innermost targets seen
 * (tgt: a context's index + 1, 0 for none yet), and for any other. */
#define CC_CALLS (CLS_N - 1)
#define CC_OTHER (CC_CALLS + 2)
#define CC_N (CC_OTHER + 1)
struct ccount {
	uint64_t now[CC_N], base[CC_N];
	uint32_t tgt[2];
};

/* Slots live in fixed chunks so that their addresses stay valid. */
struct chunk {
	struct slot s[CHUNK];
	struct snap b[CHUNK]; /* the counters when the open window started */
	struct ccount *cc;    /* with ctxblocks=on: CHUNK of them */
};

/* A fetch callback's data for a line too far into its block to fit in
 * the slot pointer's low bits. */
struct fetch {
	struct slot *slot;
	uint64_t line;
	uint64_t nlines;
};

#define FETCH_OFF_MASK 31u /* line offset from the block's first line */
#define FETCH_TWO 32u      /* the instruction also needs the next line */

static struct {
	pthread_mutex_t lock; /* translation, markers and exit */
	struct chunk *chunks[MAX_CHUNKS];
	uint32_t nslots;
	/* open addressing: address -> slot index + 1 (0 = empty) */
	uint32_t *hash;
	uint64_t *hkeys;
	uint32_t hcap;
	int out;
	bool cache;
	qemu_plugin_id_t id;
	/* arm=marker: blocks get counters (and the model's callbacks) only
	 * while a window is open, and with the cache model also from an arm
	 * marker on; a block holding a marker always gets them. Switching
	 * is a reset: QEMU flushes every translated block at the vCPU's next
	 * block boundary and the plugin's translation callback changes. */
	bool arm_marker;
	bool armed;     /* arm marker seen since the last window closed */
	bool installed; /* the instrumenting translation callback is on */
	bool pending;   /* a reset is queued */
	bool open;         /* a window is open */
	uint32_t open_n;   /* slots that existed when it opened */
	uint64_t windows;  /* windows opened so far */
	struct model model;
	/* Several vCPUs (vcpus.h): cache=coherent, per-vCPU totals, and
	 * the turn each vCPU gets before the next one runs. */
	bool coherent;
	struct cmodel cm;
	int nvcpu;
	uint64_t quantum; /* instructions a vCPU runs before yielding; 0 = QEMU's turns */
	int smt;          /* vCPUs to a core in the coherent model (coherent.h) */
	unsigned fair_cur; /* outside instrumented code: the vCPU whose turn it is */
	uint64_t fair_run; /* and the instructions of its blocks so far */
	struct vcpus vc;
	/* Call contexts (ctx.h); kernel: the range is in the kernel's half,
	 * so only the kernel's calls and rets can reach it. */
	struct ctxs ctx;
	bool ctx_kernel;
	bool totals; /* the global pair of vcpus.h is counted */
	struct splits split; /* ctxblocks=on: the calls by block (split.h) */
} st = {.lock = PTHREAD_MUTEX_INITIALIZER, .out = -1, .smt = 1};

static struct slot *slot_at(uint32_t i)
{
	return &st.chunks[i >> CHUNK_BITS]->s[i & (CHUNK - 1)];
}

static struct snap *snap_at(uint32_t i)
{
	return &st.chunks[i >> CHUNK_BITS]->b[i & (CHUNK - 1)];
}

static struct ccount *cc_at(uint64_t i)
{
	return &st.chunks[i >> CHUNK_BITS]->cc[i & (CHUNK - 1)];
}

static uint32_t hslot(uint64_t addr, uint32_t cap)
{
	return (uint32_t)((addr * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static void hash_put(uint64_t addr, uint32_t idx1)
{
	uint32_t h = hslot(addr, st.hcap);
	while (st.hash[h] != 0) {
		h = (h + 1) & (st.hcap - 1);
	}
	st.hash[h] = idx1;
	st.hkeys[h] = addr;
}

static void hash_grow(void)
{
	uint32_t *old = st.hash;
	uint64_t *oldk = st.hkeys;
	uint32_t oldcap = st.hcap;
	st.hcap = oldcap ? oldcap * 2 : 1u << 16;
	st.hash = calloc(st.hcap, sizeof(*st.hash));
	st.hkeys = calloc(st.hcap, sizeof(*st.hkeys));
	if (!st.hash || !st.hkeys) {
		fprintf(stderr, "kcicount: out of memory\n");
		abort();
	}
	for (uint32_t i = 0; i < oldcap; i++) {
		if (old[i]) {
			hash_put(oldk[i], old[i]);
		}
	}
	free(old);
	free(oldk);
}

/* slot_for returns the slot of a TB start address, making it if new. */
static struct slot *slot_for(uint64_t addr)
{
	if (st.nslots * 2 >= st.hcap) {
		hash_grow();
	}
	uint32_t h = hslot(addr, st.hcap);
	while (st.hash[h] != 0) {
		if (st.hkeys[h] == addr) {
			return slot_at(st.hash[h] - 1);
		}
		h = (h + 1) & (st.hcap - 1);
	}
	uint32_t i = st.nslots;
	if ((i & (CHUNK - 1)) == 0) {
		if ((i >> CHUNK_BITS) >= MAX_CHUNKS) {
			fprintf(stderr, "kcicount: more than %u translation blocks\n", MAX_CHUNKS * CHUNK);
			abort();
		}
		struct chunk *ch = aligned_alloc(64, sizeof(struct chunk));
		if (ch) {
			memset(ch, 0, sizeof(*ch));
			ch->cc = st.ctx.blocks ? calloc(CHUNK, sizeof(*ch->cc)) : NULL;
		}
		st.chunks[i >> CHUNK_BITS] = ch;
		if (!ch || (st.ctx.blocks && !ch->cc)) {
			fprintf(stderr, "kcicount: out of memory\n");
			abort();
		}
	}
	st.nslots++;
	st.hash[h] = i + 1;
	st.hkeys[h] = addr;
	struct slot *s = slot_at(i);
	s->addr = addr;
	s->idx = i;
	return s;
}

#include "windows.h"

enum mark { MARK_START = 1, MARK_END = 2, MARK_ARM = 3 };

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
static void on_trans_unarmed(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
static void on_atexit(qemu_plugin_id_t id, void *udata);

/* QEMU 7.2 internals (exported by its executable, not plugin API) that
 * arm=marker needs: a reset frees every block's memory-callback array,
 * but 7.2 leaves the vCPU's pointer to the current one set after some
 * block-ending instructions (upstream fixed this after 7.2, clearing it
 * on every flush). The next memory access a helper makes for an
 * uninstrumented block (an interrupt frame, xrstor) then calls through
 * freed memory ("qemu_plugin_vcpu_mem_cb: code should not be reached").
 * on_reset clears the pointer as the later QEMUs do. Weak: a QEMU without
 * them refuses arm=marker at install. */
extern __thread void *current_cpu __attribute__((weak));
extern void qemu_plugin_disable_mem_helpers(void *cpu) __attribute__((weak));
/* With several vCPUs every vCPU's pointer is cleared, not only the one
 * that runs the reset: the others kept theirs while they waited their
 * turn, and the next access of theirs called through freed memory (a
 * two-vCPU boot aborted so, one in eight). */
extern void *qemu_get_cpu(int index) __attribute__((weak));

/* on_reset runs once QEMU has flushed every translated block, on the
 * vCPU's thread at a block boundary between two guest instructions (so
 * where it lands is deterministic): it installs the translation callback
 * the state wants now. A reset drops every callback, so both are
 * registered again. */
static void on_reset(qemu_plugin_id_t id)
{
	if (&current_cpu == NULL || current_cpu == NULL) {
		fprintf(stderr, "kcicount: reset outside a vCPU thread\n");
		abort();
	}
	qemu_plugin_disable_mem_helpers(current_cpu);
	for (int i = 0; st.nvcpu > 1 && i < st.nvcpu; i++) {
		void *cpu = qemu_get_cpu(i);
		if (cpu) {
			qemu_plugin_disable_mem_helpers(cpu);
		}
	}
	pthread_mutex_lock(&st.lock);
	st.pending = false;
	st.installed = st.open || (st.cache && st.armed);
	bool on = st.installed;
	if (!on && st.ctx.on) {
		ctx_drop(&st.ctx, &st.vc); /* uninstrumented rets would go unseen */
	}
	pthread_mutex_unlock(&st.lock);
	qemu_plugin_register_vcpu_tb_trans_cb(id, on ? on_trans : on_trans_unarmed);
	qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
}

/* switch_locked queues a reset when the instrumentation the state wants
 * is not the one installed. The marker's own block is instrumented
 * either way, so nothing between the marker and the flush is missed. */
static bool switch_locked(void)
{
	bool want = st.open || (st.cache && st.armed);
	if (!st.arm_marker || st.pending || want == st.installed) {
		return false;
	}
	st.pending = true;
	return true;
}

static void on_mark(unsigned int vcpu, void *udata)
{
	(void)vcpu;
	pthread_mutex_lock(&st.lock);
	if ((uintptr_t)udata == MARK_ARM) {
		st.armed = true;
		bool reset = switch_locked();
		pthread_mutex_unlock(&st.lock);
		if (reset) {
			qemu_plugin_reset(st.id, on_reset);
		}
		return;
	}
	if ((uintptr_t)udata == MARK_START) {
		if (st.open) {
			window_close(false);
		}
		st.windows++;
		window_open();
	} else if (st.open) {
		window_close(true);
		st.armed = false;
	} else {
		out_printf("stray\n");
	}
	bool reset = switch_locked();
	pthread_mutex_unlock(&st.lock);
	if (reset) {
		qemu_plugin_reset(st.id, on_reset);
	}
}

#include "qemu72.h"

static void on_mem(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
	struct slot *s = (struct slot *)((uintptr_t)udata & ~(uintptr_t)63);
	uint64_t addr = vaddr;
	/* RAM accesses are modelled by physical address. I/O (and the rare
	 * access QEMU gives no hwaddr for) falls back to the virtual one:
	 * it is uncached on real hardware anyway, and rare. */
	struct qemu_plugin_hwaddr *h = qemu_plugin_get_hwaddr(info, vaddr);
	if (mem_calls++ % PHYS_CHECK_EVERY == 0) {
		mem_check(info, h);
	}
	if (h && !((const struct hwaddr72 *)h)->is_io) {
		addr = phys_of(h, vaddr);
	}
	uint64_t first = addr >> LINE_BITS;
	uint64_t last = (addr + (1u << size_shift72(info)) - 1) >> LINE_BITS;
	uint64_t p;
	if (st.coherent) {
		uint64_t before = st.cm.xfers + st.cm.upgrades;
		p = cm_data(&st.cm, (int)vcpu, first, last, store72(info), (uintptr_t)udata & MEM_LOCKED);
		s->coh += st.cm.xfers + st.cm.upgrades - before;
	} else {
		p = model_data(&st.model, first, last);
	}
	s->mem++;
	s->pen += p;
	st.vc.v[vcpu].mem++; /* per-vCPU totals and call contexts */
	st.vc.v[vcpu].pen += p;
}

/* on_fetch models the lines of a fetch point that fit in the slot
 * pointer: udata is the slot's address | line offset | FETCH_TWO. The
 * slot is in the host's cache already (its inline counter just ran),
 * where a separate struct per block was a host cache miss per call. */
static void on_fetch(unsigned int vcpu, void *udata)
{
	uintptr_t u = (uintptr_t)udata;
	struct slot *s = (struct slot *)(u & ~(uintptr_t)63);
	uint64_t line = (s->addr >> LINE_BITS) + (u & FETCH_OFF_MASK);
	uint64_t n = u & FETCH_TWO ? 2 : 1;
	uint64_t p = st.coherent ? cm_fetch(&st.cm, (int)vcpu, line, n) : model_fetch(&st.model, line, n);
	s->pen += p;
	st.vc.v[vcpu].pen += p;
	st.vc.v[vcpu].fetch += p;
}

static void on_fetch_far(unsigned int vcpu, void *udata)
{
	struct fetch *f = udata;
	uint64_t p = st.coherent ? cm_fetch(&st.cm, (int)vcpu, f->line, f->nlines)
				 : model_fetch(&st.model, f->line, f->nlines);
	f->slot->pen += p;
	st.vc.v[vcpu].pen += p;
	st.vc.v[vcpu].fetch += p;
}

/* QEMU 7.2's cpu_exit (exported by its executable, not plugin API) ends
 * the running vCPU's turn at its next block boundary. Weak: a QEMU
 * without it refuses quantum= at install. */
extern void cpu_exit(void *cpu) __attribute__((weak));

/* on_tb runs as each instrumented block starts, with a guest of several
 * vCPUs: it charges the shared counters to the vCPU that ran them, and
 * ends a turn once the quantum has run (vcpus.h). */
static void on_tb(unsigned int vcpu, void *udata)
{
	(void)udata;
	if (vc_enter(&st.vc, vcpu, st.quantum)) {
		cpu_exit(current_cpu);
	}
}

/* on_callret takes a call's store or a ret's load (udata: X86_CALL or
 * X86_RET) into the vCPU's shadow stack (ctx.h). The callback sees every
 * access (QEMU 7.2 runs a callback registered for writes on loads too,
 * and one for reads never), so it picks the direction itself: a call's
 * load is its memory operand's. One access per execution, the first: the
 * inline add of ctx.seq before each call and ret tells executions apart,
 * since QEMU 7.2 may report a later helper's accesses (an interrupt
 * frame's pushes) to the last block-ending instruction's callbacks (see
 * on_reset), and those are no call. */
static void on_callret(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata)
{
	static uint64_t calls;
	if (calls++ % PHYS_CHECK_EVERY == 0) {
		mem_check(info, NULL); /* the decoding below, as on_mem's */
	}
	if (store72(info) != ((uintptr_t)udata == X86_CALL) || st.ctx.seq == st.ctx.taken) {
		return;
	}
	st.ctx.taken = st.ctx.seq;
	int64_t inner = ctx_inner(&st.ctx, (int)vcpu);
	/* Without the cache model the access is counted by an inline add,
	 * which QEMU runs after the callbacks: a context this access
	 * closes counts it all the same. */
	if ((uintptr_t)udata == X86_CALL) {
		ctx_call(&st.ctx, &st.vc, (int)vcpu, vaddr, !st.cache);
	} else {
		ctx_ret(&st.ctx, &st.vc, (int)vcpu, vaddr, 1u << size_shift72(info), !st.cache);
	}
	/* The innermost context closed: its block's split ends with it, as
	 * the context's counts do (what follows before the next block, an
	 * interrupt's frame, is in neither). */
	if (st.open && st.ctx.blocks && ctx_inner(&st.ctx, (int)vcpu) != inner) {
		split_charge(&st.split, (int)vcpu, vc_now(&st.vc, vcpu));
	}
}

/* GUARD is how many instructions a vCPU may run outside instrumented code
 * while no other vCPU runs, before the plugin ends its turn: a millisecond
 * of guest time, so it rarely fires where vCPUs halt or pause. */
#define GUARD 1000000

/* on_tb_unarmed runs as each block starts outside instrumented code, with
 * a guest of several vCPUs (udata: the block's instruction count). QEMU
 * 7.2 gives the first vCPU of a round every instruction up to the next
 * clock deadline, so one that never halts nor pauses (a busy loop in user
 * space) leaves the others a budget of nothing, round after round, and
 * the guest livelocks (fixed in QEMU 8.1, which splits the budget between
 * vCPUs). This ends a vCPU's turn once it has run GUARD instructions with
 * no other vCPU running in between, counted from each block's start, so
 * where it ends is a function of the instruction stream. Outside windows
 * the turns otherwise stay QEMU's (halts, pauses, deadlines): with the
 * quantum there too, every later turn's end depended on each earlier one
 * over the whole boot, and one two-vCPU boot of a loaded CI run counted
 * other cycles than its twin. */
static void on_tb_unarmed(unsigned int vcpu, void *udata)
{
	if (vcpu != st.fair_cur) {
		st.fair_cur = vcpu;
		st.fair_run = 0;
	}
	st.fair_run += (uintptr_t)udata;
	if (st.fair_run >= GUARD) {
		st.fair_run = 0;
		st.vc.exits++;
		cpu_exit(current_cpu);
	}
}

/* on_ctx_entry runs as a block of the entry range starts (udata: its
 * slot), before any of its counters: a context it opens counts the whole
 * block. */
static void on_ctx_entry(unsigned int vcpu, void *udata)
{
	ctx_enter(&st.ctx, &st.vc, (int)vcpu, ((struct slot *)udata)->addr);
}

/* on_cexec counts an entry of the block (udata: its slot) by context
 * (ctxblocks=on; struct ccount), and in a window the calls' split
 * (split.h): a callback per block entry, so optional. */
static void on_cexec(unsigned int vcpu, void *udata)
{
	struct ccount *c = cc_at(((struct slot *)udata)->idx);
	uint16_t k = ctx_cls(&st.ctx, (int)vcpu);
	if (k != CLS_NONE) {
		c->now[k - 1]++;
	}
	int64_t t = ctx_inner(&st.ctx, (int)vcpu);
	if (st.open) {
		split_enter(&st.split, (int)vcpu, (uint32_t)((struct slot *)udata)->idx, t, vc_now(&st.vc, vcpu));
	}
	if (t < 0) {
		return;
	}
	int col = CC_OTHER;
	for (int j = 0; j < 2; j++) {
		if (c->tgt[j] == 0) {
			c->tgt[j] = (uint32_t)t + 1;
		}
		if (c->tgt[j] == (uint32_t)t + 1) {
			col = CC_CALLS + j;
			break;
		}
	}
	c->now[col]++;
}

/* on_mark_entry runs as a marked function's first block starts (udata:
 * the mark's class), before the block's entry is counted. */
static void on_mark_entry(unsigned int vcpu, void *udata)
{
	ctx_mark(&st.ctx, (int)vcpu, (uint16_t)(uintptr_t)udata);
}

/* ctx_insn instruments a call or ret for the shadow stacks: an inline
 * add that marks its execution, and a callback on its stack access,
 * registered after the model's (which has then counted the access a
 * context closes on; without the model on_callret adds it). */
static void ctx_insn(struct qemu_plugin_insn *insn)
{
	if (!st.ctx.on || (st.ctx_kernel && qemu_plugin_insn_vaddr(insn) < 1ull << 63)) {
		return;
	}
	int k = x86_callret(qemu_plugin_insn_data(insn), qemu_plugin_insn_size(insn));
	if (k == 0) {
		return;
	}
	qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &st.ctx.seq, 1);
	qemu_plugin_register_vcpu_mem_cb(insn, on_callret, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
					 (void *)(uintptr_t)k);
}

static int is_mark(struct qemu_plugin_insn *insn)
{
	if (qemu_plugin_insn_size(insn) != sizeof(mark_start)) {
		return 0;
	}
	const void *d = qemu_plugin_insn_data(insn);
	if (memcmp(d, mark_start, sizeof(mark_start)) == 0) {
		return MARK_START;
	}
	if (memcmp(d, mark_end, sizeof(mark_end)) == 0) {
		return MARK_END;
	}
	if (memcmp(d, mark_arm, sizeof(mark_arm)) == 0) {
		return MARK_ARM;
	}
	return 0;
}

/* fetch_cb makes insn model the fetch of the lines it is the first of its
 * TB to touch. A TB runs straight through, so the callback runs exactly
 * when its lines are needed; *next is the first line not yet fetched. */
static void fetch_cb(struct qemu_plugin_insn *insn, struct slot *s, uint64_t *next)
{
	uint64_t va = qemu_plugin_insn_vaddr(insn);
	uint64_t first = va >> LINE_BITS;
	uint64_t last = (va + qemu_plugin_insn_size(insn) - 1) >> LINE_BITS;
	if (*next != UINT64_MAX && first < *next) {
		first = *next;
	}
	if (first > last) {
		return;
	}
	*next = last + 1;
	uint64_t off = first - (s->addr >> LINE_BITS);
	if (off <= FETCH_OFF_MASK && last - first <= 1) {
		uintptr_t u = (uintptr_t)s | (uintptr_t)off | (last > first ? FETCH_TWO : 0);
		qemu_plugin_register_vcpu_insn_exec_cb(insn, on_fetch, QEMU_PLUGIN_CB_NO_REGS, (void *)u);
		return;
	}
	/* Freed never: a block's callbacks can run as long as it is cached,
	 * and the plugin API says nothing when it is dropped. Only blocks
	 * longer than 32 lines get here. */
	struct fetch *f = malloc(sizeof(*f));
	if (!f) {
		fprintf(stderr, "kcicount: out of memory\n");
		abort();
	}
	*f = (struct fetch){s, first, last - first + 1};
	qemu_plugin_register_vcpu_insn_exec_cb(insn, on_fetch_far, QEMU_PLUGIN_CB_NO_REGS, f);
}

/* on_trans_unarmed instruments only the blocks that hold a marker (all
 * of such a block: what follows its marker runs before the reset that
 * marker asks for takes effect). */
static void on_trans_unarmed(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	for (size_t i = 0; i < n; i++) {
		if (is_mark(qemu_plugin_tb_get_insn(tb, i))) {
			on_trans(id, tb);
			return;
		}
	}
	if (st.quantum) {
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb_unarmed, QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)n);
	}
}

/* tb_end is where a block's code ends: the end of its last listed
 * instruction. When QEMU 7.2's x86 translator dropped that instruction
 * (it crosses into the next page; see on_trans) this is the end of the
 * bytes it had read of it, all on the block's page: up to 14 bytes of
 * the instruction that starts the next block. */
static uint64_t tb_end(struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	if (n == 0) {
		return qemu_plugin_tb_vaddr(tb);
	}
	struct qemu_plugin_insn *last = qemu_plugin_tb_get_insn(tb, n - 1);
	return qemu_plugin_insn_vaddr(last) + qemu_plugin_insn_size(last);
}

/* count_entry makes insn count an entry of its block (see on_trans). */
static void count_entry(struct qemu_plugin_insn *insn, struct slot *s)
{
	qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &s->execs, 1);
	if (st.ctx.blocks) {
		qemu_plugin_register_vcpu_insn_exec_cb(insn, on_cexec, QEMU_PLUGIN_CB_NO_REGS, s);
	}
}

/* count_insns makes insn add n instructions, itself included. */
static void count_insns(struct qemu_plugin_insn *insn, struct slot *s, uint64_t n)
{
	qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &s->insns, n);
	if (st.totals) {
		qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &st.vc.all_insns, n);
	}
}

/* count_mem counts insn's accesses: by inline adds without the cache
 * model, else by the model's callback, which counts them too (one op
 * per access instead of an inline add and a callback). */
static void count_mem(struct qemu_plugin_insn *insn, struct slot *s, uint64_t *next)
{
	if (!st.cache) {
		qemu_plugin_register_vcpu_mem_inline(insn, QEMU_PLUGIN_MEM_RW, QEMU_PLUGIN_INLINE_ADD_U64, &s->mem, 1);
		if (st.totals) {
			qemu_plugin_register_vcpu_mem_inline(insn, QEMU_PLUGIN_MEM_RW, QEMU_PLUGIN_INLINE_ADD_U64,
							     &st.vc.all_mem, 1);
		}
		return;
	}
	fetch_cb(insn, s, next);
	uintptr_t locked = st.coherent && x86_locked(qemu_plugin_insn_data(insn), qemu_plugin_insn_size(insn));
	qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
					 (void *)((uintptr_t)s | (locked ? MEM_LOCKED : 0)));
}

/* slot_of is the slot of tb's start address, its end raised to tb's. */
static struct slot *slot_of(struct qemu_plugin_tb *tb)
{
	uint64_t end = tb_end(tb);
	pthread_mutex_lock(&st.lock);
	struct slot *s = slot_for(qemu_plugin_tb_vaddr(tb));
	if (end > s->end) {
		s->end = end; /* a translation may be shorter (icount, I/O) */
	}
	pthread_mutex_unlock(&st.lock);
	return s;
}

static void on_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	struct slot *s = slot_of(tb);
	uint64_t next = UINT64_MAX;
	uint64_t pending = 0; /* instructions since the last counting add */
	/* Entries are counted by an add of 1 on the block's first non-marker
	 * instruction, and again on the first after a start or end marker:
	 * a window then counts one entry for each time the part of the block
	 * inside it began to run (a block holding a start marker is entered
	 * before its window opens). Markers are never counted, and a block
	 * that is only markers counts nothing. So in a window a slot counts
	 * entries exactly when it counts instructions, and never more
	 * entries than instructions. */
	bool entry = true;
	size_t n = qemu_plugin_tb_n_insns(tb);
	if (st.nvcpu > 1) {
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_tb, QEMU_PLUGIN_CB_NO_REGS, NULL);
	}
	/* First of the first instruction's callbacks (QEMU runs an
	 * instruction's callbacks before its inline adds): a context the
	 * block opens counts all of it, its first code line's fetch too. */
	if (n > 0 && st.ctx.on && ctx_in(&st.ctx, s->addr)) {
		qemu_plugin_register_vcpu_insn_exec_cb(qemu_plugin_tb_get_insn(tb, 0), on_ctx_entry,
						       QEMU_PLUGIN_CB_NO_REGS, s);
	}
	uint16_t mk = n > 0 && st.ctx.on ? ctx_mark_of(&st.ctx, s->addr) : CLS_NONE;
	if (mk != CLS_NONE) {
		qemu_plugin_register_vcpu_insn_exec_cb(qemu_plugin_tb_get_insn(tb, 0), on_mark_entry,
						       QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)mk);
	}
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		int m = is_mark(insn);
		if (m) {
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_mark, QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)m);
			entry = entry || m != MARK_ARM;
			continue;
		}
		if (entry) {
			count_entry(insn, s);
			entry = false;
		}
		/* An add runs before its instruction and counts it and those
		 * since the last add: exact if every instruction that can stop
		 * the block has one, as do the one before a marker (whose
		 * snapshot must see them) and the block's last two. The last
		 * may never run: QEMU 7.2's x86 translator drops an instruction
		 * that turns out to cross into the next page and ends the
		 * block before it, but the plugin still lists it (with the
		 * bytes read so far), so it counts only itself. */
		pending++;
		bool before_mark = i + 1 < n && is_mark(qemu_plugin_tb_get_insn(tb, i + 1));
		if (i + 2 >= n || before_mark ||
		    !x86_cannot_leave(qemu_plugin_insn_data(insn), qemu_plugin_insn_size(insn))) {
			count_insns(insn, s, pending);
			pending = 0;
		}
		count_mem(insn, s, &next);
		ctx_insn(insn);
	}
}

static void on_atexit(qemu_plugin_id_t id, void *udata)
{
	(void)id;
	(void)udata;
	pthread_mutex_lock(&st.lock);
	if (st.open) {
		window_close(false);
	}
	if (st.coherent || st.nvcpu > 1) {
		out_printf("turns %lu coherence xfers %lu upgrades %lu invalidations %lu locked %lu\n",
			   (unsigned long)st.vc.exits, (unsigned long)st.cm.xfers, (unsigned long)st.cm.upgrades,
			   (unsigned long)st.cm.invals, (unsigned long)st.cm.locks);
	}
	out_printf("exit\n");
	close(st.out);
	st.out = -1;
	pthread_mutex_unlock(&st.lock);
}

#include "args.h"

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	const char *out;
	if (QEMU_PLUGIN_VERSION < info->version.min || QEMU_PLUGIN_VERSION > info->version.cur) {
		fprintf(stderr, "kcicount: built for plugin API %d, QEMU offers %d..%d\n",
			QEMU_PLUGIN_VERSION, info->version.min, info->version.cur);
		return -1;
	}
	if (!info->system_emulation) {
		fprintf(stderr, "kcicount: needs system emulation\n");
		return -1;
	}
	st.ctx.on = true; /* by default, the kernel's module area */
	st.ctx.lo = CTX_DEFAULT_LO;
	st.ctx.hi = CTX_DEFAULT_HI;
	if (parse_args(argc, argv, &out) != 0) {
		return -1;
	}
	st.nvcpu = info->system.max_vcpus;
	if (st.nvcpu < 1 || st.nvcpu > MAX_CORES) {
		fprintf(stderr, "kcicount: %d vCPUs: counts 1 to %d\n", st.nvcpu, MAX_CORES);
		return -1;
	}
	if (st.nvcpu > 1 && st.cache && !st.coherent) {
		fprintf(stderr, "kcicount: cache=on models one core; %d vCPUs need cache=coherent\n", st.nvcpu);
		return -1;
	}
	if (st.smt > 1 && st.nvcpu < 2) {
		fprintf(stderr, "kcicount: smt=%d needs several vCPUs\n", st.smt);
		return -1;
	}
	if (st.quantum && (st.nvcpu == 1 || cpu_exit == NULL || &current_cpu == NULL)) {
		fprintf(stderr, "kcicount: quantum= needs several vCPUs and QEMU 7.2's cpu_exit and current_cpu\n");
		return -1;
	}
	if (st.arm_marker && (&current_cpu == NULL || qemu_plugin_disable_mem_helpers == NULL ||
			      (st.nvcpu > 1 && qemu_get_cpu == NULL))) {
		fprintf(stderr, "kcicount: arm=marker needs QEMU 7.2's current_cpu, qemu_get_cpu and "
				"qemu_plugin_disable_mem_helpers (not exported by this QEMU)\n");
		return -1;
	}
	if (st.ctx.on && ctx_init(&st.ctx, st.nvcpu) != 0) {
		fprintf(stderr, "kcicount: out of memory for call contexts\n");
		return -1;
	}
	st.ctx_kernel = st.ctx.lo >= 1ull << 63;
	st.totals = st.nvcpu > 1 || st.ctx.on;
	if (st.cache && (st.coherent ? cm_init(&st.cm, st.nvcpu, st.smt) : model_init(&st.model)) != 0) {
		fprintf(stderr, "kcicount: out of memory for the cache model\n");
		return -1;
	}
	st.out = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (st.out < 0) {
		fprintf(stderr, "kcicount: open %s: %s\n", out, strerror(errno));
		return -1;
	}
	write_header();
	st.id = id;
	st.installed = !st.arm_marker;
	qemu_plugin_register_vcpu_tb_trans_cb(id, st.installed ? on_trans : on_trans_unarmed);
	qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
	return 0;
}
