// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suites for the kofi core, calling its exported ABI as a C consumer
 * does, against the test provider (kofi_test_provider.ko), and calling the
 * provider-side calls (kofi_ep_complete, ...) as a provider does.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/in.h>
#include <linux/sched.h>
#include <linux/vmalloc.h>
#include <kofi/fi_domain.h>
#include <kofi/kofi_provider.h>
#include "kofi_test_provider.h"
#include "kofi_fault.h"

#define V FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

/* ---- fixtures ---- */

/* The provider fixture the suites run against: "test" (C) or "rtest" (Rust). */
static const char *fixture_prov = "test";

static struct fi_info *test_hints(enum fi_ep_type type)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->ep_attr->type = type;
	hints->fabric_attr->prov_name = kstrdup(fixture_prov, GFP_KERNEL);
	return hints;
}

/* The fixture provider's FI_EP_MSG info. */
static struct fi_info *msg_info(struct kunit *test)
{
	struct fi_info *hints = test_hints(FI_EP_MSG), *info = NULL;

	KUNIT_ASSERT_NOT_NULL(test, hints);
	KUNIT_ASSERT_EQ(test, fi_getinfo(V, NULL, NULL, 0, hints, &info), 0);
	fi_freeinfo(hints);
	KUNIT_ASSERT_NOT_NULL(test, info);
	return info;
}

struct fx {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *txcq, *rxcq;
	struct fid_ep *ep;
};

static void fx_open_queues(struct kunit *test, struct fx *f, size_t cq_size,
			   enum fi_cq_format format, u64 tx_bind)
{
	struct fi_cq_attr cq_attr = { .size = cq_size, .format = format };
	struct fi_eq_attr eq_attr = { .size = 16 };

	f->info = msg_info(test);
	KUNIT_ASSERT_EQ(test, fi_fabric(f->info->fabric_attr, &f->fabric, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_domain(f->fabric, f->info, &f->domain, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_eq_open(f->fabric, &eq_attr, &f->eq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_open(f->domain, &cq_attr, &f->txcq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_open(f->domain, &cq_attr, &f->rxcq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_endpoint(f->domain, f->info, &f->ep, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(f->ep, &f->eq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(f->ep, &f->txcq->fid, FI_SEND | tx_bind), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(f->ep, &f->rxcq->fid, FI_RECV), 0);
	KUNIT_ASSERT_EQ(test, fi_enable(f->ep), 0);
}

static void fx_open(struct kunit *test, struct fx *f)
{
	fx_open_queues(test, f, 64, FI_CQ_FORMAT_DATA, 0);
}

static void fx_close(struct kunit *test, struct fx *f)
{
	if (f->ep)
		KUNIT_EXPECT_EQ(test, fi_close(&f->ep->fid), 0);
	if (f->txcq)
		KUNIT_EXPECT_EQ(test, fi_close(&f->txcq->fid), 0);
	if (f->rxcq)
		KUNIT_EXPECT_EQ(test, fi_close(&f->rxcq->fid), 0);
	if (f->eq)
		KUNIT_EXPECT_EQ(test, fi_close(&f->eq->fid), 0);
	if (f->domain)
		KUNIT_EXPECT_EQ(test, fi_close(&f->domain->fid), 0);
	if (f->fabric)
		KUNIT_EXPECT_EQ(test, fi_close(&f->fabric->fid), 0);
	fi_freeinfo(f->info);
}

/* ---- registry ---- */

static int tmp_getinfo(u32 version, const char *node, const char *service, u64 flags,
		       const struct fi_info *hints, struct fi_info **info)
{
	*info = fi_allocinfo();
	if (!*info)
		return -ENOMEM;
	(*info)->caps = FI_MSG;
	(*info)->ep_attr->type = FI_EP_MSG;
	return 0;
}

static int tmp_fabric(struct fi_fabric_attr *attr, struct fid_fabric *fabric, void *context)
{
	return 0;
}

static void tmp_fabric_close(struct fid_fabric *fabric)
{
}

static const struct kofi_domain_ops tmp_domain_ops;
static const struct kofi_ep_ops tmp_ep_ops;

#define TMP_PROVIDER(n) {					\
	.name = n, .version = FI_VERSION(1, 0), .owner = THIS_MODULE,	\
	.getinfo = tmp_getinfo, .fabric = tmp_fabric,		\
	.fabric_close = tmp_fabric_close,			\
	.domain_ops = &tmp_domain_ops, .ep_ops = &tmp_ep_ops,	\
}

static void registry_rejects_bad_registrations(struct kunit *test)
{
	struct kofi_provider dup = TMP_PROVIDER("test");
	struct kofi_provider nameless = TMP_PROVIDER(NULL);
	struct kofi_provider incomplete = TMP_PROVIDER("kunit_incomplete");
	struct kofi_provider newer = TMP_PROVIDER("kunit_newer");

	incomplete.getinfo = NULL;
	KUNIT_EXPECT_EQ(test, kofi_provider_register(KOFI_ABI_VERSION, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, kofi_provider_register(KOFI_ABI_VERSION, &dup), -EEXIST);
	KUNIT_EXPECT_EQ(test, kofi_provider_register(KOFI_ABI_VERSION, &nameless), -EINVAL);
	KUNIT_EXPECT_EQ(test, kofi_provider_register(KOFI_ABI_VERSION, &incomplete), -EINVAL);
	KUNIT_EXPECT_EQ(test, kofi_provider_register(FI_VERSION(2, 0), &newer), -FI_ENOSYS);
	KUNIT_EXPECT_EQ(test, kofi_provider_register(FI_VERSION(1, 99), &newer), -FI_ENOSYS);
	/* None of them may have stuck. */
	kofi_provider_deregister(&newer);
	kofi_provider_deregister(NULL);
}

static void registry_register_then_deregister(struct kunit *test)
{
	static struct kofi_provider tmp = TMP_PROVIDER("kunit_tmp");
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	KUNIT_ASSERT_NOT_NULL(test, hints);
	hints->fabric_attr->prov_name = kstrdup("kunit_tmp", GFP_KERNEL);
	KUNIT_ASSERT_EQ(test, fi_getinfo(V, NULL, NULL, 0, hints, &info), -FI_ENODATA);

	KUNIT_ASSERT_EQ(test, kofi_provider_register(KOFI_ABI_VERSION, &tmp), 0);
	KUNIT_EXPECT_EQ(test, kofi_provider_register(KOFI_ABI_VERSION, &tmp), -EEXIST);
	KUNIT_ASSERT_EQ(test, fi_getinfo(V, NULL, NULL, 0, hints, &info), 0);
	KUNIT_ASSERT_NOT_NULL(test, info);
	KUNIT_EXPECT_STREQ(test, info->fabric_attr->prov_name, "kunit_tmp");
	KUNIT_EXPECT_EQ(test, info->fabric_attr->prov_version, FI_VERSION(1, 0));
	/* Its one MSG offer, then the core's RDM endpoint over it. */
	KUNIT_ASSERT_NOT_NULL(test, info->next);
	KUNIT_EXPECT_EQ(test, info->next->ep_attr->type, FI_EP_RDM);
	KUNIT_EXPECT_EQ(test, info->next->ep_attr->protocol, FI_PROTO_KOFI_RDM);
	KUNIT_EXPECT_STREQ(test, info->next->fabric_attr->prov_name, "kunit_tmp");
	KUNIT_EXPECT_NULL(test, info->next->next);
	fi_freeinfo(info);

	kofi_provider_deregister(&tmp);
	info = NULL;
	KUNIT_EXPECT_EQ(test, fi_getinfo(V, NULL, NULL, 0, hints, &info), -FI_ENODATA);
	fi_freeinfo(hints);
}

static void registry_fabric_counts(struct kunit *test)
{
	struct fi_info *info = msg_info(test);
	struct fid_fabric *fabric;
	int before = kofi_test_open_fabrics();

	KUNIT_ASSERT_EQ(test, fi_fabric(info->fabric_attr, &fabric, NULL), 0);
	KUNIT_EXPECT_EQ(test, kofi_test_open_fabrics(), before + 1);
	KUNIT_EXPECT_EQ(test, fi_close(&fabric->fid), 0);
	KUNIT_EXPECT_EQ(test, kofi_test_open_fabrics(), before);
	fi_freeinfo(info);
}

static struct kunit_case registry_cases[] = {
	KUNIT_CASE(registry_rejects_bad_registrations),
	KUNIT_CASE(registry_register_then_deregister),
	KUNIT_CASE(registry_fabric_counts),
	{}
};

/* ---- getinfo ---- */

static int count_infos(struct fi_info *info, const char *prov)
{
	int n = 0;

	for (; info; info = info->next)
		if (!prov || !strcmp(info->fabric_attr->prov_name, prov))
			n++;
	return n;
}

static void getinfo_without_hints(struct kunit *test)
{
	struct fi_info *info = NULL, *i;

	KUNIT_ASSERT_EQ(test, fi_getinfo(V, NULL, NULL, 0, NULL, &info), 0);
	/* The test provider's MSG and RDM offers, and the core's RDM over MSG. */
	KUNIT_EXPECT_EQ(test, count_infos(info, "test"), 3);
	for (i = info; i; i = i->next) {
		KUNIT_EXPECT_NOT_NULL(test, i->fabric_attr->prov_name);
		KUNIT_EXPECT_EQ(test, i->fabric_attr->api_version, V);
	}
	fi_freeinfo(info);
}

static int getinfo_with(struct fi_info *hints, struct fi_info **info)
{
	*info = NULL;
	return fi_getinfo(V, NULL, NULL, 0, hints, info);
}

static void getinfo_caps_are_a_subset(struct kunit *test)
{
	struct fi_info *hints = test_hints(FI_EP_UNSPEC), *info;

	KUNIT_ASSERT_NOT_NULL(test, hints);
	hints->caps = FI_RMA | FI_REMOTE_WRITE;
	KUNIT_ASSERT_EQ(test, getinfo_with(hints, &info), 0);
	/* The MSG offer and the core's RDM twin: both have the caps. */
	KUNIT_EXPECT_EQ(test, count_infos(info, NULL), 2);
	KUNIT_EXPECT_EQ(test, info->ep_attr->type, FI_EP_MSG);
	KUNIT_EXPECT_TRUE(test, (info->caps & (FI_RMA | FI_REMOTE_WRITE)) == (FI_RMA | FI_REMOTE_WRITE));
	KUNIT_EXPECT_EQ(test, info->next->ep_attr->type, FI_EP_RDM);
	KUNIT_EXPECT_TRUE(test, (info->next->caps & (FI_RMA | FI_REMOTE_WRITE | FI_SOURCE)) ==
				(FI_RMA | FI_REMOTE_WRITE | FI_SOURCE));
	fi_freeinfo(info);

	/* Atomics are the core's RDM twins' alone (atomic.rst). */
	hints->caps = FI_ATOMIC;
	KUNIT_ASSERT_EQ(test, getinfo_with(hints, &info), 0);
	KUNIT_EXPECT_EQ(test, count_infos(info, NULL), 1);
	KUNIT_EXPECT_EQ(test, info->ep_attr->type, FI_EP_RDM);
	fi_freeinfo(info);
	hints->ep_attr->type = FI_EP_MSG;
	KUNIT_EXPECT_EQ(test, getinfo_with(hints, &info), -FI_ENODATA);
	KUNIT_EXPECT_NULL(test, info);
	hints->caps = 1ULL << 40;
	KUNIT_EXPECT_EQ(test, getinfo_with(hints, &info), -FI_EBADFLAGS);
	fi_freeinfo(hints);
}

static void getinfo_ep_type_and_mode(struct kunit *test)
{
	struct fi_info *hints = test_hints(FI_EP_RDM), *info;

	KUNIT_ASSERT_NOT_NULL(test, hints);
	/*
	 * The provider's own RDM offer needs FI_CONTEXT, which these hints do
	 * not support: only the core's RDM over its MSG offer answers.
	 */
	KUNIT_ASSERT_EQ(test, getinfo_with(hints, &info), 0);
	KUNIT_EXPECT_EQ(test, count_infos(info, NULL), 1);
	KUNIT_EXPECT_EQ(test, info->ep_attr->type, FI_EP_RDM);
	KUNIT_EXPECT_EQ(test, info->ep_attr->protocol, FI_PROTO_KOFI_RDM);
	KUNIT_EXPECT_EQ(test, info->mode & FI_CONTEXT, 0ULL);
	fi_freeinfo(info);
	hints->mode = FI_CONTEXT;
	KUNIT_ASSERT_EQ(test, getinfo_with(hints, &info), 0);
	KUNIT_EXPECT_EQ(test, count_infos(info, NULL), 2);
	KUNIT_EXPECT_EQ(test, info->ep_attr->type, FI_EP_RDM);
	KUNIT_EXPECT_EQ(test, info->next->ep_attr->type, FI_EP_RDM);
	KUNIT_EXPECT_NE(test, info->next->ep_attr->protocol, FI_PROTO_KOFI_RDM);
	fi_freeinfo(info);
	hints->ep_attr->type = 42;
	KUNIT_EXPECT_EQ(test, getinfo_with(hints, &info), -EINVAL);
	fi_freeinfo(hints);
}

static void getinfo_prov_name_and_format(struct kunit *test)
{
	struct fi_info *hints = test_hints(FI_EP_MSG), *info;

	KUNIT_ASSERT_NOT_NULL(test, hints);
	kfree(hints->fabric_attr->prov_name);
	hints->fabric_attr->prov_name = kstrdup("TEST", GFP_KERNEL);
	KUNIT_ASSERT_EQ(test, getinfo_with(hints, &info), 0);
	KUNIT_EXPECT_STREQ(test, info->fabric_attr->prov_name, "test");
	fi_freeinfo(info);

	hints->addr_format = FI_SOCKADDR_IN6;
	KUNIT_EXPECT_EQ(test, getinfo_with(hints, &info), -FI_ENODATA);
	hints->addr_format = FI_SOCKADDR_IN;
	KUNIT_ASSERT_EQ(test, getinfo_with(hints, &info), 0);
	fi_freeinfo(info);

	kfree(hints->fabric_attr->prov_name);
	hints->fabric_attr->prov_name = kstrdup("no_such_provider", GFP_KERNEL);
	KUNIT_EXPECT_EQ(test, getinfo_with(hints, &info), -FI_ENODATA);
	fi_freeinfo(hints);
}

static void getinfo_bad_arguments(struct kunit *test)
{
	struct fi_info *info = NULL;

	KUNIT_EXPECT_EQ(test, fi_getinfo(V, NULL, NULL, 0, NULL, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_getinfo(FI_VERSION(2, 0), NULL, NULL, 0, NULL, &info), -FI_ENOSYS);
	KUNIT_EXPECT_EQ(test, fi_getinfo(V, NULL, NULL, 1ULL << 3, NULL, &info), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_getinfo(V, "127.0.0.1", "7471", FI_SOURCE, NULL, &info), 0);
	fi_freeinfo(info);
}

static void getinfo_dup_and_alloc(struct kunit *test)
{
	struct fi_info *info = msg_info(test), *copy;

	copy = fi_dupinfo(info);
	KUNIT_ASSERT_NOT_NULL(test, copy);
	KUNIT_EXPECT_NULL(test, copy->next);
	KUNIT_EXPECT_PTR_NE(test, copy->fabric_attr, info->fabric_attr);
	KUNIT_EXPECT_PTR_NE(test, copy->fabric_attr->prov_name, info->fabric_attr->prov_name);
	KUNIT_EXPECT_STREQ(test, copy->fabric_attr->prov_name, "test");
	KUNIT_EXPECT_STREQ(test, copy->domain_attr->name, info->domain_attr->name);
	KUNIT_EXPECT_EQ(test, copy->caps, info->caps);
	KUNIT_EXPECT_EQ(test, copy->tx_attr->inject_size, (size_t)TEST_INJECT_SIZE);
	fi_freeinfo(copy);
	fi_freeinfo(info);

	info = fi_allocinfo();
	KUNIT_ASSERT_NOT_NULL(test, info);
	KUNIT_EXPECT_NOT_NULL(test, info->tx_attr);
	KUNIT_EXPECT_NOT_NULL(test, info->rx_attr);
	KUNIT_EXPECT_NOT_NULL(test, info->ep_attr);
	KUNIT_EXPECT_NOT_NULL(test, info->domain_attr);
	KUNIT_EXPECT_NOT_NULL(test, info->fabric_attr);
	fi_freeinfo(info);
	fi_freeinfo(NULL);
	KUNIT_EXPECT_NULL(test, fi_dupinfo(NULL));
}

static struct kunit_case getinfo_cases[] = {
	KUNIT_CASE(getinfo_without_hints),
	KUNIT_CASE(getinfo_caps_are_a_subset),
	KUNIT_CASE(getinfo_ep_type_and_mode),
	KUNIT_CASE(getinfo_prov_name_and_format),
	KUNIT_CASE(getinfo_bad_arguments),
	KUNIT_CASE(getinfo_dup_and_alloc),
	{}
};

/* ---- objects: open, bind, enable, close ---- */

static void objects_close_in_use_is_busy(struct kunit *test)
{
	struct fx f = {};

	fx_open(test, &f);
	KUNIT_EXPECT_EQ(test, fi_close(&f.domain->fid), -FI_EBUSY);
	KUNIT_EXPECT_EQ(test, fi_close(&f.fabric->fid), -FI_EBUSY);
	KUNIT_EXPECT_EQ(test, fi_close(&f.txcq->fid), -FI_EBUSY);
	KUNIT_EXPECT_EQ(test, fi_close(&f.eq->fid), -FI_EBUSY);
	/* Once the endpoint is gone, everything closes (fx_close checks). */
	fx_close(test, &f);
}

static void objects_bad_arguments(struct kunit *test)
{
	struct fi_info *info = msg_info(test);
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_eq *eq;
	struct fid_ep *ep;
	struct fi_fabric_attr no_prov = {};
	struct fi_cq_attr cq_attr = {};
	struct fi_eq_attr eq_attr = {};
	char *prov;

	KUNIT_EXPECT_EQ(test, fi_fabric(NULL, &fabric, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_fabric(&no_prov, &fabric, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_fabric(info->fabric_attr, NULL, NULL), -EINVAL);
	prov = info->fabric_attr->prov_name;
	info->fabric_attr->prov_name = "no_such_provider";
	KUNIT_EXPECT_EQ(test, fi_fabric(info->fabric_attr, &fabric, NULL), -ENODEV);
	info->fabric_attr->prov_name = prov;

	KUNIT_ASSERT_EQ(test, fi_fabric(info->fabric_attr, &fabric, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_domain(NULL, info, &domain, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_domain(fabric, NULL, &domain, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_domain(fabric, info, NULL, NULL), -EINVAL);
	info->fabric_attr->prov_name = "other";
	KUNIT_EXPECT_EQ(test, fi_domain(fabric, info, &domain, NULL), -EINVAL);
	info->fabric_attr->prov_name = prov;
	KUNIT_ASSERT_EQ(test, fi_domain(fabric, info, &domain, NULL), 0);
	/* A domain where a fabric belongs, and the reverse. */
	KUNIT_EXPECT_EQ(test, fi_domain((struct fid_fabric *)domain, info, &domain, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_endpoint((struct fid_domain *)fabric, info, &ep, NULL), -EINVAL);

	KUNIT_EXPECT_EQ(test, fi_cq_open(domain, NULL, &cq, NULL), -EINVAL);
	cq_attr.size = KOFI_CQ_SIZE_MAX + 1;
	KUNIT_EXPECT_EQ(test, fi_cq_open(domain, &cq_attr, &cq, NULL), -EINVAL);
	cq_attr.size = 0;
	/* Tagged entries (kofi_rdm_test reads them). */
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	KUNIT_ASSERT_EQ(test, fi_cq_open(domain, &cq_attr, &cq, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&cq->fid), 0);
	cq_attr.format = 77;
	KUNIT_EXPECT_EQ(test, fi_cq_open(domain, &cq_attr, &cq, NULL), -EINVAL);
	cq_attr.format = FI_CQ_FORMAT_CONTEXT;
	cq_attr.wait_obj = FI_WAIT_FD;
	KUNIT_EXPECT_EQ(test, fi_cq_open(domain, &cq_attr, &cq, NULL), -FI_ENOSYS);
	cq_attr.wait_obj = FI_WAIT_UNSPEC;
	cq_attr.flags = 1;
	KUNIT_EXPECT_EQ(test, fi_cq_open(domain, &cq_attr, &cq, NULL), -EINVAL);

	KUNIT_EXPECT_EQ(test, fi_eq_open(fabric, NULL, &eq, NULL), -EINVAL);
	eq_attr.size = KOFI_EQ_SIZE_MAX + 1;
	KUNIT_EXPECT_EQ(test, fi_eq_open(fabric, &eq_attr, &eq, NULL), -EINVAL);
	eq_attr.size = 0;
	KUNIT_EXPECT_EQ(test, fi_eq_open((struct fid_fabric *)domain, &eq_attr, &eq, NULL), -EINVAL);

	KUNIT_EXPECT_EQ(test, fi_close(NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_control(&domain->fid, FI_GETWAIT, NULL), -FI_ENOSYS);
	KUNIT_EXPECT_EQ(test, fi_close(&domain->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&fabric->fid), 0);
	fi_freeinfo(info);
}

static void objects_bind_and_enable_states(struct kunit *test)
{
	struct fx f = {};
	struct fid_ep *ep;
	struct fid_domain *other;
	struct fid_cq *other_cq;
	struct fi_cq_attr cq_attr = {};
	char buf[8];

	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_endpoint(f.domain, f.info, &ep, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_send(ep, buf, sizeof(buf), NULL, 0, NULL), -FI_EOPBADSTATE);
	KUNIT_EXPECT_EQ(test, fi_enable(ep), -FI_ENOEQ);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &f.eq->fid, 0), 0);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &f.eq->fid, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_enable(ep), -FI_ENOCQ);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &f.txcq->fid, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &f.txcq->fid, 1ULL << 40), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, NULL, FI_SEND), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &f.domain->fid, FI_SEND), -EINVAL);
	KUNIT_ASSERT_EQ(test, fi_domain(f.fabric, f.info, &other, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_open(other, &cq_attr, &other_cq, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &other_cq->fid, FI_SEND), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &f.txcq->fid, FI_SEND | FI_RECV), 0);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &f.rxcq->fid, FI_RECV), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_enable(ep), 0);
	KUNIT_EXPECT_EQ(test, fi_enable(ep), -FI_EOPBADSTATE);
	KUNIT_EXPECT_EQ(test, fi_control(&ep->fid, FI_ENABLE, NULL), -FI_EOPBADSTATE);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &f.rxcq->fid, FI_RECV), -FI_EOPBADSTATE);
	KUNIT_EXPECT_EQ(test, fi_close(&ep->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&other_cq->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&other->fid), 0);
	fx_close(test, &f);
}

static void objects_options(struct kunit *test)
{
	struct fx f = {};
	size_t val = 0, len = sizeof(val);
	char name[16];
	size_t namelen = 2;

	fx_open(test, &f);
	KUNIT_EXPECT_EQ(test, fi_getopt(&f.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &val, &len), 0);
	KUNIT_EXPECT_EQ(test, val, (size_t)KOFI_CM_DATA_MAX);
	KUNIT_EXPECT_EQ(test, fi_getopt(&f.ep->fid, 99, FI_OPT_CM_DATA_SIZE, &val, &len), -FI_ENOPROTOOPT);
	KUNIT_EXPECT_EQ(test, fi_getopt(&f.ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, NULL, &len), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_setopt(&f.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &val, len), -FI_ENOPROTOOPT);
	KUNIT_EXPECT_EQ(test, fi_getname(&f.ep->fid, name, &namelen), -FI_ETOOSMALL);
	KUNIT_EXPECT_EQ(test, namelen, sizeof("test-ep"));
	KUNIT_EXPECT_EQ(test, fi_getname(&f.ep->fid, name, &namelen), 0);
	KUNIT_EXPECT_STREQ(test, name, "test-ep");
	KUNIT_EXPECT_EQ(test, fi_getname(&f.ep->fid, name, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_getpeer(f.ep, name, &namelen), -FI_ENOSYS);
	fx_close(test, &f);
}


/* Every exported call refuses a NULL object and an object of the wrong class. */
static void objects_every_call_checks_its_object(struct kunit *test)
{
	struct fx f = {};
	struct fid_ep *ep_null = NULL, *ep_bad;
	struct fid_pep *pep_bad;
	struct fid_domain *dom_bad;
	struct fid_fabric *fab_bad;
	struct fid_cq *cq_bad;
	struct fid_eq *eq_bad;
	struct fi_cq_attr cq_attr = {};
	struct fi_eq_attr eq_attr = {};
	struct fi_cq_entry ce;
	struct fi_cq_err_entry cerr;
	struct fi_eq_err_entry eerr;
	struct fi_msg msg = {};
	struct fi_msg_rma rmsg = {};
	struct kvec iov = {};
	struct fid_mr *mr;
	struct fid_cq *cq;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_domain *domain;
	size_t len = 8, val;
	u32 event;
	char buf[8];
	int i;

	fx_open(test, &f);
	/* Objects of the wrong class for each parameter. */
	ep_bad = (struct fid_ep *)f.txcq;
	pep_bad = (struct fid_pep *)f.ep;
	dom_bad = (struct fid_domain *)f.eq;
	fab_bad = (struct fid_fabric *)f.domain;
	cq_bad = (struct fid_cq *)f.eq;
	eq_bad = (struct fid_eq *)f.txcq;

	for (i = 0; i < 2; i++) {
		struct fid_ep *e = i ? ep_bad : ep_null;
		struct fid_pep *p = i ? pep_bad : NULL;
		struct fid_domain *d = i ? dom_bad : NULL;
		struct fid_fabric *fb = i ? fab_bad : NULL;
		struct fid_cq *c = i ? cq_bad : NULL;
		struct fid_eq *q = i ? eq_bad : NULL;

		KUNIT_EXPECT_EQ(test, fi_domain(fb, f.info, &domain, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_passive_ep(fb, f.info, &pep, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_eq_open(fb, &eq_attr, &eq, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_endpoint(d, f.info, &ep, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_cq_open(d, &cq_attr, &cq, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_mr_reg(d, buf, 8, FI_REMOTE_READ, 0, 0, 0, &mr, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_mr_regv(d, &iov, 1, FI_REMOTE_READ, 0, 0, 0, &mr, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, kofi_mr_get(d, 1, 0, 1, FI_REMOTE_READ, &mr), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_ep_bind(e, &f.txcq->fid, FI_SEND), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_pep_bind(p, &f.eq->fid, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_enable(e), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_listen(p), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_connect(e, NULL, NULL, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_accept(e, NULL, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_reject(p, NULL, NULL, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_shutdown(e, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_getname(&e->fid, buf, &len), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_getpeer(e, buf, &len), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_getopt(&e->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &val, &len), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_setopt(&e->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &val, len), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_send(e, buf, 8, NULL, 0, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_sendv(e, &iov, NULL, 1, 0, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_sendmsg(e, &msg, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_inject(e, buf, 8, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_senddata(e, buf, 8, NULL, 1, 0, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_recv(e, buf, 8, NULL, 0, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_recvv(e, &iov, NULL, 1, 0, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_recvmsg(e, &msg, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_cancel(&e->fid, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_read(e, buf, 8, NULL, 0, 0, 1, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_readv(e, &iov, NULL, 1, 0, 0, 1, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_readmsg(e, &rmsg, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_write(e, buf, 8, NULL, 0, 0, 1, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_writev(e, &iov, NULL, 1, 0, 0, 1, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_writemsg(e, &rmsg, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_inject_write(e, buf, 8, 0, 0, 1), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_writedata(e, buf, 8, NULL, 1, 0, 0, 1, NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_cq_read(c, &ce, 1), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_cq_readerr(c, &cerr, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_cq_sread(c, &ce, 1, NULL, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_cq_signal(c), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_eq_read(q, &event, buf, 8, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_eq_readerr(q, &eerr, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_eq_sread(q, &event, buf, 8, 0, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_eq_write(q, FI_NOTIFY, buf, 8, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, kofi_ep_complete(e, FI_SEND | FI_COMPLETION, NULL, 0, NULL, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, kofi_ep_event(e, FI_CONNECTED, NULL, 0), -EINVAL);
		KUNIT_EXPECT_EQ(test, kofi_ep_event_error(e, FI_EIO, 0, NULL, 0), -EINVAL);
		KUNIT_EXPECT_NULL(test, kofi_connreq_alloc(p, NULL));
		KUNIT_EXPECT_EQ(test, fi_close(NULL), -EINVAL);
		KUNIT_EXPECT_EQ(test, fi_control(NULL, FI_ENABLE, NULL), -EINVAL);
	}
	/* The connection request call takes its info even when it fails. */
	KUNIT_EXPECT_EQ(test, kofi_pep_connreq(pep_bad, fi_allocinfo(), NULL, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_mr_key((struct fid_mr *)f.ep), ~0ULL);
	KUNIT_EXPECT_NULL(test, fi_mr_desc((struct fid_mr *)f.ep));
	fx_close(test, &f);
}

/* An AV holds the documented KOFI_AV_COUNT_MAX addresses, inserted in large
 * batches (it grew with atomic allocations and stopped at 65,536 before),
 * and refuses one more. */
static void objects_av_holds_its_documented_count(struct kunit *test)
{
	struct fx f = {};
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .count = KOFI_AV_COUNT_MAX };
	struct fid_av *av;
	const size_t batch = 1 << 14;
	struct sockaddr_in *sin = vmalloc(batch * sizeof(*sin));
	fi_addr_t *addr = vmalloc(batch * sizeof(*addr)), last;
	struct sockaddr_in back;
	size_t len = sizeof(back), done, i;

	KUNIT_ASSERT_TRUE(test, sin && addr);
	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_av_open(f.domain, &attr, &av, NULL), 0);
	for (done = 0; done < KOFI_AV_COUNT_MAX; done += batch) {
		for (i = 0; i < batch; i++) {
			u32 n = done + i;

			sin[i] = (struct sockaddr_in){
				.sin_family = AF_INET,
				.sin_port = htons(1000 + (n & 0x7fff)),
				.sin_addr.s_addr = htonl(0x0a000000 | (n >> 15)),
			};
		}
		if (fi_av_insert(av, sin, batch, addr, 0, NULL) != batch)
			break;
	}
	KUNIT_EXPECT_EQ(test, done, (size_t)KOFI_AV_COUNT_MAX);
	last = addr[batch - 1];
	KUNIT_EXPECT_EQ(test, fi_av_lookup(av, last, &back, &len), 0);
	KUNIT_EXPECT_EQ(test, back.sin_addr.s_addr, sin[batch - 1].sin_addr.s_addr);
	KUNIT_EXPECT_EQ(test, back.sin_port, sin[batch - 1].sin_port);
	KUNIT_EXPECT_EQ(test, fi_av_insert(av, sin, 1, addr, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, addr[0], FI_ADDR_NOTAVAIL);
	KUNIT_EXPECT_EQ(test, fi_close(&av->fid), 0);
	fx_close(test, &f);
	vfree(sin);
	vfree(addr);
}

static struct kunit_case objects_cases[] = {
	KUNIT_CASE(objects_close_in_use_is_busy),
	KUNIT_CASE(objects_bad_arguments),
	KUNIT_CASE(objects_bind_and_enable_states),
	KUNIT_CASE(objects_options),
	KUNIT_CASE(objects_every_call_checks_its_object),
	KUNIT_CASE_SLOW(objects_av_holds_its_documented_count),
	{}
};

/* ---- completion queues ---- */

#define CTX(i) ((void *)(unsigned long)(0x1000 + (i)))

static int complete_tx(struct fx *f, int i)
{
	return kofi_ep_complete(f->ep, FI_SEND | FI_MSG | FI_COMPLETION, CTX(i), i, NULL, 0);
}

static void cq_overrun_is_reported_in_order(struct kunit *test)
{
	struct fx f = {};
	struct fi_cq_data_entry e[8];
	struct fi_cq_err_entry err = {};
	int i;

	fx_open_queues(test, &f, 4, FI_CQ_FORMAT_DATA, 0);
	for (i = 0; i < 4; i++)
		KUNIT_EXPECT_EQ(test, complete_tx(&f, i), 0);
	KUNIT_EXPECT_EQ(test, complete_tx(&f, 4), -FI_EOVERRUN);
	KUNIT_EXPECT_EQ(test, complete_tx(&f, 5), -FI_EOVERRUN);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.txcq, e, 8), 4);
	for (i = 0; i < 4; i++) {
		KUNIT_EXPECT_PTR_EQ(test, e[i].op_context, CTX(i));
		KUNIT_EXPECT_EQ(test, e[i].len, (size_t)i);
		KUNIT_EXPECT_EQ(test, e[i].flags, FI_SEND | FI_MSG);
	}
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, e, 8), -FI_EAVAIL);
	KUNIT_EXPECT_EQ(test, fi_cq_readerr(f.txcq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, FI_EOVERRUN);
	KUNIT_EXPECT_EQ(test, err.data, 2ULL);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, e, 8), -FI_EAGAIN);
	KUNIT_EXPECT_EQ(test, complete_tx(&f, 6), 0);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, e, 8), 1);
	fx_close(test, &f);
}

static void cq_error_entries_keep_their_place(struct kunit *test)
{
	struct fx f = {};
	struct fi_cq_entry e[4];
	struct fi_cq_err_entry err = { .op_context = CTX(1), .flags = FI_SEND | FI_MSG,
				       .err = FI_EIO, .prov_errno = -5 };

	fx_open_queues(test, &f, 8, FI_CQ_FORMAT_CONTEXT, 0);
	KUNIT_EXPECT_EQ(test, complete_tx(&f, 0), 0);
	KUNIT_EXPECT_EQ(test, kofi_ep_complete_error(f.ep, &err), 0);
	KUNIT_EXPECT_EQ(test, complete_tx(&f, 2), 0);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, e, 4), 1);
	KUNIT_EXPECT_PTR_EQ(test, e[0].op_context, CTX(0));
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, e, 4), -FI_EAVAIL);
	memset(&err, 0, sizeof(err));
	KUNIT_EXPECT_EQ(test, fi_cq_readerr(f.txcq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, FI_EIO);
	KUNIT_EXPECT_EQ(test, err.prov_errno, -5);
	KUNIT_EXPECT_PTR_EQ(test, err.op_context, CTX(1));
	KUNIT_EXPECT_EQ(test, fi_cq_readerr(f.txcq, &err, 0), -FI_EAGAIN);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, e, 4), 1);
	KUNIT_EXPECT_PTR_EQ(test, e[0].op_context, CTX(2));
	KUNIT_EXPECT_EQ(test, kofi_ep_complete_error(f.ep, NULL), -EINVAL);
	fx_close(test, &f);
}

static void cq_msg_format(struct kunit *test)
{
	struct fx f = {};
	struct fi_cq_msg_entry e;

	fx_open_queues(test, &f, 8, FI_CQ_FORMAT_MSG, 0);
	KUNIT_EXPECT_EQ(test, kofi_ep_complete(f.ep, FI_RECV | FI_MSG | FI_COMPLETION | FI_INJECT,
					       CTX(7), 77, NULL, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.rxcq, &e, 1), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, CTX(7));
	KUNIT_EXPECT_EQ(test, e.len, (size_t)77);
	/* Only the flags that describe the completion reach the consumer. */
	KUNIT_EXPECT_EQ(test, e.flags, FI_RECV | FI_MSG);
	/* Without FI_COMPLETION the operation did not ask for one. */
	KUNIT_EXPECT_EQ(test, kofi_ep_complete(f.ep, FI_SEND | FI_MSG, CTX(8), 0, NULL, 0), 0);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, &e, 1), -FI_EAGAIN);
	fx_close(test, &f);
}

struct delayed_action {
	struct fx *f;
	int what;	/* 0: complete, 1: signal the CQ, 2: write the EQ */
	unsigned int delay_ms;
};

static int delayed_action_fn(void *arg)
{
	struct delayed_action *a = arg;
	struct fi_eq_entry entry = { .context = CTX(9), .data = 9 };

	msleep(a->delay_ms);
	if (a->what == 0)
		complete_tx(a->f, 3);
	else if (a->what == 1)
		fi_cq_signal(a->f->txcq);
	else
		fi_eq_write(a->f->eq, FI_NOTIFY, &entry, sizeof(entry), 0);
	return 0;
}

static struct task_struct *start_action(struct kunit *test, struct delayed_action *a)
{
	struct task_struct *t = kthread_run(delayed_action_fn, a, "kofi_kunit_action");

	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	get_task_struct(t);
	return t;
}

static void stop_action(struct task_struct *t)
{
	kthread_stop(t);
	put_task_struct(t);
}

static void cq_sread_times_out(struct kunit *test)
{
	struct fx f = {};
	struct fi_cq_entry e;
	unsigned long start;

	fx_open(test, &f);
	start = jiffies;
	KUNIT_EXPECT_EQ(test, fi_cq_sread(f.txcq, &e, 1, NULL, 200), -FI_EAGAIN);
	KUNIT_EXPECT_GE(test, jiffies_to_msecs(jiffies - start), 150U);
	KUNIT_EXPECT_EQ(test, fi_cq_sread(f.txcq, &e, 1, NULL, 0), -FI_EAGAIN);
	fx_close(test, &f);
}

static void cq_sread_woken_by_completion(struct kunit *test)
{
	struct fx f = {};
	struct fi_cq_data_entry e;
	struct delayed_action a = { .f = &f, .what = 0, .delay_ms = 100 };
	struct task_struct *t;
	unsigned long start;

	fx_open(test, &f);
	t = start_action(test, &a);
	start = jiffies;
	KUNIT_EXPECT_EQ(test, fi_cq_sread(f.txcq, &e, 1, NULL, 10000), 1);
	KUNIT_EXPECT_LT(test, jiffies_to_msecs(jiffies - start), 5000U);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, CTX(3));
	stop_action(t);
	fx_close(test, &f);
}

static void cq_signal_wakes_sread(struct kunit *test)
{
	struct fx f = {};
	struct fi_cq_entry e;
	struct delayed_action a = { .f = &f, .what = 1, .delay_ms = 100 };
	struct task_struct *t;
	unsigned long start;

	fx_open(test, &f);
	t = start_action(test, &a);
	start = jiffies;
	KUNIT_EXPECT_EQ(test, fi_cq_sread(f.txcq, &e, 1, NULL, -1), -FI_EAGAIN);
	KUNIT_EXPECT_LT(test, jiffies_to_msecs(jiffies - start), 5000U);
	stop_action(t);
	fx_close(test, &f);
}

/* Waits (up to 5 s) until @t sleeps interruptibly: in a kofi wait call. */
static void wait_until_sleeping(struct kunit *test, struct task_struct *t)
{
	int i;

	for (i = 0; i < 500 && !(READ_ONCE(t->__state) & TASK_INTERRUPTIBLE); i++)
		msleep(10);
	KUNIT_EXPECT_TRUE(test, READ_ONCE(t->__state) & TASK_INTERRUPTIBLE);
}

struct sleeper {
	struct fid_cq *cq;
	ssize_t ret;
};

static int sleeper_fn(void *arg)
{
	struct sleeper *s = arg;
	struct fi_cq_entry e;

	s->ret = fi_cq_sread(s->cq, &e, 1, NULL, -1);
	while (!kthread_should_stop())
		msleep(10);
	return 0;
}

/* fi_close refuses a CQ a thread sleeps on (it would free the queue under
 * the sleeper); once the sleeper is woken and gone, the close succeeds. */
static void cq_close_with_a_sleeper_is_busy(struct kunit *test)
{
	struct fx f = {};
	struct fid_cq *cq;
	struct fi_cq_attr attr = { .size = 8, .format = FI_CQ_FORMAT_CONTEXT };
	struct sleeper s = { .ret = 1 };
	struct task_struct *t;
	int i;

	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_cq_open(f.domain, &attr, &cq, NULL), 0);
	s.cq = cq;
	t = kthread_run(sleeper_fn, &s, "kofi_kunit_sleeper");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	get_task_struct(t);
	wait_until_sleeping(test, t);
	KUNIT_EXPECT_EQ(test, fi_close(&cq->fid), -EBUSY);
	KUNIT_EXPECT_EQ(test, fi_cq_signal(cq), 0);
	for (i = 0; i < 500 && READ_ONCE(s.ret) == 1; i++)
		msleep(10);
	KUNIT_EXPECT_EQ(test, READ_ONCE(s.ret), (ssize_t)-FI_EAGAIN);
	kthread_stop(t);
	put_task_struct(t);
	KUNIT_EXPECT_EQ(test, fi_close(&cq->fid), 0);
	fx_close(test, &f);
}

static atomic_t handler_calls = ATOMIC_INIT(0);

static void count_handler(struct fid_cq *cq)
{
	atomic_inc(&handler_calls);
}

static void cq_handler_and_wait_none(struct kunit *test)
{
	struct fx f = {};
	struct fid_cq *cq;
	struct fi_cq_attr attr = { .comp_handler = count_handler, .wait_obj = FI_WAIT_NONE };
	struct fi_cq_entry e;
	struct fid_ep *ep;

	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_cq_open(f.domain, &attr, &cq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_endpoint(f.domain, f.info, &ep, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(ep, &cq->fid, FI_SEND | FI_RECV), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(ep, &f.eq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_enable(ep), 0);
	atomic_set(&handler_calls, 0);
	KUNIT_EXPECT_EQ(test, kofi_ep_complete(ep, FI_SEND | FI_MSG | FI_COMPLETION, CTX(1), 0, NULL, 0), 0);
	KUNIT_EXPECT_EQ(test, atomic_read(&handler_calls), 1);
	KUNIT_EXPECT_EQ(test, fi_cq_sread(cq, &e, 1, NULL, 10), -FI_ENOSYS);
	KUNIT_EXPECT_EQ(test, fi_cq_read(cq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, fi_close(&ep->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&cq->fid), 0);
	fx_close(test, &f);
}

/* FI_CQ_COND_THRESHOLD: fi_cq_sread waits for @cond entries (a value, as
 * libfabric reads it), and at the timeout returns what there is. Without
 * the condition, cond is not looked at. */
static void cq_sread_threshold(struct kunit *test)
{
	struct fx f = {};
	struct fid_cq *cq;
	struct fi_cq_attr attr = { .size = 16, .format = FI_CQ_FORMAT_CONTEXT,
				   .wait_cond = FI_CQ_COND_THRESHOLD };
	struct fi_cq_entry e[8];
	struct fid_ep *ep;
	unsigned long start;
	int i;

	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_cq_open(f.domain, &attr, &cq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_endpoint(f.domain, f.info, &ep, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(ep, &cq->fid, FI_SEND | FI_RECV), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(ep, &f.eq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_enable(ep), 0);
	for (i = 0; i < 2; i++)
		KUNIT_ASSERT_EQ(test, kofi_ep_complete(ep, FI_SEND | FI_MSG | FI_COMPLETION, CTX(i),
						       0, NULL, 0), 0);
	/* Two of three: it waits the whole timeout, then takes the two. */
	start = jiffies;
	KUNIT_EXPECT_EQ(test, fi_cq_sread(cq, e, 8, (void *)3, 200), 2);
	KUNIT_EXPECT_GE(test, jiffies_to_msecs(jiffies - start), 150U);
	KUNIT_EXPECT_PTR_EQ(test, e[1].op_context, CTX(1));
	for (i = 0; i < 3; i++)
		KUNIT_ASSERT_EQ(test, kofi_ep_complete(ep, FI_SEND | FI_MSG | FI_COMPLETION, CTX(i),
						       0, NULL, 0), 0);
	/* Three of three: at once. A threshold above count is count. */
	start = jiffies;
	KUNIT_EXPECT_EQ(test, fi_cq_sread(cq, e, 2, (void *)5, 10000), 2);
	KUNIT_EXPECT_LT(test, jiffies_to_msecs(jiffies - start), 5000U);
	KUNIT_EXPECT_EQ(test, fi_cq_sread(cq, e, 8, NULL, 10000), 1);
	KUNIT_EXPECT_LT(test, jiffies_to_msecs(jiffies - start), 5000U);
	KUNIT_EXPECT_EQ(test, fi_close(&ep->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&cq->fid), 0);

	/* FI_CQ_COND_NONE: one entry is enough, whatever cond says. */
	KUNIT_ASSERT_EQ(test, kofi_ep_complete(f.ep, FI_SEND | FI_MSG | FI_COMPLETION, CTX(5), 0,
					       NULL, 0), 0);
	start = jiffies;
	KUNIT_EXPECT_EQ(test, fi_cq_sread(f.txcq, e, 8, (void *)3, 10000), 1);
	KUNIT_EXPECT_LT(test, jiffies_to_msecs(jiffies - start), 5000U);
	attr.wait_cond = FI_CQ_COND_THRESHOLD + 1;
	KUNIT_EXPECT_EQ(test, fi_cq_open(f.domain, &attr, &cq, NULL), -EINVAL);
	fx_close(test, &f);
}

static void cq_bad_arguments(struct kunit *test)
{
	struct fx f = {};
	struct fi_cq_entry e;
	struct fi_cq_err_entry err;

	fx_open(test, &f);
	KUNIT_EXPECT_EQ(test, fi_cq_read(NULL, &e, 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, NULL, 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, &e, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cq_read((struct fid_cq *)f.eq, &e, 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cq_readerr(f.txcq, &err, 1), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_cq_readerr(f.txcq, NULL, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cq_sread(NULL, &e, 1, NULL, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cq_signal(NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, kofi_ep_complete(NULL, FI_SEND | FI_COMPLETION, NULL, 0, NULL, 0), -EINVAL);
	fx_close(test, &f);
}

static struct kunit_case cq_cases[] = {
	KUNIT_CASE(cq_overrun_is_reported_in_order),
	KUNIT_CASE(cq_error_entries_keep_their_place),
	KUNIT_CASE(cq_msg_format),
	KUNIT_CASE(cq_sread_times_out),
	KUNIT_CASE(cq_sread_woken_by_completion),
	KUNIT_CASE(cq_signal_wakes_sread),
	KUNIT_CASE(cq_close_with_a_sleeper_is_busy),
	KUNIT_CASE(cq_handler_and_wait_none),
	KUNIT_CASE(cq_sread_threshold),
	KUNIT_CASE(cq_bad_arguments),
	{}
};

/* ---- counters ---- */

static void fill(u8 *buf, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (u8)(seed + i * 7);
}


struct cntr_fx {
	struct fx f;
	struct fid_cntr *tx, *rx, *rma;
};

/* The fixture with counters bound for sends, receives, and reads and
 * writes together; transmits complete selectively. */
static void cntr_fx_open(struct kunit *test, struct cntr_fx *c)
{
	struct fi_cq_attr cq_attr = { .size = 64, .format = FI_CQ_FORMAT_DATA };
	struct fi_eq_attr eq_attr = { .size = 16 };
	struct fi_cntr_attr attr = {};
	struct fx *f = &c->f;

	f->info = msg_info(test);
	KUNIT_ASSERT_EQ(test, fi_fabric(f->info->fabric_attr, &f->fabric, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_domain(f->fabric, f->info, &f->domain, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_eq_open(f->fabric, &eq_attr, &f->eq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_open(f->domain, &cq_attr, &f->txcq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_open(f->domain, &cq_attr, &f->rxcq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_cntr_open(f->domain, &attr, &c->tx, CTX(1)), 0);
	KUNIT_ASSERT_EQ(test, fi_cntr_open(f->domain, &attr, &c->rx, CTX(2)), 0);
	KUNIT_ASSERT_EQ(test, fi_cntr_open(f->domain, &attr, &c->rma, CTX(3)), 0);
	KUNIT_EXPECT_PTR_EQ(test, c->rma->fid.context, CTX(3));
	KUNIT_ASSERT_EQ(test, fi_endpoint(f->domain, f->info, &f->ep, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(f->ep, &f->eq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(f->ep, &f->txcq->fid, FI_SEND | FI_SELECTIVE_COMPLETION), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(f->ep, &f->rxcq->fid, FI_RECV), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(f->ep, &c->tx->fid, FI_SEND), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(f->ep, &c->rx->fid, FI_RECV), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(f->ep, &c->rma->fid, FI_READ | FI_WRITE), 0);
	KUNIT_ASSERT_EQ(test, fi_enable(f->ep), 0);
}

static void cntr_fx_close(struct kunit *test, struct cntr_fx *c)
{
	if (c->f.ep)
		KUNIT_EXPECT_EQ(test, fi_close(&c->f.ep->fid), 0);
	c->f.ep = NULL;
	KUNIT_EXPECT_EQ(test, fi_close(&c->tx->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&c->rx->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&c->rma->fid), 0);
	fx_close(test, &c->f);
}

/* Every operation counts on the counter of its kind, with or without a CQ
 * entry (selective completion, fi_inject); failures count as errors. */
static void cntr_counts_every_operation(struct kunit *test)
{
	struct cntr_fx c = {};
	struct fx *f = &c.f;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = {};
	struct fid_mr *mr;
	u8 *region = kunit_kzalloc(test, 4096, GFP_KERNEL);
	u8 src[100], dst[100];
	int i;

	KUNIT_ASSERT_NOT_NULL(test, region);
	fill(src, sizeof(src), 4);
	cntr_fx_open(test, &c);
	for (i = 0; i < 3; i++)
		KUNIT_ASSERT_EQ(test, fi_recv(f->ep, dst, sizeof(dst), NULL, 0, CTX(10 + i)), 0);
	KUNIT_ASSERT_EQ(test, fi_send(f->ep, src, 10, NULL, 0, CTX(20)), 0);
	KUNIT_ASSERT_EQ(test, fi_send(f->ep, src, 20, NULL, 0, CTX(21)), 0);
	KUNIT_ASSERT_EQ(test, fi_inject(f->ep, src, TEST_INJECT_SIZE, 0), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c.tx), 3ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c.rx), 3ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c.rma), 0ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_readerr(c.tx), 0ULL);
	/* Selective: the sends made no CQ entry; the receives did. */
	KUNIT_EXPECT_EQ(test, fi_cq_read(f->txcq, &e, 1), -FI_EAGAIN);
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, fi_cq_read(f->rxcq, &e, 1), 1);

	/* A truncated receive fails: an error on the receive counter only. */
	KUNIT_ASSERT_EQ(test, fi_recv(f->ep, dst, 10, NULL, 0, CTX(13)), 0);
	KUNIT_ASSERT_EQ(test, fi_send(f->ep, src, 100, NULL, 0, CTX(22)), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c.rx), 3ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_readerr(c.rx), 1ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c.tx), 4ULL);
	KUNIT_EXPECT_EQ(test, fi_cq_readerr(f->rxcq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, FI_ETRUNC);

	/* Reads and writes on the RMA counter; a refused one as an error. */
	KUNIT_ASSERT_EQ(test, fi_mr_reg(f->domain, region, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE,
					0, 0, 0, &mr, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_write(f->ep, src, 100, NULL, 0, 0, fi_mr_key(mr), CTX(30)), 0);
	KUNIT_ASSERT_EQ(test, fi_read(f->ep, dst, 100, NULL, 0, 0, fi_mr_key(mr), CTX(31)), 0);
	KUNIT_EXPECT_EQ(test, memcmp(dst, src, 100), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c.rma), 2ULL);
	KUNIT_ASSERT_EQ(test, fi_read(f->ep, dst, 100, NULL, 0, 4000, fi_mr_key(mr), CTX(32)), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c.rma), 2ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_readerr(c.rma), 1ULL);
	KUNIT_EXPECT_EQ(test, fi_cq_readerr(f->txcq, &err, 0), 1);
	KUNIT_EXPECT_PTR_EQ(test, err.op_context, CTX(32));
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c.tx), 4ULL);

	/* Reports from the provider directly: the kind picks the counter. */
	KUNIT_EXPECT_EQ(test, kofi_ep_complete(f->ep, FI_RECV | FI_MSG, NULL, 0, NULL, 0), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c.rx), 4ULL);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f->rxcq, &e, 1), -FI_EAGAIN);

	/* Counters bound to an endpoint are busy; the endpoint closes first. */
	KUNIT_EXPECT_EQ(test, fi_close(&c.rx->fid), -EBUSY);
	KUNIT_EXPECT_EQ(test, fi_close(&f->ep->fid), 0);
	f->ep = NULL;
	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	cntr_fx_close(test, &c);
}

static void cntr_set_add_and_errors(struct kunit *test)
{
	struct fx f = {};
	struct fi_cntr_attr attr = {};
	struct fid_cntr *c;

	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_cntr_open(f.domain, &attr, &c, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c), 0ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_add(c, 5), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_add(c, 7), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c), 12ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_set(c, 100), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c), 100ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_adderr(c, 2), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_readerr(c), 2ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_seterr(c, 0), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_readerr(c), 0ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c), 100ULL);
	/* Reached thresholds return at once, whatever the timeout. */
	KUNIT_EXPECT_EQ(test, fi_cntr_wait(c, 100, 0), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_wait(c, 0, -1), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_wait(c, 101, 0), -FI_ETIMEDOUT);
	KUNIT_EXPECT_EQ(test, fi_close(&c->fid), 0);
	fx_close(test, &f);
}

struct cntr_action {
	struct fid_cntr *cntr;
	bool error;
	unsigned int delay_ms;
};

static int cntr_action_fn(void *arg)
{
	struct cntr_action *a = arg;

	msleep(a->delay_ms);
	if (a->error)
		fi_cntr_adderr(a->cntr, 1);
	else
		fi_cntr_add(a->cntr, 2);
	while (!kthread_should_stop())
		msleep(10);
	return 0;
}

/* fi_cntr_wait sleeps until the threshold, an error, or the timeout. */
static void cntr_wait_wakes_and_times_out(struct kunit *test)
{
	struct fx f = {};
	struct fi_cntr_attr attr = { .wait_obj = FI_WAIT_QUEUE };
	struct cntr_action a = { .delay_ms = 100 };
	struct task_struct *t;
	struct fid_cntr *c;
	unsigned long start;

	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_cntr_open(f.domain, &attr, &c, NULL), 0);
	start = jiffies;
	KUNIT_EXPECT_EQ(test, fi_cntr_wait(c, 1, 200), -FI_ETIMEDOUT);
	KUNIT_EXPECT_GE(test, jiffies_to_msecs(jiffies - start), 150U);

	/* Woken by the count reaching the threshold (2 >= 2). */
	a.cntr = c;
	t = kthread_run(cntr_action_fn, &a, "kofi_kunit_cntr");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	start = jiffies;
	KUNIT_EXPECT_EQ(test, fi_cntr_wait(c, 2, 10000), 0);
	KUNIT_EXPECT_LT(test, jiffies_to_msecs(jiffies - start), 5000U);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(c), 2ULL);
	kthread_stop(t);

	/* Woken by an error before the threshold. */
	a.error = true;
	t = kthread_run(cntr_action_fn, &a, "kofi_kunit_cntr");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	start = jiffies;
	KUNIT_EXPECT_EQ(test, fi_cntr_wait(c, 50, -1), -FI_EAVAIL);
	KUNIT_EXPECT_LT(test, jiffies_to_msecs(jiffies - start), 5000U);
	KUNIT_EXPECT_EQ(test, fi_cntr_readerr(c), 1ULL);
	kthread_stop(t);
	KUNIT_EXPECT_EQ(test, fi_close(&c->fid), 0);
	fx_close(test, &f);
}

struct cntr_sleeper {
	struct fid_cntr *cntr;
	int ret;
};

static int cntr_sleeper_fn(void *arg)
{
	struct cntr_sleeper *s = arg;

	s->ret = fi_cntr_wait(s->cntr, 1, -1);
	while (!kthread_should_stop())
		msleep(10);
	return 0;
}

/* fi_close refuses a counter a thread waits on; the wait ends on its count. */
static void cntr_close_with_a_waiter_is_busy(struct kunit *test)
{
	struct fx f = {};
	struct fi_cntr_attr attr = {};
	struct cntr_sleeper s = { .ret = 1 };
	struct task_struct *t;
	struct fid_cntr *c;
	int i;

	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_cntr_open(f.domain, &attr, &c, NULL), 0);
	s.cntr = c;
	t = kthread_run(cntr_sleeper_fn, &s, "kofi_kunit_cntr_waiter");
	KUNIT_ASSERT_FALSE(test, IS_ERR(t));
	get_task_struct(t);
	wait_until_sleeping(test, t);
	KUNIT_EXPECT_EQ(test, fi_close(&c->fid), -EBUSY);
	KUNIT_EXPECT_EQ(test, fi_close(&f.domain->fid), -EBUSY);
	KUNIT_EXPECT_EQ(test, fi_cntr_add(c, 1), 0);
	for (i = 0; i < 500 && READ_ONCE(s.ret) == 1; i++)
		msleep(10);
	KUNIT_EXPECT_EQ(test, READ_ONCE(s.ret), 0);
	kthread_stop(t);
	put_task_struct(t);
	KUNIT_EXPECT_EQ(test, fi_close(&c->fid), 0);
	fx_close(test, &f);
}

static void cntr_bad_arguments(struct kunit *test)
{
	struct fx f = {}, g = {};
	struct fi_cntr_attr attr = {};
	struct fid_cntr *c, *none, *other;
	struct fid_ep *ep;

	fx_open(test, &f);
	KUNIT_EXPECT_EQ(test, fi_cntr_open(NULL, &attr, &c, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cntr_open(f.domain, NULL, &c, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cntr_open(f.domain, &attr, NULL, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cntr_open((struct fid_domain *)f.eq, &attr, &c, NULL), -EINVAL);
	attr.events = FI_CNTR_EVENTS_BYTES;
	KUNIT_EXPECT_EQ(test, fi_cntr_open(f.domain, &attr, &c, NULL), -FI_ENOSYS);
	attr.events = 7;
	KUNIT_EXPECT_EQ(test, fi_cntr_open(f.domain, &attr, &c, NULL), -EINVAL);
	attr = (struct fi_cntr_attr){ .flags = 1 };
	KUNIT_EXPECT_EQ(test, fi_cntr_open(f.domain, &attr, &c, NULL), -FI_EBADFLAGS);
	attr = (struct fi_cntr_attr){ .wait_obj = FI_WAIT_FD };
	KUNIT_EXPECT_EQ(test, fi_cntr_open(f.domain, &attr, &c, NULL), -FI_ENOSYS);
	attr = (struct fi_cntr_attr){ .wait_set = &attr };
	KUNIT_EXPECT_EQ(test, fi_cntr_open(f.domain, &attr, &c, NULL), -EINVAL);
	attr = (struct fi_cntr_attr){ .wait_obj = FI_WAIT_NONE };
	KUNIT_ASSERT_EQ(test, fi_cntr_open(f.domain, &attr, &none, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_wait(none, 1, 10), -FI_ENOSYS);
	attr = (struct fi_cntr_attr){};
	KUNIT_ASSERT_EQ(test, fi_cntr_open(f.domain, &attr, &c, NULL), 0);

	/* Calls on something that is not a counter. */
	KUNIT_EXPECT_EQ(test, fi_cntr_read(NULL), 0ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_readerr((struct fid_cntr *)f.txcq), 0ULL);
	KUNIT_EXPECT_EQ(test, fi_cntr_add(NULL, 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cntr_adderr((struct fid_cntr *)f.txcq, 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cntr_set((struct fid_cntr *)f.eq, 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cntr_seterr(NULL, 1), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cntr_wait(NULL, 1, 10), -EINVAL);

	/* Binding: kinds, not other flags; each kind once; the same domain;
	 * a peer's RMA only with FI_RMA_EVENT; before fi_enable. */
	KUNIT_ASSERT_EQ(test, fi_endpoint(f.domain, f.info, &ep, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &c->fid, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &c->fid, FI_SEND | FI_SELECTIVE_COMPLETION),
			-FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &c->fid, 1ULL << 40), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &c->fid, FI_REMOTE_WRITE), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &c->fid, FI_SEND | FI_WRITE), 0);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &none->fid, FI_WRITE | FI_RECV), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &none->fid, FI_RECV), 0);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &f.txcq->fid, FI_SEND | FI_WRITE), -FI_EBADFLAGS);
	fx_open(test, &g);
	KUNIT_ASSERT_EQ(test, fi_cntr_open(g.domain, &attr, &other, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &other->fid, FI_READ), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &f.eq->fid, 0), 0);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &f.txcq->fid, FI_SEND | FI_RECV), 0);
	KUNIT_EXPECT_EQ(test, fi_enable(ep), 0);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &c->fid, FI_READ), -FI_EOPBADSTATE);
	KUNIT_EXPECT_EQ(test, fi_close(&c->fid), -EBUSY);
	KUNIT_EXPECT_EQ(test, fi_close(&none->fid), -EBUSY);
	KUNIT_EXPECT_EQ(test, fi_close(&f.domain->fid), -EBUSY);
	KUNIT_EXPECT_EQ(test, fi_close(&ep->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&c->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&none->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&other->fid), 0);
	fx_close(test, &g);
	fx_close(test, &f);
}

static struct kunit_case cntr_cases[] = {
	KUNIT_CASE(cntr_counts_every_operation),
	KUNIT_CASE(cntr_set_add_and_errors),
	KUNIT_CASE(cntr_wait_wakes_and_times_out),
	KUNIT_CASE(cntr_close_with_a_waiter_is_busy),
	KUNIT_CASE(cntr_bad_arguments),
	{}
};

/* ---- event queues and connection management ---- */

struct cm_event {
	struct fi_eq_cm_entry entry;
	u8 data[KOFI_CM_DATA_MAX];
};

static void eq_write_read_peek(struct kunit *test)
{
	struct fx f = {};
	struct fi_eq_entry in = { .fid = NULL, .context = CTX(4), .data = 44 }, out;
	u32 event = 0;

	fx_open(test, &f);
	KUNIT_EXPECT_EQ(test, fi_eq_write(f.eq, FI_NOTIFY, &in, sizeof(in), 0), (ssize_t)sizeof(in));
	KUNIT_EXPECT_EQ(test, fi_eq_read(f.eq, &event, &out, 8, 0), -FI_ETOOSMALL);
	KUNIT_EXPECT_EQ(test, fi_eq_read(f.eq, &event, &out, sizeof(out), FI_PEEK), (ssize_t)sizeof(out));
	KUNIT_EXPECT_EQ(test, fi_eq_read(f.eq, &event, &out, sizeof(out), 0), (ssize_t)sizeof(out));
	KUNIT_EXPECT_EQ(test, event, (u32)FI_NOTIFY);
	KUNIT_EXPECT_PTR_EQ(test, out.context, CTX(4));
	KUNIT_EXPECT_EQ(test, out.data, 44ULL);
	KUNIT_EXPECT_EQ(test, fi_eq_read(f.eq, &event, &out, sizeof(out), 0), -FI_EAGAIN);

	KUNIT_EXPECT_EQ(test, fi_eq_write(f.eq, FI_NOTIFY, &in, sizeof(in), 1), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_eq_write(f.eq, 99, &in, sizeof(in), 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_eq_write(f.eq, FI_NOTIFY, NULL, sizeof(in), 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_eq_write(f.eq, FI_NOTIFY, &in, 4096, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_eq_read(f.eq, NULL, &out, sizeof(out), 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_eq_read(f.eq, &event, &out, sizeof(out), 4), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_eq_read((struct fid_eq *)f.txcq, &event, &out, sizeof(out), 0), -EINVAL);
	fx_close(test, &f);
}

static void eq_sread_timeout_and_wakeup(struct kunit *test)
{
	struct fx f = {};
	struct fi_eq_entry out;
	struct delayed_action a = { .f = &f, .what = 2, .delay_ms = 100 };
	struct task_struct *t;
	u32 event;
	unsigned long start;

	fx_open(test, &f);
	start = jiffies;
	KUNIT_EXPECT_EQ(test, fi_eq_sread(f.eq, &event, &out, sizeof(out), 150, 0), -FI_EAGAIN);
	KUNIT_EXPECT_GE(test, jiffies_to_msecs(jiffies - start), 100U);
	t = start_action(test, &a);
	KUNIT_EXPECT_EQ(test, fi_eq_sread(f.eq, &event, &out, sizeof(out), 10000, 0),
			(ssize_t)sizeof(out));
	KUNIT_EXPECT_EQ(test, out.data, 9ULL);
	stop_action(t);
	fx_close(test, &f);
}

static void eq_connect_and_shutdown_events(struct kunit *test)
{
	struct fx f = {};
	struct cm_event ev;
	struct fi_eq_err_entry err = {};
	u32 event = 0;
	u8 big[KOFI_CM_DATA_MAX + 1] = {};

	fx_open(test, &f);
	KUNIT_EXPECT_EQ(test, fi_connect(f.ep, NULL, big, sizeof(big)), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_connect(f.ep, NULL, NULL, 4), -EINVAL);
	KUNIT_ASSERT_EQ(test, fi_connect(f.ep, NULL, "hello", 6), 0);
	KUNIT_ASSERT_EQ(test, fi_eq_sread(f.eq, &event, &ev, sizeof(ev), 1000, 0),
			(ssize_t)(sizeof(ev.entry) + 6));
	KUNIT_EXPECT_EQ(test, event, (u32)FI_CONNECTED);
	KUNIT_EXPECT_PTR_EQ(test, ev.entry.fid, &f.ep->fid);
	KUNIT_EXPECT_STREQ(test, (char *)ev.entry.data, "hello");

	KUNIT_EXPECT_EQ(test, fi_shutdown(f.ep, 1), -FI_EBADFLAGS);
	KUNIT_ASSERT_EQ(test, fi_shutdown(f.ep, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev.entry));
	KUNIT_EXPECT_EQ(test, event, (u32)FI_SHUTDOWN);

	KUNIT_EXPECT_EQ(test, kofi_ep_event_error(f.ep, FI_ECONNREFUSED, -111, NULL, 0), 0);
	KUNIT_EXPECT_EQ(test, fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), -FI_EAVAIL);
	KUNIT_EXPECT_EQ(test, fi_eq_readerr(f.eq, &err, 0), (ssize_t)sizeof(err));
	KUNIT_EXPECT_EQ(test, err.err, FI_ECONNREFUSED);
	KUNIT_EXPECT_PTR_EQ(test, err.fid, &f.ep->fid);
	KUNIT_EXPECT_EQ(test, fi_eq_readerr(f.eq, &err, 0), -FI_EAGAIN);
	KUNIT_EXPECT_EQ(test, kofi_ep_event(f.ep, FI_NOTIFY, NULL, 0), -EINVAL);
	fx_close(test, &f);
}

/* Events of an endpoint nobody read go when it closes: an entry never names
 * a closed object (a consumer reading it would look into freed memory). */
static void eq_events_of_a_closed_endpoint_are_dropped(struct kunit *test)
{
	struct fx f = {};
	struct fid_ep *other;
	struct cm_event ev;
	struct fi_eq_entry mine = { .context = CTX(5), .data = 5 };
	u32 event = 0;

	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_endpoint(f.domain, f.info, &other, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(other, &f.eq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(other, &f.txcq->fid, FI_SEND), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(other, &f.rxcq->fid, FI_RECV), 0);
	KUNIT_ASSERT_EQ(test, fi_enable(other), 0);
	KUNIT_ASSERT_EQ(test, kofi_ep_event(other, FI_CONNECTED, NULL, 0), 0);
	KUNIT_ASSERT_EQ(test, kofi_ep_event(f.ep, FI_CONNECTED, NULL, 0), 0);
	KUNIT_ASSERT_EQ(test, kofi_ep_event_error(other, FI_ECONNRESET, 0, NULL, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_eq_write(f.eq, FI_NOTIFY, &mine, sizeof(mine), 0),
			(ssize_t)sizeof(mine));
	KUNIT_ASSERT_EQ(test, kofi_ep_event(other, FI_SHUTDOWN, NULL, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_close(&other->fid), 0);

	/* What is left: the live endpoint's event, then the consumer's own. */
	KUNIT_ASSERT_EQ(test, fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), (ssize_t)sizeof(ev.entry));
	KUNIT_EXPECT_EQ(test, event, (u32)FI_CONNECTED);
	KUNIT_EXPECT_PTR_EQ(test, ev.entry.fid, &f.ep->fid);
	KUNIT_ASSERT_EQ(test, fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), (ssize_t)sizeof(mine));
	KUNIT_EXPECT_EQ(test, event, (u32)FI_NOTIFY);
	KUNIT_EXPECT_EQ(test, fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), -FI_EAGAIN);
	fx_close(test, &f);
}

/* Gives up a connection request handle the way a consumer does: with the
 * info that names it. */
static void connreq_handle_free(struct kunit *test, struct fid *handle)
{
	struct fi_info *info = fi_allocinfo();

	KUNIT_ASSERT_NOT_NULL(test, info);
	info->handle = handle;
	fi_freeinfo(info);
}

/* kofi_connreq_alloc failing leaves the provider's request to the provider:
 * the core never releases what it did not take (a double free before). */
static void eq_connreq_alloc_failure_releases_nothing(struct kunit *test)
{
	struct fx f = {};
	struct fid_pep *pep;
	struct fid *handle;
	int released, n, failed = 0;
	bool done = false;

	KOFI_NEEDS_FAULT_INJECTION(test);
	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_passive_ep(f.fabric, f.info, &pep, NULL), 0);
	for (n = 1; n < 20 && !done; n++) {
		released = kofi_test_connreq_released();
		handle = with_nth_failing(n, &done, kofi_connreq_alloc(pep, NULL));
		if (!handle) {
			failed++;
			KUNIT_EXPECT_EQ(test, kofi_test_connreq_released(), released);
			continue;
		}
		/* One that worked (or survived a failure) is released once. */
		connreq_handle_free(test, handle);
		KUNIT_EXPECT_EQ(test, kofi_test_connreq_released(), released + 1);
	}
	KUNIT_EXPECT_TRUE(test, done);
	KUNIT_EXPECT_GT(test, failed, 0);
	KUNIT_EXPECT_EQ(test, fi_close(&pep->fid), 0);
	fx_close(test, &f);
}

static void eq_connreq_reject_and_release(struct kunit *test)
{
	struct fx f = {};
	struct fid_pep *pep;
	struct cm_event ev;
	u32 event = 0;
	int released;

	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_passive_ep(f.fabric, f.info, &pep, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_listen(pep), -FI_ENOEQ);
	KUNIT_ASSERT_EQ(test, fi_pep_bind(pep, &f.eq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_listen(pep), 0);
	KUNIT_EXPECT_EQ(test, fi_listen(pep), -FI_EOPBADSTATE);

	released = kofi_test_connreq_released();
	KUNIT_ASSERT_EQ(test, kofi_test_inject_connreq(pep, "req", 4), 0);
	KUNIT_ASSERT_EQ(test, fi_eq_read(f.eq, &event, &ev, sizeof(ev), 0), (ssize_t)(sizeof(ev.entry) + 4));
	KUNIT_EXPECT_EQ(test, event, (u32)FI_CONNREQ);
	KUNIT_EXPECT_PTR_EQ(test, ev.entry.fid, &pep->fid);
	KUNIT_ASSERT_NOT_NULL(test, ev.entry.info);
	KUNIT_ASSERT_NOT_NULL(test, ev.entry.info->handle);
	KUNIT_EXPECT_STREQ(test, (char *)ev.entry.data, "req");
	KUNIT_EXPECT_EQ(test, fi_reject(pep, NULL, NULL, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_reject(pep, &f.ep->fid, NULL, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_reject(pep, ev.entry.info->handle, "no", 3), 0);
	KUNIT_EXPECT_EQ(test, kofi_test_connreq_released(), released);
	fi_freeinfo(ev.entry.info);
	KUNIT_EXPECT_EQ(test, kofi_test_connreq_released(), released + 1);

	/* A request nobody read is released when its queue goes. */
	KUNIT_ASSERT_EQ(test, kofi_test_inject_connreq(pep, NULL, 0), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&pep->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&f.ep->fid), 0);
	f.ep = NULL;
	KUNIT_EXPECT_EQ(test, fi_close(&f.eq->fid), 0);
	f.eq = NULL;
	KUNIT_EXPECT_EQ(test, kofi_test_connreq_released(), released + 2);
	fx_close(test, &f);
}

static struct kunit_case eq_cases[] = {
	KUNIT_CASE(eq_write_read_peek),
	KUNIT_CASE(eq_sread_timeout_and_wakeup),
	KUNIT_CASE(eq_connect_and_shutdown_events),
	KUNIT_CASE(eq_connreq_reject_and_release),
	KUNIT_CASE(eq_events_of_a_closed_endpoint_are_dropped),
	KUNIT_CASE(eq_connreq_alloc_failure_releases_nothing),
	{}
};

/* ---- messages and RMA through the test provider ---- */

static void data_send_recv_bytes(struct kunit *test)
{
	struct fx f = {};
	struct fi_cq_data_entry e;
	u8 *src = kunit_kmalloc(test, 4096, GFP_KERNEL), *dst = kunit_kzalloc(test, 4096, GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, src);
	KUNIT_ASSERT_NOT_NULL(test, dst);
	fill(src, 4096, 3);
	fx_open(test, &f);
	/* Nothing posted: the test provider cannot take the message. */
	KUNIT_EXPECT_EQ(test, fi_send(f.ep, src, 4096, NULL, 0, CTX(1)), -FI_EAGAIN);
	KUNIT_ASSERT_EQ(test, fi_recv(f.ep, dst, 4096, NULL, FI_ADDR_UNSPEC, CTX(2)), 0);
	KUNIT_ASSERT_EQ(test, fi_send(f.ep, src, 4096, NULL, 0, CTX(1)), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.rxcq, &e, 1), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, CTX(2));
	KUNIT_EXPECT_EQ(test, e.len, (size_t)4096);
	KUNIT_EXPECT_EQ(test, e.flags, FI_RECV | FI_MSG);
	KUNIT_EXPECT_EQ(test, memcmp(src, dst, 4096), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.txcq, &e, 1), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, CTX(1));
	KUNIT_EXPECT_EQ(test, e.flags, FI_SEND | FI_MSG);
	/* An empty message. */
	KUNIT_ASSERT_EQ(test, fi_recv(f.ep, dst, 16, NULL, FI_ADDR_UNSPEC, CTX(3)), 0);
	KUNIT_ASSERT_EQ(test, fi_send(f.ep, NULL, 0, NULL, 0, CTX(4)), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.rxcq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)0);
	fx_close(test, &f);
}

static void data_vectors_truncation_data_inject(struct kunit *test)
{
	struct fx f = {};
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = {};
	u8 src[100], dst[100] = {};
	struct kvec siov[3] = { { src, 10 }, { src + 10, 40 }, { src + 50, 50 } };
	struct kvec riov[2] = { { dst, 60 }, { dst + 60, 40 } };
	struct kvec five[5] = { { src, 1 }, { src, 1 }, { src, 1 }, { src, 1 }, { src, 1 } };

	fill(src, sizeof(src), 9);
	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_recvv(f.ep, riov, NULL, 2, FI_ADDR_UNSPEC, CTX(1)), 0);
	KUNIT_ASSERT_EQ(test, fi_sendv(f.ep, siov, NULL, 3, 0, CTX(2)), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.rxcq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)100);
	KUNIT_EXPECT_EQ(test, memcmp(src, dst, 100), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.txcq, &e, 1), 1);

	/* Truncation: the receive sees an error with what did not fit. */
	KUNIT_ASSERT_EQ(test, fi_recv(f.ep, dst, 10, NULL, FI_ADDR_UNSPEC, CTX(3)), 0);
	KUNIT_ASSERT_EQ(test, fi_send(f.ep, src, 100, NULL, 0, CTX(4)), 0);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.rxcq, &e, 1), -FI_EAVAIL);
	KUNIT_ASSERT_EQ(test, fi_cq_readerr(f.rxcq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, FI_ETRUNC);
	KUNIT_EXPECT_EQ(test, err.olen, (size_t)90);
	KUNIT_EXPECT_PTR_EQ(test, err.op_context, CTX(3));
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.txcq, &e, 1), 1);

	/* Remote CQ data. */
	KUNIT_ASSERT_EQ(test, fi_recv(f.ep, dst, 100, NULL, FI_ADDR_UNSPEC, CTX(5)), 0);
	KUNIT_ASSERT_EQ(test, fi_senddata(f.ep, src, 8, NULL, 0xabcdef, 0, CTX(6)), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.rxcq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, e.flags, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA);
	KUNIT_EXPECT_EQ(test, e.data, 0xabcdefULL);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.txcq, &e, 1), 1);

	/* Inject: the data arrives, the sender sees no completion. */
	KUNIT_ASSERT_EQ(test, fi_recv(f.ep, dst, 100, NULL, FI_ADDR_UNSPEC, CTX(7)), 0);
	KUNIT_ASSERT_EQ(test, fi_inject(f.ep, src, TEST_INJECT_SIZE, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.rxcq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)TEST_INJECT_SIZE);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, &e, 1), -FI_EAGAIN);
	KUNIT_EXPECT_EQ(test, fi_inject(f.ep, src, TEST_INJECT_SIZE + 1, 0), -FI_EMSGSIZE);
	KUNIT_ASSERT_EQ(test, fi_recv(f.ep, dst, 100, NULL, FI_ADDR_UNSPEC, CTX(8)), 0);
	KUNIT_ASSERT_EQ(test, fi_injectdata(f.ep, src, 16, 0x77, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.rxcq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, e.flags, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA);
	KUNIT_EXPECT_EQ(test, e.data, 0x77ULL);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, &e, 1), -FI_EAGAIN);
	KUNIT_EXPECT_EQ(test, fi_injectdata(f.ep, src, TEST_INJECT_SIZE + 1, 1, 0), -FI_EMSGSIZE);
	KUNIT_EXPECT_EQ(test, fi_injectdata(NULL, src, 16, 1, 0), -EINVAL);

	/* Bad arguments. */
	KUNIT_EXPECT_EQ(test, fi_send(f.ep, NULL, 10, NULL, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_send(f.ep, src, TEST_MAX_MSG + 1, NULL, 0, NULL), -FI_EMSGSIZE);
	KUNIT_EXPECT_EQ(test, fi_sendv(f.ep, five, NULL, 5, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_sendv(f.ep, NULL, NULL, 2, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_recvv(f.ep, five, NULL, 5, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_sendmsg(f.ep, NULL, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_send((struct fid_ep *)f.txcq, src, 1, NULL, 0, NULL), -EINVAL);
	{
		struct bio_vec bv = {};
		struct fi_msg msg = { .msg_iov = siov, .msg_bvec = &bv, .iov_count = 1 };

		KUNIT_EXPECT_EQ(test, fi_sendmsg(f.ep, &msg, 0), -EINVAL);
		msg.msg_bvec = NULL;
		KUNIT_EXPECT_EQ(test, fi_sendmsg(f.ep, &msg, 1ULL << 40), -FI_EBADFLAGS);
		KUNIT_EXPECT_EQ(test, fi_recvmsg(f.ep, &msg, FI_INJECT), -FI_EBADFLAGS);
	}
	fx_close(test, &f);
}

static void data_selective_completion(struct kunit *test)
{
	struct fx f = {};
	struct fi_cq_entry e;
	struct kvec iov;
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .context = CTX(2) };
	u8 buf[8] = {};

	iov.iov_base = buf;
	iov.iov_len = sizeof(buf);
	fx_open_queues(test, &f, 16, FI_CQ_FORMAT_CONTEXT, FI_SELECTIVE_COMPLETION);
	KUNIT_ASSERT_EQ(test, fi_recv(f.ep, buf, sizeof(buf), NULL, 0, CTX(0)), 0);
	KUNIT_ASSERT_EQ(test, fi_send(f.ep, buf, sizeof(buf), NULL, 0, CTX(1)), 0);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, &e, 1), -FI_EAGAIN);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.rxcq, &e, 1), 1);
	KUNIT_ASSERT_EQ(test, fi_recv(f.ep, buf, sizeof(buf), NULL, 0, CTX(0)), 0);
	KUNIT_ASSERT_EQ(test, fi_sendmsg(f.ep, &msg, FI_COMPLETION), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.txcq, &e, 1), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, CTX(2));
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.rxcq, &e, 1), 1);
	fx_close(test, &f);
}

static void data_rma_write_and_read(struct kunit *test)
{
	struct fx f = {};
	struct fid_mr *mr;
	struct fi_cq_data_entry e;
	u8 *region = kunit_kzalloc(test, 4096, GFP_KERNEL);
	u8 *src = kunit_kmalloc(test, 1024, GFP_KERNEL), *back = kunit_kzalloc(test, 1024, GFP_KERNEL);
	const u64 base = 1ULL << 32;
	u64 key;

	KUNIT_ASSERT_TRUE(test, region && src && back);
	fill(src, 1024, 5);
	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_mr_reg(f.domain, region, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE,
					base, 0, 0, &mr, NULL), 0);
	key = fi_mr_key(mr);
	KUNIT_EXPECT_NE(test, key, ~0ULL);
	KUNIT_ASSERT_EQ(test, fi_write(f.ep, src, 1024, NULL, 0, base + 100, key, CTX(1)), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.txcq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, e.flags, FI_RMA | FI_WRITE);
	KUNIT_EXPECT_EQ(test, memcmp(region + 100, src, 1024), 0);
	KUNIT_ASSERT_EQ(test, fi_read(f.ep, back, 1024, NULL, 0, base + 100, key, CTX(2)), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.txcq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, e.flags, FI_RMA | FI_READ);
	KUNIT_EXPECT_EQ(test, memcmp(back, src, 1024), 0);

	/* Remote CQ data with a write. */
	KUNIT_ASSERT_EQ(test, fi_writedata(f.ep, src, 16, NULL, 77, 0, base, key, CTX(3)), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.rxcq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, e.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
	KUNIT_EXPECT_EQ(test, e.data, 77ULL);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.txcq, &e, 1), 1);
	/* ... and its inject form, which the sender sees no completion of. */
	KUNIT_ASSERT_EQ(test, fi_inject_writedata(f.ep, src, 8, 78, 0, base + 2048, key), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.rxcq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, e.data, 78ULL);
	KUNIT_EXPECT_EQ(test, memcmp(region + 2048, src, 8), 0);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, &e, 1), -FI_EAGAIN);
	KUNIT_EXPECT_EQ(test, fi_inject_writedata(f.ep, src, 8, 78, 0, base, key + 1), 0);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f.txcq, &e, 1), -FI_EAVAIL);
	{
		struct fi_cq_err_entry err = {};

		KUNIT_EXPECT_EQ(test, fi_cq_readerr(f.txcq, &err, 0), 1);
		KUNIT_EXPECT_EQ(test, err.flags, FI_RMA | FI_WRITE);
	}

	/* Several remote buffers in one read. */
	{
		struct kvec iov = { back, 200 };
		struct fi_rma_iov rma[2] = { { base + 100, 100, key }, { base + 1000, 100, key } };
		struct fi_msg_rma msg = { .msg_iov = &iov, .iov_count = 1, .rma_iov = rma,
					  .rma_iov_count = 2, .context = CTX(4) };

		memset(back, 0, 1024);
		KUNIT_ASSERT_EQ(test, fi_readmsg(f.ep, &msg, 0), 0);
		KUNIT_ASSERT_EQ(test, fi_cq_read(f.txcq, &e, 1), 1);
		KUNIT_EXPECT_EQ(test, memcmp(back, region + 100, 100), 0);
		KUNIT_EXPECT_EQ(test, memcmp(back + 100, region + 1000, 100), 0);
		rma[1].len = 99;
		KUNIT_EXPECT_EQ(test, fi_readmsg(f.ep, &msg, 0), -EINVAL);
		msg.rma_iov_count = 0;
		KUNIT_EXPECT_EQ(test, fi_readmsg(f.ep, &msg, 0), -EINVAL);
		msg.rma_iov_count = 1;
		rma[0].len = 200;
		KUNIT_EXPECT_EQ(test, fi_readmsg(f.ep, &msg, FI_INJECT), -FI_EBADFLAGS);
	}
	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	fx_close(test, &f);
}

static int rma_error(struct kunit *test, struct fx *f, int ret)
{
	struct fi_cq_err_entry err = {};
	struct fi_cq_entry e;

	KUNIT_EXPECT_EQ(test, ret, 0);
	KUNIT_EXPECT_EQ(test, fi_cq_read(f->txcq, &e, 1), -FI_EAVAIL);
	KUNIT_EXPECT_EQ(test, fi_cq_readerr(f->txcq, &err, 0), 1);
	return err.err;
}

static void data_rma_violations_are_refused(struct kunit *test)
{
	struct fx f = {};
	struct fid_mr *ro;
	u8 region[256] = {}, src[64], before[256];
	u64 key;

	fill(src, sizeof(src), 1);
	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_mr_reg(f.domain, region, sizeof(region), FI_REMOTE_READ, 0, 0, 0,
					&ro, NULL), 0);
	key = fi_mr_key(ro);
	memcpy(before, region, sizeof(region));
	KUNIT_EXPECT_EQ(test, rma_error(test, &f, fi_write(f.ep, src, 64, NULL, 0, 0, key, NULL)),
			FI_EACCES);
	KUNIT_EXPECT_EQ(test, rma_error(test, &f, fi_read(f.ep, src, 64, NULL, 0, 0, key + 2, NULL)),
			FI_ENOKEY);
	KUNIT_EXPECT_EQ(test, rma_error(test, &f, fi_read(f.ep, src, 64, NULL, 0, 200, key, NULL)),
			EINVAL);
	/* A remote range that wraps around is refused before it is posted. */
	KUNIT_EXPECT_EQ(test, fi_read(f.ep, src, 64, NULL, 0, ~0ULL - 8, key, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, memcmp(before, region, sizeof(region)), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&ro->fid), 0);
	fx_close(test, &f);
}

static void data_mr_bvec_and_bad_arguments(struct kunit *test)
{
	struct fx f = {};
	struct fid_mr *mr;
	struct fi_cq_entry e;
	struct page *page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	struct bio_vec bv;
	u8 src[64], buf[8];
	struct kvec five[5] = { { buf, 1 }, { buf, 1 }, { buf, 1 }, { buf, 1 }, { buf, 1 } };

	KUNIT_ASSERT_NOT_NULL(test, page);
	bvec_set_page(&bv, page, 512, 256);
	fill(src, sizeof(src), 2);
	fx_open(test, &f);
	KUNIT_ASSERT_EQ(test, fi_mr_regbv(f.domain, &bv, 1, FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_write(f.ep, src, 64, NULL, 0, 10, fi_mr_key(mr), NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_read(f.txcq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, memcmp((u8 *)page_address(page) + 256 + 10, src, 64), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	__free_page(page);

	KUNIT_EXPECT_EQ(test, fi_mr_reg(f.domain, buf, 0, FI_REMOTE_READ, 0, 0, 0, &mr, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_mr_reg(f.domain, NULL, 8, FI_REMOTE_READ, 0, 0, 0, &mr, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_mr_reg(f.domain, buf, 8, 0, 0, 0, 0, &mr, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_mr_reg(f.domain, buf, 8, 1ULL << 40, 0, 0, 0, &mr, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_mr_reg(f.domain, buf, 8, FI_REMOTE_READ, 0, 0, 1, &mr, NULL), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_mr_reg(f.domain, buf, 8, FI_REMOTE_READ, ~0ULL - 4, 0, 0, &mr, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_mr_reg(f.domain, buf, 8, FI_REMOTE_READ, 0, 0, 0, NULL, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_mr_reg((struct fid_domain *)f.fabric, buf, 8, FI_REMOTE_READ, 0, 0, 0, &mr, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_mr_regv(f.domain, five, 5, FI_REMOTE_READ, 0, 0, 0, &mr, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_mr_regv(f.domain, NULL, 1, FI_REMOTE_READ, 0, 0, 0, &mr, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_mr_regbv(f.domain, NULL, 1, FI_REMOTE_READ, 0, 0, 0, &mr, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_mr_regattr(f.domain, NULL, 0, &mr), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_mr_key(NULL), ~0ULL);
	KUNIT_EXPECT_NULL(test, fi_mr_desc(NULL));
	KUNIT_EXPECT_EQ(test, kofi_mr_get(f.domain, 1, 0, 8, FI_REMOTE_READ, NULL), -EINVAL);
	fx_close(test, &f);
}

/* A vector RMA's count is checked against the limit before its array is
 * read: an array of exactly iov_limit entries and a count one higher is
 * refused, not read past its end (KASAN saw that before). */
static void data_rma_vector_count_checked_first(struct kunit *test)
{
	struct fx f = {};
	size_t limit;
	struct kvec *iov;
	u8 buf[8];
	size_t i;

	fx_open(test, &f);
	limit = f.info->tx_attr->iov_limit;
	iov = kmalloc_array(limit, sizeof(*iov), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, iov);
	for (i = 0; i < limit; i++)
		iov[i] = (struct kvec){ buf, sizeof(buf) };
	KUNIT_EXPECT_EQ(test, fi_writev(f.ep, iov, NULL, limit + 1, 0, 0, 1, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_readv(f.ep, iov, NULL, limit + 1, 0, 0, 1, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_writev(f.ep, NULL, NULL, 1, 0, 0, 1, NULL), -EINVAL);
	kfree(iov);
	fx_close(test, &f);
}

/* Huge lengths and counts, and flags nobody defined, answer errors: no call
 * reads past what it was given or takes a size it cannot honour. */
static void data_huge_lengths_counts_and_flags(struct kunit *test)
{
	struct fx f = {};
	struct fid_mr *mr;
	struct fid_av *av;
	struct fi_av_attr av_attr = { .type = FI_AV_MAP, .count = KOFI_AV_COUNT_MAX + 1 };
	u8 buf[64] = {};
	struct kvec one = { buf, sizeof(buf) };
	struct kvec overflow[2] = { { buf, SIZE_MAX }, { buf, 2 } };
	struct fi_msg m = { .msg_iov = overflow, .iov_count = 2 };
	struct fi_msg plain = { .msg_iov = &one, .iov_count = 1 };

	fx_open(test, &f);
	KUNIT_EXPECT_LT(test, fi_send(f.ep, buf, SIZE_MAX, NULL, 0, NULL), 0);
	KUNIT_EXPECT_LT(test, fi_sendmsg(f.ep, &m, 0), 0);
	KUNIT_EXPECT_EQ(test, fi_sendv(f.ep, &one, NULL, SIZE_MAX, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_recvv(f.ep, &one, NULL, SIZE_MAX, 0, NULL), -EINVAL);
	KUNIT_EXPECT_LT(test, fi_inject(f.ep, buf, f.info->tx_attr->inject_size + 1, 0), 0);
	KUNIT_EXPECT_LT(test, fi_write(f.ep, buf, SIZE_MAX, NULL, 0, 0, 1, NULL), 0);
	KUNIT_EXPECT_LT(test, fi_read(f.ep, buf, SIZE_MAX, NULL, 0, 0, 1, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_writev(f.ep, &one, NULL, SIZE_MAX, 0, 0, 1, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_sendmsg(f.ep, &plain, ~0ULL), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_recvmsg(f.ep, &plain, ~0ULL), -FI_EBADFLAGS);
	/* The test providers cannot take a receive back. */
	KUNIT_EXPECT_EQ(test, fi_cancel(&f.ep->fid, buf), -FI_ENOSYS);
	KUNIT_EXPECT_EQ(test, fi_cancel(NULL, buf), -EINVAL);
	KUNIT_EXPECT_LT(test, fi_mr_reg(f.domain, buf, SIZE_MAX, FI_REMOTE_READ, 0, 0, 0, &mr,
					NULL), 0);
	KUNIT_EXPECT_LT(test, fi_mr_reg(f.domain, buf, sizeof(buf), FI_REMOTE_READ, 0, 0, ~0ULL,
					&mr, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_av_open(f.domain, &av_attr, &av, NULL), -EINVAL);
	av_attr.count = 0;
	KUNIT_ASSERT_EQ(test, fi_av_open(f.domain, &av_attr, &av, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_av_insert(av, buf, SIZE_MAX, NULL, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_av_insert(av, buf, 1, NULL, ~0ULL, NULL), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_close(&av->fid), 0);
	fx_close(test, &f);
}

static void data_strerror(struct kunit *test)
{
	KUNIT_EXPECT_STREQ(test, fi_strerror(-FI_ETRUNC), "Truncation error");
	KUNIT_EXPECT_STREQ(test, fi_strerror(FI_EAVAIL), "Error available");
	KUNIT_EXPECT_STREQ(test, fi_strerror(-EINVAL), "Invalid argument");
	KUNIT_EXPECT_STREQ(test, fi_strerror(-FI_ETIMEDOUT), "Connection timed out");
	KUNIT_EXPECT_STREQ(test, fi_strerror(4000), "Unknown error");
}

/* An error entry's prov_errno as text: a kernel errno when negative. */
static void data_cq_and_eq_strerror(struct kunit *test)
{
	struct fx f = {};
	char buf[8];

	fx_open(test, &f);
	KUNIT_EXPECT_STREQ(test, fi_cq_strerror(f.txcq, -ECONNRESET, NULL, NULL, 0),
			   "Connection reset by peer");
	KUNIT_EXPECT_STREQ(test, fi_eq_strerror(f.eq, -ETIMEDOUT, NULL, NULL, 0),
			   "Connection timed out");
	KUNIT_EXPECT_NOT_NULL(test, strstr(fi_cq_strerror(f.txcq, 5, NULL, NULL, 0), "device"));
	/* Into the caller's buffer, cut to fit. */
	KUNIT_EXPECT_PTR_EQ(test, fi_cq_strerror(f.rxcq, -EIO, NULL, buf, sizeof(buf)),
			    (const char *)buf);
	KUNIT_EXPECT_STREQ(test, buf, "I/O err");
	KUNIT_EXPECT_PTR_EQ(test, fi_eq_strerror(f.eq, -EIO, NULL, buf, 1), (const char *)buf);
	KUNIT_EXPECT_STREQ(test, buf, "");
	/* Not a queue of the right kind: NULL. */
	KUNIT_EXPECT_NULL(test, fi_cq_strerror((struct fid_cq *)f.eq, -EIO, NULL, NULL, 0));
	KUNIT_EXPECT_NULL(test, fi_eq_strerror(NULL, -EIO, NULL, buf, sizeof(buf)));
	fx_close(test, &f);
}

static struct kunit_case data_cases[] = {
	KUNIT_CASE(data_send_recv_bytes),
	KUNIT_CASE(data_vectors_truncation_data_inject),
	KUNIT_CASE(data_selective_completion),
	KUNIT_CASE(data_rma_write_and_read),
	KUNIT_CASE(data_rma_violations_are_refused),
	KUNIT_CASE(data_mr_bvec_and_bad_arguments),
	KUNIT_CASE(data_rma_vector_count_checked_first),
	KUNIT_CASE(data_huge_lengths_counts_and_flags),
	KUNIT_CASE(data_strerror),
	KUNIT_CASE(data_cq_and_eq_strerror),
	{}
};

static struct kunit_suite kofi_registry_suite = { .name = "kofi_registry", .test_cases = registry_cases };
static struct kunit_suite kofi_getinfo_suite = { .name = "kofi_getinfo", .test_cases = getinfo_cases };
static struct kunit_suite kofi_objects_suite = { .name = "kofi_objects", .test_cases = objects_cases };
static struct kunit_suite kofi_cq_suite = { .name = "kofi_cq", .test_cases = cq_cases };
static struct kunit_suite kofi_eq_suite = { .name = "kofi_eq", .test_cases = eq_cases };
static struct kunit_suite kofi_cntr_suite = { .name = "kofi_cntr", .test_cases = cntr_cases };
static struct kunit_suite kofi_data_suite = { .name = "kofi_data", .test_cases = data_cases };

static int use_rust_provider(struct kunit_suite *suite)
{
	fixture_prov = "rtest";
	return 0;
}

static void use_c_provider(struct kunit_suite *suite)
{
	fixture_prov = "test";
}

/* The same data cases against the Rust provider built on the safe layer. */
static struct kunit_suite kofi_data_rust_suite = {
	.name = "kofi_data_rust_provider",
	.suite_init = use_rust_provider,
	.suite_exit = use_c_provider,
	.test_cases = data_cases,
};

kunit_test_suites(&kofi_registry_suite, &kofi_getinfo_suite, &kofi_objects_suite,
		  &kofi_cq_suite, &kofi_cntr_suite, &kofi_eq_suite, &kofi_data_suite,
		  &kofi_data_rust_suite);

MODULE_IMPORT_NS(KOFI_NS);
MODULE_DESCRIPTION("KUnit tests of the kofi core through its exported ABI");
MODULE_LICENSE("GPL");
