/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test helpers shared by kofi's KUnit suites: a connected pair of FI_EP_MSG
 * endpoints of one provider (a passive endpoint, a client and the server side
 * it accepts), set up and torn down as a consumer would, with private data
 * checked both ways; waits on EQs and CQs; patterned buffers.
 */
#ifndef _KOFI_TEST_PAIR_H
#define _KOFI_TEST_PAIR_H

#include "kofi_fault.h"

#include <kunit/resource.h>
#include <kunit/test.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <kofi/fabric.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_eq.h>
#include <kofi/fi_rma.h>
#include <kofi/fi_tagged.h>
#include <kofi/fi_atomic.h>

#define V FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)
#define WAIT_MS 10000

struct cm_event {
	struct fi_eq_cm_entry entry;
	u8 data[KOFI_CM_DATA_MAX];
};

struct side {
	struct fi_info *info;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
	/* A counter bound for the kinds in @cntr_flags (set before opening). */
	u64 cntr_flags;
	struct fid_cntr *cntr;
	/* The CQ's completion handler (set before opening), or none. */
	kofi_cq_handler_t cq_handler;
	/* Its CQ's flags (KOFI_CQ_HANDLER_PROGRESS, say). */
	u64 cq_flags;
};

struct pair {
	/* The case it belongs to (pair_new). */
	struct kunit *test;
	const char *prov;
	/* Registration modes the domain's hints list (FI_MR_ENDPOINT, say). */
	int mr_mode;
	/* Modes the hints list (FI_RX_CQ_DATA, say). */
	u64 mode;
	/* Capabilities the hints ask for beyond FI_MSG | FI_RMA (FI_TAGGED, say). */
	u64 caps;
	/* The CQs' format; 0: FI_CQ_FORMAT_DATA. */
	enum fi_cq_format cq_format;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_pep *pep;
	struct fid_eq *peq;
	struct side server, client;
	/*
	 * A region the endpoints use, closed after them: set at once, it is
	 * closed when a failed assertion ends the case too (pair_new).
	 */
	struct fid_mr *mr;
};

/*
 * The first info @prov offers for FI_EP_MSG with messages, RMA and @caps, to
 * a consumer supporting registration modes @mr_mode and modes @mode.
 */
static inline struct fi_info *test_info_caps(struct kunit *test, const char *prov,
					     const char *node, const char *service, u64 flags,
					     int mr_mode, u64 mode, u64 caps)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	KUNIT_ASSERT_NOT_NULL(test, hints);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA | caps;
	hints->mode = mode;
	hints->domain_attr->mr_mode = mr_mode;
	hints->fabric_attr->prov_name = kstrdup(prov, GFP_KERNEL);
	KUNIT_ASSERT_EQ(test, fi_getinfo(V, node, service, flags, hints, &info), 0);
	fi_freeinfo(hints);
	return info;
}

static inline struct fi_info *test_info_modes(struct kunit *test, const char *prov,
					      const char *node, const char *service, u64 flags,
					      int mr_mode, u64 mode)
{
	return test_info_caps(test, prov, node, service, flags, mr_mode, mode, 0);
}

static inline struct fi_info *test_info_mr(struct kunit *test, const char *prov,
					   const char *node, const char *service, u64 flags,
					   int mr_mode)
{
	return test_info_modes(test, prov, node, service, flags, mr_mode, 0);
}

static inline struct fi_info *test_info(struct kunit *test, const char *prov, const char *node,
					const char *service, u64 flags)
{
	return test_info_mr(test, prov, node, service, flags, 0);
}

static inline void open_queues(struct kunit *test, struct pair *p, struct side *s)
{
	struct fi_eq_attr eq_attr = {};
	struct fi_cq_attr cq_attr = { .format = p->cq_format ?: FI_CQ_FORMAT_DATA, .size = 256,
				      .flags = s->cq_flags, .comp_handler = s->cq_handler };

	KUNIT_ASSERT_EQ(test, fi_eq_open(p->fabric, &eq_attr, &s->eq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_open(p->domain, &cq_attr, &s->cq, NULL), 0);
	if (s->cntr_flags) {
		struct fi_cntr_attr cntr_attr = {};

		KUNIT_ASSERT_EQ(test, fi_cntr_open(p->domain, &cntr_attr, &s->cntr, NULL), 0);
	}
}

static inline void bind_enable(struct kunit *test, struct side *s)
{
	KUNIT_ASSERT_EQ(test, fi_ep_bind(s->ep, &s->eq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(s->ep, &s->cq->fid, FI_SEND | FI_RECV), 0);
	if (s->cntr)
		KUNIT_ASSERT_EQ(test, fi_ep_bind(s->ep, &s->cntr->fid, s->cntr_flags), 0);
	KUNIT_ASSERT_EQ(test, fi_enable(s->ep), 0);
}

/* The next event on @eq, which must be @want: its size, or an error. */
static inline ssize_t cm_wait(struct fid_eq *eq, u32 want, struct cm_event *ev)
{
	u32 event = ~0U;
	ssize_t ret = fi_eq_sread(eq, &event, ev, sizeof(*ev), WAIT_MS, 0);

	if (ret >= 0 && event != want)
		return -EPROTO;
	return ret;
}

/* Fabric, domain and a listening passive endpoint of @p->prov at @node:@port. */
static inline void pair_listen(struct kunit *test, struct pair *p, const char *node,
			       const char *port)
{
	struct fi_eq_attr eq_attr = { .size = 256 };
	struct fi_info *src = test_info_caps(test, p->prov, node, port, FI_SOURCE, p->mr_mode,
					     p->mode, p->caps);

	KUNIT_ASSERT_EQ(test, fi_fabric(src->fabric_attr, &p->fabric, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_domain(p->fabric, src, &p->domain, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_eq_open(p->fabric, &eq_attr, &p->peq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_passive_ep(p->fabric, src, &p->pep, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_pep_bind(p->pep, &p->peq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_listen(p->pep), 0);
	fi_freeinfo(src);
}

/* A client endpoint of @p's domain for @node:@port, enabled. */
static inline void side_open(struct kunit *test, struct pair *p, struct side *s,
			     const char *node, const char *port)
{
	s->info = test_info_caps(test, p->prov, node, port, 0, 0, p->mode, p->caps);
	open_queues(test, p, s);
	KUNIT_ASSERT_EQ(test, fi_endpoint(p->domain, s->info, &s->ep, NULL), 0);
	bind_enable(test, s);
}

/* A client endpoint of @p's domain connecting to @node:@port with @data. */
static inline void side_connect(struct kunit *test, struct pair *p, struct side *s,
				const char *node, const char *port, const void *data, size_t len)
{
	side_open(test, p, s, node, port);
	KUNIT_ASSERT_EQ(test, fi_connect(s->ep, NULL, data, len), 0);
}

/* The server side of the next request on @p's passive endpoint, accepted. */
static inline void side_accept(struct kunit *test, struct pair *p, struct side *s,
			       struct cm_event *ev, const void *data, size_t len)
{
	s->info = ev->entry.info;
	KUNIT_ASSERT_NOT_NULL(test, s->info);
	open_queues(test, p, s);
	KUNIT_ASSERT_EQ(test, fi_endpoint(p->domain, s->info, &s->ep, NULL), 0);
	bind_enable(test, s);
	KUNIT_ASSERT_EQ(test, fi_accept(s->ep, data, len), 0);
}

/* A connected pair over @node:@port, private data both ways. */
static inline void pair_open(struct kunit *test, struct pair *p, const char *prov,
			     const char *node, const char *port)
{
	struct cm_event ev;

	p->prov = prov;
	pair_listen(test, p, node, port);
	side_connect(test, p, &p->client, node, port, "from client", 12);
	KUNIT_ASSERT_EQ(test, cm_wait(p->peq, FI_CONNREQ, &ev), (ssize_t)(sizeof(ev.entry) + 12));
	KUNIT_EXPECT_STREQ(test, (char *)ev.data, "from client");
	side_accept(test, p, &p->server, &ev, "from server", 12);
	KUNIT_EXPECT_NOT_NULL(test, p->server.info->dest_addr);
	/* The request's info has the listener's default op_flags (none). */
	KUNIT_EXPECT_EQ(test, p->server.info->tx_attr->op_flags, 0ULL);
	KUNIT_EXPECT_EQ(test, p->server.info->rx_attr->op_flags, 0ULL);
	KUNIT_ASSERT_EQ(test, cm_wait(p->server.eq, FI_CONNECTED, &ev), (ssize_t)sizeof(ev.entry));
	KUNIT_EXPECT_PTR_EQ(test, ev.entry.fid, &p->server.ep->fid);
	KUNIT_ASSERT_EQ(test, cm_wait(p->client.eq, FI_CONNECTED, &ev),
			(ssize_t)(sizeof(ev.entry) + 12));
	KUNIT_EXPECT_STREQ(test, (char *)ev.data, "from server");
}

static inline void side_close(struct kunit *test, struct side *s)
{
	if (s->ep)
		KUNIT_EXPECT_EQ(test, fi_close(&s->ep->fid), 0);
	if (s->cq)
		KUNIT_EXPECT_EQ(test, fi_close(&s->cq->fid), 0);
	if (s->cntr)
		KUNIT_EXPECT_EQ(test, fi_close(&s->cntr->fid), 0);
	if (s->eq)
		KUNIT_EXPECT_EQ(test, fi_close(&s->eq->fid), 0);
	fi_freeinfo(s->info);
	memset(s, 0, sizeof(*s));
}

static inline void pair_close(struct kunit *test, struct pair *p)
{
	side_close(test, &p->client);
	side_close(test, &p->server);
	if (p->mr)
		KUNIT_EXPECT_EQ(test, fi_close(&p->mr->fid), 0);
	p->mr = NULL;
	if (p->pep)
		KUNIT_EXPECT_EQ(test, fi_close(&p->pep->fid), 0);
	if (p->peq)
		KUNIT_EXPECT_EQ(test, fi_close(&p->peq->fid), 0);
	if (p->domain)
		KUNIT_EXPECT_EQ(test, fi_close(&p->domain->fid), 0);
	if (p->fabric)
		KUNIT_EXPECT_EQ(test, fi_close(&p->fabric->fid), 0);
	p->pep = NULL;
	p->peq = NULL;
	p->domain = NULL;
	p->fabric = NULL;
}

static inline void pair_cleanup(void *data)
{
	struct pair *p = data;

	pair_close(p->test, p);
}

/*
 * A pair for case @test, set up as @init says, on the heap and closed when
 * the case ends however it ends: a failed assertion ends the case's thread,
 * and a pair on its stack would stay open, keeping the provider's module
 * and failing every suite after it with this one.
 */
static inline struct pair *pair_new(struct kunit *test, struct pair init)
{
	struct pair *p = kunit_kzalloc(test, sizeof(*p), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, p);
	*p = init;
	p->test = test;
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, pair_cleanup, p), 0);
	return p;
}

/* Closes @p and region @mr, which its endpoints used: they close first. */
static inline void pair_close_with(struct kunit *test, struct pair *p, struct fid_mr *mr)
{
	p->mr = mr;
	pair_close(test, p);
}

/* The next completion of a tagged-format @cq (an error entry as -err). */
static inline ssize_t next_tagged(struct fid_cq *cq, struct fi_cq_tagged_entry *e,
				  struct fi_cq_err_entry *err)
{
	ssize_t ret = fi_cq_sread(cq, e, 1, NULL, WAIT_MS);

	if (ret == -FI_EAVAIL) {
		if (fi_cq_readerr(cq, err, 0) != 1)
			return -EIO;
		return -err->err;
	}
	return ret;
}

static inline ssize_t cq_wait(struct fid_cq *cq, struct fi_cq_data_entry *e)
{
	return fi_cq_sread(cq, e, 1, NULL, WAIT_MS);
}

KUNIT_DEFINE_ACTION_WRAPPER(test_vfree, vfree, const void *);

/*
 * vzalloc() freed when the case ends, failed assertion or not. Taken
 * before the pair whose endpoints use it (pair_new): the case's cleanups
 * run last first, so it is freed after the pair is closed.
 */
static inline void *test_vzalloc(struct kunit *test, size_t len)
{
	void *p = vzalloc(len);

	if (p && kunit_add_action_or_reset(test, test_vfree, p))
		return NULL;
	return p;
}

static inline void fill(u8 *buf, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (u8)(seed + i * 13 + (i >> 8));
}

/* Sends @len bytes client → server and checks them. */
static inline void exchange(struct kunit *test, struct pair *p, size_t len, u8 seed)
{
	u8 *src = vmalloc(len + 1), *dst = vzalloc(len + 1);
	struct fi_cq_data_entry e;

	KUNIT_ASSERT_TRUE(test, src && dst);
	fill(src, len, seed);
	KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, dst, len + 1, NULL, 0, dst), 0);
	KUNIT_ASSERT_EQ(test, fi_send(p->client.ep, src, len, NULL, 0, src), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->server.cq, &e), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)dst);
	KUNIT_EXPECT_EQ(test, e.len, len);
	KUNIT_EXPECT_EQ(test, e.flags, FI_RECV | FI_MSG);
	KUNIT_EXPECT_EQ(test, memcmp(src, dst, len), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)src);
	KUNIT_EXPECT_EQ(test, e.flags, FI_SEND | FI_MSG);
	vfree(src);
	vfree(dst);
}

#endif /* _KOFI_TEST_PAIR_H */
