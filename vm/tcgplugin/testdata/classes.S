/* A multiboot "kernel" for TestBareClasses: each block entry's context
 * (ctxblocks=on with marks), with interrupts off so every count is
 * exact. The test marks sys as syscall, hirq as hardirq, soft as
 * softirq, def and kwork as deferred, and makes [ctx_lo, ctx_hi) (only
 * bpfprog) the call contexts' range. Three 16 KiB-aligned stacks: the
 * task's (top 0x200000), an IRQ stack (0x180000) and another task's
 * (0x160000). Window 0 runs N iterations, each entering leaf nine times:
 *   call leaf          no frame: no class;
 *   call sys           syscall:
 *     call leaf          in syscall;
 *     call hirq          hardirq, calling leaf;
 *     call on_irqstack   as the kernel's call_on_irqstack: the old stack
 *                        pointer pushed at the IRQ stack's top, soft
 *                        called there (its first frame inherits syscall,
 *                        then its mark makes it softirq), popped back,
 *                        ret on the task's stack:
 *       soft             softirq: calls leaf; def (deferred, innermost
 *                        wins), which calls leaf; bpfprog (a call
 *                        context: its entries and leaf's there count in
 *                        its calls, and in softirq), which calls leaf;
 *     call leaf          in syscall again;
 *   call switch_c      a task switch: its frame on the task's stack, the
 *                      other task's stack loaded, kwork (deferred) called
 *                      there, which calls leaf and then switches back
 *                      without a ret, as a task that sleeps; the ret on
 *                      the task's stack ends switch_c;
 *   call leaf          no class: kwork's frame stays on the other stack
 *                      (the next iteration's call there drops it).
 * So leaf's entries: 2N none, 2N syscall, N hardirq, 2N softirq, 2N
 * deferred (def, kwork); N of them inside bpfprog's calls. Then a write of 0 to isa-debug-exit
 * (QEMU exits with status 1). */
#define N 1009
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
	call leaf
	call sys
	call switch_c
	call leaf
	dec %ecx
	jnz loop
	END
	mov $0, %al
	out %al, $0xf4
2:	hlt
	jmp 2b

leaf:
	addl $1, counter
	ret

sys:
	call leaf
	call hirq
	call on_irqstack
	call leaf
	ret

hirq:
	call leaf
	ret

on_irqstack:
	mov %esp, %eax
	mov $0x180000, %esp
	push %eax
	call soft
	pop %esp
	ret

soft:
	call leaf
	call def
	call bpfprog
	ret

def:
	call leaf
	ret

switch_c:
	mov %esp, saved
	mov $0x160000, %esp
	push %eax /* the top slot stays unused, as pt_regs keeps it */
	call kwork
	/* never reached: kwork switches back */
2:	hlt
	jmp 2b

kwork:
	call leaf
	mov saved, %esp
	ret

	.align 4096, 0xcc
ctx_lo:
bpfprog:
	call leaf
	ret
	.align 64, 0xcc
ctx_hi:

	.data
counter:
	.long 0
saved:
	.long 0
