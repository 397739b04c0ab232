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
bool kofi_bh_trylock(spinlock_t *lock);
void kofi_bh_assert_held(spinlock_t *lock);

u64 kofi_random_u64(void);
void kofi_iov_iter_window(struct iov_iter *iter, unsigned int direction, bool bvec,
			  const void *iov, unsigned long nr, size_t total, size_t start,
			  size_t len);
struct bio_vec;
u64 kofi_bvec_phys(const struct bio_vec *bv);
bool kofi_in_task(void);
struct page *kofi_virt_to_page(const void *addr);
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

/* kofi_netlink.c: the generic netlink family and its message helpers. */
struct sk_buff;
int kofi_nl_register(void);
void kofi_nl_unregister(void);
void *kofi_nl_msg_begin(struct sk_buff *skb, u32 portid, u32 seq, u8 cmd);
void kofi_nl_msg_end(struct sk_buff *skb, void *hdr);
void kofi_nl_msg_cancel(struct sk_buff *skb, void *hdr);
int kofi_nl_put(struct sk_buff *skb, int type, const void *data, int len);
int kofi_nl_put_u64(struct sk_buff *skb, int type, u64 value);
void *kofi_nl_nest_start(struct sk_buff *skb, int type);
void kofi_nl_nest_end(struct sk_buff *skb, void *nest);
int kofi_nl_len(const struct sk_buff *skb);

/* The hints of a KOFI_CMD_GET_INFO request; strings NULL when not given. */
struct kofi_nl_hints {
	const char *prov_name;
	const char *node;
	const char *service;
	bool has_ep_type;
	bool has_caps;
	u32 ep_type;
	u64 caps;
};

/* Implemented in Rust (netlink.rs): what the dumps answer. */
int kofi_nl_fill_providers(struct sk_buff *skb, u32 portid, u32 seq, long *cursor);
void *kofi_nl_collect_infos(const struct kofi_nl_hints *hints, int *err);
int kofi_nl_fill_infos(struct sk_buff *skb, u32 portid, u32 seq, void *infos);
void kofi_nl_release_infos(void *infos);

#endif /* _KOFI_GLUE_H */
