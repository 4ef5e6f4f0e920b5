#include "inl.h"

volatile int v = 3;

__attribute__((noinline)) int one(void)
{
	return twice(&v) + 1;
}

__attribute__((noinline)) int two(void)
{
	return twice(&v) + 2;
}

/* A comment: no code. */
int main(void)
{
	return one() + two();
}

/* Line 23's only code is the inline's body, which the line table gives
 * inl.h's line: the call site is in DW_TAG_inlined_subroutine. */
__attribute__((noinline, used)) void three(void) { (void)twice(&v); }
