/* SPDX-License-Identifier: GPL-2.0 */
/* kofi_blk's C glue (kofi_blk_glue.c) and the Rust entry points it calls. */
#ifndef _KOFI_BLK_GLUE_H
#define _KOFI_BLK_GLUE_H

#include <linux/types.h>

struct workqueue_struct;

/* The module's workqueue, or NULL. */
struct workqueue_struct *kofi_blk_glue_init(void);
/* The control files under /sys/kernel/kofi_blk/: 0 or -errno. */
int kofi_blk_glue_add_files(void);
/* Removes the control files (waiting for writers in progress). */
void kofi_blk_glue_remove_files(void);
/* Drains and frees the workqueue. */
void kofi_blk_glue_exit(void);

struct bio_vec;
struct block_device_operations;
struct request;

/* A request's data pages into @out, one per page piece: how many, or -E2BIG. */
int kofi_blk_rq_pages(struct request *rq, struct bio_vec *out, int max);
/* Copies @src into a request's data bytes (@len of them): how many (all, or what fit). */
size_t kofi_blk_rq_fill(struct request *rq, const void *src, size_t len);
extern const struct block_device_operations kofi_blk_fops;
struct blk_mq_tag_set;
struct queue_limits;
struct gendisk;
/* blk_mq_alloc_disk (a macro: its lock class key is a static of the caller). */
struct gendisk *kofi_blk_alloc_disk(struct blk_mq_tag_set *set, struct queue_limits *lim);

/* In Rust (kofi_blk_main.rs): 0 or -errno; the show, bytes written. */
int kofi_blk_control_add(const char *buf, size_t len);
int kofi_blk_control_remove(const char *buf, size_t len);
ssize_t kofi_blk_control_show(char *buf, size_t size);

#endif /* _KOFI_BLK_GLUE_H */
