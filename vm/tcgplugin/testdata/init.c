// The tiny /init of TestQEMU: three measurement windows, then power off.
// Built with gcc -static -nostdlib; it has no libc, only syscalls.
//
// Window 0: mov + 1000 × (dec, jnz) = 2001 instructions, no memory access.
// Window 1: 2 movs + N × (load, add, dec, jnz) = 4N+2 instructions, N
//           loads, each on a new 64-byte line of a 64 MiB buffer (more
//           than the modelled LLC): every one misses to DRAM.
// Window 2: the same loop with add $0: N loads of one hot line.
#define N (1 << 20)
#define START ".byte 0x0f,0x1f,0x84,0x00,0x01,0x00,0x43,0x4b\n\t"
#define END ".byte 0x0f,0x1f,0x84,0x00,0x02,0x00,0x43,0x4b\n\t"

static char buf[64 << 20] __attribute__((aligned(4096)));

static long sys4(long n, long a, long b, long c, long d)
{
	register long r10 asm("r10") = d;
	long ret;
	asm volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
	return ret;
}

static void say(const char *s)
{
	long n = 0;
	while (s[n]) {
		n++;
	}
	sys4(1 /* write */, 1, (long)s, n, 0);
}

void _start(void)
{
	/* Fault every page in before the windows: they measure loads, not
	 * the kernel's page-fault path. */
	for (long i = 0; i < (long)sizeof(buf); i += 4096) {
		((volatile char *)buf)[i] = 1;
	}
	asm volatile(START "mov $1000, %%ecx\n1:\tdec %%ecx\n\tjnz 1b\n\t" END ::: "rcx", "cc");
	asm volatile(START "mov %0, %%rsi\n\tmov %1, %%ecx\n"
		     "1:\tmov (%%rsi), %%rax\n\tadd $64, %%rsi\n\tdec %%ecx\n\tjnz 1b\n\t" END
		     :: "r"(buf), "i"(N) : "rsi", "rcx", "rax", "cc", "memory");
	asm volatile(START "mov %0, %%rsi\n\tmov %1, %%ecx\n"
		     "1:\tmov (%%rsi), %%rax\n\tadd $0, %%rsi\n\tdec %%ecx\n\tjnz 1b\n\t" END
		     :: "r"(buf), "i"(N) : "rsi", "rcx", "rax", "cc", "memory");
	say("kci-init: windows done\n");
	/* reboot(LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, POWER_OFF) */
	sys4(169, 0xfee1dead, 672274793, 0x4321fedc, 0);
	for (;;) {
	}
}
