// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of kofi.ko: exports of the Rust core's calls, and helpers for
 * kernel APIs that are static inline or macros.
 *
 * An out-of-tree Rust crate cannot emit export entries itself, so the
 * #[no_mangle] functions of the crate are exported here, in namespace KOFI:
 * consumers and providers say MODULE_IMPORT_NS(KOFI).
 */
#include <linux/debugfs.h>
#include <linux/export.h>
#include <linux/seq_file.h>
#include <linux/kmod.h>
#include <linux/random.h>
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

/* The core's own work (FI_EP_RDM progress); it must go on under memory pressure. */
struct workqueue_struct *kofi_wq_alloc(void)
{
	return alloc_workqueue("kofi_rdm", WQ_MEM_RECLAIM | WQ_UNBOUND, 0);
}

void kofi_wq_destroy(struct workqueue_struct *wq)
{
	destroy_workqueue(wq);
}

/* The page of kmalloc'ed memory, to send a header from it in a bio_vec. */
struct page *kofi_virt_to_page(const void *addr)
{
	return virt_to_page(addr);
}

size_t kofi_copy_to_iter(const void *from, size_t len, struct iov_iter *iter)
{
	return copy_to_iter(from, len, iter);
}

size_t kofi_copy_from_iter(void *to, size_t len, struct iov_iter *iter)
{
	return copy_from_iter(to, len, iter);
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
EXPORT_SYMBOL_NS_GPL(fi_version, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_strerror, KOFI);
/* Discovery and info lists */
EXPORT_SYMBOL_NS_GPL(fi_getinfo, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_freeinfo, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_dupinfo, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_allocinfo, KOFI);
/* Objects */
EXPORT_SYMBOL_NS_GPL(fi_fabric, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_domain, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_endpoint, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_passive_ep, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cq_open, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_eq_open, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_close, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_control, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_ep_bind, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_pep_bind, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_enable, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_getopt, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_setopt, KOFI);
/* Connection management */
EXPORT_SYMBOL_NS_GPL(fi_listen, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_connect, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_accept, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_reject, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_shutdown, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_getname, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_getpeer, KOFI);
/* Messages */
EXPORT_SYMBOL_NS_GPL(fi_send, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_sendv, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_sendmsg, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_inject, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_senddata, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_injectdata, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_recv, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_recvv, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_recvmsg, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cancel, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_sendto, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_recvfrom, KOFI);
/* Atomic operations */
EXPORT_SYMBOL_NS_GPL(fi_atomic, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_atomicv, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_atomicmsg, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_inject_atomic, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_fetch_atomic, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_fetch_atomicv, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_fetch_atomicmsg, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_compare_atomic, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_compare_atomicv, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_compare_atomicmsg, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_atomicvalid, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_fetch_atomicvalid, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_compare_atomicvalid, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_query_atomic, KOFI);
/* Tagged messages */
EXPORT_SYMBOL_NS_GPL(fi_tsend, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_tsendv, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_tsendmsg, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_tinject, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_tsenddata, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_tinjectdata, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_trecv, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_trecvv, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_trecvmsg, KOFI);
/* Address vectors */
EXPORT_SYMBOL_NS_GPL(fi_av_open, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_av_insert, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_av_insertsvc, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_av_remove, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_av_lookup, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_av_straddr, KOFI);
/* RMA */
EXPORT_SYMBOL_NS_GPL(fi_read, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_readv, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_readmsg, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_write, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_writev, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_writemsg, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_inject_write, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_writedata, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_inject_writedata, KOFI);
/* Completion and event queues */
EXPORT_SYMBOL_NS_GPL(fi_cq_read, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cq_readerr, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cq_sread, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cq_signal, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cq_readfrom, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cq_sreadfrom, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cq_strerror, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_eq_read, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_eq_readerr, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_eq_write, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_eq_sread, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_eq_strerror, KOFI);
/* Counters */
EXPORT_SYMBOL_NS_GPL(fi_cntr_open, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cntr_read, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cntr_readerr, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cntr_add, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cntr_adderr, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cntr_set, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cntr_seterr, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_cntr_wait, KOFI);
/* Memory registration */
EXPORT_SYMBOL_NS_GPL(fi_mr_reg, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_mr_regv, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_mr_regbv, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_mr_regattr, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_mr_desc, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_mr_key, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_mr_bind, KOFI);
EXPORT_SYMBOL_NS_GPL(fi_mr_enable, KOFI);
/* The provider interface */
EXPORT_SYMBOL_NS_GPL(kofi_provider_register, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_provider_deregister, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_ep_complete, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_ep_complete_tagged, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_ep_complete_error, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_ep_progress_request, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_ep_event, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_ep_event_error, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_connreq_alloc, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_pep_connreq, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_pep_event_error, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_mr_get, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_mr_iter, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_mr_put, KOFI);

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

EXPORT_SYMBOL_NS_GPL(kofi_sockaddr_parse, KOFI);
EXPORT_SYMBOL_NS_GPL(kofi_sockaddr_len, KOFI);
