// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_call_cost: the cost of one fi_* call through the core, in ns:
 * fi_cq_read on an empty CQ (argument and class checks, the queue's lock),
 * and fi_getname through the core to the test provider's op (dispatch).
 * Needs kofi_test_provider. Prints
 *   kofi_call_cost: fi_cq_read <ns> ns, fi_getname <ns> ns
 */
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <kofi/fabric.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_eq.h>

#define CALLS 1000000

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
	s64 cq_ns = 0, name_ns = 0;
	int i, ret;

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
	if (!ret) {
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
		pr_info("kofi_call_cost: fi_cq_read %lld ns, fi_getname %lld ns\n",
			cq_ns / CALLS, name_ns / CALLS);
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
MODULE_IMPORT_NS(KOFI);
MODULE_DESCRIPTION("kofi benchmark: the cost of one call through the core");
MODULE_LICENSE("GPL");
