// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of kofi.ko: exports of the Rust core's calls, and helpers for
 * kernel APIs that are static inline or macros.
 *
 * An out-of-tree Rust crate cannot emit export entries itself, so the
 * #[no_mangle] functions of the crate are exported here, in namespace KOFI:
 * consumers and providers say MODULE_IMPORT_NS(KOFI_NS).
 */
#include <linux/debugfs.h>
#include <linux/export.h>
#include <linux/seq_file.h>
#include <linux/kmod.h>
#include <linux/random.h>
#include <linux/bvec.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/socket.h>
#include <linux/workqueue.h>
#include <linux/mm.h>
#include <kofi/kofi_provider.h>
#include "kofi_glue.h"

void *kofi_zalloc(size_t size, bool atomic)
{
	return kzalloc(size, atomic ? GFP_ATOMIC : GFP_KERNEL);
}

void *kofi_memdup(const void *src, size_t len, bool atomic)
{
	return kmemdup(src, len, atomic ? GFP_ATOMIC : GFP_KERNEL);
}

char *kofi_strdup(const char *s)
{
	return kstrdup(s, GFP_KERNEL);
}

void kofi_free(const void *p)
{
	kfree(p);
}

int kofi_request_provider(const char *name)
{
	return request_module("kofi-%s", name);
}

bool kofi_module_get(struct module *module)
{
	return try_module_get(module);
}

void kofi_module_put(struct module *module)
{
	module_put(module);
}

/* As the kernel's Rust helper does: a named lock class under lockdep. */
void kofi_bh_lock_init(spinlock_t *lock, const char *name, struct lock_class_key *key)
{
#ifdef CONFIG_DEBUG_SPINLOCK
# if defined(CONFIG_PREEMPT_RT)
	__spin_lock_init(lock, name, key, false);
# else
	__raw_spin_lock_init(spinlock_check(lock), name, key, LD_WAIT_CONFIG);
# endif
#else
	spin_lock_init(lock);
#endif
}

void kofi_bh_lock(spinlock_t *lock)
{
	spin_lock_bh(lock);
}

void kofi_bh_unlock(spinlock_t *lock)
{
	spin_unlock_bh(lock);
}

bool kofi_bh_trylock(spinlock_t *lock)
{
	return spin_trylock_bh(lock);
}

void kofi_bh_assert_held(spinlock_t *lock)
{
	lockdep_assert_held(lock);
}

u64 kofi_random_u64(void)
{
	return get_random_u64();
}

/* @iter over bytes [@start, @start + @len) of an array of kvecs or bio_vecs. */
void kofi_iov_iter_window(struct iov_iter *iter, unsigned int direction, bool bvec,
			  const void *iov, unsigned long nr, size_t total, size_t start,
			  size_t len)
{
	if (bvec)
		iov_iter_bvec(iter, direction, iov, nr, total);
	else
		iov_iter_kvec(iter, direction, iov, nr, total);
	iov_iter_advance(iter, start);
	iov_iter_truncate(iter, len);
}

/* A bio_vec's first byte by physical address: descriptors compare pages so. */
u64 kofi_bvec_phys(const struct bio_vec *bv)
{
	return page_to_phys(bv->bv_page) + bv->bv_offset;
}

/* The page of kmalloc'ed memory, to send a header from it in a bio_vec. */
struct page *kofi_virt_to_page(const void *addr)
{
	return virt_to_page(addr);
}

/* "a.b.c.d:port" or "[v6]:port"; the length without the NUL, as snprintf. */
int kofi_sockaddr_str(const struct sockaddr_storage *addr, char *buf, size_t len)
{
	return snprintf(buf, len, "%pISpc", addr);
}

/* @addr's numeric host ("a.b.c.d", "fd00::10") in @node and its port in
 * decimal in @service, as fi_getinfo takes them; 0, or -EINVAL when either
 * does not fit or the family is neither. */
int kofi_sockaddr_node(const struct sockaddr_storage *addr, char *node, size_t len,
		       char *service, size_t service_len)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)addr;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)addr;
	u16 port;
	int n;

	switch (addr->ss_family) {
	case AF_INET:
		n = snprintf(node, len, "%pI4", &sin->sin_addr);
		port = ntohs(sin->sin_port);
		break;
	case AF_INET6:
		n = snprintf(node, len, "%pI6c", &sin6->sin6_addr);
		port = ntohs(sin6->sin6_port);
		break;
	default:
		return -EINVAL;
	}
	if (n >= (int)len || snprintf(service, service_len, "%u", port) >= (int)service_len)
		return -EINVAL;
	return 0;
}

bool kofi_in_task(void)
{
	return in_task();
}

int kofi_module_refcount(struct module *module)
{
	return module ? module_refcount(module) : 0;
}

/* debugfs: /sys/kernel/debug/kofi/providers, a read-only view of the registry. */
static struct dentry *kofi_debugfs_dir;

static int kofi_providers_show(struct seq_file *m, void *unused)
{
	kofi_debugfs_show_providers(m);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(kofi_providers);

int kofi_debugfs_init(void)
{
	kofi_debugfs_dir = debugfs_create_dir("kofi", NULL);
	debugfs_create_file("providers", 0444, kofi_debugfs_dir, NULL, &kofi_providers_fops);
	return 0;
}

void kofi_debugfs_exit(void)
{
	debugfs_remove_recursive(kofi_debugfs_dir);
}

void kofi_seq_write(struct seq_file *m, const char *buf, size_t len)
{
	seq_write(m, buf, len);
}

/* Version and errors */
EXPORT_SYMBOL_NS_GPL(fi_version, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_strerror, KOFI_NS);
/* Discovery and info lists */
EXPORT_SYMBOL_NS_GPL(fi_getinfo, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_freeinfo, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_dupinfo, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_allocinfo, KOFI_NS);
/* Objects */
EXPORT_SYMBOL_NS_GPL(fi_fabric, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_domain, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_endpoint, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_passive_ep, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cq_open, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_eq_open, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_close, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_control, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_ep_bind, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_pep_bind, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_enable, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_getopt, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_setopt, KOFI_NS);
/* Connection management */
EXPORT_SYMBOL_NS_GPL(fi_listen, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_connect, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_accept, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_reject, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_shutdown, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_getname, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_getpeer, KOFI_NS);
/* Messages */
EXPORT_SYMBOL_NS_GPL(fi_send, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_sendv, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_sendmsg, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_inject, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_senddata, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_injectdata, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_recv, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_recvv, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_recvmsg, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cancel, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_sendto, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_recvfrom, KOFI_NS);
/* Atomic operations */
EXPORT_SYMBOL_NS_GPL(fi_atomic, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_atomicv, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_atomicmsg, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_inject_atomic, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_fetch_atomic, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_fetch_atomicv, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_fetch_atomicmsg, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_compare_atomic, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_compare_atomicv, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_compare_atomicmsg, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_atomicvalid, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_fetch_atomicvalid, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_compare_atomicvalid, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_query_atomic, KOFI_NS);
/* Tagged messages */
EXPORT_SYMBOL_NS_GPL(fi_tsend, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_tsendv, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_tsendmsg, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_tinject, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_tsenddata, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_tinjectdata, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_trecv, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_trecvv, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_trecvmsg, KOFI_NS);
/* Address vectors */
EXPORT_SYMBOL_NS_GPL(fi_av_open, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_av_insert, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_av_insertsvc, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_av_remove, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_av_lookup, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_av_straddr, KOFI_NS);
/* RMA */
EXPORT_SYMBOL_NS_GPL(fi_read, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_readv, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_readmsg, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_write, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_writev, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_writemsg, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_inject_write, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_writedata, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_inject_writedata, KOFI_NS);
/* Completion and event queues */
EXPORT_SYMBOL_NS_GPL(fi_cq_read, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cq_readerr, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cq_sread, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cq_signal, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cq_readfrom, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cq_sreadfrom, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cq_strerror, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_eq_read, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_eq_readerr, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_eq_write, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_eq_sread, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_eq_strerror, KOFI_NS);
/* Counters */
EXPORT_SYMBOL_NS_GPL(fi_cntr_open, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cntr_read, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cntr_readerr, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cntr_add, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cntr_adderr, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cntr_set, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cntr_seterr, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_cntr_wait, KOFI_NS);
/* Memory registration */
EXPORT_SYMBOL_NS_GPL(fi_mr_reg, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_mr_regv, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_mr_regbv, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_mr_regattr, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_mr_desc, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_mr_key, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_mr_bind, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(fi_mr_enable, KOFI_NS);
/* The provider interface */
EXPORT_SYMBOL_NS_GPL(kofi_provider_register, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_provider_deregister, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_ep_complete, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_ep_complete_tagged, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_ep_complete_error, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_ep_progress_request, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_ep_event, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_ep_event_error, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_connreq_alloc, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_pep_connreq, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_pep_event_error, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_mr_get, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_mr_iter, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_mr_put, KOFI_NS);

/* Socket addresses for IP providers: numeric parsing, the length of a family. */
int kofi_sockaddr_parse(const char *node, u16 port, struct sockaddr_storage *addr)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)addr;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)addr;

	memset(addr, 0, sizeof(*addr));
	if (!node) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return 0;
	}
	if (in4_pton(node, -1, (u8 *)&sin->sin_addr, '\0', NULL)) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		return 0;
	}
	if (in6_pton(node, -1, (u8 *)&sin6->sin6_addr, '\0', NULL)) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		return 0;
	}
	return -EINVAL;
}

size_t kofi_sockaddr_len(const struct sockaddr_storage *addr)
{
	return addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					     sizeof(struct sockaddr_in);
}

EXPORT_SYMBOL_NS_GPL(kofi_sockaddr_parse, KOFI_NS);
EXPORT_SYMBOL_NS_GPL(kofi_sockaddr_len, KOFI_NS);
