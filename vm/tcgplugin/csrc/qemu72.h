/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU 7.2's layouts the memory callbacks read behind the plugin API:
 * the host address of an access, the access's size and direction; each
 * checked as it is used (PHYS_CHECK_EVERY). Part of kcicount.c's one
 * translation unit.
 */
#ifndef KCI_QEMU72_H
#define KCI_QEMU72_H

/* QEMU 7.2's struct qemu_plugin_hwaddr (include/qemu/plugin-memory.h),
 * which the API keeps opaque: for RAM it holds the host address of the
 * access. Read by phys_of, which checks the host address on every access,
 * and for is_io by on_mem, checked by mem_check. */
struct hwaddr72 {
	bool is_io;
	bool is_store;
	union {
		struct {
			void *section;
			uint64_t offset;
		} io;
		struct {
			uintptr_t hostaddr;
		} ram;
	} v;
};

#define PAGE_BITS 12
#define PAGE_MASK ((1u << PAGE_BITS) - 1)
#define PHYS_CACHE (1u << 14)
#define PHYS_CHECK_EVERY 4096

/* phys_cache maps a host page of guest RAM to its guest physical page.
 * QEMU's qemu_plugin_hwaddr_phys_addr finds the RAM block of a host
 * address on every call (a third of the cache model's cost); its answer
 * is a function of the host address alone (RAM blocks never move), so
 * a direct-mapped table of pages gives the same answer. */
static struct {
	uint64_t host; /* host page + 1; 0 = empty */
	uint64_t phys; /* guest physical page */
} phys_cache[PHYS_CACHE];

static uint64_t phys_hits;

static void phys_layout_abort(uintptr_t host, uint64_t vaddr, uint64_t phys)
{
	fprintf(stderr,
		"kcicount: QEMU's hwaddr layout is not 7.2's (host %#lx for vaddr %#lx, phys %#lx): "
		"rebuild the plugin for this QEMU\n",
		(unsigned long)host, (unsigned long)vaddr, (unsigned long)phys);
	abort();
}

/* phys_of is the guest physical address of a RAM access. Every call
 * checks that the host address read from QEMU's struct shares the page
 * offset of the guest's virtual address, and every PHYS_CHECK_EVERY-th
 * hit is checked against QEMU's own answer: a QEMU whose struct differs
 * stops with a message instead of modelling wrong addresses. */
static uint64_t phys_of(const struct qemu_plugin_hwaddr *h, uint64_t vaddr)
{
	uintptr_t host = ((const struct hwaddr72 *)h)->v.ram.hostaddr;
	if (((host ^ vaddr) & PAGE_MASK) != 0) {
		phys_layout_abort(host, vaddr, qemu_plugin_hwaddr_phys_addr(h));
	}
	uint64_t hp = host >> PAGE_BITS;
	uint32_t i = (uint32_t)((hp * 0x9e3779b97f4a7c15ull) >> 50) & (PHYS_CACHE - 1);
	if (phys_cache[i].host == hp + 1 && ++phys_hits % PHYS_CHECK_EVERY != 0) {
		return phys_cache[i].phys << PAGE_BITS | (host & PAGE_MASK);
	}
	uint64_t phys = qemu_plugin_hwaddr_phys_addr(h);
	if ((phys & PAGE_MASK) != (host & PAGE_MASK) ||
	    (phys_cache[i].host == hp + 1 && phys_cache[i].phys != phys >> PAGE_BITS)) {
		phys_layout_abort(host, vaddr, phys);
	}
	phys_cache[i].host = hp + 1;
	phys_cache[i].phys = phys >> PAGE_BITS;
	return phys;
}

/* QEMU 7.2's meminfo is a MemOpIdx (memop << 4 | mmu index) with the
 * access's direction (1 load, 2 store) at bit 16, and a memop's low three bits are the
 * log2 of its size. The API's accessor is a call into QEMU per access;
 * mem_check compares this decoding and struct hwaddr72's is_io with the
 * API's every PHYS_CHECK_EVERY-th access (and the first). */
static inline unsigned size_shift72(qemu_plugin_meminfo_t info)
{
	return (info >> 4) & 7;
}

/* The direction is QEMU_PLUGIN_MEM_R (1) or _W (2) at bit 16. */
static inline int store72(qemu_plugin_meminfo_t info)
{
	return (info >> 17) & 1;
}

/* A memory callback's data is its slot's address, whose six low bits are
 * zero; bit 0 set marks a locked instruction's accesses (coherent.h). */
#define MEM_LOCKED 1u

static uint64_t mem_calls;

static void mem_layout_abort(const char *what, unsigned got, unsigned want)
{
	fprintf(stderr, "kcicount: QEMU's %s is not 7.2's (decoded %u, QEMU says %u): "
			"rebuild the plugin for this QEMU\n", what, got, want);
	abort();
}

static void mem_check(qemu_plugin_meminfo_t info, const struct qemu_plugin_hwaddr *h)
{
	if (size_shift72(info) != qemu_plugin_mem_size_shift(info)) {
		mem_layout_abort("memory access info", size_shift72(info), qemu_plugin_mem_size_shift(info));
	}
	if (store72(info) != (int)qemu_plugin_mem_is_store(info)) {
		mem_layout_abort("memory access direction", (unsigned)store72(info), qemu_plugin_mem_is_store(info));
	}
	if (h && ((const struct hwaddr72 *)h)->is_io != qemu_plugin_hwaddr_is_io(h)) {
		mem_layout_abort("hwaddr is_io", ((const struct hwaddr72 *)h)->is_io, qemu_plugin_hwaddr_is_io(h));
	}
}

#endif
