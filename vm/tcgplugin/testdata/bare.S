/* A multiboot "kernel" for TestBareMetal: QEMU's -kernel loads it in
 * 32-bit protected mode, paging off, interrupts off, so nothing but this
 * code runs in its windows. Same windows as init.c, on physical memory:
 *   window 0: 1 + 1000 × 2 = 2001 instructions, no memory access;
 *   window 1: 2 + N × 4 instructions, N loads on consecutive lines of
 *             64 MiB at 16 MiB;
 *   window 2: the same loop on one hot line.
 *   window 3: a call of work, which first ran before anything was armed
 *             (under arm=marker, translated without counters);
 * then a stray end and a window left open when it writes 0 to
 * isa-debug-exit (QEMU exits with status 1). */
#define N (1 << 20)
#define START .byte 0x0f,0x1f,0x84,0x00,0x01,0x00,0x43,0x4b
#define END .byte 0x0f,0x1f,0x84,0x00,0x02,0x00,0x43,0x4b
#define ARM .byte 0x0f,0x1f,0x84,0x00,0x03,0x00,0x43,0x4b

	.text
	.globl _start
	.align 4
mbheader:
	.long 0x1badb002
	.long 0
	.long -0x1badb002
_start:
	cli
	mov $0x200000, %esp
	call work
	ARM
	/* The nop fetches this code line before window 0 in every mode (the
	 * cache model starts at the arm marker under arm=marker). */
	nop
	START
	mov $1000, %ecx
1:	dec %ecx
	jnz 1b
	END

	START
	mov $0x1000000, %esi
	mov $N, %ecx
1:	mov (%esi), %eax
	add $64, %esi
	dec %ecx
	jnz 1b
	END

	START
	mov $0x1000000, %esi
	mov $N, %ecx
1:	mov (%esi), %eax
	add $0, %esi
	dec %ecx
	jnz 1b
	END

	START
	call work
	END

	/* An end with no window open, and a window left open at exit. */
	END
	START
	nop
	mov $0, %al
	out %al, $0xf4
2:	hlt
	jmp 2b

work:
	mov $100, %ecx
1:	dec %ecx
	jnz 1b
	ret
