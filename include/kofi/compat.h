/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kofi's own C modules only: what the kernel APIs they use spell
 * differently between 6.12 and 7.3, the two kernels kofi builds on. The
 * Rust side of the same is include/kofi/rust/compat.rs. Nothing else in
 * the tree asks which kernel it is built for.
 */
#ifndef _KOFI_COMPAT_H
#define _KOFI_COMPAT_H

#include <linux/net.h>
#include <linux/socket.h>
#include <linux/timer.h>
#include <linux/version.h>
#include <linux/workqueue.h>

/* kernel_bind() and kernel_connect() take a struct sockaddr_unsized on 7.3. */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
#define KOFI_SOCKADDR_ARG(addr) ((struct sockaddr_unsized *)(addr))
#else
#define KOFI_SOCKADDR_ARG(addr) ((struct sockaddr *)(addr))
#endif

/*
 * 7.3 warns about a workqueue that says neither WQ_UNBOUND nor WQ_PERCPU;
 * per-CPU is what 6.12 makes of it, where the flag does not exist.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 0, 0)
#define KOFI_WQ_PERCPU WQ_PERCPU
#else
#define KOFI_WQ_PERCPU 0
#endif

/* from_timer() is timer_container_of() on 7.3. */
#ifndef timer_container_of
#define timer_container_of(var, callback_timer, field) from_timer(var, callback_timer, field)
#endif

#endif /* _KOFI_COMPAT_H */
