/* A multiboot "kernel" for TestBareRuns: one window that runs a loop of
 * known count, so the plugin's per-block entries and block ends are
 * known exactly (interrupts off: nothing else runs in the window). The
 * test reads the labels' addresses from the ELF's symbol table.
 *   head:  mov, jmp: entered once (the block starts at _start, before
 *          the start marker; its entry in the window is counted after it);
 *   body:  add, dec, jnz: a block of its own (the jmp and the jnz end
 *          blocks), entered N times;
 *   after: the loop's fall-through, entered once;
 *   never: code that never runs.
 * Window 0: 2 + 3N + 1 instructions, no memory access. Then a write of 0
 * to isa-debug-exit (QEMU exits with status 1). */
#define N 123457
#define START .byte 0x0f,0x1f,0x84,0x00,0x01,0x00,0x43,0x4b
#define END .byte 0x0f,0x1f,0x84,0x00,0x02,0x00,0x43,0x4b

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
	START
head:
	mov $N, %ecx
	jmp body
head_end:
	/* Gaps that no block covers: the jmp ends its block. */
	.align 16, 0xcc
body:
	add $1, %eax
	dec %ecx
	jnz body
body_end:
after:
	inc %ebx
after_end:
	END
	mov $0, %al
	out %al, $0xf4
2:	hlt
	jmp 2b
	.align 16, 0xcc
never:
	inc %edx
	inc %edx
	ret
never_end:
