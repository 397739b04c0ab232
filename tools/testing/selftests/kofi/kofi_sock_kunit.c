// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit suite for what is particular to kofi_sock, over loopback TCP (what
 * every provider does is in the conformance suite, kofi_conformance.c):
 * RMA violations answered with their own errors while the connection
 * stays, flow control under many unexpected messages, zero-copy page sends,
 * a reset mid-transfer, garbage from a raw TCP client, many connections,
 * receives made by the consumer's thread sleeping on the CQ or posting a
 * late receive, a read's answer its peer does not take holding no region,
 * frames read whole from any pieces TCP cuts them into.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/completion.h>
#include <linux/kthread.h>
#include <linux/workqueue.h>
#include <linux/bvec.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <linux/random.h>
#include <linux/unaligned.h>
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
#include <kofi/compat.h>

#include "kofi_test_pair.h"
#include "kofi_test_raw.h"

/* RMA violations fail at the initiator, each with its own error, and the
 * connection stays up. */
static void sock_rma_violations(struct kunit *test)
{
	struct pair *p = pair_new(test, (struct pair){});
	struct fid_mr *mr, *ro;
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err = {};
	u8 *region = vzalloc(65536), *src = vmalloc(65536), *back = vzalloc(65536);
	u8 small[64];
	u64 key;

	KUNIT_ASSERT_TRUE(test, region && src && back);
	fill(src, 65536, 7);
	pair_open(test, p, "sock", "127.0.0.1", "7474");
	KUNIT_ASSERT_EQ(test, fi_mr_reg(p->domain, region, 65536, FI_REMOTE_READ | FI_REMOTE_WRITE,
					0, 0, 0, &mr, NULL), 0);
	key = fi_mr_key(mr);
	KUNIT_ASSERT_EQ(test, fi_mr_reg(p->domain, small, sizeof(small), FI_REMOTE_READ, 0, 0, 0,
					&ro, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_write(p->client.ep, src, 16, NULL, 0, 0, key ^ 0x100, NULL), 0);
	KUNIT_EXPECT_EQ(test, cq_wait(p->client.cq, &e), -FI_EAVAIL);
	KUNIT_ASSERT_EQ(test, fi_cq_readerr(p->client.cq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, FI_ENOKEY);
	KUNIT_ASSERT_EQ(test, fi_write(p->client.ep, src, 16, NULL, 0, 60, fi_mr_key(ro), NULL), 0);
	KUNIT_EXPECT_EQ(test, cq_wait(p->client.cq, &e), -FI_EAVAIL);
	KUNIT_ASSERT_EQ(test, fi_cq_readerr(p->client.cq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, FI_EACCES);
	KUNIT_ASSERT_EQ(test, fi_read(p->client.ep, back, 16, NULL, 0, 60, fi_mr_key(ro), NULL), 0);
	KUNIT_EXPECT_EQ(test, cq_wait(p->client.cq, &e), -FI_EAVAIL);
	KUNIT_ASSERT_EQ(test, fi_cq_readerr(p->client.cq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, EINVAL);
	exchange(test, p, 100, 8);

	KUNIT_EXPECT_EQ(test, fi_close(&ro->fid), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	pair_close(test, p);
	vfree(region);
	vfree(src);
	vfree(back);
}


/* 1 when the listener dropped @sock (EOF or reset) within @ms, 0 when it is
 * still open, -EPROTO when it answered bytes. */
static int raw_dropped(struct socket *sock, int ms)
{
	char sink[16];
	int i;

	for (i = 0; i <= ms / 50; i++) {
		struct kvec r = { sink, sizeof(sink) };
		struct msghdr rm = { .msg_flags = MSG_DONTWAIT };
		int n = kernel_recvmsg(sock, &rm, &r, 1, sizeof(sink), MSG_DONTWAIT);

		if (n != -EAGAIN)
			return n > 0 ? -EPROTO : 1;
		msleep(50);
	}
	return 0;
}

/* A raw TCP client sends @len bytes of @bytes to 127.0.0.1:@port, then
 * waits up to @wait_ms for the listener to drop it (1 when it did), or with
 * @wait_ms 0 closes at once (0 when the bytes went). */
static int raw_client(u16 port, const void *bytes, size_t len, int wait_ms)
{
	struct socket *sock = raw_open("127.0.0.1", port);
	int ret;

	if (!sock)
		return -ECONNREFUSED;
	ret = raw_send(sock, bytes, len);
	if (!ret && wait_ms)
		ret = raw_dropped(sock, wait_ms);
	sock_release(sock);
	return ret;
}

/* kofi_sock's frame header (sock-wire.rst): @op with a payload of @len. */
static void wire_header(u8 *h, u8 op, u64 len)
{
	memset(h, 0, 64);
	memcpy(h, "KOFI", 4);
	h[4] = 1;
	h[5] = op;
	put_unaligned_le64(len, h + 16);
}

/* The fabric, domain, EQ and listening passive endpoint of a pair. */
static void raw_listener(struct kunit *test, struct pair *p, const char *port)
{
	p->prov = "sock";
	pair_listen(test, p, "127.0.0.1", port);
}

static void sock_garbage_from_a_raw_client(struct kunit *test)
{
	struct pair *p = pair_new(test, (struct pair){});
	struct cm_event ev;
	u32 event;
	u8 junk[200];
	u8 bad_version[64] = { 'K', 'O', 'F', 'I', 9, 1 };

	fill(junk, sizeof(junk), 0x5a);
	raw_listener(test, p, "7478");

	/* Garbage, then a header of an unknown version: both are dropped. */
	KUNIT_EXPECT_EQ(test, raw_client(7478, junk, sizeof(junk), 5000), 1);
	KUNIT_EXPECT_EQ(test, raw_client(7478, bad_version, sizeof(bad_version), 5000), 1);
	KUNIT_EXPECT_EQ(test, fi_eq_read(p->peq, &event, &ev, sizeof(ev), 0), -FI_EAGAIN);
	pair_close(test, p);

	/* The provider is healthy: a real client connects and talks. */
	pair_open(test, p, "sock", "127.0.0.1", "7478");
	exchange(test, p, 512, 9);
	pair_close(test, p);
}

/* A connection that never sends its CONNECT belongs to the listener: when
 * the passive endpoint closes, the provider closes it too (it outlived the
 * endpoint before, and a late CONNECT reached freed memory). */
static void sock_silent_connections_close_with_their_listener(struct kunit *test)
{
	struct pair *p = pair_new(test, (struct pair){});
	struct socket *raw[3];
	u8 connect[64];
	int i;

	raw_listener(test, p, "7491");
	for (i = 0; i < 3; i++) {
		raw[i] = raw_open("127.0.0.1", 7491);
		KUNIT_ASSERT_NOT_NULL(test, raw[i]);
	}
	/* Accepted and waiting for their CONNECT. */
	msleep(300);
	KUNIT_EXPECT_EQ(test, raw_dropped(raw[0], 0), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&p->pep->fid), 0);
	p->pep = NULL;
	for (i = 0; i < 3; i++)
		KUNIT_EXPECT_EQ(test, raw_dropped(raw[i], 3000), 1);
	/* A late CONNECT goes nowhere. */
	wire_header(connect, 1, 0);
	raw_send(raw[1], connect, sizeof(connect));
	msleep(100);
	for (i = 0; i < 3; i++)
		sock_release(raw[i]);
	pair_close(test, p);
}

/* A connection that stays silent after TCP connect is closed once the
 * handshake time (10 s, listener.rs) is up, with no other connection to
 * prompt it; the consumer never hears of it, and the listener still serves. */
static void sock_silent_connection_times_out(struct kunit *test)
{
	struct pair *p = pair_new(test, (struct pair){});
	struct cm_event ev;
	struct socket *raw;
	u32 event;

	raw_listener(test, p, "7495");
	raw = raw_open("127.0.0.1", 7495);
	KUNIT_ASSERT_NOT_NULL(test, raw);
	/* Still open well before the deadline, closed soon after it. */
	KUNIT_EXPECT_EQ(test, raw_dropped(raw, 5000), 0);
	KUNIT_EXPECT_EQ(test, raw_dropped(raw, 8000), 1);
	sock_release(raw);
	KUNIT_EXPECT_EQ(test, fi_eq_read(p->peq, &event, &ev, sizeof(ev), 0), -FI_EAGAIN);

	side_connect(test, p, &p->client, "127.0.0.1", "7495", "late", 5);
	KUNIT_ASSERT_EQ(test, cm_wait(p->peq, FI_CONNREQ, &ev), (ssize_t)(sizeof(ev.entry) + 5));
	side_accept(test, p, &p->server, &ev, NULL, 0);
	KUNIT_ASSERT_EQ(test, cm_wait(p->client.eq, FI_CONNECTED, &ev), (ssize_t)sizeof(ev.entry));
	exchange(test, p, 64, 7);
	pair_close(test, p);
}

/* Before the handshake a peer can make the listener hold little: a header
 * claiming a large payload is refused at once, and silent connections past
 * the pending bound push out the oldest slow one, not the next legitimate
 * client. */
static void sock_handshake_is_bounded(struct kunit *test)
{
	struct pair *p = pair_new(test, (struct pair){});
	struct socket **raw = kunit_kcalloc(test, 72, sizeof(*raw), GFP_KERNEL);
	struct cm_event ev;
	u8 h[64];
	int i, dropped;

	KUNIT_ASSERT_NOT_NULL(test, raw);
	raw_listener(test, p, "7492");
	wire_header(h, 4, 4 << 20);	/* Send, 4 MiB, before CONNECT */
	KUNIT_EXPECT_EQ(test, raw_client(7492, h, sizeof(h), 5000), 1);
	wire_header(h, 1, 4 << 20);	/* CONNECT with 4 MiB of private data */
	KUNIT_EXPECT_EQ(test, raw_client(7492, h, sizeof(h), 5000), 1);

	/* 64 are kept waiting (listener.rs); once they have waited 3 s, 8 more
	 * push out the 8 oldest. */
	for (i = 0; i < 72; i++) {
		if (i == 64)
			msleep(3500);
		raw[i] = raw_open("127.0.0.1", 7492);
		KUNIT_ASSERT_NOT_NULL(test, raw[i]);
		msleep(20);
	}
	msleep(500);
	for (i = 0, dropped = 0; i < 8; i++)
		dropped += raw_dropped(raw[i], 0) == 1;
	KUNIT_EXPECT_EQ(test, dropped, 8);
	for (i = 8, dropped = 0; i < 72; i++)
		dropped += raw_dropped(raw[i], 0) == 1;
	KUNIT_EXPECT_EQ(test, dropped, 0);

	/* A real client still gets through (pushing out one more). */
	side_connect(test, p, &p->client, "127.0.0.1", "7492", NULL, 0);
	KUNIT_ASSERT_EQ(test, cm_wait(p->peq, FI_CONNREQ, &ev), (ssize_t)sizeof(ev.entry));
	side_accept(test, p, &p->server, &ev, NULL, 0);
	KUNIT_ASSERT_EQ(test, cm_wait(p->client.eq, FI_CONNECTED, &ev), (ssize_t)sizeof(ev.entry));
	exchange(test, p, 1000, 4);
	for (i = 0; i < 72; i++)
		sock_release(raw[i]);
	pair_close(test, p);
}

/* What a hostile or broken client throws at a listener: a thousand
 * connections opened and dropped at once, random bytes of random lengths,
 * a valid CONNECT header whose private data never comes, and one with it
 * cut short. None reaches the consumer; afterwards the listener serves a
 * real client. (kmemleak and KASAN judge what they left behind.) */
static void sock_connection_flood_and_random_bytes(struct kunit *test)
{
	enum { DROPPED = 1000, RANDOM = 100 };
	struct pair *p = pair_new(test, (struct pair){});
	struct cm_event ev;
	u8 *junk = kunit_kmalloc(test, 4096, GFP_KERNEL);
	u8 h[64 + 10];
	u32 event;
	int i, refused = 0, answered = 0;

	KUNIT_ASSERT_NOT_NULL(test, junk);
	raw_listener(test, p, "7494");
	for (i = 0; i < DROPPED; i++) {
		struct socket *s = raw_open("127.0.0.1", 7494);

		if (!s)
			refused++;
		else
			sock_release(s);
	}
	/* The backlog may refuse some under the flood; most get in. */
	KUNIT_EXPECT_LT(test, refused, DROPPED / 2);
	for (i = 0; i < RANDOM; i++) {
		struct socket *s = raw_open("127.0.0.1", 7494);
		size_t len = 1 + get_random_u32_below(4096);

		if (!s)
			continue;
		get_random_bytes(junk, len);
		raw_send(s, junk, len);
		/* Random bytes are no frame: dropped, never answered. */
		answered += raw_dropped(s, 2000) == -EPROTO;
		sock_release(s);
	}
	KUNIT_EXPECT_EQ(test, answered, 0);
	/* A CONNECT saying 10 bytes of private data, then nothing; then one
	 * with 5 of its 10 bytes before the close. */
	wire_header(h, 1, 10);
	KUNIT_EXPECT_EQ(test, raw_client(7494, h, 64, 0), 0);
	memset(h + 64, 'x', 10);
	KUNIT_EXPECT_EQ(test, raw_client(7494, h, 64 + 5, 0), 0);
	msleep(200);
	KUNIT_EXPECT_EQ(test, fi_eq_read(p->peq, &event, &ev, sizeof(ev), 0), -FI_EAGAIN);

	side_connect(test, p, &p->client, "127.0.0.1", "7494", "real", 5);
	KUNIT_ASSERT_EQ(test, cm_wait(p->peq, FI_CONNREQ, &ev), (ssize_t)(sizeof(ev.entry) + 5));
	KUNIT_EXPECT_STREQ(test, (char *)ev.data, "real");
	side_accept(test, p, &p->server, &ev, NULL, 0);
	KUNIT_ASSERT_EQ(test, cm_wait(p->client.eq, FI_CONNECTED, &ev), (ssize_t)sizeof(ev.entry));
	exchange(test, p, 4096, 6);
	pair_close(test, p);
}

/* RMA of exactly max_msg_size both ways, data verified: large payloads need
 * no physically contiguous buffer (an order-11 allocation failed before). */
static void sock_rma_of_max_msg_size(struct kunit *test)
{
	struct pair *p = pair_new(test, (struct pair){});
	struct fid_mr *mr;
	struct fi_cq_data_entry e;
	size_t max;
	u8 *region, *src, *back;

	pair_open(test, p, "sock", "127.0.0.1", "7493");
	max = p->client.info->ep_attr->max_msg_size;
	region = vzalloc(max);
	src = vmalloc(max);
	back = vzalloc(max);
	KUNIT_ASSERT_TRUE(test, region && src && back);
	fill(src, max, 11);
	KUNIT_ASSERT_EQ(test, fi_mr_reg(p->domain, region, max, FI_REMOTE_READ | FI_REMOTE_WRITE,
					0, 0, 0, &mr, NULL), 0);
	KUNIT_ASSERT_EQ(test, fi_write(p->client.ep, src, max, NULL, 0, 0, fi_mr_key(mr), src), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
	KUNIT_EXPECT_EQ(test, memcmp(region, src, max), 0);
	KUNIT_ASSERT_EQ(test, fi_read(p->client.ep, back, max, NULL, 0, 0, fi_mr_key(mr), back), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
	KUNIT_EXPECT_EQ(test, e.len, max);
	KUNIT_EXPECT_EQ(test, memcmp(back, src, max), 0);
	exchange(test, p, 64, 1);
	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	pair_close(test, p);
	vfree(region);
	vfree(src);
	vfree(back);
}

/* Receives exactly @len bytes from @sock into @buf; 0, or a negative error. */
static int raw_recv_all(struct socket *sock, void *buf, size_t len)
{
	while (len) {
		struct kvec r = { buf, len };
		struct msghdr rm = {};
		int n = kernel_recvmsg(sock, &rm, &r, 1, len, MSG_WAITALL);

		if (n <= 0)
			return n ? n : -ECONNRESET;
		buf += n;
		len -= n;
	}
	return 0;
}

/* A raw TCP peer of the pair's listener on @port, connected and accepted
 * (no private data either way). */
static struct socket *raw_accepted(struct kunit *test, struct pair *p, u16 port)
{
	struct socket *raw;
	struct cm_event ev;
	char service[8];
	u8 h[64];

	snprintf(service, sizeof(service), "%u", port);
	raw_listener(test, p, service);
	raw = raw_open("127.0.0.1", port);
	KUNIT_ASSERT_NOT_NULL(test, raw);
	wire_header(h, 1, 0);			/* CONNECT, no private data */
	KUNIT_ASSERT_EQ(test, raw_send(raw, h, sizeof(h)), 0);
	KUNIT_ASSERT_EQ(test, cm_wait(p->peq, FI_CONNREQ, &ev), (ssize_t)sizeof(ev.entry));
	side_accept(test, p, &p->server, &ev, NULL, 0);
	KUNIT_ASSERT_EQ(test, cm_wait(p->server.eq, FI_CONNECTED, &ev), (ssize_t)sizeof(ev.entry));
	KUNIT_ASSERT_EQ(test, raw_recv_all(raw, h, sizeof(h)), 0);
	KUNIT_EXPECT_EQ(test, h[5], 2);		/* ACCEPT */
	return raw;
}

/*
 * A peer that asks for a read and does not take the answer holds no region:
 * the region closes at once, and what the peer reads later is the region's
 * bytes as they were at the read, however the memory changed after its
 * close. (kofi_sock answers from a copy; sending from the region in place
 * would have to hold it until TCP took every byte.)
 */
static void sock_unread_answer_holds_no_region(struct kunit *test)
{
	struct pair *p = pair_new(test, (struct pair){});
	struct socket *raw;
	struct fid_mr *mr;
	u8 h[64], got[64];
	unsigned long start;
	size_t len, at;
	u8 *region, *expect, *chunk;

	raw = raw_accepted(test, p, 7496);

	len = p->server.info->ep_attr->max_msg_size;
	region = vmalloc(len);
	expect = vmalloc(len);
	chunk = kunit_kmalloc(test, 65536, GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, region && expect && chunk);
	fill(region, len, 29);
	memcpy(expect, region, len);
	KUNIT_ASSERT_EQ(test, fi_mr_reg(p->domain, region, len, FI_REMOTE_READ, 0, 0, 0, &mr, NULL),
			0);
	wire_header(h, 7, 0);			/* READ_REQ of the whole region */
	put_unaligned_le64(fi_mr_key(mr), h + 24);
	put_unaligned_le64(1, h + 48);
	put_unaligned_le64(len, h + 56);
	KUNIT_ASSERT_EQ(test, raw_send(raw, h, sizeof(h)), 0);
	/* The answer's header: the read was acted on. */
	KUNIT_ASSERT_EQ(test, raw_recv_all(raw, got, sizeof(got)), 0);
	KUNIT_EXPECT_EQ(test, got[5], 8);	/* READ_RESP */
	KUNIT_EXPECT_EQ(test, get_unaligned_le32(got + 8), 0);
	KUNIT_EXPECT_EQ(test, get_unaligned_le64(got + 16), (u64)len);
	KUNIT_EXPECT_EQ(test, get_unaligned_le64(got + 48), 1);

	/* Most of the 4 MiB is not taken yet; the region closes anyway. */
	start = jiffies;
	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	KUNIT_EXPECT_LT(test, jiffies - start, (unsigned long)HZ);
	memset(region, 0, len);
	for (at = 0; at < len; at += 65536) {
		size_t n = min_t(size_t, 65536, len - at);

		KUNIT_ASSERT_EQ(test, raw_recv_all(raw, chunk, n), 0);
		KUNIT_ASSERT_EQ(test, memcmp(chunk, expect + at, n), 0);
	}
	sock_release(raw);
	pair_close(test, p);
	vfree(region);
	vfree(expect);
}

/*
 * Frames arrive in whatever pieces TCP makes of them. kofi_sock reads ahead
 * of its parser (a buffer of 4.5 KiB that short reads refill): a raw peer
 * sends messages of sizes around that buffer's edges, and an RMA write among
 * them, as one stream cut into pieces of 1 to 700 bytes and some of 9000,
 * with pauses between. Half the receives are posted before the stream, the
 * rest after it (the first message over a page without its receive stops
 * the reading, which the late receives go on with). Every message arrives
 * whole, in order and byte for byte, the write lands in its region and is
 * answered, and the peer's close ends the connection after all of it.
 */
static void sock_frames_in_any_pieces(struct kunit *test)
{
	static const u32 sizes[] = { 0, 1, 63, 64, 65, 2239, 2240, 2304, 4096,
				     4160, 4544, 4608, 4673, 9000, 70000 };
	enum { N = ARRAY_SIZE(sizes), WRITE_AT = 7, WRITE_LEN = 3000, SLACK = 16 };
	struct pair *p = pair_new(test, (struct pair){});
	struct fi_cq_data_entry e;
	struct socket *raw;
	struct cm_event ev;
	struct fid_mr *mr;
	u8 got[64], *region, *stream, *expect, *bufs[N];
	size_t len = 0, at, total = (N + 1) * 64 + WRITE_LEN;
	u32 i, seed = 1;

	for (i = 0; i < N; i++)
		total += sizes[i];
	stream = vmalloc(total);
	expect = kunit_kmalloc(test, 70000, GFP_KERNEL);
	region = kunit_kzalloc(test, WRITE_LEN, GFP_KERNEL);
	KUNIT_ASSERT_TRUE(test, stream && expect && region);

	raw = raw_accepted(test, p, 7497);
	KUNIT_ASSERT_EQ(test, fi_mr_reg(p->domain, region, WRITE_LEN, FI_REMOTE_WRITE, 0, 0, 0,
					&mr, NULL), 0);

	for (i = 0; i < N; i++) {
		if (i == WRITE_AT) {		/* WRITE of the whole region */
			wire_header(stream + len, 5, WRITE_LEN);
			put_unaligned_le64(fi_mr_key(mr), stream + len + 24);
			put_unaligned_le64(1, stream + len + 48);
			put_unaligned_le64(WRITE_LEN, stream + len + 56);
			fill(stream + len + 64, WRITE_LEN, 99);
			len += 64 + WRITE_LEN;
		}
		wire_header(stream + len, 4, sizes[i]);	/* SEND */
		fill(stream + len + 64, sizes[i], i + 1);
		len += 64 + sizes[i];
		bufs[i] = kunit_kzalloc(test, sizes[i] + SLACK, GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, bufs[i]);
	}
	KUNIT_ASSERT_EQ(test, len, total);
	for (i = 0; i < N / 2; i++)
		KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, bufs[i], sizes[i] + SLACK, NULL, 0,
					      (void *)(uintptr_t)(i + 1)), 0);
	for (at = 0; at < len;) {
		size_t n;

		seed = seed * 1103515245 + 12345;
		n = (seed >> 16) % 8 ? 1 + (seed >> 16) % 700 : 9000;
		n = min(n, len - at);
		KUNIT_ASSERT_EQ(test, raw_send(raw, stream + at, n), 0);
		at += n;
		if ((seed >> 24) % 4 == 0)
			usleep_range(200, 400);
	}
	/* The write's answer: done, for the write's id. */
	KUNIT_ASSERT_EQ(test, raw_recv_all(raw, got, sizeof(got)), 0);
	KUNIT_EXPECT_EQ(test, got[5], 6);	/* WRITE_ACK */
	KUNIT_EXPECT_EQ(test, get_unaligned_le32(got + 8), 0);
	KUNIT_EXPECT_EQ(test, get_unaligned_le64(got + 48), 1);
	msleep(50);
	for (i = N / 2; i < N; i++)
		KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, bufs[i], sizes[i] + SLACK, NULL, 0,
					      (void *)(uintptr_t)(i + 1)), 0);
	for (i = 0; i < N; i++) {
		KUNIT_ASSERT_EQ(test, cq_wait(p->server.cq, &e), 1);
		KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)(uintptr_t)(i + 1));
		KUNIT_EXPECT_EQ(test, e.len, (size_t)sizes[i]);
		fill(expect, sizes[i], i + 1);
		KUNIT_EXPECT_EQ_MSG(test, memcmp(bufs[i], expect, sizes[i]), 0, "message %u", i);
		KUNIT_EXPECT_NULL(test, memchr_inv(bufs[i] + sizes[i], 0, SLACK));
	}
	fill(expect, WRITE_LEN, 99);
	KUNIT_EXPECT_EQ(test, memcmp(region, expect, WRITE_LEN), 0);
	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	sock_release(raw);
	KUNIT_EXPECT_EQ(test, cm_wait(p->server.eq, FI_SHUTDOWN, &ev), (ssize_t)sizeof(ev.entry));
	pair_close(test, p);
	vfree(stream);
}

#define MANY 64

static void sock_many_connections(struct kunit *test)
{
	struct pair *p = pair_new(test, (struct pair){});
	struct side *clients = kunit_kcalloc(test, MANY, sizeof(*clients), GFP_KERNEL);
	struct side *servers = kunit_kcalloc(test, MANY, sizeof(*servers), GFP_KERNEL);
	struct cm_event ev;
	struct fi_cq_data_entry e;
	char msg[16], got[16];
	int i;

	KUNIT_ASSERT_TRUE(test, clients && servers);
	/* Its EQ (256 entries) holds every request and connection at once. */
	raw_listener(test, p, "7479");

	for (i = 0; i < MANY; i++) {
		clients[i].info = test_info(test, "sock", "127.0.0.1", "7479", 0);
		open_queues(test, p, &clients[i]);
		KUNIT_ASSERT_EQ(test, fi_endpoint(p->domain, clients[i].info, &clients[i].ep, NULL), 0);
		bind_enable(test, &clients[i]);
		KUNIT_ASSERT_EQ(test, fi_connect(clients[i].ep, NULL, &i, sizeof(i)), 0);
	}
	for (i = 0; i < MANY; i++) {
		int who;

		KUNIT_ASSERT_EQ(test, cm_wait(p->peq, FI_CONNREQ, &ev), (ssize_t)(sizeof(ev.entry) + sizeof(int)));
		memcpy(&who, ev.data, sizeof(who));
		KUNIT_ASSERT_TRUE(test, who >= 0 && who < MANY && !servers[who].info);
		servers[who].info = ev.entry.info;
		open_queues(test, p, &servers[who]);
		KUNIT_ASSERT_EQ(test, fi_endpoint(p->domain, servers[who].info, &servers[who].ep, NULL), 0);
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
	pair_close(test, p);
}

/* The peer resets while sends are backed up behind flow control: every send
 * completes (the unsent ones with errors) and FI_SHUTDOWN arrives. */
static void sock_reset_mid_transfer(struct kunit *test)
{
	struct pair *p = pair_new(test, (struct pair){});
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
	pair_open(test, p, "sock", "127.0.0.1", "7481");
	/* No receives: 8 MiB are held, the rest wait in the client. */
	for (i = 0; i < SENDS; i++)
		if (!fi_send(p->client.ep, buf, len, NULL, 0, NULL))
			posted++;
	KUNIT_EXPECT_EQ(test, posted, SENDS);
	msleep(200);
	KUNIT_EXPECT_EQ(test, fi_close(&p->server.ep->fid), 0);
	p->server.ep = NULL;
	while (ok + failed < posted) {
		n = fi_cq_sread(p->client.cq, &e, 1, NULL, WAIT_MS);
		if (n == 1) {
			ok++;
		} else if (n == -FI_EAVAIL) {
			KUNIT_ASSERT_EQ(test, fi_cq_readerr(p->client.cq, &err, 0), 1);
			KUNIT_EXPECT_EQ(test, err.err, FI_ECONNRESET);
			failed++;
		} else {
			KUNIT_FAIL(test, "sread: %zd after %d ok, %d failed", n, ok, failed);
			break;
		}
	}
	KUNIT_EXPECT_GT(test, failed, 0);
	KUNIT_EXPECT_EQ(test, fi_eq_sread(p->client.eq, &event, &ev, sizeof(ev), WAIT_MS, 0),
			(ssize_t)sizeof(ev.entry));
	KUNIT_EXPECT_EQ(test, event, (u32)FI_SHUTDOWN);
	pair_close(test, p);
	vfree(buf);
}

/* A send's completion means its buffers may be reused (OFI), pages too. A
 * message of more than a page that nobody receives stops the receiver's
 * reading (kofi_sock does not hold it); what is sent next waits in TCP's
 * buffers. Pages and slab memory are rewritten as soon as their sends
 * complete: the receiver still gets what they held when sent. (Pages
 * spliced into TCP would arrive rewritten: TCP keeps the very pages until
 * the receiver reads them.) */
static void sock_buffers_reusable_at_completion(struct kunit *test)
{
	enum { NPAGES = 8, BIG = 64 << 10, SLAB = 3000 };
	struct pair *p = pair_new(test, (struct pair){});
	struct page *pages[NPAGES] = {};
	struct bio_vec bv[NPAGES], sbv;
	struct fi_msg m = { .msg_bvec = bv, .iov_count = NPAGES };
	struct fi_msg sm = { .msg_bvec = &sbv, .iov_count = 1 };
	u8 *big = vmalloc(BIG), *dst = vzalloc(BIG), *slab = kmalloc(SLAB, GFP_KERNEL);
	struct fi_cq_data_entry e;
	int i;

	KUNIT_ASSERT_TRUE(test, big && dst && slab);
	for (i = 0; i < NPAGES; i++) {
		pages[i] = alloc_page(GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, pages[i]);
		fill(page_address(pages[i]), PAGE_SIZE, (u8)(40 + i));
		bvec_set_page(&bv[i], pages[i], PAGE_SIZE, 0);
	}
	fill(big, BIG, 3);
	fill(slab, SLAB, 78);
	bvec_set_virt(&sbv, slab, SLAB);
	pair_open(test, p, "sock", "127.0.0.1", "7485");
	KUNIT_ASSERT_EQ(test, fi_send(p->client.ep, big, BIG, NULL, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
	KUNIT_ASSERT_EQ(test, fi_sendmsg(p->client.ep, &m, 0), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
	KUNIT_ASSERT_EQ(test, fi_sendmsg(p->client.ep, &sm, 0), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
	/* Both completed while the receiver reads nothing: reuse them. */
	for (i = 0; i < NPAGES; i++)
		memset(page_address(pages[i]), 0xee, PAGE_SIZE);
	memset(slab, 0xee, SLAB);

	KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, dst, BIG, NULL, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->server.cq, &e), 1);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)BIG);
	KUNIT_EXPECT_EQ(test, memcmp(dst, big, BIG), 0);
	KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, dst, BIG, NULL, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->server.cq, &e), 1);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)(NPAGES * PAGE_SIZE));
	for (i = 0; i < NPAGES; i++) {
		fill(page_address(pages[i]), PAGE_SIZE, (u8)(40 + i));
		KUNIT_EXPECT_EQ(test, memcmp(dst + i * PAGE_SIZE, page_address(pages[i]), PAGE_SIZE),
				0);
	}
	KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, dst, BIG, NULL, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->server.cq, &e), 1);
	KUNIT_EXPECT_EQ(test, e.len, (size_t)SLAB);
	fill(slab, SLAB, 78);
	KUNIT_EXPECT_EQ(test, memcmp(dst, slab, SLAB), 0);
	pair_close(test, p);
	for (i = 0; i < NPAGES; i++)
		__free_page(pages[i]);
	kfree(slab);
	vfree(big);
	vfree(dst);
}

/* 1 MiB of separate pages, and slab memory in a bio_vec: both arrive intact. */
static void sock_pages_and_slab_bvecs(struct kunit *test)
{
	enum { NPAGES = 256 };
	struct pair *p = pair_new(test, (struct pair){});
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
	pair_open(test, p, "sock", "127.0.0.1", "7482");
	{
		/* More pages than iov_limit need the pages in one bio_vec array:
		 * send them 16 at a time. */
		struct kvec r = { dst, NPAGES * PAGE_SIZE };

		for (i = 0; i < NPAGES; i += 16) {
			struct fi_msg m = { .msg_bvec = &bv[i], .iov_count = 16 };

			r.iov_base = dst + i * PAGE_SIZE;
			r.iov_len = 16 * PAGE_SIZE;
			KUNIT_ASSERT_EQ(test, fi_recvv(p->server.ep, &r, NULL, 1, 0, NULL), 0);
			KUNIT_ASSERT_EQ(test, fi_sendmsg(p->client.ep, &m, 0), 0);
		}
		for (i = 0; i < NPAGES; i += 16) {
			KUNIT_ASSERT_EQ(test, cq_wait(p->server.cq, &e), 1);
			KUNIT_EXPECT_EQ(test, e.len, (size_t)(16 * PAGE_SIZE));
			KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
		}
	}
	for (i = 0; i < NPAGES; i++)
		KUNIT_EXPECT_EQ(test, memcmp(dst + i * PAGE_SIZE, page_address(pages[i]), PAGE_SIZE), 0);

	fill(slab, 3000, 77);
	bvec_set_virt(&sbv, slab, 3000);
	{
		struct fi_msg m = { .msg_bvec = &sbv, .iov_count = 1 };

		KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, dst, 3000, NULL, 0, NULL), 0);
		KUNIT_ASSERT_EQ(test, fi_sendmsg(p->client.ep, &m, 0), 0);
		KUNIT_ASSERT_EQ(test, cq_wait(p->server.cq, &e), 1);
		KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
		KUNIT_EXPECT_EQ(test, memcmp(dst, slab, 3000), 0);
	}
	pair_close(test, p);
	for (i = 0; i < NPAGES; i++)
		__free_page(pages[i]);
	kfree(slab);
	vfree(dst);
}

/* RMA calls with several remote buffers: each completes once, and a part the
 * target refuses fails the call (once), with the call's context. */
static void sock_rma_several_buffers(struct kunit *test)
{
	struct pair *p = pair_new(test, (struct pair){});
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
	pair_open(test, p, "sock", "127.0.0.1", "7483");
	KUNIT_ASSERT_EQ(test, fi_mr_reg(p->domain, region, 8192, FI_REMOTE_READ | FI_REMOTE_WRITE,
					0, 0, 0, &mr, NULL), 0);
	key = fi_mr_key(mr);

	/* Read 100 bytes at 10 and 200 at 5000 into one local buffer. */
	rma[0] = (struct fi_rma_iov){ 10, 100, key };
	rma[1] = (struct fi_rma_iov){ 5000, 200, key };
	msg.msg_iov = &iov;
	msg.rma_iov_count = 2;
	KUNIT_ASSERT_EQ(test, fi_readmsg(p->client.ep, &msg, 0), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
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
	KUNIT_ASSERT_EQ(test, fi_writemsg(p->client.ep, &msg, 0), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
	KUNIT_EXPECT_PTR_EQ(test, e.op_context, (void *)src);
	KUNIT_EXPECT_EQ(test, memcmp(region, src, 100), 0);
	KUNIT_EXPECT_EQ(test, memcmp(region + 4000, src + 100, 100), 0);
	KUNIT_EXPECT_EQ(test, memcmp(region + 8000, src + 200, 100), 0);

	/* The middle part names no region: one error, for the whole call. */
	rma[1].key = key ^ 0x10;
	KUNIT_ASSERT_EQ(test, fi_writemsg(p->client.ep, &msg, 0), 0);
	KUNIT_EXPECT_EQ(test, cq_wait(p->client.cq, &e), -FI_EAVAIL);
	KUNIT_ASSERT_EQ(test, fi_cq_readerr(p->client.cq, &err, 0), 1);
	KUNIT_EXPECT_EQ(test, err.err, FI_ENOKEY);
	KUNIT_EXPECT_PTR_EQ(test, err.op_context, (void *)src);
	KUNIT_EXPECT_EQ(test, fi_cq_read(p->client.cq, &e, 1), -FI_EAGAIN);
	exchange(test, p, 64, 23);

	KUNIT_EXPECT_EQ(test, fi_close(&mr->fid), 0);
	pair_close(test, p);
}

/* More messages arrive before their receives than the hold has slots: the
 * connection holds the sender back instead of failing; all arrive, in order. */
static void sock_many_unexpected_messages(struct kunit *test)
{
	enum { COUNT = 600 };
	struct pair *p = pair_new(test, (struct pair){});
	struct fi_cq_data_entry e;
	/* A send's buffer is the provider's until it completes: one each. */
	u32 *sent = kunit_kcalloc(test, COUNT, sizeof(*sent), GFP_KERNEL);
	u32 i, got;

	KUNIT_ASSERT_NOT_NULL(test, sent);
	pair_open(test, p, "sock", "127.0.0.1", "7484");
	for (i = 0; i < COUNT; i++) {
		ssize_t ret;

		sent[i] = i;
		do {
			ret = fi_send(p->client.ep, &sent[i], sizeof(*sent), NULL, 0, NULL);
			/* A full transmit queue: let completions drain it. */
			if (ret == -FI_EAGAIN)
				KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
		} while (ret == -FI_EAGAIN);
		KUNIT_ASSERT_EQ(test, ret, 0);
	}
	msleep(200);
	for (i = 0; i < COUNT; i++) {
		KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, &got, sizeof(got), NULL, 0, NULL), 0);
		KUNIT_ASSERT_EQ(test, cq_wait(p->server.cq, &e), 1);
		KUNIT_ASSERT_EQ(test, got, i);
	}
	pair_close(test, p);
}

/* The task that posted the last completion to a CQ with this handler. */
static struct task_struct *completion_poster;

static void note_poster(struct fid_cq *cq)
{
	WRITE_ONCE(completion_poster, current);
}

struct late_send {
	struct fid_ep *ep;
	const void *buf;
	size_t len;
	int ret;
	struct completion done;
};

static int send_late(void *arg)
{
	struct late_send *l = arg;

	/* Long enough for the receiver to be asleep in fi_cq_sread. */
	msleep(200);
	l->ret = fi_send(l->ep, l->buf, l->len, NULL, 0, NULL);
	complete(&l->done);
	return 0;
}

/*
 * A message that arrives while its receiver sleeps in fi_cq_sread is read
 * from the socket, and its completion posted, by the receiver's own thread
 * (the socket's callback asked it to, kofi_ep_progress_request), not by the
 * connection's work item; with nobody asleep, the work item does it.
 */
static void sock_progress_made_by_the_sleeper(struct kunit *test)
{
	enum { LEN = 6000 };
	struct pair *p = pair_new(test, (struct pair){ .server.cq_handler = note_poster });
	u8 *src = kmalloc(LEN, GFP_KERNEL), *dst = kzalloc(LEN, GFP_KERNEL);
	struct late_send l = { .buf = src, .len = LEN };
	struct task_struct *t, *poster;
	struct fi_cq_data_entry e;
	int i;

	KUNIT_ASSERT_TRUE(test, src && dst);
	fill(src, LEN, 17);
	pair_open(test, p, "sock", "127.0.0.1", "7487");
	l.ep = p->client.ep;
	for (i = 0; i < 3; i++) {
		init_completion(&l.done);
		memset(dst, 0, LEN);
		KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, dst, LEN, NULL, 0, NULL), 0);
		WRITE_ONCE(completion_poster, NULL);
		t = kthread_run(send_late, &l, "kofi_late_send");
		KUNIT_ASSERT_FALSE(test, IS_ERR(t));
		KUNIT_ASSERT_EQ(test, cq_wait(p->server.cq, &e), 1);
		poster = READ_ONCE(completion_poster);
		KUNIT_EXPECT_PTR_EQ(test, poster, current);
		KUNIT_EXPECT_EQ(test, e.len, (size_t)LEN);
		KUNIT_EXPECT_EQ(test, memcmp(dst, src, LEN), 0);
		wait_for_completion(&l.done);
		KUNIT_ASSERT_EQ(test, l.ret, 0);
		KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
	}
	/* Nobody asleep on the CQ: the connection's work item delivers. */
	memset(dst, 0, LEN);
	KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, dst, LEN, NULL, 0, NULL), 0);
	WRITE_ONCE(completion_poster, NULL);
	KUNIT_ASSERT_EQ(test, fi_send(p->client.ep, src, LEN, NULL, 0, NULL), 0);
	for (i = 0; i < 100 && !READ_ONCE(completion_poster); i++)
		msleep(20);
	poster = READ_ONCE(completion_poster);
	KUNIT_EXPECT_NOT_NULL(test, poster);
	KUNIT_EXPECT_PTR_NE(test, poster, current);
	KUNIT_EXPECT_EQ(test, fi_cq_read(p->server.cq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, memcmp(dst, src, LEN), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
	pair_close(test, p);
	kfree(src);
	kfree(dst);
}

/*
 * Messages that arrived before their receives, large ones (kofi_sock holds
 * none over a page: they wait in the socket) between small ones (held):
 * each completes inside the fi_recv that posts its receive, posted by that
 * thread, in order, byte for byte, with no work item between. (All of it
 * fits the sockets' buffers: every byte is in by the time the receives go.)
 */
static void sock_late_receives_read_by_their_poster(struct kunit *test)
{
	static const size_t lens[] = { 16 << 10, 100, 4096, 32 << 10, 4097, 1 };
	enum { COUNT = ARRAY_SIZE(lens), MAX = 32 << 10 };
	struct pair *p = pair_new(test, (struct pair){ .server.cq_handler = note_poster });
	u8 *src = vmalloc(MAX), *dst = vzalloc(MAX);
	struct fi_cq_data_entry e;
	int i;

	KUNIT_ASSERT_TRUE(test, src && dst);
	fill(src, MAX, 29);
	pair_open(test, p, "sock", "127.0.0.1", "7489");
	for (i = 0; i < COUNT; i++)
		KUNIT_ASSERT_EQ(test, fi_send(p->client.ep, src, lens[i], NULL, 0, NULL), 0);
	msleep(200);
	for (i = 0; i < COUNT; i++) {
		WRITE_ONCE(completion_poster, NULL);
		KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, dst, MAX, NULL, 0, NULL), 0);
		/* Complete already: no wait. */
		KUNIT_ASSERT_EQ(test, fi_cq_read(p->server.cq, &e, 1), 1);
		KUNIT_EXPECT_PTR_EQ(test, READ_ONCE(completion_poster), current);
		KUNIT_EXPECT_EQ(test, e.len, lens[i]);
		KUNIT_EXPECT_EQ(test, memcmp(dst, src, lens[i]), 0);
		memset(dst, 0, MAX);
	}
	KUNIT_EXPECT_EQ(test, fi_cq_read(p->server.cq, &e, 1), -FI_EAGAIN);
	for (i = 0; i < COUNT; i++)
		KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
	pair_close(test, p);
	vfree(src);
	vfree(dst);
}

struct read_in_softirq {
	struct work_struct work;
	struct fid_cq *cq;
	ssize_t ret;
};

static void read_in_bh(struct work_struct *work)
{
	struct read_in_softirq *r = container_of(work, struct read_in_softirq, work);
	struct fi_cq_data_entry e;

	r->ret = fi_cq_read(r->cq, &e, 1);
}

/* Posts a receive into @dst at the pair's server, sends @len bytes of @src
 * to it and waits until the server CQ's handler (note_poster) runs. */
static void send_until_handler(struct kunit *test, struct pair *p, const u8 *src, u8 *dst,
			       size_t len)
{
	struct fi_cq_data_entry e;
	int i;

	KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, dst, len, NULL, 0, NULL), 0);
	WRITE_ONCE(completion_poster, NULL);
	KUNIT_ASSERT_EQ(test, fi_send(p->client.ep, src, len, NULL, 0, NULL), 0);
	KUNIT_ASSERT_EQ(test, cq_wait(p->client.cq, &e), 1);
	for (i = 0; i < 100 && !READ_ONCE(completion_poster); i++)
		msleep(10);
	KUNIT_EXPECT_NOT_NULL(test, READ_ONCE(completion_poster));
}

/*
 * KOFI_CQ_HANDLER_PROGRESS: before the consumer's first read of the queue,
 * kofi_sock's work item delivers as ever; from then on a message for the
 * queue's endpoint calls the queue's handler with nothing read yet, and
 * stays in the socket (no work item of kofi_sock's reads it) until the
 * consumer's fi_cq_read, which reads it in the consumer's thread and
 * returns its completion. The flag needs a handler, and such a queue
 * refuses reads outside process context.
 */
static void sock_progress_made_by_the_reader(struct kunit *test)
{
	enum { LEN = 6000 };
	struct pair *p = pair_new(test, (struct pair){
		.server.cq_handler = note_poster, .server.cq_flags = KOFI_CQ_HANDLER_PROGRESS });
	struct fi_cq_attr attr = { .flags = KOFI_CQ_HANDLER_PROGRESS };
	u8 *src = kunit_kmalloc(test, LEN, GFP_KERNEL), *dst = kunit_kzalloc(test, LEN, GFP_KERNEL);
	struct read_in_softirq r = { .ret = 1 };
	struct fi_cq_data_entry e;
	struct fid_cq *cq;
	int i;

	KUNIT_ASSERT_TRUE(test, src && dst);
	fill(src, LEN, 23);
	pair_open(test, p, "sock", "127.0.0.1", "7498");
	KUNIT_EXPECT_EQ(test, fi_cq_open(p->domain, &attr, &cq, NULL), -EINVAL);
	attr.comp_handler = note_poster;
	attr.flags = KOFI_CQ_HANDLER_PROGRESS << 1;
	KUNIT_EXPECT_EQ(test, fi_cq_open(p->domain, &attr, &cq, NULL), -EINVAL);

	/* Not read yet: the work item delivers. */
	send_until_handler(test, p, src, dst, LEN);
	KUNIT_EXPECT_PTR_NE(test, READ_ONCE(completion_poster), current);
	KUNIT_ASSERT_EQ(test, fi_cq_read(p->server.cq, &e, 1), 1);
	KUNIT_EXPECT_EQ(test, memcmp(dst, src, LEN), 0);

	for (i = 0; i < 3; i++) {
		memset(dst, 0, LEN);
		/* Asked of us: the handler ran, and nobody read the message. */
		send_until_handler(test, p, src, dst, LEN);
		msleep(100);
		KUNIT_EXPECT_NULL(test, memchr_inv(dst, 0, LEN));
		WRITE_ONCE(completion_poster, NULL);
		KUNIT_ASSERT_EQ(test, fi_cq_read(p->server.cq, &e, 1), 1);
		KUNIT_EXPECT_PTR_EQ(test, READ_ONCE(completion_poster), current);
		KUNIT_EXPECT_EQ(test, e.len, (size_t)LEN);
		KUNIT_EXPECT_EQ(test, memcmp(dst, src, LEN), 0);
	}

	/* A BH work item runs in softirq context. */
	r.cq = p->server.cq;
	INIT_WORK_ONSTACK(&r.work, read_in_bh);
	queue_work(system_bh_wq, &r.work);
	flush_work(&r.work);
	destroy_work_on_stack(&r.work);
	KUNIT_EXPECT_EQ(test, r.ret, (ssize_t)-EINVAL);
	pair_close(test, p);
}

struct sleeper {
	struct fid_cq *cq;
	ssize_t ret;
	struct completion done;
};

static int sleep_on_cq(void *arg)
{
	struct sleeper *s = arg;
	struct fi_cq_data_entry e;

	s->ret = fi_cq_sread(s->cq, &e, 1, NULL, 3000);
	complete(&s->done);
	return 0;
}

/*
 * The endpoint closes right after its data arrived, while the thread asked
 * to make its progress may not have run yet: the progress is made before
 * the close or not at all, the sleeper returns, nothing is used after it
 * is freed (KASAN) and nothing leaks (kmemleak), twenty times over.
 */
static void sock_close_while_progress_asked(struct kunit *test)
{
	enum { LEN = 3000, ROUNDS = 20 };
	u8 *src = kmalloc(LEN, GFP_KERNEL), *dst = kzalloc(LEN, GFP_KERNEL);
	struct sleeper s;
	int i;

	KUNIT_ASSERT_TRUE(test, src && dst);
	fill(src, LEN, 5);
	for (i = 0; i < ROUNDS; i++) {
		struct pair *p = pair_new(test, (struct pair){});
		struct task_struct *t;

		pair_open(test, p, "sock", "127.0.0.1", "7488");
		KUNIT_ASSERT_EQ(test, fi_recv(p->server.ep, dst, LEN, NULL, 0, NULL), 0);
		s.cq = p->server.cq;
		init_completion(&s.done);
		t = kthread_run(sleep_on_cq, &s, "kofi_cq_sleeper");
		KUNIT_ASSERT_FALSE(test, IS_ERR(t));
		/* Asleep by now, or soon: the rounds cover both. */
		msleep(i % 4 * 10);
		KUNIT_ASSERT_EQ(test, fi_send(p->client.ep, src, LEN, NULL, 0, NULL), 0);
		KUNIT_EXPECT_EQ(test, fi_close(&p->server.ep->fid), 0);
		p->server.ep = NULL;
		KUNIT_ASSERT_TRUE(test, wait_for_completion_timeout(&s.done, 10 * HZ) > 0);
		/* The message, the receive cancelled by the close, or nothing. */
		KUNIT_EXPECT_TRUE(test, s.ret == 1 || s.ret == -FI_EAVAIL || s.ret == -FI_EAGAIN);
		pair_close(test, p);
	}
	kfree(src);
	kfree(dst);
}

static struct kunit_case sock_cases[] = {
	KUNIT_CASE(sock_many_unexpected_messages),
	KUNIT_CASE(sock_progress_made_by_the_sleeper),
	KUNIT_CASE(sock_late_receives_read_by_their_poster),
	KUNIT_CASE(sock_progress_made_by_the_reader),
	KUNIT_CASE_SLOW(sock_close_while_progress_asked),
	KUNIT_CASE(sock_rma_violations),
	KUNIT_CASE(sock_rma_several_buffers),
	KUNIT_CASE(sock_pages_and_slab_bvecs),
	KUNIT_CASE(sock_buffers_reusable_at_completion),
	KUNIT_CASE(sock_reset_mid_transfer),
	KUNIT_CASE(sock_garbage_from_a_raw_client),
	KUNIT_CASE(sock_many_connections),
	KUNIT_CASE(sock_silent_connections_close_with_their_listener),
	KUNIT_CASE_SLOW(sock_silent_connection_times_out),
	KUNIT_CASE(sock_handshake_is_bounded),
	KUNIT_CASE(sock_rma_of_max_msg_size),
	KUNIT_CASE(sock_unread_answer_holds_no_region),
	KUNIT_CASE(sock_frames_in_any_pieces),
	KUNIT_CASE_SLOW(sock_connection_flood_and_random_bytes),
	{}
};

static struct kunit_suite kofi_sock_suite = { .name = "kofi_sock", .test_cases = sock_cases };
kunit_test_suite(kofi_sock_suite);

MODULE_IMPORT_NS(KOFI_NS);
MODULE_DESCRIPTION("KUnit tests of kofi_sock over loopback TCP");
MODULE_LICENSE("GPL");
