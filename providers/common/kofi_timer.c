// SPDX-License-Identifier: GPL-2.0
/*
 * The timer of kofi_timer.h, compiled into each provider that uses it: its
 * glue file includes this file (a file of providers/common/ cannot be an
 * object of two modules' builds).
 */
#include <linux/jiffies.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/timer.h>
#include <kofi/compat.h>
#include "kofi_timer.h"

struct kofi_ptimer {
	struct timer_list timer;
	void (*fired)(const void *owner);
	const void *owner;
	/*
	 * Arming and stopping exclude each other: an arm that checked the
	 * timer was not shut down, and then met the shutdown inside
	 * mod_timer, would return 0 (armed) for a timer that never expires,
	 * and its owner's reference would be lost.
	 */
	spinlock_t lock;
	bool stopped;
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
		spin_lock_init(&t->lock);
		timer_setup(&t->timer, kofi_ptimer_expired, 0);
	}
	return t;
}

int kofi_ptimer_arm(struct kofi_ptimer *t, const void *owner, unsigned int ms)
{
	unsigned long flags;
	int ret = -ESHUTDOWN;

	spin_lock_irqsave(&t->lock, flags);
	if (!t->stopped) {
		WRITE_ONCE(t->owner, owner);
		ret = mod_timer(&t->timer, jiffies + msecs_to_jiffies(ms));
	}
	spin_unlock_irqrestore(&t->lock, flags);
	return ret;
}

const void *kofi_ptimer_stop(struct kofi_ptimer *t)
{
	unsigned long flags;

	/* No arm after this: what was armed before is pending or expiring. */
	spin_lock_irqsave(&t->lock, flags);
	t->stopped = true;
	spin_unlock_irqrestore(&t->lock, flags);
	return timer_shutdown_sync(&t->timer) ? t->owner : NULL;
}

void kofi_ptimer_free(struct kofi_ptimer *t)
{
	timer_shutdown_sync(&t->timer);
	kfree(t);
}
