// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for kofi_sock over loopback TCP, written as a consumer would:
 * a passive endpoint and a client endpoint in one module, connected through
 * real kernel sockets. Data is verified byte for byte.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/bvec.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <linux/net.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <net/net_namespace.h>
#include <kofi/fabric.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_eq.h>
#include <kofi/fi_rma.h>

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
};

struct pair {
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_pep *pep;
	struct fid_eq *peq;
	struct side server, client;
};

static struct fi_info *sock_info(struct kunit *test, const char *node, const char *service,
				 u64 flags)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	KUNIT_ASSERT_NOT_NULL(test, hints);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->fabric_attr->prov_name = kstrdup("sock", GFP_KERNEL);
	KUNIT_ASSERT_EQ(test, fi_getinfo(V, node, service, flags, hints, &info), 0);
	fi_freeinfo(hints);
	return info;
}

static void open_queues(struct kunit *test, struct pair *p, struct side *s)
{
	struct fi_eq_attr eq_attr = {};
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .size = 256 };

	KUNIT_ASSERT_EQ(test, fi_eq_open(p->fabric, &eq_attr, &s->eq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_cq_open(p->domain, &cq_attr, &s->cq, NULL), 0);
}

static void bind_enable(struct kunit *test, struct side *s)
{
	KUNIT_ASSERT_EQ(test, fi_ep_bind(s->ep, &s->eq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_ep_bind(s->ep, &s->cq->fid, FI_SEND | FI_RECV), 0);
	KUNIT_ASSERT_EQ(test, fi_enable(s->ep), 0);
}

static ssize_t cm_wait(struct fid_eq *eq, u32 want, struct cm_event *ev)
{
	u32 event = ~0U;
	ssize_t ret = fi_eq_sread(eq, &event, ev, sizeof(*ev), WAIT_MS, 0);

	if (ret >= 0 && event != want)
		return -EPROTO;
	return ret;
}

/* A connected pair over @node:@port, private data both ways. */
static void pair_open(struct kunit *test, struct pair *p, const char *node, const char *port)
{
	struct fi_eq_attr eq_attr = {};
	struct cm_event ev;
	struct fi_info *src;
	ssize_t n;

	src = sock_info(test, node, port, FI_SOURCE);
	KUNIT_ASSERT_EQ(test, fi_fabric(src->fabric_attr, &p->fabric, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_domain(p->fabric, src, &p->domain, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_eq_open(p->fabric, &eq_attr, &p->peq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_passive_ep(p->fabric, src, &p->pep, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_pep_bind(p->pep, &p->peq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_listen(p->pep), 0);
	fi_freeinfo(src);

	p->client.info = sock_info(test, node, port, 0);
	open_queues(test, p, &p->client);
	KUNIT_ASSERT_EQ(test, fi_endpoint(p->domain, p->client.info, &p->client.ep, NULL), 0);
	bind_enable(test, &p->client);
	KUNIT_ASSERT_EQ(test, fi_connect(p->client.ep, NULL, "from client", 12), 0);

	n = cm_wait(p->peq, FI_CONNREQ, &ev);
	KUNIT_ASSERT_EQ(test, n, (ssize_t)(sizeof(ev.entry) + 12));
	KUNIT_EXPECT_STREQ(test, (char *)ev.data, "from client");
	KUNIT_ASSERT_NOT_NULL(test, ev.entry.info);
	p->server.info = ev.entry.info;
	KUNIT_EXPECT_NOT_NULL(test, p->server.info->dest_addr);
	open_queues(test, p, &p->server);
	KUNIT_ASSERT_EQ(test, fi_endpoint(p->domain, p->server.info, &p->server.ep, NULL), 0);
	bind_enable(test, &p->server);
	KUNIT_ASSERT_EQ(test, fi_accept(p->server.ep, "from server", 12), 0);

	KUNIT_ASSERT_EQ(test, cm_wait(p->server.eq, FI_CONNECTED, &ev), (ssize_t)sizeof(ev.entry));
	KUNIT_EXPECT_PTR_EQ(test, ev.entry.fid, &p->server.ep->fid);
	KUNIT_ASSERT_EQ(test, cm_wait(p->client.eq, FI_CONNECTED, &ev), (ssize_t)(sizeof(ev.entry) + 12));
	KUNIT_EXPECT_STREQ(test, (char *)ev.data, "from server");
}

static void side_close(struct kunit *test, struct side *s)
{
	if (s->ep)
		KUNIT_EXPECT_EQ(test, fi_close(&s->ep->fid), 0);
	if (s->cq)
		KUNIT_EXPECT_EQ(test, fi_close(&s->cq->fid), 0);
	if (s->eq)
		KUNIT_EXPECT_EQ(test, fi_close(&s->eq->fid), 0);
	fi_freeinfo(s->info);
}

static void pair_close(struct kunit *test, struct pair *p)
{
	side_close(test, &p->client);
	side_close(test, &p->server);
	if (p->pep)
		KUNIT_EXPECT_EQ(test, fi_close(&p->pep->fid), 0);
	if (p->peq)
		KUNIT_EXPECT_EQ(test, fi_close(&p->peq->fid), 0);
	if (p->domain)
		KUNIT_EXPECT_EQ(test, fi_close(&p->domain->fid), 0);
	if (p->fabric)
		KUNIT_EXPECT_EQ(test, fi_close(&p->fabric->fid), 0);
}

static ssize_t cq_wait(struct fid_cq *cq, struct fi_cq_data_entry *e)
{
	return fi_cq_sread(cq, e, 1, NULL, WAIT_MS);
}

static void fill(u8 *buf, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (u8)(seed + i * 13 + (i >> 8));
}

/* Sends @len bytes client → server and checks them. */
static void exchange(struct kunit *test, struct pair *p, size_t len, u8 seed)
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

static void sock_connect_and_messages(struct kunit *test)
{
	struct pair p = {};

	pair_open(test, &p, "127.0.0.1", "7471");
	exchange(test, &p, 0, 1);
	exchange(test, &p, 1, 2);
	exchange(test, &p, 4096, 3);
	exchange(test, &p, 1 << 20, 4);
	pair_close(test, &p);
}

static void sock_ipv6(struct kunit *test)
{
	struct pair p = {};

	pair_open(test, &p, "::1", "7472");
	exchange(test, &p, 4096, 5);
	pair_close(test, &p);
}

static void sock_vectors_truncation_data(struct kunit *test)
{
	struct pair p = {};
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = {};
	u8 src[300], dst[300] = {};
	struct kvec siov[3] = { { src, 100 }, { src + 100, 100 }, { src + 200, 100 } };
	struct kvec riov[2] = { { dst, 150 }, { dst + 150, 150 } };

	fill(src, sizeof(src), 6);
	pair_open(test, &p, "127.0.0.1", "7473");
	KUNIT_ASSERT_EQ(test, fi_recvv(p.server.ep, riov, NULL, 2, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_sendv(p.client.ep, siov, NULL, 3, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p.server.cq, &e), 1);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)300);
	KUNIT_EXPECT_EQ(test, memcmp(src, dst, 300), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);

	/* A message larger than the receive: FI_ETRUNC, what did not fit in olen. */
	KUNIT_ASSERT_EQ(test, fi_recv(p.server.ep, dst, 10, NULL, 0, dst), 0);
	KUNIT_ASSERT_EQ(test, fi_send(p.client.ep, src, 300, NULL, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, cq_wait(p.server.cq, &e), -FI_EAVAIL);
	KUNIT_ASSERT_EQ(test, fi_cq_readerr(p.server.cq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, FI_ETRUNC);
	KUNIT_EXPECT_EQ(test, err.olen, (size_t)290);
	KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);

	/* Remote CQ data; and a message that arrives before its receive. */
	KUNIT_ASSERT_EQ(test, fi_senddata(p.client.ep, src, 8, NULL, 0x1234, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
	KUNIT_ASSERT_EQ(test, fi_recv(p.server.ep, dst, 300, NULL, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p.server.cq, &e), 1);
	KUNIT_EXPECT_EQ(test, e.flags, FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA);
	KUNIT_EXPECT_EQ(test, e.data, 0x1234ULL);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)8);

	/* Inject: the data arrives, the sender has no completion. */
	KUNIT_ASSERT_EQ(test, fi_recv(p.server.ep, dst, 300, NULL, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_inject(p.client.ep, src, 64, 0), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p.server.cq, &e), 1);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)64);
	KUNIT_EXPECT_EQ(test, fi_cq_read(p.client.cq, &e, 1), -FI_EAGAIN);
	pair_close(test, &p);
}

static void sock_rma(struct kunit *test)
{
	struct pair p = {};
	struct fid_mr *mr, *ro;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = {};
	u8 *region = vzalloc(65536), *src = vmalloc(65536), *back = vzalloc(65536);
	u8 small[64];
	u64 key;

	KUNIT_ASSERT_TRUE(test, region && src && back);
	fill(src, 65536, 7);
	pair_open(test, &p, "127.0.0.1", "7474");
	KUNIT_ASSERT_EQ(test, fi_mr_reg(p.domain, region, 65536, FI_REMOTE_READ | FI_REMOTE_WRITE,
					0, 0, 0, &mr, NULL), 0);
	key = fi_mr_key(mr);
	KUNIT_ASSERT_EQ(test, fi_write(p.client.ep, src, 65536, NULL, 0, 0, key, src), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
	KUNIT_EXPECT_EQ(test, e.flags, FI_RMA | FI_WRITE);
	KUNIT_EXPECT_EQ(test, memcmp(region, src, 65536), 0);
	KUNIT_ASSERT_EQ(test, fi_read(p.client.ep, back, 4096, NULL, 0, 1000, key, back), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
	KUNIT_EXPECT_EQ(test, e.flags, FI_RMA | FI_READ);
	KUNIT_EXPECT_EQ(test, memcmp(back, src + 1000, 4096), 0);

	/* Remote CQ data reaches the target's CQ. */
	KUNIT_ASSERT_EQ(test, fi_writedata(p.client.ep, src, 16, NULL, 99, 0, 0, key, NULL), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
	KUNIT_ASSERT_EQ(test, cq_wait(p.server.cq, &e), 1);
	KUNIT_EXPECT_EQ(test, e.flags, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA);
	KUNIT_EXPECT_EQ(test, e.data, 99ULL);

	/* Violations fail at the initiator; the connection stays up. */
	KUNIT_ASSERT_EQ(test, fi_mr_reg(p.domain, small, sizeof(small), FI_REMOTE_READ, 0, 0, 0,
					&ro, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_write(p.client.ep, src, 16, NULL, 0, 0, key ^ 0x100, NULL), 0);
	KUNIT_EXPECT_EQ(test, cq_wait(p.client.cq, &e), -FI_EAVAIL);
	KUNIT_ASSERT_EQ(test, fi_cq_readerr(p.client.cq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, FI_ENOKEY);
	KUNIT_ASSERT_EQ(test, fi_write(p.client.ep, src, 16, NULL, 0, 60, fi_mr_key(ro), NULL), 0);
	KUNIT_EXPECT_EQ(test, cq_wait(p.client.cq, &e), -FI_EAVAIL);
	KUNIT_ASSERT_EQ(test, fi_cq_readerr(p.client.cq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, FI_EACCES);
	KUNIT_ASSERT_EQ(test, fi_read(p.client.ep, back, 16, NULL, 0, 60, fi_mr_key(ro), NULL), 0);
	KUNIT_EXPECT_EQ(test, cq_wait(p.client.cq, &e), -FI_EAVAIL);
	KUNIT_ASSERT_EQ(test, fi_cq_readerr(p.client.cq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, EINVAL);
	exchange(test, &p, 100, 8);

	KUNIT_EXPECT_EQ(test, fi_close(&ro->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	pair_close(test, &p);
	vfree(region);
	vfree(src);
	vfree(back);
}

static void sock_shutdown_both_sides(struct kunit *test)
{
	struct pair p = {};
	struct cm_event ev;
	u8 buf[8];

	pair_open(test, &p, "127.0.0.1", "7475");
	KUNIT_ASSERT_EQ(test, fi_shutdown(p.client.ep, 0), 0);
	KUNIT_EXPECT_EQ(test, cm_wait(p.client.eq, FI_SHUTDOWN, &ev), (ssize_t)sizeof(ev.entry));
	KUNIT_EXPECT_EQ(test, cm_wait(p.server.eq, FI_SHUTDOWN, &ev), (ssize_t)sizeof(ev.entry));
	KUNIT_EXPECT_EQ(test, fi_send(p.client.ep, buf, 8, NULL, 0, NULL), -FI_ENOTCONN);
	pair_close(test, &p);
}

static void sock_refused_and_rejected(struct kunit *test)
{
	struct pair p = {};
	struct fi_eq_attr eq_attr = {};
	struct fi_eq_err_entry err = {};
	struct cm_event ev;
	struct fi_info *src;
	u32 event;

	/* Nobody listens on 7476: the connect fails on the EQ. */
	src = sock_info(test, "127.0.0.1", "7476", FI_SOURCE);
	KUNIT_ASSERT_EQ(test, fi_fabric(src->fabric_attr, &p.fabric, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_domain(p.fabric, src, &p.domain, NULL), 0);
	p.client.info = sock_info(test, "127.0.0.1", "7476", 0);
	open_queues(test, &p, &p.client);
	KUNIT_ASSERT_EQ(test, fi_endpoint(p.domain, p.client.info, &p.client.ep, NULL), 0);
	bind_enable(test, &p.client);
	KUNIT_ASSERT_EQ(test, fi_connect(p.client.ep, NULL, NULL, 0), 0);
	KUNIT_EXPECT_EQ(test, fi_eq_sread(p.client.eq, &event, &ev, sizeof(ev), WAIT_MS, 0), -FI_EAVAIL);
	KUNIT_ASSERT_EQ(test, fi_eq_readerr(p.client.eq, &err, 0), (ssize_t)sizeof(err));
	KUNIT_EXPECT_EQ(test, err.err, FI_ECONNREFUSED);
	side_close(test, &p.client);
	memset(&p.client, 0, sizeof(p.client));

	/* A listener that rejects. */
	KUNIT_ASSERT_EQ(test, fi_eq_open(p.fabric, &eq_attr, &p.peq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_passive_ep(p.fabric, src, &p.pep, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_pep_bind(p.pep, &p.peq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_listen(p.pep), 0);
	p.client.info = sock_info(test, "127.0.0.1", "7476", 0);
	open_queues(test, &p, &p.client);
	KUNIT_ASSERT_EQ(test, fi_endpoint(p.domain, p.client.info, &p.client.ep, NULL), 0);
	bind_enable(test, &p.client);
	KUNIT_ASSERT_EQ(test, fi_connect(p.client.ep, NULL, "hi", 3), 0);
	KUNIT_ASSERT_EQ(test, cm_wait(p.peq, FI_CONNREQ, &ev), (ssize_t)(sizeof(ev.entry) + 3));
	KUNIT_EXPECT_EQ(test, fi_reject(p.pep, ev.entry.info->handle, "no", 3), 0);
	fi_freeinfo(ev.entry.info);
	KUNIT_EXPECT_EQ(test, fi_eq_sread(p.client.eq, &event, &ev, sizeof(ev), WAIT_MS, 0), -FI_EAVAIL);
	KUNIT_ASSERT_EQ(test, fi_eq_readerr(p.client.eq, &err, 0), (ssize_t)sizeof(err));
	KUNIT_EXPECT_EQ(test, err.err, FI_ECONNREFUSED);
	fi_freeinfo(src);
	pair_close(test, &p);
}


static void sock_peer_gone(struct kunit *test)
{
	struct pair p = {};
	struct cm_event ev;
	struct fi_cq_data_entry e;
	u8 buf[64];

	pair_open(test, &p, "127.0.0.1", "7477");
	/* A receive waits on the server; the client goes away without a word. */
	KUNIT_ASSERT_EQ(test, fi_recv(p.server.ep, buf, sizeof(buf), NULL, 0, NULL), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&p.client.ep->fid), 0);
	p.client.ep = NULL;
	KUNIT_EXPECT_EQ(test, cm_wait(p.server.eq, FI_SHUTDOWN, &ev), (ssize_t)sizeof(ev.entry));
	KUNIT_EXPECT_EQ(test, fi_send(p.server.ep, buf, 8, NULL, 0, NULL), -FI_ENOTCONN);
	KUNIT_EXPECT_EQ(test, fi_cq_read(p.server.cq, &e, 1), -FI_EAGAIN);
	pair_close(test, &p);
}

/* A raw TCP client sends @len bytes of @bytes to 127.0.0.1:@port, then waits
 * for the listener to drop it (recv returns 0 or an error). */
static int raw_client(u16 port, const void *bytes, size_t len)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct msghdr msg = {};
	struct kvec iov = { (void *)bytes, len };
	struct socket *sock;
	char sink[16];
	int ret, i;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ret = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP, &sock);
	if (ret)
		return ret;
	ret = kernel_connect(sock, (struct sockaddr *)&sin, sizeof(sin), 0);
	if (!ret)
		ret = kernel_sendmsg(sock, &msg, &iov, 1, len) == len ? 0 : -EIO;
	for (i = 0; !ret && i < 100; i++) {
		struct kvec r = { sink, sizeof(sink) };
		struct msghdr rm = { .msg_flags = MSG_DONTWAIT };
		int n = kernel_recvmsg(sock, &rm, &r, 1, sizeof(sink), MSG_DONTWAIT);

		if (n == -EAGAIN) {
			msleep(50);
			continue;
		}
		/* Dropped (EOF or reset): what we wanted. */
		ret = n > 0 ? -EPROTO : 1;
	}
	sock_release(sock);
	return ret;
}

static void sock_garbage_from_a_raw_client(struct kunit *test)
{
	struct pair p = {};
	struct fi_eq_attr eq_attr = {};
	struct fi_info *src;
	struct cm_event ev;
	u32 event;
	u8 junk[200];
	u8 bad_version[64] = { 'K', 'O', 'F', 'I', 9, 1 };

	fill(junk, sizeof(junk), 0x5a);
	src = sock_info(test, "127.0.0.1", "7478", FI_SOURCE);
	KUNIT_ASSERT_EQ(test, fi_fabric(src->fabric_attr, &p.fabric, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_domain(p.fabric, src, &p.domain, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_eq_open(p.fabric, &eq_attr, &p.peq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_passive_ep(p.fabric, src, &p.pep, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_pep_bind(p.pep, &p.peq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_listen(p.pep), 0);
	fi_freeinfo(src);

	/* Garbage, then a header of an unknown version: both are dropped. */
	KUNIT_EXPECT_EQ(test, raw_client(7478, junk, sizeof(junk)), 1);
	KUNIT_EXPECT_EQ(test, raw_client(7478, bad_version, sizeof(bad_version)), 1);
	KUNIT_EXPECT_EQ(test, fi_eq_read(p.peq, &event, &ev, sizeof(ev), 0), -FI_EAGAIN);
	fi_close(&p.pep->fid);
	fi_close(&p.peq->fid);
	fi_close(&p.domain->fid);
	fi_close(&p.fabric->fid);
	memset(&p, 0, sizeof(p));

	/* The provider is healthy: a real client connects and talks. */
	pair_open(test, &p, "127.0.0.1", "7478");
	exchange(test, &p, 512, 9);
	pair_close(test, &p);
}

#define MANY 64

static void sock_many_connections(struct kunit *test)
{
	struct pair p = {};
	struct side *clients = kunit_kcalloc(test, MANY, sizeof(*clients), GFP_KERNEL);
	struct side *servers = kunit_kcalloc(test, MANY, sizeof(*servers), GFP_KERNEL);
	struct fi_eq_attr eq_attr = { .size = 2 * MANY };
	struct fi_info *src;
	struct cm_event ev;
	struct fi_cq_data_entry e;
	char msg[16], got[16];
	int i;

	KUNIT_ASSERT_TRUE(test, clients && servers);
	src = sock_info(test, "127.0.0.1", "7479", FI_SOURCE);
	KUNIT_ASSERT_EQ(test, fi_fabric(src->fabric_attr, &p.fabric, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_domain(p.fabric, src, &p.domain, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_eq_open(p.fabric, &eq_attr, &p.peq, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_passive_ep(p.fabric, src, &p.pep, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_pep_bind(p.pep, &p.peq->fid, 0), 0);
	KUNIT_ASSERT_EQ(test, fi_listen(p.pep), 0);
	fi_freeinfo(src);

	for (i = 0; i < MANY; i++) {
		clients[i].info = sock_info(test, "127.0.0.1", "7479", 0);
		open_queues(test, &p, &clients[i]);
		KUNIT_ASSERT_EQ(test, fi_endpoint(p.domain, clients[i].info, &clients[i].ep, NULL), 0);
		bind_enable(test, &clients[i]);
		KUNIT_ASSERT_EQ(test, fi_connect(clients[i].ep, NULL, &i, sizeof(i)), 0);
	}
	for (i = 0; i < MANY; i++) {
		int who;

		KUNIT_ASSERT_EQ(test, cm_wait(p.peq, FI_CONNREQ, &ev), (ssize_t)(sizeof(ev.entry) + sizeof(int)));
		memcpy(&who, ev.data, sizeof(who));
		KUNIT_ASSERT_TRUE(test, who >= 0 && who < MANY && !servers[who].info);
		servers[who].info = ev.entry.info;
		open_queues(test, &p, &servers[who]);
		KUNIT_ASSERT_EQ(test, fi_endpoint(p.domain, servers[who].info, &servers[who].ep, NULL), 0);
		bind_enable(test, &servers[who]);
		KUNIT_ASSERT_EQ(test, fi_accept(servers[who].ep, NULL, 0), 0);
	}
	for (i = 0; i < MANY; i++) {
		KUNIT_ASSERT_EQ(test, cm_wait(clients[i].eq, FI_CONNECTED, &ev), (ssize_t)sizeof(ev.entry));
		KUNIT_ASSERT_EQ(test, cm_wait(servers[i].eq, FI_CONNECTED, &ev), (ssize_t)sizeof(ev.entry));
	}
	for (i = 0; i < MANY; i++) {
		snprintf(msg, sizeof(msg), "conn %d", i);
		KUNIT_ASSERT_EQ(test, fi_recv(servers[i].ep, got, sizeof(got), NULL, 0, NULL), 0);
		KUNIT_ASSERT_EQ(test, fi_send(clients[i].ep, msg, sizeof(msg), NULL, 0, NULL), 0);
	}
	for (i = 0; i < MANY; i++) {
		KUNIT_ASSERT_EQ(test, cq_wait(servers[i].cq, &e), 1);
		KUNIT_ASSERT_EQ(test, cq_wait(clients[i].cq, &e), 1);
	}
	for (i = 0; i < MANY; i++) {
		side_close(test, &clients[i]);
		side_close(test, &servers[i]);
	}
	pair_close(test, &p);
}

/* Page-based storage I/O: bio_vec buffers for messages and for RMA. */
static void sock_bio_vec_buffers(struct kunit *test)
{
	struct pair p = {};
	struct page *pages[4];
	struct bio_vec src[2], dst[2], back;
	struct fi_cq_data_entry e;
	struct fid_mr *mr;
	u8 *region = kunit_kzalloc(test, 8192, GFP_KERNEL);
	int i;

	KUNIT_ASSERT_NOT_NULL(test, region);
	for (i = 0; i < 4; i++) {
		pages[i] = alloc_page(GFP_KERNEL | __GFP_ZERO);
		KUNIT_ASSERT_NOT_NULL(test, pages[i]);
	}
	fill(page_address(pages[0]), PAGE_SIZE, 11);
	fill(page_address(pages[1]), PAGE_SIZE, 12);
	bvec_set_page(&src[0], pages[0], 3000, 100);
	bvec_set_page(&src[1], pages[1], 2000, 0);
	bvec_set_page(&dst[0], pages[2], 2500, 0);
	bvec_set_page(&dst[1], pages[3], 2500, 1000);
	pair_open(test, &p, "127.0.0.1", "7480");
	{
		struct fi_msg rmsg = { .msg_bvec = dst, .iov_count = 2 };
		struct fi_msg smsg = { .msg_bvec = src, .iov_count = 2 };

		KUNIT_ASSERT_EQ(test, fi_recvmsg(p.server.ep, &rmsg, 0), 0);
		KUNIT_ASSERT_EQ(test, fi_sendmsg(p.client.ep, &smsg, 0), 0);
	}
	KUNIT_ASSERT_EQ(test, cq_wait(p.server.cq, &e), 1);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)5000);
	KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
	/* 3000 bytes of page 0 from offset 100, then 2000 of page 1. */
	KUNIT_EXPECT_EQ(test, memcmp(page_address(pages[2]), page_address(pages[0]) + 100, 2500), 0);
	KUNIT_EXPECT_EQ(test, memcmp(page_address(pages[3]) + 1000, page_address(pages[0]) + 2600, 500), 0);
	KUNIT_EXPECT_EQ(test, memcmp(page_address(pages[3]) + 1500, page_address(pages[1]), 2000), 0);

	/* RMA write from pages, read back into a page. */
	KUNIT_ASSERT_EQ(test, fi_mr_reg(p.domain, region, 8192, FI_REMOTE_READ | FI_REMOTE_WRITE,
					0, 0, 0, &mr, NULL), 0);
	{
		struct fi_rma_iov rma = { .addr = 10, .len = 5000, .key = fi_mr_key(mr) };
		struct fi_msg_rma w = { .msg_bvec = src, .iov_count = 2, .rma_iov = &rma,
					.rma_iov_count = 1 };
		struct fi_rma_iov rrma = { .addr = 10, .len = 3000, .key = fi_mr_key(mr) };
		struct fi_msg_rma r = { .msg_bvec = &back, .iov_count = 1, .rma_iov = &rrma,
					.rma_iov_count = 1 };

		KUNIT_ASSERT_EQ(test, fi_writemsg(p.client.ep, &w, 0), 0);
		KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
		KUNIT_EXPECT_EQ(test, memcmp(region + 10, page_address(pages[0]) + 100, 3000), 0);
		KUNIT_EXPECT_EQ(test, memcmp(region + 3010, page_address(pages[1]), 2000), 0);
		memset(page_address(pages[2]), 0, PAGE_SIZE);
		bvec_set_page(&back, pages[2], 3000, 500);
		KUNIT_ASSERT_EQ(test, fi_readmsg(p.client.ep, &r, 0), 0);
		KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
		KUNIT_EXPECT_EQ(test, memcmp(page_address(pages[2]) + 500, region + 10, 3000), 0);
	}
	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	pair_close(test, &p);
	for (i = 0; i < 4; i++)
		__free_page(pages[i]);
}

/* The peer resets while sends are backed up behind flow control: every send
 * completes (the unsent ones with errors) and FI_SHUTDOWN arrives. */
static void sock_reset_mid_transfer(struct kunit *test)
{
	struct pair p = {};
	struct cm_event ev;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	/* 24 MiB: more than the hold (8 MiB) and TCP's buffers can take. */
	enum { SENDS = 48 };
	const size_t len = 512 << 10;
	u8 *buf = vzalloc(len);
	int i, ok = 0, failed = 0, posted = 0;
	u32 event;
	ssize_t n;

	KUNIT_ASSERT_NOT_NULL(test, buf);
	pair_open(test, &p, "127.0.0.1", "7481");
	/* No receives: 8 MiB are held, the rest wait in the client. */
	for (i = 0; i < SENDS; i++)
		if (!fi_send(p.client.ep, buf, len, NULL, 0, NULL))
			posted++;
	KUNIT_EXPECT_EQ(test, posted, SENDS);
	msleep(200);
	KUNIT_EXPECT_EQ(test, fi_close(&p.server.ep->fid), 0);
	p.server.ep = NULL;
	while (ok + failed < posted) {
		n = fi_cq_sread(p.client.cq, &e, 1, NULL, WAIT_MS);
		if (n == 1) {
			ok++;
		} else if (n == -FI_EAVAIL) {
			KUNIT_ASSERT_EQ(test, fi_cq_readerr(p.client.cq, &err, 0), 1);
			KUNIT_EXPECT_EQ(test, err.err, FI_ECONNRESET);
			failed++;
		} else {
			KUNIT_FAIL(test, "sread: %zd after %d ok, %d failed", n, ok, failed);
			break;
		}
	}
	KUNIT_EXPECT_GT(test, failed, 0);
	KUNIT_EXPECT_EQ(test, fi_eq_sread(p.client.eq, &event, &ev, sizeof(ev), WAIT_MS, 0),
			(ssize_t)sizeof(ev.entry));
	KUNIT_EXPECT_EQ(test, event, (u32)FI_SHUTDOWN);
	pair_close(test, &p);
	vfree(buf);
}

/* 1 MiB of separate pages, spliced; and slab memory, which cannot be spliced
 * and is copied instead. Both arrive intact. */
static void sock_zero_copy_and_fallback(struct kunit *test)
{
	enum { NPAGES = 256 };
	struct pair p = {};
	struct page **pages = kunit_kcalloc(test, NPAGES, sizeof(*pages), GFP_KERNEL);
	struct bio_vec *bv = kunit_kcalloc(test, NPAGES, sizeof(*bv), GFP_KERNEL);
	u8 *dst = vzalloc(NPAGES * PAGE_SIZE), *slab = kmalloc(3000, GFP_KERNEL);
	struct fi_cq_data_entry e;
	struct bio_vec sbv;
	int i;

	KUNIT_ASSERT_TRUE(test, pages && bv && dst && slab);
	for (i = 0; i < NPAGES; i++) {
		pages[i] = alloc_page(GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, pages[i]);
		fill(page_address(pages[i]), PAGE_SIZE, (u8)i);
		bvec_set_page(&bv[i], pages[i], PAGE_SIZE, 0);
	}
	pair_open(test, &p, "127.0.0.1", "7482");
	{
		/* More pages than iov_limit need the pages in one bio_vec array:
		 * send them 16 at a time. */
		struct kvec r = { dst, NPAGES * PAGE_SIZE };

		for (i = 0; i < NPAGES; i += 16) {
			struct fi_msg m = { .msg_bvec = &bv[i], .iov_count = 16 };

			r.iov_base = dst + i * PAGE_SIZE;
			r.iov_len = 16 * PAGE_SIZE;
			KUNIT_ASSERT_EQ(test, fi_recvv(p.server.ep, &r, NULL, 1, 0, NULL), 0);
			KUNIT_ASSERT_EQ(test, fi_sendmsg(p.client.ep, &m, 0), 0);
		}
		for (i = 0; i < NPAGES; i += 16) {
			KUNIT_ASSERT_EQ(test, cq_wait(p.server.cq, &e), 1);
			KUNIT_EXPECT_EQ(test, e.len, (size_t)(16 * PAGE_SIZE));
			KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
		}
	}
	for (i = 0; i < NPAGES; i++)
		KUNIT_EXPECT_EQ(test, memcmp(dst + i * PAGE_SIZE, page_address(pages[i]), PAGE_SIZE), 0);

	fill(slab, 3000, 77);
	bvec_set_virt(&sbv, slab, 3000);
	{
		struct fi_msg m = { .msg_bvec = &sbv, .iov_count = 1 };

		KUNIT_ASSERT_EQ(test, fi_recv(p.server.ep, dst, 3000, NULL, 0, NULL), 0);
		KUNIT_ASSERT_EQ(test, fi_sendmsg(p.client.ep, &m, 0), 0);
		KUNIT_ASSERT_EQ(test, cq_wait(p.server.cq, &e), 1);
		KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
		KUNIT_EXPECT_EQ(test, memcmp(dst, slab, 3000), 0);
	}
	pair_close(test, &p);
	for (i = 0; i < NPAGES; i++)
		__free_page(pages[i]);
	kfree(slab);
	vfree(dst);
}

/* RMA calls with several remote buffers: each completes once, and a part the
 * target refuses fails the call (once), with the call's context. */
static void sock_rma_several_buffers(struct kunit *test)
{
	struct pair p = {};
	struct fid_mr *mr;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = {};
	u8 *region = kunit_kzalloc(test, 8192, GFP_KERNEL);
	u8 *src = kunit_kzalloc(test, 300, GFP_KERNEL), *back = kunit_kzalloc(test, 300, GFP_KERNEL);
	struct kvec iov = { back, 300 }, siov = { src, 300 };
	struct fi_rma_iov rma[3];
	struct fi_msg_rma msg = { .iov_count = 1, .rma_iov = rma, .context = back };
	u64 key;

	KUNIT_ASSERT_TRUE(test, region && src && back);
	fill(region, 8192, 21);
	fill(src, 300, 22);
	pair_open(test, &p, "127.0.0.1", "7483");
	KUNIT_ASSERT_EQ(test, fi_mr_reg(p.domain, region, 8192, FI_REMOTE_READ | FI_REMOTE_WRITE,
					0, 0, 0, &mr, NULL), 0);
	key = fi_mr_key(mr);

	/* Read 100 bytes at 10 and 200 at 5000 into one local buffer. */
	rma[0] = (struct fi_rma_iov){ 10, 100, key };
	rma[1] = (struct fi_rma_iov){ 5000, 200, key };
	msg.msg_iov = &iov;
	msg.rma_iov_count = 2;
	KUNIT_ASSERT_EQ(test, fi_readmsg(p.client.ep, &msg, 0), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)back);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)300);
	KUNIT_EXPECT_EQ(test, memcmp(back, region + 10, 100), 0);
	KUNIT_EXPECT_EQ(test, memcmp(back + 100, region + 5000, 200), 0);

	/* Write into three places. */
	rma[0] = (struct fi_rma_iov){ 0, 100, key };
	rma[1] = (struct fi_rma_iov){ 4000, 100, key };
	rma[2] = (struct fi_rma_iov){ 8000, 100, key };
	msg.msg_iov = &siov;
	msg.rma_iov_count = 3;
	msg.context = src;
	KUNIT_ASSERT_EQ(test, fi_writemsg(p.client.ep, &msg, 0), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)src);
	KUNIT_EXPECT_EQ(test, memcmp(region, src, 100), 0);
	KUNIT_EXPECT_EQ(test, memcmp(region + 4000, src + 100, 100), 0);
	KUNIT_EXPECT_EQ(test, memcmp(region + 8000, src + 200, 100), 0);

	/* The middle part names no region: one error, for the whole call. */
	rma[1].key = key ^ 0x10;
	KUNIT_ASSERT_EQ(test, fi_writemsg(p.client.ep, &msg, 0), 0);
	KUNIT_EXPECT_EQ(test, cq_wait(p.client.cq, &e), -FI_EAVAIL);
	KUNIT_ASSERT_EQ(test, fi_cq_readerr(p.client.cq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, FI_ENOKEY);
	KUNIT_EXPECT_PTR_EQ(test, err.op_context, (void *)src);
	KUNIT_EXPECT_EQ(test, fi_cq_read(p.client.cq, &e, 1), -FI_EAGAIN);
	exchange(test, &p, 64, 23);

	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	pair_close(test, &p);
}

/* More messages arrive before their receives than the hold has slots: the
 * connection holds the sender back instead of failing; all arrive, in order. */
static void sock_many_unexpected_messages(struct kunit *test)
{
	enum { COUNT = 600 };
	struct pair p = {};
	struct fi_cq_data_entry e;
	/* A send's buffer is the provider's until it completes: one each. */
	u32 *sent = kunit_kcalloc(test, COUNT, sizeof(*sent), GFP_KERNEL);
	u32 i, got;

	KUNIT_ASSERT_NOT_NULL(test, sent);
	pair_open(test, &p, "127.0.0.1", "7484");
	for (i = 0; i < COUNT; i++) {
		ssize_t ret;

		sent[i] = i;
		do {
			ret = fi_send(p.client.ep, &sent[i], sizeof(*sent), NULL, 0, NULL);
			/* A full transmit queue: let completions drain it. */
			if (ret == -FI_EAGAIN)
				KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
		} while (ret == -FI_EAGAIN);
		KUNIT_ASSERT_EQ(test, ret, 0);
	}
	msleep(200);
	for (i = 0; i < COUNT; i++) {
		KUNIT_ASSERT_EQ(test, fi_recv(p.server.ep, &got, sizeof(got), NULL, 0, NULL), 0);
		KUNIT_ASSERT_EQ(test, cq_wait(p.server.cq, &e), 1);
		KUNIT_ASSERT_EQ(test, got, i);
	}
	pair_close(test, &p);
}

/* Sends queued faster than TCP takes them go out from their own buffers, in
 * order: 16 sendv calls of three kvecs (6 MiB) before any receive is posted.
 * (That a send completes only once TCP took all of it, sock_reset_mid_transfer
 * shows: sends still queued at the reset fail.) */
static void sock_queued_kvec_sends(struct kunit *test)
{
	enum { COUNT = 16 };
	const size_t part = 128 << 10, len = 3 * part;
	struct pair p = {};
	struct fi_cq_data_entry e;
	u8 *src[COUNT], *dst = vzalloc(len);
	int i, j;

	KUNIT_ASSERT_NOT_NULL(test, dst);
	pair_open(test, &p, "127.0.0.1", "7485");
	for (i = 0; i < COUNT; i++) {
		struct kvec iov[3];

		src[i] = vmalloc(len);
		KUNIT_ASSERT_NOT_NULL(test, src[i]);
		fill(src[i], len, i);
		for (j = 0; j < 3; j++)
			iov[j] = (struct kvec){ src[i] + j * part, part };
		/* The kvec array itself is the caller's again on return. */
		KUNIT_ASSERT_EQ(test, fi_sendv(p.client.ep, iov, NULL, 3, 0, src[i]), 0);
	}
	for (i = 0; i < COUNT; i++) {
		KUNIT_ASSERT_EQ(test, fi_recv(p.server.ep, dst, len, NULL, 0, dst), 0);
		KUNIT_ASSERT_EQ(test, cq_wait(p.server.cq, &e), 1);
		KUNIT_EXPECT_EQ(test, e.len, len);
		KUNIT_EXPECT_EQ(test, memcmp(src[i], dst, len), 0);
		memset(dst, 0, len);
	}
	/* Every send completed, in order, with its own context. */
	for (i = 0; i < COUNT; i++) {
		KUNIT_ASSERT_EQ(test, cq_wait(p.client.cq, &e), 1);
		KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)src[i]);
	}
	pair_close(test, &p);
	for (i = 0; i < COUNT; i++)
		vfree(src[i]);
	vfree(dst);
}

static struct kunit_case sock_cases[] = {
	KUNIT_CASE(sock_connect_and_messages),
	KUNIT_CASE(sock_ipv6),
	KUNIT_CASE(sock_vectors_truncation_data),
	KUNIT_CASE(sock_many_unexpected_messages),
	KUNIT_CASE(sock_queued_kvec_sends),
	KUNIT_CASE(sock_rma),
	KUNIT_CASE(sock_rma_several_buffers),
	KUNIT_CASE(sock_bio_vec_buffers),
	KUNIT_CASE(sock_zero_copy_and_fallback),
	KUNIT_CASE(sock_shutdown_both_sides),
	KUNIT_CASE(sock_refused_and_rejected),
	KUNIT_CASE(sock_peer_gone),
	KUNIT_CASE(sock_reset_mid_transfer),
	KUNIT_CASE(sock_garbage_from_a_raw_client),
	KUNIT_CASE(sock_many_connections),
	{}
};

static struct kunit_suite kofi_sock_suite = { .name = "kofi_sock", .test_cases = sock_cases };
kunit_test_suite(kofi_sock_suite);

MODULE_IMPORT_NS(KOFI);
MODULE_DESCRIPTION("KUnit tests of kofi_sock over loopback TCP");
MODULE_LICENSE("GPL");
