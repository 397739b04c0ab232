// SPDX-License-Identifier: GPL-2.0
/*
 * The timer of kofi_timer.h, compiled into each provider that uses it: its
 * glue file includes this file (a file of providers/common/ cannot be an
 * object of two modules' builds).
 */
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include <kofi/compat.h>
#include "kofi_timer.h"

struct kofi_ptimer {
	struct timer_list timer;
	void (*fired)(const void *owner);
	const void *owner;
};

static void kofi_ptimer_expired(struct timer_list *timer)
{
	struct kofi_ptimer *t = timer_container_of(t, timer, timer);

	t->fired(READ_ONCE(t->owner));
}

struct kofi_ptimer *kofi_ptimer_new(void (*fired)(const void *owner))
{
	struct kofi_ptimer *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (t) {
		t->fired = fired;
		timer_setup(&t->timer, kofi_ptimer_expired, 0);
	}
	return t;
}

int kofi_ptimer_arm(struct kofi_ptimer *t, const void *owner, unsigned int ms)
{
	/* A shut down timer has no function and mod_timer would not arm it. */
	if (!READ_ONCE(t->timer.function))
		return -ESHUTDOWN;
	WRITE_ONCE(t->owner, owner);
	return mod_timer(&t->timer, jiffies + msecs_to_jiffies(ms));
}

const void *kofi_ptimer_stop(struct kofi_ptimer *t)
{
	return timer_shutdown_sync(&t->timer) ? t->owner : NULL;
}

void kofi_ptimer_free(struct kofi_ptimer *t)
{
	timer_shutdown_sync(&t->timer);
	kfree(t);
}
