/* A static inline every caller gets a copy of. */
static inline int twice(volatile int *x)
{
	return *x * 2;
}
