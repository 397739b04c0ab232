/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to kofi.ko: C helpers for kernel APIs that are static inline or
 * macros, which the Rust core cannot call directly.
 */
#ifndef _KOFI_GLUE_H
#define _KOFI_GLUE_H

#include <linux/spinlock.h>
#include <linux/module.h>
#include <linux/uio.h>

void *kofi_zalloc(size_t size, bool atomic);
void *kofi_memdup(const void *src, size_t len, bool atomic);
char *kofi_strdup(const char *s);
void kofi_free(const void *p);

int kofi_request_provider(const char *name);
bool kofi_module_get(struct module *module);
void kofi_module_put(struct module *module);

void kofi_bh_lock_init(spinlock_t *lock, const char *name, struct lock_class_key *key);
void kofi_bh_lock(spinlock_t *lock);
void kofi_bh_unlock(spinlock_t *lock);

u64 kofi_random_u64(void);
void kofi_iov_iter_window(struct iov_iter *iter, unsigned int direction, bool bvec,
			  const void *iov, unsigned long nr, size_t total, size_t start,
			  size_t len);
bool kofi_in_task(void);
struct workqueue_struct;
struct workqueue_struct *kofi_wq_alloc(void);
void kofi_wq_destroy(struct workqueue_struct *wq);
struct page *kofi_virt_to_page(const void *addr);
size_t kofi_copy_to_iter(const void *from, size_t len, struct iov_iter *iter);
size_t kofi_copy_from_iter(void *to, size_t len, struct iov_iter *iter);
struct sockaddr_storage;
int kofi_sockaddr_str(const struct sockaddr_storage *addr, char *buf, size_t len);
int kofi_sockaddr_node(const struct sockaddr_storage *addr, char *node, size_t len,
		       char *service, size_t service_len);
int kofi_module_refcount(struct module *module);

struct seq_file;
int kofi_debugfs_init(void);
void kofi_debugfs_exit(void);
void kofi_seq_write(struct seq_file *m, const char *buf, size_t len);
/* Implemented in Rust (registry.rs): the contents of debugfs kofi/providers. */
void kofi_debugfs_show_providers(struct seq_file *m);

#endif /* _KOFI_GLUE_H */
