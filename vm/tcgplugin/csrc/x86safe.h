/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * x86_cannot_leave: whether an x86 instruction can never make a
 * translation block stop early, in any CPU mode. Such an instruction
 * needs no counter of its own: the next one that can (or the block's
 * last) counts it, so most blocks get two or three inline adds instead of
 * one per instruction, and every count stays exact.
 *
 * A block stops early only at an instruction that raises an exception
 * (a fault on a memory operand or the stack, #UD, #GP, #DE, ...) or does
 * I/O (under icount QEMU then re-runs it alone). Interrupts are taken
 * between blocks. So the list below is what touches no memory, raises
 * nothing and does no I/O whatever the mode: register-only ALU, move,
 * shift, bit and compare forms (ModRM mod == 3), moves of immediates,
 * lea (mod != 3; with mod == 3 it is #UD), direct jumps, flag operations,
 * nop. Anything not recognised, any lock or rep prefix, can leave: a
 * conservative answer costs an add, never a wrong count.
 */
#ifndef KCI_X86SAFE_H
#define KCI_X86SAFE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline bool modrm_reg_only(const uint8_t *p, size_t left)
{
	return left >= 1 && (p[0] >> 6) == 3;
}

/* one_byte: the one-byte opcode op, with p/left at its ModRM byte. */
static inline bool x86_one_byte_safe(uint8_t op, const uint8_t *p, size_t left)
{
	if (op < 0x40) {
		switch (op & 7) {
		case 0: case 1: case 2: case 3: /* ALU r/m,r and r,r/m */
			return modrm_reg_only(p, left);
		case 4: case 5: /* ALU AL/eAX, imm */
			return true;
		default: /* push/pop seg, BCD (#UD in 64-bit), prefixes */
			return false;
		}
	}
	if (op >= 0x70 && op <= 0x7f) { /* jcc rel8 */
		return true;
	}
	if (op >= 0x90 && op <= 0x99) { /* xchg eAX,r; nop; cbw; cwd */
		return true;
	}
	if (op >= 0xb0 && op <= 0xbf) { /* mov r, imm */
		return true;
	}
	uint8_t reg = left >= 1 ? (p[0] >> 3) & 7 : 0;
	switch (op) {
	case 0x69: case 0x6b:             /* imul r, r/m, imm */
	case 0x80: case 0x81: case 0x83:  /* ALU r/m, imm */
	case 0x84: case 0x85:             /* test */
	case 0x86: case 0x87:             /* xchg */
	case 0x88: case 0x89: case 0x8a: case 0x8b: /* mov */
	case 0xc0: case 0xc1: case 0xd0: case 0xd1: case 0xd2: case 0xd3: /* shifts */
		return modrm_reg_only(p, left);
	case 0x8d: /* lea: computes an address, loads nothing */
		return left >= 1 && !modrm_reg_only(p, left);
	case 0xa8: case 0xa9: /* test AL/eAX, imm */
	case 0xeb: case 0xe9: /* jmp rel */
	case 0xf5: case 0xf8: case 0xf9: case 0xfc: case 0xfd: /* cmc clc stc cld std */
		return true;
	case 0xf6: case 0xf7: /* test not neg mul imul; not div/idiv (#DE) */
		return modrm_reg_only(p, left) && reg < 6;
	case 0xfe: case 0xff: /* inc, dec; not call/jmp/push */
		return modrm_reg_only(p, left) && reg < 2;
	default:
		return false;
	}
}

/* two_byte: the opcode 0f op, with p/left at its ModRM byte. */
static inline bool x86_two_byte_safe(uint8_t op, const uint8_t *p, size_t left)
{
	if (op >= 0x80 && op <= 0x8f) { /* jcc rel32 */
		return true;
	}
	if (op >= 0xc8 && op <= 0xcf) { /* bswap */
		return true;
	}
	if ((op >= 0x40 && op <= 0x4f) || (op >= 0x90 && op <= 0x9f)) { /* cmovcc, setcc */
		return modrm_reg_only(p, left);
	}
	switch (op) {
	case 0x1f: /* nop r/m: never accesses its operand */
		return left >= 1;
	case 0xba: /* bt bts btr btc r/m, imm: /0-/3 are #UD */
		return modrm_reg_only(p, left) && ((p[0] >> 3) & 7) >= 4;
	case 0xa3: case 0xab: case 0xb3: case 0xbb: /* bt bts btr btc r/m, r */
	case 0xa4: case 0xa5: case 0xac: case 0xad:            /* shld shrd */
	case 0xaf:                                              /* imul r, r/m */
	case 0xb6: case 0xb7: case 0xbe: case 0xbf:            /* movzx movsx */
	case 0xbc: case 0xbd:                                   /* bsf bsr */
		return modrm_reg_only(p, left);
	default:
		return false;
	}
}

static inline bool x86_cannot_leave(const uint8_t *p, size_t n)
{
	size_t i = 0;
	/* Operand-size, address-size and segment prefixes change nothing
	 * here: the forms below touch no memory. lock (f0), rep (f2, f3) and
	 * anything else end the scan as "can leave". */
	while (i < n && (p[i] == 0x66 || p[i] == 0x67 || p[i] == 0x2e || p[i] == 0x3e ||
			 p[i] == 0x26 || p[i] == 0x36 || p[i] == 0x64 || p[i] == 0x65)) {
		i++;
	}
	if (i < n && p[i] >= 0x40 && p[i] <= 0x4f) {
		if (i + 1 == n) {
			return true; /* 32-bit inc/dec r: 64-bit code has no lone REX */
		}
		i++; /* REX in 64-bit code; 32-bit code never puts inc/dec in one insn with more */
	}
	if (i >= n) {
		return false;
	}
	if (p[i] == 0x0f) {
		return i + 1 < n && x86_two_byte_safe(p[i + 1], p + i + 2, n - i - 2);
	}
	return x86_one_byte_safe(p[i], p + i + 1, n - i - 1);
}

/* x86_locked: whether an instruction is a locked read-modify-write: a
 * lock (f0) prefix among its legacy prefixes, or xchg with a memory
 * operand (86/87, ModRM mod != 3), which locks without one. */
static inline bool x86_locked(const uint8_t *p, size_t n)
{
	size_t i = 0;
	bool lock = false;
	while (i < n && (p[i] == 0xf0 || p[i] == 0xf2 || p[i] == 0xf3 || p[i] == 0x66 || p[i] == 0x67 ||
			 p[i] == 0x2e || p[i] == 0x3e || p[i] == 0x26 || p[i] == 0x36 || p[i] == 0x64 ||
			 p[i] == 0x65)) {
		lock = lock || p[i] == 0xf0;
		i++;
	}
	if (lock) {
		return true;
	}
	if (i < n && p[i] >= 0x40 && p[i] <= 0x4f) {
		i++;
	}
	return i + 1 < n && (p[i] == 0x86 || p[i] == 0x87) && (p[i + 1] >> 6) != 3;
}

enum { X86_CALL = 1, X86_RET = 2 };

/* x86_callret: X86_CALL for a near call (e8 rel; ff /2, register or
 * memory), X86_RET for a near ret (c3; c2 imm16), 0 for anything else
 * (far calls and rets, iret, jumps). Legacy prefixes (operand size,
 * segment or notrack, bnd and rep) and a REX prefix change neither. */
static inline int x86_callret(const uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n && (p[i] == 0x66 || p[i] == 0x67 || p[i] == 0x2e || p[i] == 0x3e || p[i] == 0x26 ||
			 p[i] == 0x36 || p[i] == 0x64 || p[i] == 0x65 || p[i] == 0xf2 || p[i] == 0xf3)) {
		i++;
	}
	if (i + 1 < n && p[i] >= 0x40 && p[i] <= 0x4f) {
		i++; /* REX: 32-bit code's inc/dec is a whole instruction */
	}
	if (i >= n) {
		return 0;
	}
	switch (p[i]) {
	case 0xe8:
		return X86_CALL;
	case 0xff:
		return i + 1 < n && ((p[i + 1] >> 3) & 7) == 2 ? X86_CALL : 0;
	case 0xc3: case 0xc2:
		return X86_RET;
	default:
		return 0;
	}
}

#endif
