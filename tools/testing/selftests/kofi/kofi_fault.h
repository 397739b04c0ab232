/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Deterministic allocation failures for kofi's tests: fail the nth
 * allocation of the calling task (fault injection's fail-nth), as a
 * syzkaller-style sweep does, to walk every error path of a call in turn.
 * The guest (scripts/vm-run.sh) arms failslab and fail_page_alloc with no
 * probability, no stack dumps and sleeping allocations counted.
 */
#ifndef _KOFI_FAULT_H
#define _KOFI_FAULT_H

#include <linux/sched.h>

#ifdef CONFIG_FAULT_INJECTION
/* Fails the @nth allocation this task makes from now on (fault injection's
 * fail-nth; the guest arms failslab and fail_page_alloc, sleeping
 * allocations included); 0 disarms. */
static inline void fail_nth(unsigned int nth)
{
	WRITE_ONCE(current->fail_nth, nth);
}

/* Nonzero when the armed failure did not fire: the call made fewer
 * allocations than asked to skip. */
static inline unsigned int fail_armed(void)
{
	return READ_ONCE(current->fail_nth);
}
#else
/*
 * A kernel without fault injection (the perf kernel, which builds every
 * module of the tree): the sweeps compile, and skip themselves at run time
 * (KOFI_NEEDS_FAULT_INJECTION), so nothing here is ever called.
 */
static inline void fail_nth(unsigned int nth)
{
}

static inline unsigned int fail_armed(void)
{
	return 1;
}
#endif

/*
 * Evaluates @expr with the @n-th allocation of this task failing, and is
 * its value; sets *@done when @expr made fewer than @n allocations (the
 * failure never fired: a sweep of n upwards is over).
 */
#define with_nth_failing(n, done, expr)					\
	({								\
		fail_nth(n);						\
		__auto_type __kofi_v = (expr);				\
		*(done) = fail_armed() != 0;				\
		fail_nth(0);						\
		__kofi_v;						\
	})

/* Skips a KUnit case that needs fail-nth on a kernel without it. */
#define KOFI_NEEDS_FAULT_INJECTION(test)					\
	do {									\
		if (!IS_ENABLED(CONFIG_FAULT_INJECTION))			\
			kunit_skip(test, "needs CONFIG_FAULT_INJECTION");	\
	} while (0)

#endif /* _KOFI_FAULT_H */
