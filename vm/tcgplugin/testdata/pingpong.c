// /init of TestQEMUVCPUs: two processes hand a turn back and forth R
// times through one shared line, the parent on CPU 0 and the child on CPU 1
// (both on CPU 0 in a one-vCPU guest). Built with gcc -static -nostdlib.
//
// Window 0 ("private"): each turn, the process whose turn it is does a
// locked increment of a line of its own, then passes the turn.
// Window 1 ("shared"): the same, on one line both processes increment.
// The two windows run the same instructions; only where the increments
// land differs, so window 1 minus window 0 is what the shared line costs
// when it moves between cores: two transfers a round on two vCPUs, none
// on one.
#define R 2000

struct shared {
	volatile long turn __attribute__((aligned(64)));
	long own[2][8] __attribute__((aligned(64))); // a line each
	long both __attribute__((aligned(64)));
	volatile long ready;
};

#include "guest.h"

static void pin(long cpu)
{
	unsigned long mask = 1ul << cpu;
	if (sys6(203 /* sched_setaffinity */, 0, sizeof(mask), (long)&mask, 0, 0, 0) != 0) {
		mask = 1; // a one-vCPU guest
		sys6(203, 0, sizeof(mask), (long)&mask, 0, 0, 0);
	}
}

static inline void inc(long *p)
{
	asm volatile("lock incq %0" : "+m"(*p) :: "cc");
}

// rounds plays side me's R turns, incrementing line (own or shared).
static void rounds(struct shared *s, long me, long *line)
{
	for (long r = 0; r < R; r++) {
		while (s->turn != me) {
			asm volatile("pause");
			sys6(24 /* sched_yield */, 0, 0, 0, 0, 0, 0);
		}
		inc(line);
		s->turn = 1 - me;
	}
}

void _start(void)
{
	struct shared *s = (struct shared *)sys6(9 /* mmap */, 0, 4096, 3 /* RW */, 0x21 /* SHARED|ANON */, -1, 0);
	long pid = sys6(57 /* fork */, 0, 0, 0, 0, 0, 0);
	long me = pid == 0;
	pin(me);
	// Meet before the windows: both pinned and running.
	__atomic_add_fetch(&s->ready, 1, __ATOMIC_SEQ_CST);
	while (s->ready < 2) {
		sys6(24, 0, 0, 0, 0, 0, 0);
	}
	for (long w = 0; w < 2; w++) {
		long *line = w == 0 ? s->own[me] : &s->both;
		if (me == 0) {
			asm volatile(START ::: "memory");
		}
		rounds(s, me, line);
		// The child's last turn passes to the parent, who closes.
		if (me == 0) {
			while (s->turn != 0) {
				sys6(24, 0, 0, 0, 0, 0, 0);
			}
			asm volatile(END ::: "memory");
		}
	}
	if (me == 1) {
		sys6(60 /* exit */, 0, 0, 0, 0, 0, 0);
	}
	sys6(61 /* wait4 */, pid, 0, 0, 0, 0, 0);
	say("kci-init: windows done\n");
	sys6(169 /* reboot */, 0xfee1dead, 672274793, 0x4321fedc, 0, 0, 0);
	for (;;) {
	}
}
