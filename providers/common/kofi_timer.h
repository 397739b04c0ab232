/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A one-shot timer for a provider's Rust owner (providers/common/timer.rs):
 * when it expires, @fired(@owner) runs in softirq. Arming returns 0, or 1
 * when the timer was armed already (it is moved; @owner must be the same),
 * or -ESHUTDOWN once it was stopped (it is not armed). Stopping it for good
 * waits for a callback in progress and returns the owner it was armed with,
 * or NULL when it was not armed. A provider's glue file includes
 * kofi_timer.c; its bindings header includes this.
 */
#ifndef _KOFI_PROVIDER_TIMER_H
#define _KOFI_PROVIDER_TIMER_H

struct kofi_ptimer;
struct kofi_ptimer *kofi_ptimer_new(void (*fired)(const void *owner));
int kofi_ptimer_arm(struct kofi_ptimer *t, const void *owner, unsigned int ms);
const void *kofi_ptimer_stop(struct kofi_ptimer *t);
void kofi_ptimer_free(struct kofi_ptimer *t);

#endif
