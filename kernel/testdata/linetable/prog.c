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
