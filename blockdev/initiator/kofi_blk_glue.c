// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_blk's C side: what Rust cannot say in 6.12 (a request's page
 * iteration, a static block_device_operations owned by THIS_MODULE), the
 * control files under /sys/kernel/kofi_blk/ calling into Rust, and the
 * module's workqueue.
 */
#include <linux/blk-mq.h>
#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>
#include <kofi/compat.h>
#include "kofi_blk_glue.h"

int kofi_blk_rq_pages(struct request *rq, struct bio_vec *out, int max)
{
	struct req_iterator iter;
	struct bio_vec bv;
	int n = 0;

	rq_for_each_segment(bv, rq, iter) {
		if (n == max)
			return -E2BIG;
		out[n++] = bv;
	}
	return n;
}

/* Copies @len bytes of @src into the request's data: how many (all, or what fit). */
size_t kofi_blk_rq_fill(struct request *rq, const void *src, size_t len)
{
	struct req_iterator iter;
	struct bio_vec bv;
	size_t done = 0;

	rq_for_each_segment(bv, rq, iter) {
		if (bv.bv_len > len - done)
			break;
		memcpy_to_bvec(&bv, src + done);
		done += bv.bv_len;
	}
	return done;
}

struct gendisk *kofi_blk_alloc_disk(struct blk_mq_tag_set *set, struct queue_limits *lim)
{
	return blk_mq_alloc_disk(set, lim, NULL);
}

const struct block_device_operations kofi_blk_fops = {
	.owner = THIS_MODULE,
};

/* Constants bindgen cannot evaluate (their __force casts). */
const blk_status_t kofi_blk_sts_resource = BLK_STS_RESOURCE;
const blk_features_t kofi_blk_features = BLK_FEAT_WRITE_CACHE | BLK_FEAT_FUA;

static struct kobject *kofi_blk_kobj;
static struct workqueue_struct *kofi_blk_wq;

static ssize_t add_device_store(struct kobject *kobj, struct kobj_attribute *attr,
				const char *buf, size_t count)
{
	int ret = kofi_blk_control_add(buf, count);

	return ret ?: count;
}

static ssize_t remove_device_store(struct kobject *kobj, struct kobj_attribute *attr,
				   const char *buf, size_t count)
{
	int ret = kofi_blk_control_remove(buf, count);

	return ret ?: count;
}

static ssize_t devices_show(struct kobject *kobj, struct kobj_attribute *attr, char *buf)
{
	return kofi_blk_control_show(buf, PAGE_SIZE);
}

static struct kobj_attribute add_device_attr = __ATTR_WO(add_device);
static struct kobj_attribute remove_device_attr = __ATTR_WO(remove_device);
static struct kobj_attribute devices_attr = __ATTR_RO(devices);

static struct attribute *kofi_blk_attrs[] = {
	&add_device_attr.attr,
	&remove_device_attr.attr,
	&devices_attr.attr,
	NULL,
};

static const struct attribute_group kofi_blk_group = { .attrs = kofi_blk_attrs };

struct workqueue_struct *kofi_blk_glue_init(void)
{
	kofi_blk_wq = alloc_workqueue("kofi_blk", WQ_MEM_RECLAIM | KOFI_WQ_PERCPU, 0);
	return kofi_blk_wq;
}

int kofi_blk_glue_add_files(void)
{
	int ret;

	kofi_blk_kobj = kobject_create_and_add("kofi_blk", kernel_kobj);
	if (!kofi_blk_kobj)
		return -ENOMEM;
	ret = sysfs_create_group(kofi_blk_kobj, &kofi_blk_group);
	if (ret)
		kobject_put(kofi_blk_kobj);
	return ret;
}

void kofi_blk_glue_remove_files(void)
{
	kobject_put(kofi_blk_kobj);
}

void kofi_blk_glue_exit(void)
{
	destroy_workqueue(kofi_blk_wq);
}
