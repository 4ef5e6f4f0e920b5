// What the bare-metal /init test guests share: the window markers kci's
// agent uses (suite/bench/mark_amd64.s) and raw syscalls. Built with gcc
// -static -nostdlib: there is no libc.
#define START ".byte 0x0f,0x1f,0x84,0x00,0x01,0x00,0x43,0x4b\n\t"
#define END ".byte 0x0f,0x1f,0x84,0x00,0x02,0x00,0x43,0x4b\n\t"

static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 asm("r10") = d;
	register long r8 asm("r8") = e;
	register long r9 asm("r9") = f;
	long ret;
	asm volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
		     : "rcx", "r11", "memory");
	return ret;
}

static void say(const char *s)
{
	long n = 0;
	while (s[n]) {
		n++;
	}
	sys6(1 /* write */, 1, (long)s, n, 0, 0, 0);
}
