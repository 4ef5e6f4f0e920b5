/* A multiboot "kernel" for TestBareCalls: call contexts, with interrupts
 * off so every count is exact. The test makes [ctx_lo, ctx_hi) the
 * entry range: entry, entry2 and hop lie in it, helper and thunk not.
 * Window 0 runs a loop of N iterations, each:
 *   call entry   a context of entry: entry's 4 instructions and
 *                helper's 2; 7 accesses (push, call, helper's addl's
 *                load and store, helper's ret, pop, ret);
 *   call helper  helper outside any context: 2 instructions, 3 accesses;
 *   call thunk   a retpoline (call, mov to the return slot, ret) that
 *                enters entry2: a context of entry2 (call entry, ret)
 *                with entry's nested in it: 8 instructions, 9 accesses;
 *                the thunk's 3 instructions run before it opens;
 *   jmp hop      a jump into the range and back: no context;
 *   call rec     a call that calls its own target: two calls, counted
 *                once: 7 instructions (dec, jz, call, the inner call's
 *                dec, jz, ret, then ret), 3 accesses (call, ret, ret);
 *   call escape  a context whose ret never comes: escape drops its return
 *                address and jumps back; its frame is dead once the next
 *                call stores at or above its slot (the next iteration's
 *                call of entry, itself and its store included), or at
 *                the window's end (after the last iteration);
 *   dec, jnz.
 * So per window: entry 2N calls, 12N instructions, 14N accesses; entry2
 * N calls, 8N, 9N; rec 2N, 7N, 3N; escape N calls, 5N - 1 (add, jmp,
 * dec, jnz, call), N - 1; no other context. The window: 1 + 38N
 * instructions (the mov before the loop), 30N accesses. With the cache
 * model the
 * first direct call of entry misses on three lines, nothing before the
 * window having touched them: entry's code, helper's (the line after the
 * loop's; the loop's blocks end before it) and counter's; the stack's
 * line is first touched by the loop's call. So entry's context counts
 * 12N + 3 * 240 cycles, entry2's 8N. Then a write of 0 to
 * isa-debug-exit (QEMU exits with status 1). */
#define N 10007
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
	mov $N, %ecx
loop:
	call entry
	call helper
	call thunk
	jmp hop
hop_back:
	mov $2, %edx
	call rec
	call escape
escaped:
	dec %ecx
	jnz loop
	END
	mov $0, %al
	out %al, $0xf4
2:	hlt
	jmp 2b

helper:
	addl $1, counter
helper_ret:
	ret

thunk:
	call 1f
2:	pause
	jmp 2b
1:	movl $entry2, (%esp)
	ret

	.align 4096, 0xcc
ctx_lo:
entry:
	push %ecx
	call helper
entry_back:
	pop %ecx
	ret
entry2:
	call entry
entry2_back:
	ret
hop:
	jmp hop_back
escape:
	add $4, %esp
	jmp escaped
rec:
	dec %edx
	jz 1f
	call rec
1:	ret
rec_end:
	.align 64, 0xcc
ctx_hi:

	.data
counter:
	.long 0
