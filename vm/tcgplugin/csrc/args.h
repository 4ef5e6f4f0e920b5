/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * kcicount's arguments (README.md, Arguments) and the output's header
 * lines. Part of kcicount.c's one translation unit, included where its
 * state (st) is defined.
 */
#ifndef KCI_ARGS_H
#define KCI_ARGS_H

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-') {
		return -1;
	}
	*v = n;
	return 0;
}

/* parse_range reads ctx=<lo>-<hi> (hex, lo < hi) into st.ctx. */
static int parse_range(const char *s)
{
	char *end;
	errno = 0;
	unsigned long long lo = strtoull(s, &end, 16);
	if (errno != 0 || end == s || *end != '-' || s[0] == '-') {
		return -1;
	}
	const char *h = end + 1;
	unsigned long long hi = strtoull(h, &end, 16);
	if (errno != 0 || end == h || *end != '\0' || h[0] == '-' || lo >= hi) {
		return -1;
	}
	st.ctx.lo = lo;
	st.ctx.hi = hi;
	return 0;
}

/* parse_args fills st from key=value arguments; any other is refused. */
static int parse_args(int argc, char **argv, const char **out)
{
	*out = NULL;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (strncmp(a, "out=", 4) == 0 && a[4] != '\0') {
			*out = a + 4;
		} else if (strcmp(a, "cache=on") == 0) {
			st.cache = true;
		} else if (strcmp(a, "cache=off") == 0) {
			st.cache = false;
		} else if (strcmp(a, "cache=coherent") == 0) {
			st.cache = st.coherent = true;
		} else if (strncmp(a, "quantum=", 8) == 0 && parse_u64(a + 8, &st.quantum) == 0) {
			continue;
		} else if (strcmp(a, "smt=1") == 0 || strcmp(a, "smt=2") == 0) {
			st.smt = a[4] - '0';
		} else if (strcmp(a, "arm=marker") == 0) {
			st.arm_marker = true;
		} else if (strcmp(a, "arm=boot") == 0) {
			st.arm_marker = false;
		} else if (strcmp(a, "ctx=off") == 0) {
			st.ctx.on = false;
		} else if (strncmp(a, "ctx=", 4) == 0 && parse_range(a + 4) == 0) {
			st.ctx.on = true;
		} else if (strcmp(a, "ctxblocks=on") == 0 || strcmp(a, "ctxblocks=off") == 0) {
			st.ctx.blocks = a[11] == 'n';
		} else if (strncmp(a, "mark=", 5) == 0 && ctx_parse_mark(&st.ctx, a + 5) == 0) {
			continue;
		} else {
			fprintf(stderr, "kcicount: unknown or malformed argument %s (want out=<path>, "
					"cache=on|off|coherent, arm=boot|marker, quantum=<instructions>, smt=1|2, "
					"ctx=<lo hex>-<hi hex>|off, ctxblocks=on|off, "
					"mark=hardirq|softirq|syscall|deferred@<hex>, at most %d)\n", a, MARKS_MAX);
			return -1;
		}
	}
	if (!*out) {
		fprintf(stderr, "kcicount: out=<path> is required\n");
		return -1;
	}
	if (st.smt == 2 && !st.coherent) {
		fprintf(stderr, "kcicount: smt=2 shares cores between vCPUs: it needs cache=coherent\n");
		return -1;
	}
	if (st.ctx.blocks && !st.ctx.on) {
		fprintf(stderr, "kcicount: ctxblocks=on needs call contexts (ctx= not off)\n");
		return -1;
	}
	if (st.ctx.nmarks > 0 && !st.ctx.blocks) {
		fprintf(stderr, "kcicount: mark= needs ctxblocks=on (its classes count block entries)\n");
		return -1;
	}
	return 0;
}

static void write_header(void)
{
	out_printf("kcicount %d\nvcpus %d quantum %lu\n", FORMAT_VERSION, st.nvcpu, (unsigned long)st.quantum);
	if (st.ctx.on) {
		out_printf("contexts %lx %lx blocks %s marks %d\n", (unsigned long)st.ctx.lo, (unsigned long)st.ctx.hi,
			   st.ctx.blocks ? "on" : "off", st.ctx.nmarks);
	} else {
		out_printf("contexts off\n");
	}
	if (!st.cache) {
		out_printf("cache off\n");
		return;
	}
	char m[320];
	if (st.coherent) {
		cm_describe(&st.cm, m, sizeof(m));
	} else {
		model_describe(&st.model, m, sizeof(m));
	}
	out_printf("cache %s\n%s\n", st.coherent ? "coherent" : "on", m);
}

#endif
