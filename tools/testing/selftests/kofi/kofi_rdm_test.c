// SPDX-License-Identifier: GPL-2.0
/*
 * Reliable datagram endpoints (FI_EP_RDM) and address vectors, run once per
 * provider and device as the conformance suite is (test_rdm.sh loads this
 * module with prov=, node= and label=; the suite is "rdm_<label>"). The core
 * builds RDM endpoints over each provider's MSG endpoints, so the cases are
 * the same for every provider. Data is verified byte for byte and every
 * receive's source (FI_SOURCE, fi_cq_readfrom) against the AV.
 */
#include <linux/bvec.h>
#include <linux/delay.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include "kofi_test_pair.h"

static char *prov = "sock";
module_param(prov, charp, 0444);
MODULE_PARM_DESC(prov, "provider under test");
static char *node = "127.0.0.1";
module_param(node, charp, 0444);
MODULE_PARM_DESC(node, "local address the endpoints use");
static char *label = "sock_ipv4";
module_param(label, charp, 0444);
MODULE_PARM_DESC(label, "provider and device, for the suite's name");

static char *only = "";
module_param(only, charp, 0444);
MODULE_PARM_DESC(only, "run only the cases whose name starts with this (debugging)");

#define EPS_MAX 8
#define NAME_LEN sizeof(struct sockaddr_in6)

/* Endpoints of one domain sharing one AV, each with its own CQ. */
struct net {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	int n;
	struct fid_ep *ep[EPS_MAX];
	struct fid_cq *cq[EPS_MAX];
	fi_addr_t addr[EPS_MAX];
	/* A counter bound for the kinds in cntr_flags[i], when not 0. */
	u64 cntr_flags[EPS_MAX];
	struct fid_cntr *cntr[EPS_MAX];
	/* The CQs' format: FI_CQ_FORMAT_DATA unless set. */
	enum fi_cq_format cq_format;
	/* The CQs' handler, when set. */
	kofi_cq_handler_t cq_handler;
};

static struct fi_info *rdm_info(struct kunit *test)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	KUNIT_ASSERT_NOT_NULL(test, hints);
	hints->ep_attr->type = FI_EP_RDM;
	/* Every primary capability the suite uses: only those asked for are
	 * given (getinfo_offers_rdm). */
	hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SOURCE | FI_DIRECTED_RECV;
	/* A consumer able to work in FI_RX_CQ_DATA mode: RDM infos keep
	 * without it all the same (rdm_bad_arguments). */
	hints->mode = FI_RX_CQ_DATA;
	hints->fabric_attr->prov_name = kstrdup(prov, GFP_KERNEL);
	/* Port 0: each endpoint's listener takes a free one. */
	KUNIT_ASSERT_EQ(test, fi_getinfo(V, node, "0", FI_SOURCE, hints, &info), 0);
	fi_freeinfo(hints);
	return info;
}

static void ep_open(struct kunit *test, struct net *t, int i)
{
	struct fi_cq_attr cq_attr = { .format = t->cq_format ?: FI_CQ_FORMAT_DATA, .size = 1024,
				      .comp_handler = t->cq_handler };
	u8 name[128];
	size_t len = sizeof(name);

	KUNIT_ASSERT_EQ(test, fi_cq_open(t->domain, &cq_attr, &t->cq[i], NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_endpoint(t->domain, t->info, &t->ep[i], NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(t->ep[i], &t->cq[i]->fid, FI_SEND | FI_RECV), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(t->ep[i], &t->av->fid, 0), 0);
	if (t->cntr_flags[i]) {
		struct fi_cntr_attr cntr_attr = {};

		KUNIT_ASSERT_EQ(test, fi_cntr_open(t->domain, &cntr_attr, &t->cntr[i], NULL), 0);
		KUNIT_ASSERT_EQ(test, fi_ep_bind(t->ep[i], &t->cntr[i]->fid, t->cntr_flags[i]), 0);
	}
	KUNIT_ASSERT_EQ(test, fi_enable(t->ep[i]), 0);
	KUNIT_ASSERT_EQ(test, fi_getname(&t->ep[i]->fid, name, &len), 0);
	KUNIT_ASSERT_EQ(test, fi_av_insert(t->av, name, 1, &t->addr[i], 0, NULL), 1);
}

static void net_open_format(struct kunit *test, struct net *t, int n, enum fi_av_type type,
			    enum fi_cq_format format)
{
	struct fi_av_attr av_attr = { .type = type };
	kofi_cq_handler_t cq_handler = t->cq_handler;
	int i;

	memset(t, 0, sizeof(*t));
	/* Set by the case before, if it wants one. */
	t->cq_handler = cq_handler;
	t->cq_format = format;
	t->info = rdm_info(test);
	KUNIT_ASSERT_EQ(test, fi_fabric(t->info->fabric_attr, &t->fabric, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_domain(t->fabric, t->info, &t->domain, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_av_open(t->domain, &av_attr, &t->av, NULL), 0);
	t->n = n;
	for (i = 0; i < n; i++)
		ep_open(test, t, i);
}

static void net_open(struct kunit *test, struct net *t, int n, enum fi_av_type type)
{
	net_open_format(test, t, n, type, FI_CQ_FORMAT_DATA);
}

static void ep_close(struct kunit *test, struct net *t, int i)
{
	if (t->ep[i])
		KUNIT_EXPECT_EQ(test, fi_close(&t->ep[i]->fid), 0);
	if (t->cq[i])
		KUNIT_EXPECT_EQ(test, fi_close(&t->cq[i]->fid), 0);
	if (t->cntr[i])
		KUNIT_EXPECT_EQ(test, fi_close(&t->cntr[i]->fid), 0);
	t->ep[i] = NULL;
	t->cq[i] = NULL;
	t->cntr[i] = NULL;
}

static void net_close(struct kunit *test, struct net *t)
{
	int i;

	for (i = 0; i < t->n; i++)
		ep_close(test, t, i);
	if (t->av)
		KUNIT_EXPECT_EQ(test, fi_close(&t->av->fid), 0);
	if (t->domain)
		KUNIT_EXPECT_EQ(test, fi_close(&t->domain->fid), 0);
	if (t->fabric)
		KUNIT_EXPECT_EQ(test, fi_close(&t->fabric->fid), 0);
	fi_freeinfo(t->info);
	memset(t, 0, sizeof(*t));
}

/* The next completion of @cq (an error entry as -err), with its source. */
static ssize_t next(struct fid_cq *cq, struct fi_cq_data_entry *e, fi_addr_t *src,
		    struct fi_cq_err_entry *err)
{
	ssize_t ret = fi_cq_sreadfrom(cq, e, 1, src, NULL, WAIT_MS);

	if (ret == -FI_EAVAIL) {
		if (fi_cq_readerr(cq, err, 0) != 1)
			return -EIO;
		return -err->err;
	}
	return ret;
}

/* Byte @i of message @seq from @from. */
static u8 pattern(int from, u32 seq, size_t i)
{
	return (u8)(from * 31 + seq * 7 + i * 13);
}

static void fill_msg(u8 *buf, size_t len, int from, u32 seq)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(from, seq, i);
}

static bool check_msg(const u8 *buf, size_t len, int from, u32 seq)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != pattern(from, seq, i))
			return false;
	return true;
}

static void getinfo_offers_rdm(struct kunit *test)
{
	struct fi_info *info = rdm_info(test), *hints = fi_allocinfo(), *all = NULL, *i;
	bool msg = false, rdm = false;

	KUNIT_EXPECT_EQ(test, info->ep_attr->type, FI_EP_RDM);
	KUNIT_EXPECT_STREQ(test, info->fabric_attr->prov_name, prov);
	KUNIT_EXPECT_EQ(test, info->caps & (FI_MSG | FI_RMA | FI_SOURCE | FI_DIRECTED_RECV),
			FI_MSG | FI_RMA | FI_SOURCE | FI_DIRECTED_RECV);
	KUNIT_EXPECT_TRUE(test, info->caps & FI_TAGGED);
	KUNIT_EXPECT_TRUE(test, info->caps & FI_ATOMIC);
	KUNIT_EXPECT_TRUE(test, info->tx_attr->msg_order & FI_ORDER_SAS);
	KUNIT_EXPECT_NE(test, info->domain_attr->av_type, FI_AV_UNSPEC);
	KUNIT_EXPECT_GE(test, info->ep_attr->max_msg_size, (size_t)(1 << 20));
	KUNIT_EXPECT_NOT_NULL(test, info->src_addr);
	fi_freeinfo(info);

	/* No type hinted: the provider's MSG endpoints and the core's RDM ones. */
	KUNIT_ASSERT_NOT_NULL(test, hints);
	hints->fabric_attr->prov_name = kstrdup(prov, GFP_KERNEL);
	KUNIT_ASSERT_EQ(test, fi_getinfo(V, node, NULL, 0, hints, &all), 0);
	for (i = all; i; i = i->next) {
		msg |= i->ep_attr->type == FI_EP_MSG;
		rdm |= i->ep_attr->type == FI_EP_RDM;
	}
	KUNIT_EXPECT_TRUE(test, msg);
	KUNIT_EXPECT_TRUE(test, rdm);
	fi_freeinfo(all);
	/* MSG hinted: only MSG. */
	hints->ep_attr->type = FI_EP_MSG;
	KUNIT_ASSERT_EQ(test, fi_getinfo(V, node, NULL, 0, hints, &all), 0);
	for (i = all; i; i = i->next)
		KUNIT_EXPECT_EQ(test, i->ep_attr->type, FI_EP_MSG);
	fi_freeinfo(all);
	/* Tagged messages: the core's RDM endpoints and the provider's MSG ones. */
	hints->caps = FI_TAGGED;
	KUNIT_ASSERT_EQ(test, fi_getinfo(V, node, NULL, 0, hints, &all), 0);
	for (i = all; i; i = i->next) {
		KUNIT_EXPECT_EQ(test, i->ep_attr->type, FI_EP_MSG);
		KUNIT_EXPECT_TRUE(test, i->caps & FI_TAGGED);
	}
	fi_freeinfo(all);
	hints->ep_attr->type = FI_EP_UNSPEC;
	KUNIT_ASSERT_EQ(test, fi_getinfo(V, node, NULL, 0, hints, &all), 0);
	msg = rdm = false;
	for (i = all; i; i = i->next) {
		msg |= i->ep_attr->type == FI_EP_MSG;
		rdm |= i->ep_attr->type == FI_EP_RDM;
		KUNIT_EXPECT_TRUE(test, i->caps & FI_TAGGED);
	}
	KUNIT_EXPECT_TRUE(test, msg && rdm);
	fi_freeinfo(all);
	/* Primary capabilities not asked for are not given (fi_getinfo(3)):
	 * messages alone, both directions; FI_MULTI_RECV, a secondary one, is
	 * reported all the same. */
	hints->caps = FI_MSG;
	hints->ep_attr->type = FI_EP_RDM;
	KUNIT_ASSERT_EQ(test, fi_getinfo(V, node, NULL, 0, hints, &all), 0);
	for (i = all; i; i = i->next) {
		KUNIT_EXPECT_EQ(test, i->caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND |
						 FI_RECV | FI_READ | FI_WRITE),
				FI_MSG | FI_SEND | FI_RECV);
		KUNIT_EXPECT_TRUE(test, i->caps & FI_MULTI_RECV);
		KUNIT_EXPECT_EQ(test, i->tx_attr->caps & ~i->caps, 0ULL);
		KUNIT_EXPECT_EQ(test, i->rx_attr->caps & ~i->caps, 0ULL);
	}
	fi_freeinfo(all);
	hints->caps = 0;
	/* RDM with an AV type hinted: the core's AVs are both kinds. */
	hints->ep_attr->type = FI_EP_RDM;
	hints->domain_attr->av_type = FI_AV_TABLE;
	KUNIT_ASSERT_EQ(test, fi_getinfo(V, node, NULL, 0, hints, &all), 0);
	for (i = all; i; i = i->next)
		KUNIT_EXPECT_EQ(test, i->domain_attr->av_type, FI_AV_TABLE);
	fi_freeinfo(all);
	/* ... and no peer's RMA reaches an RDM endpoint: no FI_RMA_EVENT. */
	hints->caps = FI_MSG | FI_RMA_EVENT;
	KUNIT_EXPECT_EQ(test, fi_getinfo(V, node, NULL, 0, hints, &all), -FI_ENODATA);
	fi_freeinfo(hints);
}

static void av_calls(struct kunit *test)
{
	struct net *t = test->priv;
	struct fi_av_attr map_attr = { .type = FI_AV_MAP }, table_attr = { .type = FI_AV_TABLE };
	struct fi_av_attr bad_attr = { .type = FI_AV_MAP, .flags = FI_EVENT };
	struct fid_av *map, *table, *bad = NULL;
	struct {
		struct sockaddr_in a;
		struct sockaddr_in6 b;
	} __packed two = {};
	u8 junk[16] = {}, back[64];
	fi_addr_t fa[3], ta[3];
	char str[64];
	size_t len;

	net_open(test, t, 0, FI_AV_MAP);
	KUNIT_ASSERT_EQ(test, fi_av_open(t->domain, &map_attr, &map, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_av_open(t->domain, &table_attr, &table, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_av_open(t->domain, &bad_attr, &bad, NULL), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_av_open(NULL, &map_attr, &bad, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_av_open(t->domain, NULL, &bad, NULL), -EINVAL);

	/* One IPv4 and one IPv6 address, back to back; junk in sin_zero. */
	two.a.sin_family = AF_INET;
	two.a.sin_port = htons(5000);
	two.a.sin_addr.s_addr = htonl(0x7f000001);
	memset(two.a.sin_zero, 0xaa, sizeof(two.a.sin_zero));
	two.b.sin6_family = AF_INET6;
	two.b.sin6_port = htons(5001);
	two.b.sin6_addr.s6_addr[15] = 1;
	KUNIT_EXPECT_EQ(test, fi_av_insert(map, &two, 2, fa, 0, NULL), 2);
	KUNIT_EXPECT_EQ(test, fi_av_insert(table, &two, 2, ta, 0, NULL), 2);
	KUNIT_EXPECT_EQ(test, ta[0], 0ULL);
	KUNIT_EXPECT_EQ(test, ta[1], 1ULL);
	KUNIT_EXPECT_EQ(test, fi_av_insertsvc(table, "10.1.2.3", "77", &ta[2], 0, NULL), 1);
	KUNIT_EXPECT_EQ(test, ta[2], 2ULL);
	KUNIT_EXPECT_LT(test, fi_av_insertsvc(table, "not-an-address", "77", &ta[2], 0, NULL), 0);
	KUNIT_EXPECT_LT(test, fi_av_insertsvc(table, "10.1.2.3", "port", &ta[2], 0, NULL), 0);

	len = sizeof(back);
	KUNIT_EXPECT_EQ(test, fi_av_lookup(map, fa[0], back, &len), 0);
	KUNIT_EXPECT_EQ(test, len, sizeof(struct sockaddr_in));
	KUNIT_EXPECT_EQ(test, ((struct sockaddr_in *)back)->sin_port, htons(5000));
	KUNIT_EXPECT_EQ(test, ((struct sockaddr_in *)back)->sin_zero[0], 0);
	len = sizeof(back);
	KUNIT_EXPECT_EQ(test, fi_av_lookup(table, ta[1], back, &len), 0);
	KUNIT_EXPECT_EQ(test, len, sizeof(struct sockaddr_in6));
	KUNIT_EXPECT_EQ(test, memcmp(&((struct sockaddr_in6 *)back)->sin6_addr, &two.b.sin6_addr,
				     16), 0);
	/* Too small a buffer: truncated, the size said. */
	len = 4;
	KUNIT_EXPECT_EQ(test, fi_av_lookup(table, ta[1], back, &len), 0);
	KUNIT_EXPECT_EQ(test, len, sizeof(struct sockaddr_in6));

	len = sizeof(str);
	KUNIT_EXPECT_PTR_EQ(test, fi_av_straddr(map, &two.a, str, &len), (const char *)str);
	KUNIT_EXPECT_STREQ(test, str, "127.0.0.1:5000");
	KUNIT_EXPECT_EQ(test, len, strlen("127.0.0.1:5000") + 1);
	len = sizeof(str);
	fi_av_straddr(map, &two.b, str, &len);
	KUNIT_EXPECT_STREQ(test, str, "[::1]:5001");
	len = sizeof(str);
	KUNIT_EXPECT_NULL(test, fi_av_straddr(map, junk, str, &len));

	/* Bad addresses: no family, no address; nothing inserted. */
	KUNIT_EXPECT_EQ(test, fi_av_insert(map, junk, 1, fa + 2, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, fa[2], FI_ADDR_NOTAVAIL);
	KUNIT_EXPECT_EQ(test, fi_av_insert(map, NULL, 1, fa + 2, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_av_insert(NULL, &two, 1, fa + 2, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_av_insert(map, &two, 1, fa + 2, 1, NULL), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_av_insertsvc(map, NULL, "77", fa + 2, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_av_insertsvc(map, "10.1.2.3", NULL, fa + 2, 0, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_av_remove(map, NULL, 1, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_av_remove(map, fa, 1, 1), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_av_remove(NULL, fa, 1, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_av_lookup(map, fa[0], back, NULL), -EINVAL);
	len = 8;
	KUNIT_EXPECT_EQ(test, fi_av_lookup(map, fa[0], NULL, &len), -EINVAL);
	KUNIT_EXPECT_NULL(test, fi_av_straddr(map, &two.a, str, NULL));
	KUNIT_EXPECT_NULL(test, fi_av_straddr(NULL, &two.a, str, &len));

	/* Removed: no longer there; removing it again is an error. */
	KUNIT_EXPECT_EQ(test, fi_av_remove(map, fa, 1, 0), 0);
	len = sizeof(back);
	KUNIT_EXPECT_EQ(test, fi_av_lookup(map, fa[0], back, &len), -ENOENT);
	KUNIT_EXPECT_EQ(test, fi_av_remove(map, fa, 1, 0), -EINVAL);
	/* A map does not take a stale address for the slot's next entry. */
	KUNIT_EXPECT_EQ(test, fi_av_insert(map, &two, 1, fa + 2, 0, NULL), 1);
	KUNIT_EXPECT_NE(test, fa[2], fa[0]);
	len = sizeof(back);
	KUNIT_EXPECT_EQ(test, fi_av_lookup(map, fa[0], back, &len), -ENOENT);
	KUNIT_EXPECT_EQ(test, fi_av_lookup(table, 99, back, &len), -ENOENT);

	/* In use by the domain: the domain cannot close first. */
	KUNIT_EXPECT_EQ(test, fi_close(&t->domain->fid), -EBUSY);
	KUNIT_EXPECT_EQ(test, fi_close(&map->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&table->fid), 0);
	net_close(test, t);
}

static void rdm_bad_arguments(struct kunit *test)
{
	struct net *t = test->priv;
	struct fid_ep *ep = NULL;
	struct fid_cq *cq = NULL;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };
	struct fi_info *msg_info = test_info(test, prov, node, NULL, 0);
	struct fid_ep *msg_ep = NULL;
	u8 buf[16] = {}, name[8];
	size_t len = sizeof(name);

	net_open(test, t, 1, FI_AV_TABLE);
	/* No AV bound: not enabled. */
	KUNIT_ASSERT_EQ(test, fi_cq_open(t->domain, &cq_attr, &cq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_endpoint(t->domain, t->info, &ep, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(ep, &cq->fid, FI_SEND | FI_RECV), 0);
	KUNIT_EXPECT_EQ(test, fi_enable(ep), -FI_ENOAV);
	KUNIT_EXPECT_LT(test, fi_send(ep, buf, 8, NULL, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&ep->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&cq->fid), 0);
	/* RDM infos do not offer FI_RX_CQ_DATA, hinted or not, and refuse it. */
	KUNIT_EXPECT_EQ(test, t->info->mode & FI_RX_CQ_DATA, 0ULL);
	t->info->mode |= FI_RX_CQ_DATA;
	KUNIT_EXPECT_EQ(test, fi_endpoint(t->domain, t->info, &ep, NULL), -EINVAL);
	t->info->mode &= ~FI_RX_CQ_DATA;
	/* An AV goes with RDM endpoints only. */
	KUNIT_ASSERT_EQ(test, fi_endpoint(t->domain, msg_info, &msg_ep, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(msg_ep, &t->av->fid, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_close(&msg_ep->fid), 0);
	fi_freeinfo(msg_info);
	/* Bound AVs cannot close; a second AV cannot bind. */
	KUNIT_EXPECT_EQ(test, fi_close(&t->av->fid), -EBUSY);
	/* No connection calls on an RDM endpoint. */
	KUNIT_EXPECT_EQ(test, fi_connect(t->ep[0], buf, NULL, 0), -FI_EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, fi_shutdown(t->ep[0], 0), -FI_ENOSYS);
	/* Addresses not in the AV. */
	KUNIT_EXPECT_EQ(test, fi_sendto(t->ep[0], buf, 8, NULL, 42, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_recvfrom(t->ep[0], buf, 8, NULL, 42, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_read(t->ep[0], buf, 8, NULL, 42, 0, 0, NULL), -EINVAL);
	/* What an RDM operation cannot promise is refused (rdm.rst). */
	{
		struct kvec iov = { buf, 8 };
		struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = t->addr[0] };

		KUNIT_EXPECT_EQ(test, fi_sendmsg(t->ep[0], &msg, FI_FENCE), -FI_EBADFLAGS);
		KUNIT_EXPECT_EQ(test, fi_sendmsg(t->ep[0], &msg, FI_TRANSMIT_COMPLETE),
				-FI_EBADFLAGS);
		KUNIT_EXPECT_EQ(test, fi_sendmsg(t->ep[0], &msg, FI_DELIVERY_COMPLETE),
				-FI_EBADFLAGS);
	}
	/* Too small a buffer for the name. */
	KUNIT_EXPECT_EQ(test, fi_getname(&t->ep[0]->fid, name, &len), -FI_ETOOSMALL);
	KUNIT_EXPECT_GE(test, len, sizeof(struct sockaddr_in));
	KUNIT_EXPECT_EQ(test, fi_cq_readfrom(t->cq[0], buf, 1, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cq_sreadfrom(t->cq[0], buf, 1, NULL, NULL, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_cq_readfrom(NULL, buf, 1, (fi_addr_t *)buf), -EINVAL);
	net_close(test, t);
}

/* One completion of endpoint @j: a send counted, or a receive checked. */
static void take(struct kunit *test, struct net *t, int j, int *sent, int *received,
		 int got[EPS_MAX][EPS_MAX])
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	int i;

	KUNIT_ASSERT_EQ(test, next(t->cq[j], &e, &src, &err), 1);
	if (e.flags & FI_SEND) {
		sent[j]++;
		return;
	}
	KUNIT_EXPECT_EQ(test, e.flags & (FI_MSG | FI_RECV), FI_MSG | FI_RECV);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)(100 + j));
	for (i = 0; i < t->n && t->addr[i] != src; i++)
		;
	KUNIT_ASSERT_LT_MSG(test, i, t->n, "source %llx not in the AV", src);
	KUNIT_EXPECT_TRUE(test, check_msg(e.op_context, e.len, i, j));
	got[j][i]++;
	received[j]++;
}

/*
 * Every endpoint sends to every other, one sender after the other (so the
 * later ones reuse the connections their peers made; crossing requests have
 * their own case); each receive's source and bytes agree.
 */
static void all_to_all(struct kunit *test, int n)
{
	struct net *t = test->priv;
	u8 (*rx)[EPS_MAX][256], (*tx)[EPS_MAX][256];
	int i, j, k, got[EPS_MAX][EPS_MAX] = {}, sent[EPS_MAX] = {}, received[EPS_MAX] = {};

	rx = kunit_kzalloc(test, sizeof(u8[EPS_MAX][EPS_MAX][256]), GFP_KERNEL);
	tx = kunit_kzalloc(test, sizeof(u8[EPS_MAX][EPS_MAX][256]), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, rx);
	KUNIT_ASSERT_NOT_NULL(test, tx);
	net_open(test, t, n, FI_AV_MAP);
	for (j = 0; j < n; j++)
		for (k = 0; k < n - 1; k++)
			KUNIT_ASSERT_EQ(test, fi_recvfrom(t->ep[j], rx[j][k], 256, NULL,
							  FI_ADDR_UNSPEC, rx[j][k]), 0);
	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++) {
			if (i == j)
				continue;
			fill_msg(tx[i][j], 100 + j, i, j);
			KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[i], tx[i][j], 100 + j, NULL, t->addr[j],
							tx[i][j]), 0);
		}
		while (sent[i] < n - 1)
			take(test, t, i, sent, received, got);
	}
	for (j = 0; j < n; j++)
		while (received[j] < n - 1)
			take(test, t, j, sent, received, got);
	for (i = 0; i < n; i++)
		for (j = 0; j < n; j++)
			KUNIT_EXPECT_EQ(test, got[j][i], i == j ? 0 : 1);
	for (j = 0; j < n; j++)
		KUNIT_EXPECT_EQ(test, fi_cq_read(t->cq[j], rx[j][0], 1), -FI_EAGAIN);
	net_close(test, t);
}

static void send_recv_two(struct kunit *test)
{
	all_to_all(test, 2);
}

static void send_recv_eight(struct kunit *test)
{
	all_to_all(test, EPS_MAX);
}

/* A receive from one source takes only that source's message. */
static void directed_receive(struct kunit *test)
{
	struct net *t = test->priv;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	u8 from2[64], any[64], msg1[64], msg2[64];
	fi_addr_t src;
	int k;

	net_open(test, t, 3, FI_AV_TABLE);
	KUNIT_ASSERT_EQ(test, fi_recvfrom(t->ep[0], from2, sizeof(from2), NULL, t->addr[2], from2),
			0);
	KUNIT_ASSERT_EQ(test, fi_recvfrom(t->ep[0], any, sizeof(any), NULL, FI_ADDR_UNSPEC, any),
			0);
	fill_msg(msg1, 40, 1, 0);
	KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[1], msg1, 40, NULL, t->addr[0], NULL), 0);
	KUNIT_ASSERT_EQ(test, next(t->cq[1], &e, &src, &err), 1);
	/* Endpoint 1's message went to the second receive, not the first. */
	KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)any);
	KUNIT_EXPECT_EQ(test, src, t->addr[1]);
	KUNIT_EXPECT_TRUE(test, check_msg(any, 40, 1, 0));
	fill_msg(msg2, 50, 2, 0);
	KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[2], msg2, 50, NULL, t->addr[0], NULL), 0);
	for (k = 0; k < 2; k++) {
		KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
		if (e.flags & FI_RECV)
			break;
	}
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)from2);
	KUNIT_EXPECT_EQ(test, src, t->addr[2]);
	KUNIT_EXPECT_TRUE(test, check_msg(from2, 50, 2, 0));
	net_close(test, t);
}

static struct fid_cq *watched_cq;
static struct task_struct *completion_poster;

/* Every CQ's handler: notes who posted to the watched one. */
static void note_poster(struct fid_cq *cq)
{
	if (cq == READ_ONCE(watched_cq))
		WRITE_ONCE(completion_poster, current);
}

struct late_send {
	struct net *t;
	const void *buf;
	size_t len;
	ssize_t ret;
	struct completion done;
};

/* Endpoint 0 sends to endpoint 1 once endpoint 1's thread sleeps, and waits. */
static int send_late(void *arg)
{
	struct late_send *l = arg;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;

	/* Long enough for the receiver to be asleep in fi_cq_sread. */
	msleep(200);
	l->ret = fi_sendto(l->t->ep[0], l->buf, l->len, NULL, l->t->addr[1], NULL);
	if (!l->ret)
		l->ret = next(l->t->cq[0], &e, &src, &err) == 1 ? 0 : -EIO;
	complete(&l->done);
	return 0;
}

/*
 * A message that arrives while its receiver sleeps in fi_cq_sread reaches
 * the receive, and its completion is posted, in the receiver's own thread
 * (the internal queues' handlers and the provider's progress request wake
 * it), not in the endpoint's work item; with nobody asleep, the work item
 * does it. Messages of one segment and of several (64 KiB: two).
 */
static void progress_made_by_the_sleeper(struct kunit *test)
{
	static const size_t lens[] = { 6000, 65536 };
	struct net *t = test->priv;
	struct late_send l = { .t = t };
	struct task_struct *thread, *poster;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	u8 *out, *in;
	ssize_t ret;
	int i, k;

	t->cq_handler = note_poster;
	net_open_format(test, t, 2, FI_AV_TABLE, FI_CQ_FORMAT_DATA);
	/* The receiver's: the sender's completions are posted elsewhere. */
	WRITE_ONCE(watched_cq, t->cq[1]);
	out = kunit_kmalloc(test, 65536, GFP_KERNEL);
	in = kunit_kmalloc(test, 65536, GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, out && in);
	l.buf = out;
	/* The connection first. */
	fill_msg(out, 64, 0, 0);
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[1], in, 64, NULL, FI_ADDR_UNSPEC, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[0], out, 64, NULL, t->addr[1], NULL), 0);
	KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
	KUNIT_ASSERT_EQ(test, next(t->cq[1], &e, &src, &err), 1);
	for (k = 0; k < ARRAY_SIZE(lens); k++) {
		for (i = 1; i <= 3; i++) {
			l.len = lens[k];
			fill_msg(out, l.len, 0, i);
			memset(in, 0, l.len);
			init_completion(&l.done);
			KUNIT_ASSERT_EQ(test, fi_recv(t->ep[1], in, l.len, NULL, FI_ADDR_UNSPEC,
						      NULL), 0);
			WRITE_ONCE(completion_poster, NULL);
			thread = kthread_run(send_late, &l, "kofi_rdm_late_send");
			KUNIT_ASSERT_FALSE(test, IS_ERR(thread));
			ret = next(t->cq[1], &e, &src, &err);
			poster = READ_ONCE(completion_poster);
			/* The sender uses the net: it is done before any assertion. */
			wait_for_completion(&l.done);
			KUNIT_ASSERT_EQ(test, ret, 1);
			KUNIT_ASSERT_EQ(test, l.ret, 0);
			KUNIT_EXPECT_PTR_EQ(test, poster, current);
			KUNIT_EXPECT_EQ(test, e.len, l.len);
			KUNIT_EXPECT_TRUE(test, check_msg(in, l.len, 0, i));
		}
	}
	/* Nobody asleep on the CQ: the endpoint's work item delivers. */
	fill_msg(out, 6000, 0, 9);
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[1], in, 6000, NULL, FI_ADDR_UNSPEC, NULL), 0);
	WRITE_ONCE(completion_poster, NULL);
	KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[0], out, 6000, NULL, t->addr[1], NULL), 0);
	for (i = 0; i < 250 && !READ_ONCE(completion_poster); i++)
		msleep(20);
	poster = READ_ONCE(completion_poster);
	KUNIT_EXPECT_NOT_NULL(test, poster);
	KUNIT_EXPECT_PTR_NE(test, poster, current);
	KUNIT_EXPECT_EQ(test, fi_cq_read(t->cq[1], &e, 1), 1);
	KUNIT_EXPECT_TRUE(test, check_msg(in, 6000, 0, 9));
	KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
	WRITE_ONCE(watched_cq, NULL);
	net_close(test, t);
}

/*
 * Both sides send first, at once, so their connection requests cross; then
 * a stream both ways. Each message arrives once, in order.
 */
static void simultaneous_first_sends(struct kunit *test)
{
	enum { MSGS = 50 };
	struct net *t = test->priv;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	u8 (*tx)[MSGS][64], (*rx)[MSGS][64];
	int round, side, k, sends, recvs[2];

	tx = kunit_kzalloc(test, sizeof(u8[2][MSGS][64]), GFP_KERNEL);
	rx = kunit_kzalloc(test, sizeof(u8[2][MSGS][64]), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, tx);
	KUNIT_ASSERT_NOT_NULL(test, rx);
	for (round = 0; round < 3; round++) {
		net_open(test, t, 2, FI_AV_MAP);
		for (side = 0; side < 2; side++)
			for (k = 0; k < MSGS; k++)
				KUNIT_ASSERT_EQ(test, fi_recv(t->ep[side], rx[side][k], 64, NULL,
							      FI_ADDR_UNSPEC, rx[side][k]), 0);
		/* Interleaved, so neither has its connection before the other asks. */
		for (k = 0; k < MSGS; k++)
			for (side = 0; side < 2; side++) {
				fill_msg(tx[side][k], 64, side, k);
				KUNIT_ASSERT_EQ(test, fi_send(t->ep[side], tx[side][k], 64, NULL,
							      t->addr[!side], NULL), 0);
			}
		for (side = 0; side < 2; side++) {
			sends = 0;
			recvs[side] = 0;
			while (sends < MSGS || recvs[side] < MSGS) {
				KUNIT_ASSERT_EQ(test, next(t->cq[side], &e, &src, &err), 1);
				if (e.flags & FI_SEND) {
					sends++;
					continue;
				}
				KUNIT_EXPECT_EQ(test, src, t->addr[!side]);
				/* In order: the k-th receive holds the k-th message. */
				KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)rx[side][recvs[side]]);
				KUNIT_EXPECT_TRUE(test, check_msg(e.op_context, 64, !side,
								  recvs[side]));
				recvs[side]++;
			}
			/* Nothing more: no duplicates. */
			KUNIT_EXPECT_EQ(test, fi_cq_read(t->cq[side], &e, 1), -FI_EAGAIN);
		}
		net_close(test, t);
	}
}

/* A peer that closes mid-traffic: the sender gets error completions, no hang. */
static void peer_closed_mid_traffic(struct kunit *test)
{
	struct net *t = test->priv;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	u8 *buf = kunit_kzalloc(test, 256, GFP_KERNEL), *rx = kunit_kzalloc(test, 256, GFP_KERNEL);
	int sent = 0, done = 0, failed = 0, k;
	ssize_t ret;

	KUNIT_ASSERT_TRUE(test, buf && rx);
	net_open(test, t, 2, FI_AV_MAP);
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[1], rx, 256, NULL, FI_ADDR_UNSPEC, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_send(t->ep[0], buf, 256, NULL, t->addr[1], NULL), 0);
	sent++;
	KUNIT_ASSERT_EQ(test, next(t->cq[1], &e, &src, &err), 1);
	ep_close(test, t, 1);
	/* Keep sending until the loss shows; every send completes one way. */
	for (k = 0; k < 200 && !failed; k++) {
		ret = fi_send(t->ep[0], buf, 256, NULL, t->addr[1], NULL);
		if (ret == 0)
			sent++;
		else
			KUNIT_EXPECT_EQ(test, ret, (ssize_t)-FI_EAGAIN);
		while ((ret = fi_cq_readfrom(t->cq[0], &e, 1, &src)) != -FI_EAGAIN) {
			if (ret == -FI_EAVAIL) {
				KUNIT_ASSERT_EQ(test, fi_cq_readerr(t->cq[0], &err, 0), 1);
				KUNIT_EXPECT_GT(test, err.err, 0);
				failed++;
			}
			done++;
		}
		msleep(20);
	}
	while (done < sent) {
		ret = next(t->cq[0], &e, &src, &err);
		KUNIT_ASSERT_NE_MSG(test, ret, (ssize_t)-FI_EAGAIN, "a send never completed");
		failed += ret < 0;
		done++;
	}
	KUNIT_EXPECT_GT(test, failed, 0);
	KUNIT_EXPECT_EQ(test, done, sent);
	net_close(test, t);
}

/*
 * A peer that closes right after its last receive, as a pingpong's client
 * does: the message reached it, so the sender's completion says it went
 * (over RC the acknowledgement of a SEND can come after the peer's
 * disconnect). Eager and rendezvous sizes, a fresh pair each round.
 */
static void closed_after_last_receive(struct kunit *test)
{
	struct net *t = test->priv;
	const size_t sizes[] = { 65536, 600000 };
	u8 *msg = test_vzalloc(test, 600000), *rx = test_vzalloc(test, 600000);
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	ssize_t ret;
	int k;

	KUNIT_ASSERT_TRUE(test, msg && rx);
	for (k = 0; k < 16; k++) {
		size_t len = sizes[k % 2];

		net_open(test, t, 2, FI_AV_MAP);
		fill_msg(msg, len, 1, k);
		KUNIT_ASSERT_EQ(test, fi_recv(t->ep[0], rx, len, NULL, FI_ADDR_UNSPEC, rx), 0);
		KUNIT_ASSERT_EQ(test, fi_send(t->ep[1], msg, len, NULL, t->addr[0], msg), 0);
		KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
		KUNIT_EXPECT_TRUE(test, e.len == len && check_msg(rx, len, 1, k));
		ep_close(test, t, 0);
		memset(&err, 0, sizeof(err));
		ret = next(t->cq[1], &e, &src, &err);
		KUNIT_EXPECT_EQ_MSG(test, ret, 1, "round %d (%zu bytes): the send failed", k, len);
		if (ret == 1)
			KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)msg);
		net_close(test, t);
	}
}

/* Message @seq's size: mostly small, some spanning several segments. */
static size_t mixed_size(u32 seq)
{
	if (seq % 100 == 99)
		return 8 + (seq * 7919) % 150000;
	if (seq % 10 == 9)
		return 8 + (seq * 7919) % 40000;
	return 8 + (seq * 131) % 1024;
}

#define MANY 10000
#define WINDOW 32
#define BUF_MAX 150016

/*
 * 10,000 messages of mixed sizes from two senders to one receiver: each is
 * delivered once, in order per sender, byte for byte.
 */
static void many_mixed_messages(struct kunit *test)
{
	struct net *t = test->priv;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	u8 *rx, *tx, *b;
	u32 next_tx[2] = {}, done_tx[2] = {}, next_rx[2] = {};
	int posted = 0, received = 0, idle = 0, s, i, from;
	u32 seq;
	size_t len;
	ssize_t ret;

	rx = vzalloc(WINDOW * BUF_MAX);
	tx = vzalloc(2 * WINDOW * BUF_MAX);
	KUNIT_ASSERT_NOT_NULL(test, rx);
	KUNIT_ASSERT_NOT_NULL(test, tx);
	net_open(test, t, 3, FI_AV_MAP);
	for (i = 0; i < WINDOW; i++)
		KUNIT_ASSERT_EQ(test, fi_recv(t->ep[2], rx + i * BUF_MAX, BUF_MAX, NULL,
					      FI_ADDR_UNSPEC, (void *)(long)i), 0);
	posted = WINDOW;
	while (received < MANY) {
		/* Each sender keeps up to WINDOW / 2 messages in flight. */
		for (s = 0; s < 2; s++) {
			while (next_tx[s] < MANY / 2 && next_tx[s] - done_tx[s] < WINDOW / 2) {
				seq = next_tx[s];
				b = tx + (s * WINDOW + seq % WINDOW) * BUF_MAX;

				len = mixed_size(seq);
				fill_msg(b, len, s, seq);
				*(u32 *)b = seq;
				KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[s], b, len, NULL, t->addr[2],
								NULL), 0);
				next_tx[s]++;
			}
			while (fi_cq_read(t->cq[s], &e, 1) == 1)
				done_tx[s]++;
		}
		ret = fi_cq_sreadfrom(t->cq[2], &e, 1, &src, NULL, 50);
		if (ret == -FI_EAVAIL) {
			KUNIT_ASSERT_EQ(test, fi_cq_readerr(t->cq[2], &err, 0), 1);
			KUNIT_FAIL_AND_ABORT(test, "receive failed: %d", err.err);
		}
		if (ret != 1) {
			KUNIT_ASSERT_LT_MSG(test, ++idle, 200, "stalled after %d messages", received);
			continue;
		}
		idle = 0;
		from = src == t->addr[0] ? 0 : src == t->addr[1] ? 1 : -1;
		KUNIT_ASSERT_GE_MSG(test, from, 0, "source %llx", src);
		seq = *(u32 *)e.buf;
		KUNIT_ASSERT_EQ_MSG(test, seq, next_rx[from], "from %d: out of order or repeated",
				    from);
		KUNIT_ASSERT_EQ(test, e.len, mixed_size(seq));
		*(u32 *)e.buf = (u32)pattern(from, seq, 0) | (u32)pattern(from, seq, 1) << 8 |
				(u32)pattern(from, seq, 2) << 16 | (u32)pattern(from, seq, 3) << 24;
		KUNIT_ASSERT_TRUE_MSG(test, check_msg(e.buf, e.len, from, seq),
				      "message %u from %d garbled", seq, from);
		next_rx[from]++;
		received++;
		if (posted < MANY) {
			KUNIT_ASSERT_EQ(test, fi_recv(t->ep[2], e.buf, BUF_MAX, NULL, FI_ADDR_UNSPEC,
						      e.op_context), 0);
			posted++;
		}
	}
	KUNIT_EXPECT_EQ(test, next_rx[0], (u32)(MANY / 2));
	KUNIT_EXPECT_EQ(test, next_rx[1], (u32)(MANY / 2));
	KUNIT_EXPECT_EQ(test, fi_cq_read(t->cq[2], &e, 1), -FI_EAGAIN);
	net_close(test, t);
	vfree(rx);
	vfree(tx);
}

#define UNEXPECTED 24
#define UNEXPECTED_LEN 100000

/*
 * More unmatched messages than the receiver copies out of its bounce
 * buffers (1 MiB an endpoint, rdm.rst): the first are copied, the rest keep
 * their buffers and flow control holds the sender back. Receives posted
 * later take every one, in order, byte for byte, and every send completes.
 */
static void unexpected_beyond_copies(struct kunit *test)
{
	struct net *t = test->priv;
	const size_t len = UNEXPECTED_LEN;
	u8 *tx = test_vzalloc(test, UNEXPECTED * len), *rx = test_vzalloc(test, UNEXPECTED * len);
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	int k;

	KUNIT_ASSERT_TRUE(test, tx && rx);
	net_open(test, t, 2, FI_AV_MAP);
	for (k = 0; k < UNEXPECTED; k++) {
		fill_msg(tx + k * len, len, 1, k);
		KUNIT_ASSERT_EQ(test, fi_send(t->ep[1], tx + k * len, len, NULL, t->addr[0], NULL),
				0);
	}
	/* As many arrive as flow control lets through before any receive. */
	msleep(500);
	for (k = 0; k < UNEXPECTED; k++)
		KUNIT_ASSERT_EQ(test, fi_recv(t->ep[0], rx + k * len, len, NULL, FI_ADDR_UNSPEC,
					      NULL), 0);
	for (k = 0; k < UNEXPECTED; k++) {
		KUNIT_ASSERT_EQ_MSG(test, next(t->cq[0], &e, &src, &err), 1, "receive %d", k);
		KUNIT_EXPECT_EQ(test, e.len, len);
		KUNIT_EXPECT_PTR_EQ(test, e.buf, (void *)(rx + k * len));
	}
	for (k = 0; k < UNEXPECTED; k++)
		KUNIT_EXPECT_TRUE_MSG(test, check_msg(rx + k * len, len, 1, k), "message %d", k);
	for (k = 0; k < UNEXPECTED; k++)
		KUNIT_ASSERT_EQ_MSG(test, next(t->cq[1], &e, &src, &err), 1, "send %d", k);
	net_close(test, t);
}

/*
 * Vectors cut into segments at other places than their iovs: kvecs both
 * ways, then bio_vecs of pages at odd offsets both ways.
 */
static void vectors_and_pages(struct kunit *test)
{
	struct net *t = test->priv;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	u8 *a, *b, *out;
	struct kvec tx[3], rx[2];
	struct bio_vec btx[3], brx[2];
	struct page *pages[5];
	struct fi_msg msg = {};
	size_t total = 200000, i, at;
	int k;

	a = kunit_kzalloc(test, total, GFP_KERNEL);
	b = kunit_kzalloc(test, total, GFP_KERNEL);
	out = kunit_kzalloc(test, total, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, b);
	KUNIT_ASSERT_NOT_NULL(test, out);
	net_open(test, t, 2, FI_AV_MAP);
	fill_msg(a, total, 0, 9);
	tx[0] = (struct kvec){ a, 100 };
	tx[1] = (struct kvec){ a + 100, 70000 };
	tx[2] = (struct kvec){ a + 70100, total - 70100 };
	rx[0] = (struct kvec){ b, 100001 };
	rx[1] = (struct kvec){ b + 100001, total - 100001 };
	KUNIT_ASSERT_EQ(test, fi_recvv(t->ep[1], rx, NULL, 2, FI_ADDR_UNSPEC, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_sendv(t->ep[0], tx, NULL, 3, t->addr[1], NULL), 0);
	KUNIT_ASSERT_EQ(test, next(t->cq[1], &e, &src, &err), 1);
	KUNIT_EXPECT_EQ(test, e.len, total);
	KUNIT_EXPECT_EQ(test, memcmp(a, b, total), 0);
	KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);

	/* Pages: 3 runs to send (odd offsets), 2 to receive, two segments. */
	for (k = 0; k < 5; k++) {
		pages[k] = alloc_pages(GFP_KERNEL, 5);
		KUNIT_ASSERT_NOT_NULL(test, pages[k]);
	}
	bvec_set_page(&btx[0], pages[0], 50000, 17);
	bvec_set_page(&btx[1], pages[1], 40000, 1000);
	bvec_set_page(&btx[2], pages[2], 30000, 3);
	bvec_set_page(&brx[0], pages[3], 60000, 100);
	bvec_set_page(&brx[1], pages[4], 60000, 5);
	for (k = 0, at = 0; k < 3; k++) {
		u8 *p = page_address(btx[k].bv_page) + btx[k].bv_offset;

		for (i = 0; i < btx[k].bv_len; i++)
			p[i] = pattern(1, 2, at + i);
		at += btx[k].bv_len;
	}
	msg = (struct fi_msg){ .msg_bvec = brx, .iov_count = 2, .addr = FI_ADDR_UNSPEC };
	KUNIT_ASSERT_EQ(test, fi_recvmsg(t->ep[1], &msg, 0), 0);
	msg = (struct fi_msg){ .msg_bvec = btx, .iov_count = 3, .addr = t->addr[1] };
	KUNIT_ASSERT_EQ(test, fi_sendmsg(t->ep[0], &msg, 0), 0);
	KUNIT_ASSERT_EQ(test, next(t->cq[1], &e, &src, &err), 1);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)120000);
	KUNIT_EXPECT_EQ(test, src, t->addr[0]);
	memcpy(out, page_address(brx[0].bv_page) + brx[0].bv_offset, 60000);
	memcpy(out + 60000, page_address(brx[1].bv_page) + brx[1].bv_offset, 60000);
	KUNIT_EXPECT_TRUE(test, check_msg(out, 120000, 1, 2));
	KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
	net_close(test, t);
	for (k = 0; k < 5; k++)
		__free_pages(pages[k], 5);
}

/* Injects, remote CQ data and truncation, as on MSG endpoints. */
static void inject_data_truncation(struct kunit *test)
{
	struct net *t = test->priv;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	u8 msg[100], small[10], rx[128];

	net_open(test, t, 2, FI_AV_MAP);
	fill_msg(msg, sizeof(msg), 0, 1);
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[1], rx, sizeof(rx), NULL, FI_ADDR_UNSPEC, rx), 0);
	KUNIT_ASSERT_EQ(test, fi_inject(t->ep[0], msg, 64, t->addr[1]), 0);
	memset(msg, 0, sizeof(msg)); /* the inject's bytes were taken at the call */
	KUNIT_ASSERT_EQ(test, next(t->cq[1], &e, &src, &err), 1);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)64);
	KUNIT_EXPECT_TRUE(test, check_msg(rx, 64, 0, 1));
	KUNIT_EXPECT_EQ(test, src, t->addr[0]);

	fill_msg(msg, sizeof(msg), 0, 2);
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[1], rx, sizeof(rx), NULL, FI_ADDR_UNSPEC, rx), 0);
	KUNIT_ASSERT_EQ(test, fi_senddata(t->ep[0], msg, 32, NULL, 0x1234abcd, t->addr[1], msg), 0);
	KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)msg);
	KUNIT_ASSERT_EQ(test, next(t->cq[1], &e, &src, &err), 1);
	KUNIT_EXPECT_TRUE(test, e.flags & FI_REMOTE_CQ_DATA);
	KUNIT_EXPECT_EQ(test, e.data, 0x1234abcdULL);
	KUNIT_EXPECT_TRUE(test, check_msg(rx, 32, 0, 2));

	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[1], small, sizeof(small), NULL, FI_ADDR_UNSPEC, small),
			0);
	KUNIT_ASSERT_EQ(test, fi_send(t->ep[0], msg, 32, NULL, t->addr[1], NULL), 0);
	KUNIT_ASSERT_EQ(test, next(t->cq[1], &e, &src, &err), -FI_ETRUNC);
	KUNIT_EXPECT_PTR_EQ(test, err.op_context, (void *)small);
	KUNIT_EXPECT_EQ(test, err.olen, (size_t)22);
	KUNIT_EXPECT_TRUE(test, check_msg(small, 10, 0, 2));
	net_close(test, t);
}

/* RMA to an address: write, read back with two remote iovs, writedata. */
static void rma_to_address(struct kunit *test)
{
	struct net *t = test->priv;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	struct fid_mr *mr;
	struct fi_rma_iov riov[2];
	struct kvec iov;
	struct fi_msg_rma msg = {};
	fi_addr_t src;
	u8 *region, *out, *in;
	u64 key;
	int k;

	region = kunit_kzalloc(test, 8192, GFP_KERNEL);
	out = kunit_kzalloc(test, 4096, GFP_KERNEL);
	in = kunit_kzalloc(test, 4096, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, region);
	KUNIT_ASSERT_NOT_NULL(test, out);
	KUNIT_ASSERT_NOT_NULL(test, in);
	net_open(test, t, 2, FI_AV_MAP);
	KUNIT_ASSERT_EQ(test, fi_mr_reg(t->domain, region, 8192, FI_REMOTE_READ | FI_REMOTE_WRITE,
					0, 7, 0, &mr, NULL), 0);
	key = fi_mr_key(mr);
	fill_msg(out, 4096, 0, 3);
	KUNIT_ASSERT_EQ(test, fi_write(t->ep[0], out, 4096, NULL, t->addr[1], 1000, key,
				       out), 0);
	KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
	KUNIT_EXPECT_EQ(test, e.flags & (FI_RMA | FI_WRITE), FI_RMA | FI_WRITE);

	/* Read it back in two pieces of the region into one buffer. */
	riov[0] = (struct fi_rma_iov){ .addr = 1000, .len = 1000, .key = key };
	riov[1] = (struct fi_rma_iov){ .addr = 2000, .len = 3096, .key = key };
	iov = (struct kvec){ .iov_base = in, .iov_len = 4096 };
	msg = (struct fi_msg_rma){ .msg_iov = &iov, .iov_count = 1, .addr = t->addr[1],
				   .rma_iov = riov, .rma_iov_count = 2, .context = in };
	KUNIT_ASSERT_EQ(test, fi_readmsg(t->ep[0], &msg, 0), 0);
	KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)in);
	KUNIT_EXPECT_TRUE(test, check_msg(in, 4096, 0, 3));
	/* An RDM write completes at FI_INJECT_COMPLETE (on iWARP before its
	 * bytes land): the read after it is what shows them placed. */
	KUNIT_EXPECT_TRUE(test, check_msg(region + 1000, 4096, 0, 3));

	/* Remote CQ data reaches the target's CQ (a receive may carry it). */
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[1], in, 4096, NULL, FI_ADDR_UNSPEC, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_writedata(t->ep[0], out, 16, NULL, 0xfeed, t->addr[1], 0, key,
					   NULL), 0);
	KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
	for (k = 0; k < 2; k++) {
		KUNIT_ASSERT_EQ(test, next(t->cq[1], &e, &src, &err), 1);
		if (e.flags & FI_REMOTE_WRITE)
			break;
	}
	KUNIT_EXPECT_TRUE(test, e.flags & FI_REMOTE_CQ_DATA);
	KUNIT_EXPECT_EQ(test, e.data, 0xfeedULL);
	KUNIT_EXPECT_TRUE(test, check_msg(region, 16, 0, 3));
	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	net_close(test, t);
}

/*
 * Counters on RDM endpoints count what the core's layer completes: sends
 * (injects among them), receives, writes and reads to an address. The
 * peer's RMA reaches the MSG endpoints underneath, so an RDM endpoint has no
 * FI_RMA_EVENT and refuses counters for it.
 */
static void counters(struct kunit *test)
{
	enum { MSGS = 6, LEN = 48 };
	struct net *t = test->priv;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	struct fid_mr *mr;
	struct fid_ep *ep;
	fi_addr_t src;
	u8 *region = kunit_kzalloc(test, 4096, GFP_KERNEL);
	u8 *out = kunit_kzalloc(test, 4096, GFP_KERNEL), *in = kunit_kzalloc(test, 4096, GFP_KERNEL);
	int i;

	KUNIT_ASSERT_TRUE(test, region && out && in);
	net_open(test, t, 0, FI_AV_MAP);
	KUNIT_EXPECT_FALSE(test, t->info->caps & FI_RMA_EVENT);
	t->cntr_flags[0] = FI_SEND | FI_WRITE | FI_READ;
	t->cntr_flags[1] = FI_RECV;
	t->n = 2;
	for (i = 0; i < t->n; i++)
		ep_open(test, t, i);

	for (i = 0; i < MSGS; i++) {
		fill_msg(out + i * LEN, LEN, 0, i);
		KUNIT_ASSERT_EQ(test, fi_recv(t->ep[1], in + i * LEN, LEN, NULL, FI_ADDR_UNSPEC, NULL),
				0);
	}
	for (i = 0; i < MSGS; i++) {
		if (i % 2)
			KUNIT_ASSERT_EQ(test, fi_inject(t->ep[0], out + i * LEN, LEN, t->addr[1]), 0);
		else
			KUNIT_ASSERT_EQ(test, fi_send(t->ep[0], out + i * LEN, LEN, NULL, t->addr[1],
						      out), 0);
	}
	KUNIT_EXPECT_EQ(test, fi_cntr_wait(t->cntr[1], MSGS, WAIT_MS), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_wait(t->cntr[0], MSGS, WAIT_MS), 0);
	for (i = 0; i < MSGS; i++) {
		KUNIT_ASSERT_EQ(test, next(t->cq[1], &e, &src, &err), 1);
		KUNIT_EXPECT_TRUE(test, check_msg(in + i * LEN, LEN, 0, i));
	}
	for (i = 0; i < MSGS / 2; i++)
		KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
	KUNIT_EXPECT_EQ(test, fi_cq_read(t->cq[0], &e, 1), -FI_EAGAIN);

	KUNIT_ASSERT_EQ(test, fi_mr_reg(t->domain, region, 4096, FI_REMOTE_READ | FI_REMOTE_WRITE,
					0, 0, 0, &mr, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_write(t->ep[0], out, 1024, NULL, t->addr[1], 512, fi_mr_key(mr),
				       NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_wait(t->cntr[0], MSGS + 1, WAIT_MS), 0);
	KUNIT_EXPECT_EQ(test, memcmp(region + 512, out, 1024), 0);
	memset(in, 0, 4096);
	KUNIT_ASSERT_EQ(test, fi_read(t->ep[0], in, 1024, NULL, t->addr[1], 512, fi_mr_key(mr),
				      NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_wait(t->cntr[0], MSGS + 2, WAIT_MS), 0);
	KUNIT_EXPECT_EQ(test, memcmp(in, out, 1024), 0);
	KUNIT_EXPECT_EQ(test, fi_cntr_read(t->cntr[1]), (u64)MSGS);
	KUNIT_EXPECT_EQ(test, fi_cntr_readerr(t->cntr[0]), 0ULL);

	KUNIT_ASSERT_EQ(test, fi_endpoint(t->domain, t->info, &ep, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_ep_bind(ep, &t->cntr[1]->fid, FI_REMOTE_WRITE), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_close(&ep->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	net_close(test, t);
}

/*
 * An endpoint talking to more peers than it keeps connections for: idle
 * ones are let go (by handshake) and made again on use, and every message
 * both ways still arrives once, in order, from the right source.
 */
static void idle_connections_bounded(struct kunit *test)
{
	enum { PEERS = 6, ROUNDS = 4 };
	struct net *t = test->priv;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	size_t cache = 2, conns = 0, len = sizeof(conns);
	u8 tx[64], rx[64];
	int r, j;

	net_open(test, t, 1 + PEERS, FI_AV_MAP);
	KUNIT_EXPECT_EQ(test, fi_setopt(&t->ep[0]->fid, FI_OPT_ENDPOINT, KOFI_OPT_RDM_CONN_CACHE,
					&conns, sizeof(conns)), -EINVAL);
	KUNIT_ASSERT_EQ(test, fi_setopt(&t->ep[0]->fid, FI_OPT_ENDPOINT, KOFI_OPT_RDM_CONN_CACHE,
					&cache, sizeof(cache)), 0);
	for (r = 0; r < ROUNDS; r++)
		for (j = 1; j <= PEERS; j++) {
			/* There, and back. */
			fill_msg(tx, sizeof(tx), 0, r * PEERS + j);
			KUNIT_ASSERT_EQ(test, fi_recv(t->ep[j], rx, sizeof(rx), NULL, FI_ADDR_UNSPEC,
						      rx), 0);
			KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[0], tx, sizeof(tx), NULL, t->addr[j],
							tx), 0);
			KUNIT_ASSERT_EQ(test, next(t->cq[j], &e, &src, &err), 1);
			KUNIT_EXPECT_EQ(test, src, t->addr[0]);
			KUNIT_EXPECT_TRUE(test, check_msg(rx, sizeof(rx), 0, r * PEERS + j));
			KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
			fill_msg(tx, sizeof(tx), j, r);
			KUNIT_ASSERT_EQ(test, fi_recv(t->ep[0], rx, sizeof(rx), NULL, FI_ADDR_UNSPEC,
						      rx), 0);
			KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[j], tx, sizeof(tx), NULL, t->addr[0],
							tx), 0);
			KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
			KUNIT_EXPECT_EQ(test, src, t->addr[j]);
			KUNIT_EXPECT_TRUE(test, check_msg(rx, sizeof(rx), j, r));
			KUNIT_ASSERT_EQ(test, next(t->cq[j], &e, &src, &err), 1);
		}
	/* The handshakes of the last ones let go settle; then within bound. */
	msleep(500);
	KUNIT_ASSERT_EQ(test, fi_getopt(&t->ep[0]->fid, FI_OPT_ENDPOINT, KOFI_OPT_RDM_CONNS, &conns,
					&len), 0);
	KUNIT_EXPECT_LE(test, conns, cache);
	KUNIT_EXPECT_GE(test, conns, (size_t)1);
	/* Nothing arrived twice. */
	for (j = 0; j <= PEERS; j++)
		KUNIT_EXPECT_EQ(test, fi_cq_read(t->cq[j], &e, 1), -FI_EAGAIN);
	net_close(test, t);
}

/* A raw MSG endpoint of @t's domain connecting to @name with @data. */
static void raw_connect(struct kunit *test, struct net *t, struct side *raw, const void *name,
			const void *data, size_t len)
{
	struct pair p = { .prov = prov, .fabric = t->fabric, .domain = t->domain };

	raw->info = test_info(test, prov, node, NULL, 0);
	open_queues(test, &p, raw);
	KUNIT_ASSERT_EQ(test, fi_endpoint(t->domain, raw->info, &raw->ep, NULL), 0);
	bind_enable(test, raw);
	KUNIT_ASSERT_EQ(test, fi_connect(raw->ep, name, data, len), 0);
}

/* Endpoint 1's message @seq arrives at endpoint 0, from endpoint 1: the
 * endpoint still serves its peers. */
static void still_serves(struct kunit *test, struct net *t, u32 seq)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	u8 rx[64], msg[32];

	fill_msg(msg, sizeof(msg), 1, seq);
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[0], rx, sizeof(rx), NULL, FI_ADDR_UNSPEC, rx), 0);
	KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[1], msg, sizeof(msg), NULL, t->addr[0], NULL), 0);
	KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
	KUNIT_EXPECT_EQ(test, src, t->addr[1]);
	KUNIT_EXPECT_TRUE(test, check_msg(rx, sizeof(msg), 1, seq));
	KUNIT_ASSERT_EQ(test, next(t->cq[1], &e, &src, &err), 1);
}

/* A request's payload naming @name (@len bytes) with port 9, on another
 * host when @elsewhere. */
static u8 *claimed_name(struct kunit *test, const u8 *name, size_t len, bool elsewhere)
{
	u8 *fake = kunit_kzalloc(test, 4 + len, GFP_KERNEL);
	struct sockaddr_in *sin = (struct sockaddr_in *)(fake + 4);
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)(fake + 4);

	KUNIT_ASSERT_NOT_NULL(test, fake);
	memcpy(fake, "kRDM", 4);
	memcpy(fake + 4, name, len);
	sin->sin_port = htons(9);
	if (elsewhere && sin->sin_family == AF_INET)
		sin->sin_addr.s_addr ^= htonl(0x55);
	else if (elsewhere)
		sin6->sin6_addr.s6_addr[15] ^= 0x55;
	return fake;
}

/*
 * A peer's name is what it claims, and the transport vouches for its host:
 * a connection claiming a name on another host is refused (it could take
 * messages meant for that peer and speak in its name), and the endpoint
 * goes on serving.
 */
static void spoofed_name_refused(struct kunit *test)
{
	struct net *t = test->priv;
	struct side raw = {};
	struct cm_event *ev = kunit_kzalloc(test, sizeof(*ev), GFP_KERNEL);
	struct fi_eq_err_entry eqe = {};
	size_t len = 128;
	u8 *name = kunit_kzalloc(test, len, GFP_KERNEL);

	KUNIT_ASSERT_TRUE(test, ev && name);
	net_open(test, t, 2, FI_AV_MAP);
	KUNIT_ASSERT_EQ(test, fi_getname(&t->ep[0]->fid, name, &len), 0);
	raw_connect(test, t, &raw, name, claimed_name(test, name, len, true), 4 + len);
	KUNIT_EXPECT_EQ(test, cm_wait(raw.eq, FI_CONNECTED, ev), (ssize_t)-FI_EAVAIL);
	KUNIT_EXPECT_EQ(test, fi_eq_readerr(raw.eq, &eqe, 0), (ssize_t)sizeof(eqe));
	KUNIT_EXPECT_EQ(test, eqe.err, ECONNREFUSED);
	side_close(test, &raw);
	/* The same claim from this host is taken. */
	raw_connect(test, t, &raw, name, claimed_name(test, name, len, false), 4 + len);
	KUNIT_EXPECT_EQ(test, cm_wait(raw.eq, FI_CONNECTED, ev), (ssize_t)sizeof(ev->entry));
	side_close(test, &raw);
	still_serves(test, t, 7);
	net_close(test, t);
}

/*
 * fi_cancel on an RDM endpoint: a receive from any peer is taken back with
 * FI_ECANCELED and its context; the next message goes to the next receive;
 * cancelling it again, or one that completed, gives -FI_ENOENT.
 */
static void cancel_receive(struct kunit *test)
{
	struct net *t = test->priv;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = {};
	fi_addr_t src;
	u8 rx[2][64], msg[32];

	net_open(test, t, 2, FI_AV_MAP);
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[0], rx[0], sizeof(rx[0]), NULL, FI_ADDR_UNSPEC, rx[0]), 0);
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[0], rx[1], sizeof(rx[1]), NULL, FI_ADDR_UNSPEC, rx[1]), 0);
	KUNIT_EXPECT_EQ(test, fi_cancel(&t->ep[0]->fid, rx[0]), 0);
	KUNIT_EXPECT_EQ(test, next(t->cq[0], &e, &src, &err), (ssize_t)-FI_ECANCELED);
	KUNIT_EXPECT_PTR_EQ(test, err.op_context, (void *)rx[0]);
	KUNIT_EXPECT_TRUE(test, err.flags & FI_RECV);
	KUNIT_EXPECT_EQ(test, fi_cancel(&t->ep[0]->fid, rx[0]), -FI_ENOENT);

	fill_msg(msg, sizeof(msg), 1, 4);
	KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[1], msg, sizeof(msg), NULL, t->addr[0], NULL), 0);
	KUNIT_ASSERT_EQ(test, next(t->cq[0], &e, &src, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)rx[1]);
	KUNIT_EXPECT_TRUE(test, check_msg(rx[1], sizeof(msg), 1, 4));
	KUNIT_ASSERT_EQ(test, next(t->cq[1], &e, &src, &err), 1);
	KUNIT_EXPECT_EQ(test, fi_cancel(&t->ep[0]->fid, rx[1]), -FI_ENOENT);
	net_close(test, t);
}

/* Waits up to 5 s for endpoint 0 to have @want connections open. */
static void wait_conns(struct kunit *test, struct net *t, size_t want)
{
	size_t n = 0, len;
	int i;

	for (i = 0; i < 100; i++) {
		len = sizeof(n);
		KUNIT_ASSERT_EQ(test, fi_getopt(&t->ep[0]->fid, FI_OPT_ENDPOINT, KOFI_OPT_RDM_CONNS,
						&n, &len), 0);
		if (n == want)
			return;
		msleep(50);
	}
	KUNIT_FAIL(test, "%zu connections open, not %zu", n, want);
}

/* A connection claiming @fake (its name's port set to @port) to endpoint 0
 * of @t at @name: connected, or (@refused) refused. */
static void claim(struct kunit *test, struct net *t, struct side *raw, const u8 *name, u8 *fake,
		  size_t len, u16 port, bool refused)
{
	struct cm_event ev;
	struct fi_eq_err_entry eqe = {};

	/* sin_port and sin6_port are at the same offset. */
	((struct sockaddr_in *)(fake + 4))->sin_port = htons(port);
	raw_connect(test, t, raw, name, fake, 4 + len);
	if (!refused) {
		KUNIT_EXPECT_EQ(test, cm_wait(raw->eq, FI_CONNECTED, &ev), (ssize_t)sizeof(ev.entry));
		return;
	}
	KUNIT_EXPECT_EQ(test, cm_wait(raw->eq, FI_CONNECTED, &ev), (ssize_t)-FI_EAVAIL);
	KUNIT_EXPECT_EQ(test, fi_eq_readerr(raw->eq, &eqe, 0), (ssize_t)sizeof(eqe));
	KUNIT_EXPECT_EQ(test, eqe.err, ECONNREFUSED);
}

/*
 * The peer table is bounded (KOFI_OPT_RDM_PEERS) and names a flood of
 * peers claimed cannot fill it for good: while every record is in use a
 * new peer is refused; once a peer has nothing open, its record goes to
 * the next. After more names than records, a real peer new to the endpoint
 * is served.
 */
static void peer_records_reused(struct kunit *test)
{
	enum { RECORDS = 2, MORE = 6 };
	struct net *t = test->priv;
	struct side held[RECORDS] = {}, extra = {};
	size_t v, len = 128;
	u8 *name = kunit_kzalloc(test, len, GFP_KERNEL), *fake;
	int i;

	KUNIT_ASSERT_NOT_NULL(test, name);
	net_open(test, t, 2, FI_AV_MAP);
	v = 0;
	KUNIT_EXPECT_EQ(test, fi_setopt(&t->ep[0]->fid, FI_OPT_ENDPOINT, KOFI_OPT_RDM_PEERS, &v,
					sizeof(v)), -EINVAL);
	v = KOFI_RDM_PEERS_MAX + 1;
	KUNIT_EXPECT_EQ(test, fi_setopt(&t->ep[0]->fid, FI_OPT_ENDPOINT, KOFI_OPT_RDM_PEERS, &v,
					sizeof(v)), -EINVAL);
	v = RECORDS;
	KUNIT_ASSERT_EQ(test, fi_setopt(&t->ep[0]->fid, FI_OPT_ENDPOINT, KOFI_OPT_RDM_PEERS, &v,
					sizeof(v)), 0);
	KUNIT_ASSERT_EQ(test, fi_getname(&t->ep[0]->fid, name, &len), 0);
	fake = claimed_name(test, name, len, false);

	for (i = 0; i < RECORDS; i++)
		claim(test, t, &held[i], name, fake, len, 21000 + i, false);
	claim(test, t, &extra, name, fake, len, 21000 + RECORDS, true);
	side_close(test, &extra);
	for (i = 0; i < RECORDS; i++)
		side_close(test, &held[i]);
	wait_conns(test, t, 0);

	for (i = 0; i < MORE; i++) {
		claim(test, t, &extra, name, fake, len, 21100 + i, false);
		side_close(test, &extra);
		wait_conns(test, t, 0);
	}
	still_serves(test, t, 9);
	net_close(test, t);
}

/*
 * Peers that connect and then never answer the endpoint's BYE cannot hold
 * every connection it may have: with all 256 in use, the least recently
 * used one being let go is closed for a new peer, whose message arrives
 * (the new peer was refused before).
 */
static void held_connections_make_room(struct kunit *test)
{
	enum { HELD = 256 };
	struct net *t = test->priv;
	struct fid_ep **raw = kunit_kcalloc(test, HELD, sizeof(*raw), GFP_KERNEL);
	struct fi_eq_attr eq_attr = { .size = 2 * HELD + 16 };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .size = 64 };
	struct cm_event *ev = kunit_kzalloc(test, sizeof(*ev), GFP_KERNEL);
	struct fi_eq_err_entry eqe = {};
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fi_info *info;
	size_t cache = 2, len = 128;
	u8 *name = kunit_kzalloc(test, len, GFP_KERNEL), *fake;
	int i, opened, ret, connected = 0, failed = 0, shut = 0;
	u32 event;
	ssize_t n;

	if (strcmp(prov, "sock"))
		kunit_skip(test, "256 connections a side: kofi_sock only (minutes on soft RDMA under TCG)");
	KUNIT_ASSERT_TRUE(test, raw && ev && name);
	net_open(test, t, 2, FI_AV_MAP);
	KUNIT_ASSERT_EQ(test, fi_setopt(&t->ep[0]->fid, FI_OPT_ENDPOINT, KOFI_OPT_RDM_CONN_CACHE,
					&cache, sizeof(cache)), 0);
	KUNIT_ASSERT_EQ(test, fi_getname(&t->ep[0]->fid, name, &len), 0);
	fake = claimed_name(test, name, len, false);
	info = test_info(test, prov, node, NULL, 0);
	KUNIT_ASSERT_EQ(test, fi_eq_open(t->fabric, &eq_attr, &eq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_open(t->domain, &cq_attr, &cq, NULL), 0);
	/* Failures are EXPECTs: what was opened is closed whatever happens. */
	for (opened = 0; opened < HELD; opened++) {
		/* Each a peer of its own (its name's port), silent after. */
		((struct sockaddr_in *)(fake + 4))->sin_port = htons(20000 + opened);
		if (fi_endpoint(t->domain, info, &raw[opened], NULL)) {
			KUNIT_FAIL(test, "endpoint %d not opened", opened);
			break;
		}
		ret = fi_ep_bind(raw[opened], &eq->fid, 0) ?:
		      fi_ep_bind(raw[opened], &cq->fid, FI_SEND | FI_RECV) ?:
		      fi_enable(raw[opened]) ?: fi_connect(raw[opened], name, fake, 4 + len);
		if (ret) {
			KUNIT_FAIL(test, "endpoint %d: %d", opened, ret);
			opened++;
			break;
		}
	}
	while (opened == HELD && connected + failed < HELD) {
		n = fi_eq_sread(eq, &event, ev, sizeof(*ev), 10000, 0);
		if (n == -FI_EAVAIL) {
			fi_eq_readerr(eq, &eqe, 0);
			failed++;
			continue;
		}
		if (n < 0)
			break;
		connected += event == FI_CONNECTED;
	}
	KUNIT_EXPECT_EQ_MSG(test, failed, 0, "the last failure: %d", eqe.err);
	KUNIT_EXPECT_EQ(test, connected, (int)HELD);

	if (connected == HELD) {
		/* A new peer: room is made, its message arrives. */
		still_serves(test, t, 3);
		/* A held one was let go for it. */
		while ((n = fi_eq_sread(eq, &event, ev, sizeof(*ev), 2000, 0)) != -FI_EAGAIN) {
			if (n == -FI_EAVAIL)
				fi_eq_readerr(eq, &eqe, 0);
			else if (n < 0)
				break;
			shut += n >= 0 && event == FI_SHUTDOWN;
			if (shut)
				break;
		}
		KUNIT_EXPECT_EQ(test, shut, 1);
	}
	for (i = 0; i < opened; i++)
		KUNIT_EXPECT_EQ(test, fi_close(&raw[i]->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&cq->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&eq->fid), 0);
	fi_freeinfo(info);
	net_close(test, t);
}

/*
 * A peer that does not speak the protocol: a request without a name is
 * refused; a malformed header, a segment longer than its message says and a
 * send larger than a segment each get the connection dropped. The endpoint
 * serves its other peers throughout.
 */
static void bad_peer(struct kunit *test)
{
	struct net *t = test->priv;
	struct side raw = {};
	struct cm_event *ev;
	struct fi_eq_err_entry eqe = {};
	u8 *name, *fake;
	size_t len = 128, sizes[8] = { 32, 300, 20000, 124, 40, 16, 32, 16 };
	u8 *bad;
	int k;

	bad = kunit_kzalloc(test, 20000, GFP_KERNEL);
	ev = kunit_kzalloc(test, sizeof(*ev), GFP_KERNEL);
	name = kunit_kzalloc(test, len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, bad);
	KUNIT_ASSERT_NOT_NULL(test, ev);
	KUNIT_ASSERT_NOT_NULL(test, name);
	net_open(test, t, 2, FI_AV_MAP);
	KUNIT_ASSERT_EQ(test, fi_getname(&t->ep[0]->fid, name, &len), 0);

	raw_connect(test, t, &raw, name, "no tag", 6);
	KUNIT_EXPECT_EQ(test, cm_wait(raw.eq, FI_CONNECTED, ev), (ssize_t)-FI_EAVAIL);
	KUNIT_EXPECT_EQ(test, fi_eq_readerr(raw.eq, &eqe, 0), (ssize_t)sizeof(eqe));
	KUNIT_EXPECT_EQ(test, eqe.err, ECONNREFUSED);
	side_close(test, &raw);

	/* A name of this host (the only kind the endpoint accepts). */
	fake = claimed_name(test, name, len, false);
	for (k = 0; k < 8; k++) {
		raw_connect(test, t, &raw, name, fake, 4 + len);
		KUNIT_ASSERT_EQ(test, cm_wait(raw.eq, FI_CONNECTED, ev),
				(ssize_t)sizeof(ev->entry));
		memset(bad, 0xd7, 20000);
		if (k == 1 || k == 3) {
			/* A well-formed 24-byte header saying 100 bytes, then 276. */
			memset(bad, 0, 24);
			bad[0] = 0xd7;
			bad[1] = 1;
			bad[4] = 100;
		}
		if (k == 4 || k == 5) {
			/* An atomic request of no elements; an answer to nothing. */
			memset(bad, 0, 40);
			bad[0] = 0xd7;
			bad[1] = k == 4 ? 4 : 5;
			bad[2] = FI_SUM;
			bad[3] = FI_UINT64;
			memset(bad + 8, k == 4 ? 0 : 0x77, 8);
		}
		if (k == 6) {
			/* A rendezvous announcement of an empty message. */
			memset(bad, 0, 32);
			bad[0] = 0xd7;
			bad[1] = 6;
			bad[24] = 1;
		}
		if (k == 7) {
			/* A request for bytes with its reserved bytes set. */
			memset(bad, 0, 16);
			bad[0] = 0xd7;
			bad[1] = 7;
			bad[2] = 1;
			bad[4] = 100;
		}
		if (k == 3) {
			/*
			 * The first half of a message tagged 5, then the rest
			 * tagged 6 (from another buffer: the first send may
			 * still be reading its own).
			 */
			bad[2] = 2;
			bad[4] = 200;
			bad[16] = 5;
			memcpy(bad + 10000, bad, sizes[k]);
			bad[10000 + 16] = 6;
			KUNIT_ASSERT_EQ(test, fi_send(raw.ep, bad, sizes[k], NULL, 0, NULL), 0);
			KUNIT_ASSERT_EQ(test, fi_send(raw.ep, bad + 10000, sizes[k], NULL, 0, NULL),
					0);
		} else {
			KUNIT_ASSERT_EQ(test, fi_send(raw.ep, bad, sizes[k], NULL, 0, NULL), 0);
		}
		KUNIT_EXPECT_EQ_MSG(test, cm_wait(raw.eq, FI_SHUTDOWN, ev),
				    (ssize_t)sizeof(ev->entry), "case %d: not dropped", k);
		side_close(test, &raw);

		still_serves(test, t, k);
	}
	net_close(test, t);
}

/* Waits for @n send completions of endpoint @i: the messages reached the peer's buffers. */
static void sends_done(struct kunit *test, struct net *t, int i, int n)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;

	while (n--) {
		KUNIT_ASSERT_EQ(test, next_tagged(t->cq[i], &e, &err), 1);
		KUNIT_EXPECT_TRUE(test, e.flags & FI_SEND);
	}
}

/* A receive completion: its context, flags, length, tag, data, and the bytes. */
static void expect_tagged(struct kunit *test, struct net *t, void *ctx, u64 flags, size_t len,
			  u64 tag, u64 data, u32 seq)
{
	struct fi_cq_tagged_entry e = {};
	struct fi_cq_err_entry err = {};

	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, ctx);
	KUNIT_EXPECT_EQ(test, e.flags, flags);
	KUNIT_EXPECT_EQ(test, e.len, len);
	KUNIT_EXPECT_EQ(test, e.tag, tag);
	if (flags & FI_REMOTE_CQ_DATA)
		KUNIT_EXPECT_EQ(test, e.data, data);
	if (ctx && len)
		KUNIT_EXPECT_TRUE_MSG(test, check_msg(ctx, len, 1, seq), "message %u", seq);
}

/*
 * Tags match outside the ignore bits; tagged and untagged messages never
 * match each other; a tagged message no receive wants waits for one.
 */
static void tagged_matching(struct kunit *test)
{
	struct net *t = test->priv;
	u8 *a, *b, *c, *d, *e, *msg;
	struct fi_cq_tagged_entry ce;
	struct fi_cq_err_entry err = {};
	const size_t n = 100;

	a = kunit_kzalloc(test, 5 * n, GFP_KERNEL);
	msg = kunit_kzalloc(test, n, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	KUNIT_ASSERT_NOT_NULL(test, msg);
	b = a + n;
	c = b + n;
	d = c + n;
	e = d + n;
	net_open_format(test, t, 2, FI_AV_MAP, FI_CQ_FORMAT_TAGGED);
	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], a, n, NULL, FI_ADDR_UNSPEC, 0x1200, 0xff, a), 0);
	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], b, n, NULL, FI_ADDR_UNSPEC, 0x5000, 0, b), 0);
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[0], c, n, NULL, FI_ADDR_UNSPEC, c), 0);
	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], e, n, NULL, FI_ADDR_UNSPEC, 0x9998, 0, e), 0);

	/* fi_tsend's buffer stays the consumer's until its completion. */
	fill_msg(msg, 10, 1, 1);
	KUNIT_ASSERT_EQ(test, fi_tsend(t->ep[1], msg, 10, NULL, t->addr[0], 0x5000, msg), 0);
	fill_msg(d, 20, 1, 2);
	KUNIT_ASSERT_EQ(test, fi_tinjectdata(t->ep[1], d, 20, 0xdd, t->addr[0], 0x12ab), 0);
	fill_msg(d, 30, 1, 3);
	KUNIT_ASSERT_EQ(test, fi_inject(t->ep[1], d, 30, t->addr[0]), 0);
	fill_msg(d, 40, 1, 4);
	KUNIT_ASSERT_EQ(test, fi_tinject(t->ep[1], d, 40, t->addr[0], 0x9999), 0);
	/* Only fi_tsend asked for a completion; it says it was tagged. */
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[1], &ce, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, ce.op_context, (void *)msg);
	KUNIT_EXPECT_EQ(test, ce.flags, FI_TAGGED | FI_SEND);

	/* In arrival order, each to the receive whose tag it matches. */
	expect_tagged(test, t, b, FI_TAGGED | FI_RECV, 10, 0x5000, 0, 1);
	expect_tagged(test, t, a, FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA, 20, 0x12ab, 0xdd, 2);
	expect_tagged(test, t, c, FI_MSG | FI_RECV, 30, 0, 0, 3);
	/* 0x9999 is no 0x9998: it waits, and the next receive wanting it takes it. */
	KUNIT_EXPECT_EQ(test, fi_cq_read(t->cq[0], &ce, 1), -FI_EAGAIN);
	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], d, n, NULL, FI_ADDR_UNSPEC, 0x9990, 0xf, d), 0);
	expect_tagged(test, t, d, FI_TAGGED | FI_RECV, 40, 0x9999, 0, 4);
	/* The receive for 0x9998 is still posted: cancelled, it says its tag. */
	KUNIT_EXPECT_EQ(test, fi_cancel(&t->ep[0]->fid, e), 0);
	KUNIT_EXPECT_EQ(test, next_tagged(t->cq[0], &ce, &err), (ssize_t)-FI_ECANCELED);
	KUNIT_EXPECT_PTR_EQ(test, err.op_context, (void *)e);
	KUNIT_EXPECT_EQ(test, err.flags, FI_TAGGED | FI_RECV);
	KUNIT_EXPECT_EQ(test, err.tag, 0x9998ULL);
	/* An untagged receive does not take a tagged message. */
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[0], c, n, NULL, FI_ADDR_UNSPEC, c), 0);
	fill_msg(e, 50, 1, 5);
	KUNIT_ASSERT_EQ(test, fi_tinject(t->ep[1], e, 50, t->addr[0], 7), 0);
	fill_msg(e, 60, 1, 6);
	KUNIT_ASSERT_EQ(test, fi_inject(t->ep[1], e, 60, t->addr[0]), 0);
	expect_tagged(test, t, c, FI_MSG | FI_RECV, 60, 0, 0, 6);
	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], a, n, NULL, FI_ADDR_UNSPEC, 0, ~0ULL, a), 0);
	expect_tagged(test, t, a, FI_TAGGED | FI_RECV, 50, 7, 0, 5);
	net_close(test, t);
}

/*
 * Tagged messages that arrived before any receive, one in several segments,
 * taken in the order the receives ask for them (kvecs and pages), each from
 * the sender a directed receive names.
 */
static void tagged_unexpected(struct kunit *test)
{
	struct net *t = test->priv;
	const size_t big = 150000;
	u8 *msg, *small, *out;
	struct page *page = alloc_pages(GFP_KERNEL, 6);
	struct bio_vec bv[2];
	struct fi_msg_tagged m = {};
	struct fi_cq_tagged_entry e = {};
	struct fi_cq_err_entry err = {};
	fi_addr_t src;

	msg = kunit_kzalloc(test, big, GFP_KERNEL);
	small = kunit_kzalloc(test, 200, GFP_KERNEL);
	out = kunit_kzalloc(test, big, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, page);
	KUNIT_ASSERT_NOT_NULL(test, msg);
	KUNIT_ASSERT_NOT_NULL(test, small);
	KUNIT_ASSERT_NOT_NULL(test, out);
	net_open_format(test, t, 3, FI_AV_TABLE, FI_CQ_FORMAT_TAGGED);
	fill_msg(msg, 100, 1, 1);
	KUNIT_ASSERT_EQ(test, fi_tsend(t->ep[1], msg, 100, NULL, t->addr[0], 1, NULL), 0);
	sends_done(test, t, 1, 1);
	fill_msg(msg, big, 1, 2);
	KUNIT_ASSERT_EQ(test, fi_tsend(t->ep[1], msg, big, NULL, t->addr[0], 2, NULL), 0);
	sends_done(test, t, 1, 1);
	fill_msg(msg, 100, 1, 3);
	KUNIT_ASSERT_EQ(test, fi_tsenddata(t->ep[1], msg, 100, NULL, 33, t->addr[0], 3, NULL), 0);
	sends_done(test, t, 1, 1);
	/* The same tag from endpoint 2, which a receive directed at 1 skips. */
	fill_msg(msg, 100, 2, 3);
	KUNIT_ASSERT_EQ(test, fi_tsend(t->ep[2], msg, 100, NULL, t->addr[0], 3, NULL), 0);
	sends_done(test, t, 2, 1);

	m = (struct fi_msg_tagged){ .msg_iov = &(struct kvec){ small, 200 }, .iov_count = 1,
				    .addr = t->addr[1], .tag = 3, .context = small };
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_COMPLETION), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_sreadfrom(t->cq[0], &e, 1, &src, NULL, WAIT_MS), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)small);
	KUNIT_EXPECT_EQ(test, e.tag, 3ULL);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)100);
	KUNIT_EXPECT_EQ(test, e.data, 33ULL);
	KUNIT_EXPECT_EQ(test, src, t->addr[1]);
	KUNIT_EXPECT_TRUE(test, check_msg(small, 100, 1, 3));

	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], small, 200, NULL, FI_ADDR_UNSPEC, 1, 0, small), 0);
	expect_tagged(test, t, small, FI_TAGGED | FI_RECV, 100, 1, 0, 1);

	/* Into two runs of pages at odd offsets. */
	bvec_set_page(&bv[0], page, 30001, 7);
	bvec_set_page(&bv[1], page, big - 30001, 7 + 30001 + 99);
	m = (struct fi_msg_tagged){ .msg_bvec = bv, .iov_count = 2, .addr = FI_ADDR_UNSPEC,
				    .tag = 2, .context = out };
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_COMPLETION), 0);
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)out);
	KUNIT_EXPECT_EQ(test, e.len, big);
	KUNIT_EXPECT_EQ(test, e.tag, 2ULL);
	memcpy(out, page_address(page) + 7, 30001);
	memcpy(out + 30001, page_address(page) + 7 + 30001 + 99, big - 30001);
	KUNIT_EXPECT_TRUE(test, check_msg(out, big, 1, 2));

	/* Endpoint 2's is still there. */
	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], small, 200, NULL, FI_ADDR_UNSPEC, 3, 0, small), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_sreadfrom(t->cq[0], &e, 1, &src, NULL, WAIT_MS), 1);
	KUNIT_EXPECT_EQ(test, src, t->addr[2]);
	KUNIT_EXPECT_TRUE(test, check_msg(small, 100, 2, 3));
	net_close(test, t);
	__free_pages(page, 6);
}

/* Peeks until a message tagged @tag has reached endpoint 0 (up to 5 s). */
static void wait_arrived(struct kunit *test, struct net *t, u64 tag)
{
	struct fi_msg_tagged m = { .addr = FI_ADDR_UNSPEC, .tag = tag, .context = t };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	int k;

	for (k = 0; k < 250; k++) {
		KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK), 0);
		if (next_tagged(t->cq[0], &e, &err) == 1)
			return;
		KUNIT_ASSERT_EQ(test, err.err, FI_ENOMSG);
		msleep(20);
	}
	KUNIT_FAIL(test, "tag %llu never arrived", tag);
}

/* fi_trecvmsg with FI_PEEK, FI_PEEK | FI_CLAIM, FI_CLAIM and FI_DISCARD. */
static void tagged_peek_claim_discard(struct kunit *test)
{
	struct net *t = test->priv;
	u8 *msg, *rx1, *rx2, *rx3;
	int peek_ctx, claim_ctx, claim2_ctx, unknown_ctx;
	struct fi_msg_tagged m = {};
	struct fi_cq_tagged_entry e = {};
	struct fi_cq_err_entry err = {};
	const size_t n = 64;
	u64 tag;

	msg = kunit_kzalloc(test, n, GFP_KERNEL);
	rx1 = kunit_kzalloc(test, 3 * n, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, msg);
	KUNIT_ASSERT_NOT_NULL(test, rx1);
	rx2 = rx1 + n;
	rx3 = rx2 + n;
	net_open_format(test, t, 2, FI_AV_MAP, FI_CQ_FORMAT_TAGGED);
	for (tag = 7; tag <= 11; tag++) {
		fill_msg(msg, 10 + tag, 1, tag);
		if (tag == 7)
			KUNIT_ASSERT_EQ(test, fi_tsenddata(t->ep[1], msg, 10 + tag, NULL, 0x77,
							   t->addr[0], tag, NULL), 0);
		else
			KUNIT_ASSERT_EQ(test, fi_tsend(t->ep[1], msg, 10 + tag, NULL, t->addr[0],
						       tag, NULL), 0);
		sends_done(test, t, 1, 1);
	}
	/* In order on one connection: 11 there, all there. */
	wait_arrived(test, t, 11);
	m.addr = FI_ADDR_UNSPEC;

	/* Nothing tagged 6: FI_ENOMSG, with the peek's context. */
	m.tag = 6;
	m.context = &peek_ctx;
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK), 0);
	KUNIT_EXPECT_EQ(test, next_tagged(t->cq[0], &e, &err), (ssize_t)-FI_ENOMSG);
	KUNIT_EXPECT_PTR_EQ(test, err.op_context, (void *)&peek_ctx);
	/* Tagged 7: its length, tag and data, no bytes; it stays. */
	m.tag = 7;
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK), 0);
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)&peek_ctx);
	KUNIT_EXPECT_EQ(test, e.flags, FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)17);
	KUNIT_EXPECT_EQ(test, e.tag, 7ULL);
	KUNIT_EXPECT_EQ(test, e.data, 0x77ULL);
	KUNIT_EXPECT_NULL(test, e.buf);
	/* Claim 8. */
	m.tag = 8;
	m.context = &claim_ctx;
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK | FI_CLAIM), 0);
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_EQ(test, e.tag, 8ULL);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)18);
	/* One claim per context. */
	m.tag = 9;
	KUNIT_EXPECT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK | FI_CLAIM), -EINVAL);
	/* Receives for any tag take 7 then 9: 8 is claimed. */
	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], rx1, n, NULL, FI_ADDR_UNSPEC, 0, ~0ULL, rx1), 0);
	expect_tagged(test, t, rx1, FI_TAGGED | FI_RECV | FI_REMOTE_CQ_DATA, 17, 7, 0x77, 7);
	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], rx2, n, NULL, FI_ADDR_UNSPEC, 0, ~0ULL, rx2), 0);
	expect_tagged(test, t, rx2, FI_TAGGED | FI_RECV, 19, 9, 0, 9);
	/* The claim's receive gets 8, whatever tag it names. */
	m = (struct fi_msg_tagged){ .msg_iov = &(struct kvec){ rx3, n }, .iov_count = 1,
				    .addr = FI_ADDR_UNSPEC, .tag = 1234, .context = &claim_ctx };
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_CLAIM), 0);
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)&claim_ctx);
	KUNIT_EXPECT_EQ(test, e.tag, 8ULL);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)18);
	KUNIT_EXPECT_TRUE(test, check_msg(rx3, 18, 1, 8));
	/* A claim nothing was claimed with. */
	m.context = &unknown_ctx;
	KUNIT_EXPECT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_CLAIM), -FI_ENOMSG);
	/* Peek and drop 10: a peek finds it no more. */
	m = (struct fi_msg_tagged){ .addr = FI_ADDR_UNSPEC, .tag = 10, .context = &peek_ctx };
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK | FI_DISCARD), 0);
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_EQ(test, e.tag, 10ULL);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)20);
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK), 0);
	KUNIT_EXPECT_EQ(test, next_tagged(t->cq[0], &e, &err), (ssize_t)-FI_ENOMSG);
	/* Claim 11, then drop it through its claim: a completion of no bytes. */
	m.tag = 11;
	m.context = &claim2_ctx;
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK | FI_CLAIM), 0);
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_CLAIM | FI_DISCARD), 0);
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)&claim2_ctx);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)0);
	KUNIT_EXPECT_EQ(test, e.tag, 11ULL);
	m.context = &peek_ctx;
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK), 0);
	KUNIT_EXPECT_EQ(test, next_tagged(t->cq[0], &e, &err), (ssize_t)-FI_ENOMSG);
	/* The endpoint still works: nothing of the dropped ones is left. */
	fill_msg(msg, 30, 1, 12);
	KUNIT_ASSERT_EQ(test, fi_tinject(t->ep[1], msg, 30, t->addr[0], 12), 0);
	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], rx1, n, NULL, FI_ADDR_UNSPEC, 0, ~0ULL, rx1), 0);
	expect_tagged(test, t, rx1, FI_TAGGED | FI_RECV, 30, 12, 0, 12);
	net_close(test, t);
}

/*
 * Messages of 256 KiB and more go by rendezvous (rdm.rst): into a receive
 * posted first; announced before their receive, matched in arrival order
 * with the small messages around them; truncated; into pages; peeked,
 * claimed and dropped. Every byte is checked, and every send completes.
 */
static void large_messages(struct kunit *test)
{
	struct net *t = test->priv;
	const size_t big = 1 << 20, mid = 600000, cut = 200001, run = 60000;
	u8 *msg = test_vzalloc(test, big), *msg2 = test_vzalloc(test, big);
	u8 *rx = test_vzalloc(test, big), *small = test_vzalloc(test, 2 * 256);
	struct page *pages[5];
	struct bio_vec bv[5];
	struct fi_msg mm;
	struct fi_msg_tagged m = {};
	struct fi_cq_tagged_entry e = {};
	struct fi_cq_err_entry err = {};
	bool got[3] = {};
	int claim_ctx, peek_ctx, k;

	KUNIT_ASSERT_TRUE(test, msg && msg2 && rx && small);
	net_open_format(test, t, 2, FI_AV_MAP, FI_CQ_FORMAT_TAGGED);

	/* Into a receive posted first. */
	fill_msg(msg, big, 1, 1);
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[0], rx, big, NULL, FI_ADDR_UNSPEC, rx), 0);
	KUNIT_ASSERT_EQ(test, fi_send(t->ep[1], msg, big, NULL, t->addr[0], msg), 0);
	expect_tagged(test, t, rx, FI_MSG | FI_RECV, big, 0, 0, 1);
	sends_done(test, t, 1, 1);

	/* Announced between two small ones before any receive: the receives
	 * take them in arrival order, whichever completes first. */
	fill_msg(small, 100, 1, 2);
	KUNIT_ASSERT_EQ(test, fi_tinject(t->ep[1], small, 100, t->addr[0], 2), 0);
	fill_msg(msg, mid, 1, 3);
	KUNIT_ASSERT_EQ(test, fi_tsend(t->ep[1], msg, mid, NULL, t->addr[0], 3, msg), 0);
	fill_msg(small, 100, 1, 4);
	KUNIT_ASSERT_EQ(test, fi_tinject(t->ep[1], small, 100, t->addr[0], 4), 0);
	wait_arrived(test, t, 4);
	/* By rendezvous: the large send waits for its receive. */
	KUNIT_EXPECT_EQ(test, fi_cq_read(t->cq[1], &e, 1), (ssize_t)-FI_EAGAIN);
	memset(small, 0, 256);
	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], small, 256, NULL, FI_ADDR_UNSPEC, 0, ~0ULL,
				       small), 0);
	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], rx, big, NULL, FI_ADDR_UNSPEC, 0, ~0ULL, rx), 0);
	KUNIT_ASSERT_EQ(test, fi_trecv(t->ep[0], small + 256, 256, NULL, FI_ADDR_UNSPEC, 0, ~0ULL,
				       small + 256), 0);
	for (k = 0; k < 3; k++) {
		KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
		if (e.op_context == small) {
			got[0] = true;
			KUNIT_EXPECT_EQ(test, e.tag, 2ULL);
			KUNIT_EXPECT_TRUE(test, e.len == 100 && check_msg(small, 100, 1, 2));
		} else if (e.op_context == rx) {
			got[1] = true;
			KUNIT_EXPECT_EQ(test, e.tag, 3ULL);
			KUNIT_EXPECT_TRUE(test, e.len == mid && check_msg(rx, mid, 1, 3));
		} else {
			got[2] = true;
			KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)(small + 256));
			KUNIT_EXPECT_EQ(test, e.tag, 4ULL);
			KUNIT_EXPECT_TRUE(test, e.len == 100 && check_msg(small + 256, 100, 1, 4));
		}
	}
	KUNIT_EXPECT_TRUE(test, got[0] && got[1] && got[2]);
	sends_done(test, t, 1, 1);

	/* Truncated: the prefix lands, the rest is reported, the send completes. */
	fill_msg(msg, big, 1, 5);
	memset(rx, 0, big);
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[0], rx, cut, NULL, FI_ADDR_UNSPEC, rx), 0);
	KUNIT_ASSERT_EQ(test, fi_send(t->ep[1], msg, big, NULL, t->addr[0], msg), 0);
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), (ssize_t)-FI_ETRUNC);
	KUNIT_EXPECT_PTR_EQ(test, err.op_context, (void *)rx);
	KUNIT_EXPECT_EQ(test, err.len, cut);
	KUNIT_EXPECT_EQ(test, err.olen, big - cut);
	KUNIT_EXPECT_TRUE(test, check_msg(rx, cut, 1, 5));
	KUNIT_EXPECT_EQ(test, rx[cut], 0);
	sends_done(test, t, 1, 1);

	/* Into five runs of pages at odd offsets. */
	for (k = 0; k < 5; k++) {
		pages[k] = alloc_pages(GFP_KERNEL, 4);
		KUNIT_ASSERT_NOT_NULL(test, pages[k]);
		bvec_set_page(&bv[k], pages[k], run, 17 + k);
	}
	fill_msg(msg, 5 * run, 1, 6);
	mm = (struct fi_msg){ .msg_bvec = bv, .iov_count = 5, .addr = FI_ADDR_UNSPEC,
			      .context = bv };
	KUNIT_ASSERT_EQ(test, fi_recvmsg(t->ep[0], &mm, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_send(t->ep[1], msg, 5 * run, NULL, t->addr[0], msg), 0);
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)bv);
	KUNIT_EXPECT_EQ(test, e.len, 5 * run);
	for (k = 0; k < 5; k++)
		memcpy(rx + k * run, page_address(pages[k]) + 17 + k, run);
	KUNIT_EXPECT_TRUE(test, check_msg(rx, 5 * run, 1, 6));
	sends_done(test, t, 1, 1);
	for (k = 0; k < 5; k++)
		__free_pages(pages[k], 4);

	/* Peeked and claimed, peeked and dropped: both senders complete. */
	fill_msg(msg, big, 1, 7);
	KUNIT_ASSERT_EQ(test, fi_tsend(t->ep[1], msg, big, NULL, t->addr[0], 7, msg), 0);
	fill_msg(msg2, mid, 1, 8);
	KUNIT_ASSERT_EQ(test, fi_tsend(t->ep[1], msg2, mid, NULL, t->addr[0], 8, msg2), 0);
	wait_arrived(test, t, 8);
	m = (struct fi_msg_tagged){ .addr = FI_ADDR_UNSPEC, .tag = 7, .context = &claim_ctx };
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK | FI_CLAIM), 0);
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_EQ(test, e.len, big);
	KUNIT_EXPECT_EQ(test, e.tag, 7ULL);
	m = (struct fi_msg_tagged){ .addr = FI_ADDR_UNSPEC, .tag = 8, .context = &peek_ctx };
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK | FI_DISCARD), 0);
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_EQ(test, e.len, mid);
	KUNIT_EXPECT_EQ(test, e.tag, 8ULL);
	memset(rx, 0, big);
	m = (struct fi_msg_tagged){ .msg_iov = &(struct kvec){ rx, big }, .iov_count = 1,
				    .addr = FI_ADDR_UNSPEC, .tag = 7, .context = &claim_ctx };
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_CLAIM), 0);
	KUNIT_ASSERT_EQ(test, next_tagged(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)&claim_ctx);
	KUNIT_EXPECT_EQ(test, e.len, big);
	KUNIT_EXPECT_TRUE(test, check_msg(rx, big, 1, 7));
	sends_done(test, t, 1, 2);
	m = (struct fi_msg_tagged){ .addr = FI_ADDR_UNSPEC, .tag = 8, .context = &peek_ctx };
	KUNIT_ASSERT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK), 0);
	KUNIT_EXPECT_EQ(test, next_tagged(t->cq[0], &e, &err), (ssize_t)-FI_ENOMSG);
	net_close(test, t);
}

/* What the tagged calls refuse. */
static void tagged_bad_arguments(struct kunit *test)
{
	struct net *t = test->priv;
	u8 buf[16] = {};
	int ctx;
	struct kvec iov = { buf, 8 };
	struct fi_msg_tagged m = { .msg_iov = &iov, .iov_count = 1, .context = &ctx };

	net_open_format(test, t, 1, FI_AV_MAP, FI_CQ_FORMAT_TAGGED);
	m.addr = t->addr[0];
	KUNIT_EXPECT_EQ(test, fi_tsendmsg(t->ep[0], NULL, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_trecvmsg(t->ep[0], NULL, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_tsendmsg(NULL, &m, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_trecvmsg(NULL, &m, 0), -EINVAL);
	/* Receive flags on a send, and the reverse. */
	KUNIT_EXPECT_EQ(test, fi_tsendmsg(t->ep[0], &m, FI_PEEK), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_tsendmsg(t->ep[0], &m, FI_CLAIM), -FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_INJECT), -FI_EBADFLAGS);
	/* A discard of what was neither peeked at nor claimed. */
	KUNIT_EXPECT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_DISCARD), -FI_EBADFLAGS);
	/* A claim needs its context. */
	m.context = NULL;
	KUNIT_EXPECT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_PEEK | FI_CLAIM), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_trecvmsg(t->ep[0], &m, FI_CLAIM), -EINVAL);
	/* Addresses not in the AV; buffers that are not there. */
	KUNIT_EXPECT_EQ(test, fi_tsend(t->ep[0], buf, 8, NULL, 42, 1, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_trecv(t->ep[0], NULL, 8, NULL, FI_ADDR_UNSPEC, 1, 0, NULL),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, fi_tsendv(t->ep[0], NULL, NULL, 1, t->addr[0], 1, NULL), -EINVAL);
	/* Beyond the inject size and the iov limit. */
	KUNIT_EXPECT_EQ(test, fi_tinject(t->ep[0], buf, t->info->tx_attr->inject_size + 1,
					 t->addr[0], 1), -FI_EMSGSIZE);
	KUNIT_EXPECT_EQ(test, fi_trecvv(t->ep[0], &iov, NULL, t->info->rx_attr->iov_limit + 1,
					FI_ADDR_UNSPEC, 1, 0, NULL), -EINVAL);
	net_close(test, t);
}

/* The next completion of @cq as a data entry, its source aside. */
static ssize_t next_entry(struct fid_cq *cq, struct fi_cq_data_entry *e,
			  struct fi_cq_err_entry *err)
{
	fi_addr_t src;

	return next(cq, e, &src, err);
}

/*
 * FI_MULTI_RECV: one buffer takes message after message (8-aligned), each
 * completion pointing at its message; once less than FI_OPT_MIN_MULTI_RECV
 * is left the buffer is released, said by a completion of FI_MULTI_RECV
 * alone. A message larger than what is left is truncated.
 */
static void multi_recv(struct kunit *test)
{
	struct net *t = test->priv;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = {};
	const size_t sizes[4] = { 300, 200, 250, 180 }, at[4] = { 0, 304, 504, 760 };
	size_t min = 100, len = sizeof(min);
	u8 *buf, *msg, *rest;
	struct kvec two[2];
	struct fi_msg m = {};
	int k, ctx;

	buf = kunit_kzalloc(test, 1000, GFP_KERNEL);
	msg = kunit_kzalloc(test, 4 * 1024, GFP_KERNEL);
	rest = kunit_kzalloc(test, 1024, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	KUNIT_ASSERT_NOT_NULL(test, msg);
	KUNIT_ASSERT_NOT_NULL(test, rest);
	net_open(test, t, 2, FI_AV_MAP);
	KUNIT_ASSERT_TRUE(test, t->info->caps & FI_MULTI_RECV);
	KUNIT_ASSERT_EQ(test, fi_setopt(&t->ep[0]->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
					sizeof(min)), 0);
	min = 0;
	KUNIT_ASSERT_EQ(test, fi_getopt(&t->ep[0]->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
					&len), 0);
	KUNIT_EXPECT_EQ(test, min, (size_t)100);
	KUNIT_EXPECT_EQ(test, fi_setopt(&t->ep[0]->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
					1), -EINVAL);

	/* The first two arrive before the buffer is posted, the rest after. */
	for (k = 0; k < 2; k++) {
		fill_msg(msg + k * 1024, sizes[k], 1, k);
		KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[1], msg + k * 1024, sizes[k], NULL, t->addr[0],
						NULL), 0);
		KUNIT_ASSERT_EQ(test, next_entry(t->cq[1], &e, &err), 1);
	}
	m = (struct fi_msg){ .msg_iov = &(struct kvec){ buf, 1000 }, .iov_count = 1,
			     .addr = FI_ADDR_UNSPEC, .context = &ctx };
	KUNIT_ASSERT_EQ(test, fi_recvmsg(t->ep[0], &m, FI_MULTI_RECV), 0);
	for (k = 2; k < 4; k++) {
		fill_msg(msg + k * 1024, sizes[k], 1, k);
		KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[1], msg + k * 1024, sizes[k], NULL, t->addr[0],
						NULL), 0);
	}
	for (k = 0; k < 4; k++) {
		KUNIT_ASSERT_EQ(test, next_entry(t->cq[0], &e, &err), 1);
		KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)&ctx);
		KUNIT_EXPECT_EQ(test, e.flags, FI_MSG | FI_RECV);
		KUNIT_EXPECT_EQ(test, e.len, sizes[k]);
		KUNIT_EXPECT_PTR_EQ(test, e.buf, (void *)(buf + at[k]));
		KUNIT_EXPECT_TRUE_MSG(test, check_msg(buf + at[k], sizes[k], 1, k), "message %d", k);
	}
	/* 56 bytes left, below 100: released. */
	KUNIT_ASSERT_EQ(test, next_entry(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)&ctx);
	KUNIT_EXPECT_EQ(test, e.flags, FI_MULTI_RECV);
	for (k = 0; k < 2; k++)
		KUNIT_ASSERT_EQ(test, next_entry(t->cq[1], &e, &err), 1);
	/* The next message waits for a receive of its own. */
	fill_msg(msg, 50, 1, 9);
	KUNIT_ASSERT_EQ(test, fi_inject(t->ep[1], msg, 50, t->addr[0]), 0);
	KUNIT_ASSERT_EQ(test, fi_recv(t->ep[0], rest, 1024, NULL, FI_ADDR_UNSPEC, rest), 0);
	KUNIT_ASSERT_EQ(test, next_entry(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)rest);
	KUNIT_EXPECT_TRUE(test, check_msg(rest, 50, 1, 9));

	/* Minimum 10: 900 bytes, then 300 of which 96 fit: truncated, and released. */
	min = 10;
	KUNIT_ASSERT_EQ(test, fi_setopt(&t->ep[0]->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
					sizeof(min)), 0);
	memset(buf, 0, 1000);
	KUNIT_ASSERT_EQ(test, fi_recvmsg(t->ep[0], &m, FI_MULTI_RECV), 0);
	fill_msg(msg, 900, 1, 10);
	KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[1], msg, 900, NULL, t->addr[0], NULL), 0);
	KUNIT_ASSERT_EQ(test, next_entry(t->cq[1], &e, &err), 1);
	fill_msg(msg, 300, 1, 11);
	KUNIT_ASSERT_EQ(test, fi_sendto(t->ep[1], msg, 300, NULL, t->addr[0], NULL), 0);
	KUNIT_ASSERT_EQ(test, next_entry(t->cq[1], &e, &err), 1);
	KUNIT_ASSERT_EQ(test, next_entry(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)900);
	KUNIT_EXPECT_TRUE(test, check_msg(buf, 900, 1, 10));
	KUNIT_EXPECT_EQ(test, next_entry(t->cq[0], &e, &err), (ssize_t)-FI_ETRUNC);
	KUNIT_EXPECT_PTR_EQ(test, err.buf, (void *)(buf + 904));
	KUNIT_EXPECT_EQ(test, err.len, (size_t)96);
	KUNIT_EXPECT_EQ(test, err.olen, (size_t)204);
	KUNIT_EXPECT_TRUE(test, check_msg(buf + 904, 96, 1, 11));
	KUNIT_ASSERT_EQ(test, next_entry(t->cq[0], &e, &err), 1);
	KUNIT_EXPECT_EQ(test, e.flags, FI_MULTI_RECV);

	/* Cancelled while nothing is in it: released with FI_ECANCELED. */
	KUNIT_ASSERT_EQ(test, fi_recvmsg(t->ep[0], &m, FI_MULTI_RECV), 0);
	KUNIT_EXPECT_EQ(test, fi_cancel(&t->ep[0]->fid, &ctx), 0);
	KUNIT_EXPECT_EQ(test, next_entry(t->cq[0], &e, &err), (ssize_t)-FI_ECANCELED);
	KUNIT_EXPECT_EQ(test, err.flags & FI_MULTI_RECV, FI_MULTI_RECV);

	/* One kvec only; MSG-only flags stay refused. */
	two[0] = (struct kvec){ buf, 500 };
	two[1] = (struct kvec){ buf + 500, 500 };
	m.msg_iov = two;
	m.iov_count = 2;
	KUNIT_EXPECT_EQ(test, fi_recvmsg(t->ep[0], &m, FI_MULTI_RECV), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_recvmsg(t->ep[0], &m, FI_PEEK), -FI_EBADFLAGS);
	net_close(test, t);
}

/* Waits for endpoint @i's next completion: 1, or an error entry as -err. */
static ssize_t done_on(struct net *t, int i, struct fi_cq_data_entry *e,
		       struct fi_cq_err_entry *err)
{
	fi_addr_t src;

	return next(t->cq[i], e, &src, err);
}

/*
 * Atomic operations on a peer's region: the ops kofi serves, each checked
 * against the region and the old values it returned; a bad key and a range
 * past the region fail the operation; many at once from two endpoints add
 * up (atomic with respect to each other).
 */
static void atomics(struct kunit *test)
{
	struct net *t = test->priv;
	struct fid_mr *mr, *lop, *lres;
	struct fi_atomic_attr attr = {};
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = {};
	struct fi_ioc ioc, res;
	struct fi_rma_ioc rma;
	struct fi_msg_atomic msg = {};
	u64 *region, operand[2], compare[2], result[2], key;
	size_t count = 0;
	int k, ctx;

	/* Not the test's to free: a failed assertion leaves it registered. */
	region = kzalloc(16 * sizeof(u64), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, region);
	net_open(test, t, 3, FI_AV_MAP);
	KUNIT_ASSERT_TRUE(test, t->info->caps & FI_ATOMIC);
	KUNIT_ASSERT_EQ(test, fi_mr_reg(t->domain, region, 16 * sizeof(u64),
					FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, NULL), 0);
	key = fi_mr_key(mr);

	/* What is served. */
	KUNIT_EXPECT_EQ(test, fi_query_atomic(t->domain, FI_UINT64, FI_SUM, &attr, 0), 0);
	KUNIT_EXPECT_GE(test, attr.count, (size_t)2);
	KUNIT_EXPECT_EQ(test, attr.size, (size_t)8);
	KUNIT_EXPECT_EQ(test, fi_query_atomic(t->domain, FI_INT32, FI_SUM, &attr, 0),
			-FI_EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, fi_query_atomic(t->domain, FI_UINT64, FI_CSWAP, &attr, 0),
			-FI_EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, fi_query_atomic(t->domain, FI_UINT64, FI_CSWAP, &attr,
					      FI_COMPARE_ATOMIC), 0);
	KUNIT_EXPECT_EQ(test, fi_query_atomic(t->domain, FI_UINT64, FI_SUM, &attr, FI_SEND),
			-FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_atomicvalid(t->ep[1], FI_UINT64, FI_SUM, &count), 0);
	KUNIT_EXPECT_EQ(test, count, attr.count);
	KUNIT_EXPECT_EQ(test, fi_compare_atomicvalid(t->ep[1], FI_INT64, FI_MSWAP, &count), 0);
	KUNIT_EXPECT_EQ(test, fi_fetch_atomicvalid(t->ep[1], FI_DOUBLE, FI_SUM, &count),
			-FI_EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, fi_atomicvalid(t->ep[1], FI_UINT64, FI_ATOMIC_READ, &count),
			-FI_EOPNOTSUPP);

	/* Sum. */
	region[0] = 10;
	operand[0] = 5;
	KUNIT_ASSERT_EQ(test, fi_atomic(t->ep[1], operand, 1, NULL, t->addr[0], 0, key, FI_UINT64,
					FI_SUM, &ctx), 0);
	KUNIT_ASSERT_EQ(test, done_on(t, 1, &e, &err), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)&ctx);
	KUNIT_EXPECT_EQ(test, e.flags, FI_ATOMIC | FI_WRITE);
	KUNIT_EXPECT_EQ(test, region[0], 15ULL);
	/* Signed minimum over two elements, fetching the old values. */
	region[1] = (u64)-3;
	region[2] = 7;
	operand[0] = (u64)-5;
	operand[1] = 9;
	KUNIT_ASSERT_EQ(test, fi_fetch_atomic(t->ep[1], operand, 2, NULL, result, NULL, t->addr[0],
					      8, key, FI_INT64, FI_MIN, &ctx), 0);
	KUNIT_ASSERT_EQ(test, done_on(t, 1, &e, &err), 1);
	KUNIT_EXPECT_EQ(test, e.flags, FI_ATOMIC | FI_READ);
	KUNIT_EXPECT_EQ(test, result[0], (u64)-3);
	KUNIT_EXPECT_EQ(test, result[1], 7ULL);
	KUNIT_EXPECT_EQ(test, region[1], (u64)-5);
	KUNIT_EXPECT_EQ(test, region[2], 7ULL);
	/* A read takes no operands. */
	KUNIT_ASSERT_EQ(test, fi_fetch_atomic(t->ep[1], NULL, 1, NULL, result, NULL, t->addr[0], 0,
					      key, FI_UINT64, FI_ATOMIC_READ, NULL), 0);
	KUNIT_ASSERT_EQ(test, done_on(t, 1, &e, &err), 1);
	KUNIT_EXPECT_EQ(test, result[0], 15ULL);
	/* Compare and swap, hit then miss. */
	region[3] = 100;
	operand[0] = 200;
	compare[0] = 100;
	KUNIT_ASSERT_EQ(test, fi_compare_atomic(t->ep[1], operand, 1, NULL, compare, NULL, result,
						NULL, t->addr[0], 24, key, FI_UINT64, FI_CSWAP,
						NULL), 0);
	KUNIT_ASSERT_EQ(test, done_on(t, 1, &e, &err), 1);
	KUNIT_EXPECT_EQ(test, result[0], 100ULL);
	KUNIT_EXPECT_EQ(test, region[3], 200ULL);
	operand[0] = 300;
	KUNIT_ASSERT_EQ(test, fi_compare_atomic(t->ep[1], operand, 1, NULL, compare, NULL, result,
						NULL, t->addr[0], 24, key, FI_UINT64, FI_CSWAP,
						NULL), 0);
	KUNIT_ASSERT_EQ(test, done_on(t, 1, &e, &err), 1);
	KUNIT_EXPECT_EQ(test, result[0], 200ULL);
	KUNIT_EXPECT_EQ(test, region[3], 200ULL);
	/* Masked swap through fi_compare_atomicmsg. */
	region[4] = 0xff00;
	operand[0] = 0x0ff0;
	compare[0] = 0x00ff;
	ioc = (struct fi_ioc){ operand, 1 };
	res = (struct fi_ioc){ result, 1 };
	rma = (struct fi_rma_ioc){ 32, 1, key };
	msg = (struct fi_msg_atomic){ .msg_iov = &ioc, .iov_count = 1, .addr = t->addr[0],
				      .rma_iov = &rma, .rma_iov_count = 1, .datatype = FI_UINT64,
				      .op = FI_MSWAP, .context = &ctx };
	KUNIT_ASSERT_EQ(test, fi_compare_atomicmsg(t->ep[1], &msg, &(struct fi_ioc){ compare, 1 },
						   NULL, 1, &res, NULL, 1, FI_COMPLETION), 0);
	KUNIT_ASSERT_EQ(test, done_on(t, 1, &e, &err), 1);
	KUNIT_EXPECT_EQ(test, result[0], 0xff00ULL);
	KUNIT_EXPECT_EQ(test, region[4], 0xfff0ULL);
	/* An inject, then a read after it (in order to one peer) sees it. */
	operand[0] = 0xf0f0;
	KUNIT_ASSERT_EQ(test, fi_inject_atomic(t->ep[1], operand, 1, t->addr[0], 40, key, FI_UINT64,
					       FI_BXOR), 0);
	operand[0] = 0;
	KUNIT_ASSERT_EQ(test, fi_fetch_atomic(t->ep[1], NULL, 1, NULL, result, NULL, t->addr[0], 40,
					      key, FI_UINT64, FI_ATOMIC_READ, NULL), 0);
	KUNIT_ASSERT_EQ(test, done_on(t, 1, &e, &err), 1);
	KUNIT_EXPECT_EQ(test, result[0], 0xf0f0ULL);

	/* The target refuses a key it does not have and a range past the region. */
	KUNIT_ASSERT_EQ(test, fi_atomic(t->ep[1], operand, 1, NULL, t->addr[0], 0, key + 1,
					FI_UINT64, FI_SUM, &ctx), 0);
	KUNIT_EXPECT_EQ(test, done_on(t, 1, &e, &err), (ssize_t)-FI_ENOKEY);
	KUNIT_EXPECT_PTR_EQ(test, err.op_context, (void *)&ctx);
	KUNIT_ASSERT_EQ(test, fi_atomic(t->ep[1], operand, 2, NULL, t->addr[0], 15 * 8, key,
					FI_UINT64, FI_SUM, &ctx), 0);
	KUNIT_EXPECT_EQ(test, done_on(t, 1, &e, &err), (ssize_t)-EINVAL);

	/* Two endpoints adding at once. */
	region[6] = 0;
	operand[0] = 1;
	for (k = 0; k < 50; k++) {
		KUNIT_ASSERT_EQ(test, fi_atomic(t->ep[1], operand, 1, NULL, t->addr[0], 48, key,
						FI_UINT64, FI_SUM, NULL), 0);
		KUNIT_ASSERT_EQ(test, fi_atomic(t->ep[2], operand, 1, NULL, t->addr[0], 48, key,
						FI_UINT64, FI_SUM, NULL), 0);
	}
	for (k = 0; k < 50; k++) {
		KUNIT_ASSERT_EQ(test, done_on(t, 1, &e, &err), 1);
		KUNIT_ASSERT_EQ(test, done_on(t, 2, &e, &err), 1);
	}
	KUNIT_EXPECT_EQ(test, region[6], 100ULL);

	/*
	 * Descriptors (fi_mr_desc): operands from a region granting FI_WRITE,
	 * old values into one granting FI_READ, each buffer inside its region.
	 */
	KUNIT_ASSERT_EQ(test, fi_mr_reg(t->domain, operand, sizeof(operand), FI_WRITE, 0, 0, 0,
					&lop, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_mr_reg(t->domain, result, sizeof(result), FI_READ, 0, 0, 0, &lres,
					NULL), 0);
	region[7] = 1;
	operand[0] = 2;
	KUNIT_ASSERT_EQ(test, fi_fetch_atomic(t->ep[1], operand, 1, fi_mr_desc(lop), result,
					      fi_mr_desc(lres), t->addr[0], 56, key, FI_UINT64,
					      FI_SUM, NULL), 0);
	KUNIT_ASSERT_EQ(test, done_on(t, 1, &e, &err), 1);
	KUNIT_EXPECT_EQ(test, result[0], 1ULL);
	KUNIT_EXPECT_EQ(test, region[7], 3ULL);
	KUNIT_EXPECT_EQ(test, fi_fetch_atomic(t->ep[1], operand, 1, fi_mr_desc(lres), result,
					      fi_mr_desc(lres), t->addr[0], 56, key, FI_UINT64,
					      FI_SUM, NULL), -FI_EACCES);
	KUNIT_EXPECT_EQ(test, fi_fetch_atomic(t->ep[1], operand, 1, fi_mr_desc(lop), result,
					      fi_mr_desc(lop), t->addr[0], 56, key, FI_UINT64,
					      FI_SUM, NULL), -FI_EACCES);
	KUNIT_EXPECT_EQ(test, fi_atomic(t->ep[1], operand, 3, fi_mr_desc(lop), t->addr[0], 56, key,
					FI_UINT64, FI_SUM, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_atomic(t->ep[1], operand, 1, t->ep[1], t->addr[0], 56, key,
					FI_UINT64, FI_SUM, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, region[7], 3ULL);
	KUNIT_EXPECT_EQ(test, fi_close(&lres->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&lop->fid), 0);

	/* What the calls refuse. */
	KUNIT_EXPECT_EQ(test, fi_atomic(t->ep[1], operand, 0, NULL, t->addr[0], 0, key, FI_UINT64,
					FI_SUM, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_atomic(t->ep[1], operand, 1, NULL, t->addr[0], 0, key, FI_INT32,
					FI_SUM, NULL), -FI_EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, fi_atomic(t->ep[1], operand, 1, NULL, t->addr[0], 0, key, 99,
					FI_SUM, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_atomic(t->ep[1], operand, 1, NULL, t->addr[0], 0, key, FI_UINT64,
					FI_CSWAP, NULL), -FI_EOPNOTSUPP);
	KUNIT_EXPECT_EQ(test, fi_atomic(t->ep[1], NULL, 1, NULL, t->addr[0], 0, key, FI_UINT64,
					FI_SUM, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_atomic(t->ep[1], operand, 1, NULL, 42, 0, key, FI_UINT64, FI_SUM,
					NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_fetch_atomic(t->ep[1], operand, 1, NULL, NULL, NULL, t->addr[0], 0,
					      key, FI_UINT64, FI_SUM, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_fetch_atomicmsg(t->ep[1], &msg, &res, NULL, 1, FI_INJECT),
			-FI_EBADFLAGS);
	KUNIT_EXPECT_EQ(test, fi_fetch_atomicmsg(t->ep[1], &msg, &res, NULL, 0, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_atomicmsg(t->ep[1], NULL, 0), -EINVAL);
	rma.count = 2;
	msg.op = FI_SUM;
	KUNIT_EXPECT_EQ(test, fi_atomicmsg(t->ep[1], &msg, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_atomicvalid(t->ep[1], FI_UINT64, FI_SUM, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_query_atomic(t->domain, FI_UINT64, FI_SUM, NULL, 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	net_close(test, t);
	kfree(region);
}

static struct kunit_case rdm_cases[] = {
	KUNIT_CASE(getinfo_offers_rdm),
	KUNIT_CASE(av_calls),
	KUNIT_CASE(rdm_bad_arguments),
	KUNIT_CASE(send_recv_two),
	KUNIT_CASE(send_recv_eight),
	KUNIT_CASE(directed_receive),
	KUNIT_CASE(progress_made_by_the_sleeper),
	KUNIT_CASE(simultaneous_first_sends),
	KUNIT_CASE(vectors_and_pages),
	KUNIT_CASE(inject_data_truncation),
	KUNIT_CASE(rma_to_address),
	KUNIT_CASE(counters),
	KUNIT_CASE(idle_connections_bounded),
	KUNIT_CASE(many_mixed_messages),
	KUNIT_CASE(unexpected_beyond_copies),
	KUNIT_CASE(peer_closed_mid_traffic),
	KUNIT_CASE(closed_after_last_receive),
	KUNIT_CASE(bad_peer),
	KUNIT_CASE(spoofed_name_refused),
	KUNIT_CASE(cancel_receive),
	KUNIT_CASE(tagged_matching),
	KUNIT_CASE(tagged_unexpected),
	KUNIT_CASE(tagged_peek_claim_discard),
	KUNIT_CASE(large_messages),
	KUNIT_CASE(tagged_bad_arguments),
	KUNIT_CASE(multi_recv),
	KUNIT_CASE(atomics),
	KUNIT_CASE(peer_records_reused),
	KUNIT_CASE_SLOW(held_connections_make_room),
	{}
};

/*
 * Each case's net lives on the heap, not the case's stack: a case that fails
 * an assertion ends its thread there, and the exit closes what it left open,
 * so one failure does not keep the providers in use for the cases and
 * suites after it.
 */
static int rdm_case_init(struct kunit *test)
{
	if (strncmp(test->name, only, strlen(only)))
		kunit_skip(test, "not selected by only=%s", only);
	test->priv = kunit_kzalloc(test, sizeof(struct net), GFP_KERNEL);
	return test->priv ? 0 : -ENOMEM;
}

static void rdm_case_exit(struct kunit *test)
{
	struct net *t = test->priv;

	if (t && t->info)
		net_close(test, t);
}

static struct kunit_suite rdm_suite = {
	.name = "rdm",
	.init = rdm_case_init,
	.exit = rdm_case_exit,
	.test_cases = rdm_cases,
};
kunit_test_suite(rdm_suite);

/* Name the suite after the provider and device, as the conformance suite. */
static int __init rdm_test_init(void)
{
	snprintf((char *)rdm_suite.name, sizeof(rdm_suite.name), "rdm_%s", label);
	return 0;
}
module_init(rdm_test_init);

static void __exit rdm_test_exit(void)
{
}
module_exit(rdm_test_exit);

MODULE_IMPORT_NS(KOFI_NS);
MODULE_DESCRIPTION("kofi FI_EP_RDM and address vector suite, run per provider and device");
MODULE_LICENSE("GPL");
