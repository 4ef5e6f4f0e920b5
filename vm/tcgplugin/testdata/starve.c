// /init of TestQEMUTurnsOutsideWindows: a busy loop on CPU 0 that only CPU
// 1 can end. Built with gcc -static -nostdlib.
//
// The parent pins itself to CPU 0 and forks; the child (on CPU 0 too,
// until it moves itself to CPU 1) sets a flag. The parent spins on the
// flag without a pause or a syscall, up to SPINS times, and says how many
// spins it took, or that CPU 1 never set it. QEMU 7.2 under icount gives
// CPU 0, first in each round, every instruction up to the next clock
// deadline, so CPU 1 gets none while CPU 0 spins: the flag is never set.
// One window follows, so the plugin has something to count.
#define SPINS (1L << 28)

struct shared {
	volatile long flag __attribute__((aligned(64)));
};

#include "guest.h"

// sayn writes v in decimal.
static void sayn(long v)
{
	char b[24];
	int i = sizeof(b) - 1;
	b[i] = 0;
	do {
		b[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	say(b + i);
}

static void pin(long cpu)
{
	unsigned long mask = 1ul << cpu;
	sys6(203 /* sched_setaffinity */, 0, sizeof(mask), (long)&mask, 0, 0, 0);
}

void _start(void)
{
	struct shared *s = (struct shared *)sys6(9 /* mmap */, 0, 4096, 3 /* RW */, 0x21 /* SHARED|ANON */, -1, 0);
	pin(0);
	long pid = sys6(57 /* fork */, 0, 0, 0, 0, 0, 0);
	if (pid == 0) {
		pin(1);
		s->flag = 1;
		sys6(60 /* exit */, 0, 0, 0, 0, 0, 0);
	}
	long n = 0;
	while (!s->flag && n < SPINS) {
		n++;
	}
	if (s->flag) {
		say("kci-starve: flag seen after ");
		sayn(n);
		say(" spins\n");
	} else {
		say("kci-starve: CPU 1 never ran in ");
		sayn(n);
		say(" spins\n");
	}
	asm volatile(START ::: "memory");
	for (volatile int i = 0; i < 100; i++) {
	}
	asm volatile(END ::: "memory");
	if (s->flag) {
		sys6(61 /* wait4 */, pid, 0, 0, 0, 0, 0);
	}
	say("kci-init: windows done\n");
	sys6(169 /* reboot */, 0xfee1dead, 672274793, 0x4321fedc, 0, 0, 0);
	for (;;) {
	}
}
