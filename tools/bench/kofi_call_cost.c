// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_call_cost: the cost of one fi_* call through the core, in ns:
 * fi_cq_read on an empty CQ (argument and class checks, the queue's lock),
 * and fi_getname through the core to the test provider's op (dispatch).
 * Each beside its baseline in the same run, the least a kernel engineer
 * would write for the same work: an indirect call that takes a BH spinlock
 * and finds a ring empty; an indirect call that copies a 16-byte address
 * after checking the room for it. What the core adds is the difference.
 * Needs kofi_test_provider. Prints
 *   kofi_call_cost: fi_cq_read <ns> ns, fi_getname <ns> ns
 *   kofi_call_cost: baseline empty_read <ns> ns, getname <ns> ns
 */
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <kofi/fabric.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_eq.h>

#define CALLS 1000000

/* The baseline's queue: a ring under a BH spinlock, as a CQ is. */
struct bare_queue {
	spinlock_t lock;
	unsigned int head, tail;
};

static noinline int bare_read(struct bare_queue *q, void *buf, size_t count)
{
	int ret = -EAGAIN;

	if (!buf || !count)
		return -EINVAL;
	spin_lock_bh(&q->lock);
	if (q->head != q->tail)
		ret = 1;
	spin_unlock_bh(&q->lock);
	return ret;
}

static const u8 bare_addr[16] = { 2, 0, 0x1d, 0x4c, 127, 0, 0, 1 };

static noinline int bare_getname(struct bare_queue *q, void *addr, size_t *len)
{
	size_t have = *len;

	*len = sizeof(bare_addr);
	if (have < sizeof(bare_addr))
		return -ETOOSMALL;
	memcpy(addr, bare_addr, sizeof(bare_addr));
	return 0;
}

/* Called through pointers the compiler cannot see through, as kofi's ops are. */
static int (*volatile bare_read_op)(struct bare_queue *, void *, size_t) = bare_read;
static int (*volatile bare_getname_op)(struct bare_queue *, void *, size_t *) = bare_getname;

static void baseline(s64 *read_ns, s64 *name_ns)
{
	struct bare_queue q = {};
	struct fi_cq_entry e;
	char name[32];
	size_t len;
	ktime_t t0;
	int i;

	spin_lock_init(&q.lock);
	t0 = ktime_get();
	for (i = 0; i < CALLS; i++)
		bare_read_op(&q, &e, 1);
	*read_ns = ktime_to_ns(ktime_sub(ktime_get(), t0)) / CALLS;
	t0 = ktime_get();
	for (i = 0; i < CALLS; i++) {
		len = sizeof(name);
		bare_getname_op(&q, name, &len);
	}
	*name_ns = ktime_to_ns(ktime_sub(ktime_get(), t0)) / CALLS;
}

static int __init kofi_call_cost_init(void)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fid_cq *cq = NULL;
	struct fid_ep *ep = NULL;
	struct fi_cq_attr attr = {};
	struct fi_cq_entry e;
	char name[32];
	size_t len;
	ktime_t t0;
	s64 cq_ns = 0, name_ns = 0, bare_read_ns = 0, bare_name_ns = 0;
	int i, pass, ret;

	if (!hints)
		return -ENOMEM;
	hints->ep_attr->type = FI_EP_MSG;
	hints->fabric_attr->prov_name = kstrdup("test", GFP_KERNEL);
	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints, &info);
	fi_freeinfo(hints);
	if (!ret)
		ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (!ret)
		ret = fi_domain(fabric, info, &domain, NULL);
	if (!ret)
		ret = fi_cq_open(domain, &attr, &cq, NULL);
	if (!ret)
		ret = fi_endpoint(domain, info, &ep, NULL);
	/* The first pass warms caches (and TCG's translations) and is not kept. */
	for (pass = 0; !ret && pass < 2; pass++) {
		t0 = ktime_get();
		for (i = 0; i < CALLS; i++)
			fi_cq_read(cq, &e, 1);
		cq_ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
		t0 = ktime_get();
		for (i = 0; i < CALLS; i++) {
			len = sizeof(name);
			fi_getname(&ep->fid, name, &len);
		}
		name_ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
		baseline(&bare_read_ns, &bare_name_ns);
	}
	if (!ret) {
		pr_info("kofi_call_cost: fi_cq_read %lld ns, fi_getname %lld ns\n",
			cq_ns / CALLS, name_ns / CALLS);
		pr_info("kofi_call_cost: baseline empty_read %lld ns, getname %lld ns\n",
			bare_read_ns, bare_name_ns);
	}
	if (ep)
		fi_close(&ep->fid);
	if (cq)
		fi_close(&cq->fid);
	if (domain)
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
	fi_freeinfo(info);
	return ret;
}

static void __exit kofi_call_cost_exit(void)
{
}

module_init(kofi_call_cost_init);
module_exit(kofi_call_cost_exit);
MODULE_IMPORT_NS(KOFI_NS);
MODULE_DESCRIPTION("kofi benchmark: the cost of one call through the core");
MODULE_LICENSE("GPL");
