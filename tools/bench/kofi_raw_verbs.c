// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_raw_verbs: the baseline kofi_verbs is measured against. The simplest
 * fast in-kernel RDMA loop: rdma_cm to connect to the node's own address on
 * whichever device serves it, one RC QP each side, completions counted in
 * the CQ's softirq callback and waited for (as kernel ULPs do; busy polling
 * starves the peer on the two CPUs of a TCG guest), a PD with the unsafe
 * global rkey (no memory registration). test=pingpong bounces size bytes iters times with
 * SEND/RECV; test=write streams iters RDMA WRITEs of size bytes, window at a
 * time, then a SEND the server waits for; test=read the same with RDMA
 * READs of the server's buffer (window of them in flight: as many as the
 * device lets a QP have outstanding); test=send streams iters SENDs,
 * window at a time, into receives the server keeps posted (twice the
 * window, each reposted by the CQ's callback as it completes: a thread
 * would fall behind the sender, whose window counts only what arrived, and
 * siw fails a SEND with no receive posted). Prints
 *   kofi_raw_verbs: pingpong <size> x <iters>: <ns> ns
 *   kofi_raw_verbs: write <size> x <iters>: <MB/s, two decimals> MB/s
 *   kofi_raw_verbs: read <size> x <iters>: <MB/s, two decimals> MB/s
 *   kofi_raw_verbs: send <size> x <iters>: <MB/s, two decimals> MB/s
 *
 * It is also the bad peer of kofi_verbs' tests: test=garbage_short,
 * garbage_op, garbage_cts, garbage_wfin and garbage_close connect to a
 * kofi_pingpong server at addr:port (with the private data it expects) and
 * send a SEND shorter than kofi's header, a header of an unknown
 * operation, an OP_CTS or OP_WFIN (the write rendezvous' answer and end)
 * naming a message that does not exist, or an OP_CLOSE saying it took more
 * SENDs than kofi sent; loading succeeds when kofi_verbs answers by
 * disconnecting (size must hold 40 bytes).
 */
#include <linux/completion.h>
#include <linux/in.h>
#include <linux/inet.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/unaligned.h>
#include <linux/wait.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

static char *test = "pingpong";
module_param(test, charp, 0444);
static char *addr = "10.0.2.10";
module_param(addr, charp, 0444);
static int port = 7850;
module_param(port, int, 0444);
static unsigned int size = 4096;
module_param(size, uint, 0444);
static unsigned int iters = 100;
module_param(iters, uint, 0444);
static unsigned int window = 16;
module_param(window, uint, 0444);
static unsigned int warmup;
module_param(warmup, uint, 0444);
MODULE_PARM_DESC(warmup, "pingpong: round trips before the clock starts");

#define TIMEOUT (10 * HZ)

/* One side of the connection. */
struct end {
	struct rdma_cm_id *id;
	struct ib_pd *pd;
	struct ib_cq *cq;
	u8 *buf;
	u64 dma;
	struct completion established;
	int error;
	/* Completions seen, failed, and waited for. */
	struct ib_cqe cqe;
	atomic_t done;
	atomic_t failed;
	unsigned int consumed;
	wait_queue_head_t wq;
};

/* What the server tells the client in its accept: where to write. */
struct target {
	u64 addr;
	u32 rkey;
};

static struct end server, client;
static struct rdma_cm_id *listener;
static struct target target;
static DECLARE_COMPLETION(disconnected);

static bool garbage(void)
{
	return !strncmp(test, "garbage_", 8);
}

/* test=send, read once in run(): the CQ callback asks on every completion. */
static bool streaming_sends;

static bool reads(void)
{
	return !strcmp(test, "read");
}

/* READs a side may have in flight, as initiator or responder: the window's
 * (test=read), within what the device allows. */
static u8 read_depth(struct ib_device *dev)
{
	if (!reads())
		return 1;
	return min3(window, (unsigned int)dev->attrs.max_qp_rd_atom,
		    (unsigned int)dev->attrs.max_qp_init_rd_atom) ?: 1;
}

/* kofi's private data: a length byte, then kofi_pingpong's greeting. */
static const char hello[] = "\x14kofi-pingpong hello";

static int setup_end(struct end *e, struct rdma_cm_id *id)
{
	struct ib_qp_init_attr qa = {
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	int ret;

	e->id = id;
	e->pd = ib_alloc_pd(id->device, IB_PD_UNSAFE_GLOBAL_RKEY);
	if (IS_ERR(e->pd))
		return PTR_ERR(e->pd);
	e->cq = ib_alloc_cq(id->device, NULL, 130, 0, IB_POLL_SOFTIRQ);
	if (IS_ERR(e->cq))
		return PTR_ERR(e->cq);
	qa.send_cq = qa.recv_cq = e->cq;
	ret = rdma_create_qp(id, e->pd, &qa);
	if (ret)
		return ret;
	e->buf = kzalloc(size ?: 1, GFP_KERNEL);
	if (!e->buf)
		return -ENOMEM;
	e->dma = ib_dma_map_single(id->device, e->buf, size ?: 1, DMA_BIDIRECTIONAL);
	return ib_dma_mapping_error(id->device, e->dma) ? -ENOMEM : 0;
}

static void teardown_end(struct end *e)
{
	/* Every work request has completed: nothing to drain. */
	if (e->id && e->id->qp)
		rdma_destroy_qp(e->id);
	if (e->buf)
		ib_dma_unmap_single(e->id->device, e->dma, size ?: 1, DMA_BIDIRECTIONAL);
	kfree(e->buf);
	if (!IS_ERR_OR_NULL(e->cq))
		ib_free_cq(e->cq);
	if (!IS_ERR_OR_NULL(e->pd))
		ib_dealloc_pd(e->pd);
	if (e->id)
		rdma_destroy_id(e->id);
}

static int post_recv(struct end *e)
{
	struct ib_sge sge = { .addr = e->dma, .length = size ?: 1, .lkey = e->pd->local_dma_lkey };
	struct ib_recv_wr wr = { .wr_cqe = &e->cqe, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(e->id->qp, &wr, NULL);
}

static void wr_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct end *e = container_of(wc->wr_cqe, struct end, cqe);

	if (wc->status != IB_WC_SUCCESS)
		atomic_inc(&e->failed);
	else if (e == &server && streaming_sends && post_recv(e))
		atomic_inc(&e->failed);
	atomic_inc(&e->done);
	wake_up(&e->wq);
}

static int post_send(struct end *e, enum ib_wr_opcode op, u32 len, u64 raddr, u32 rkey)
{
	struct ib_sge sge = { .addr = e->dma, .length = len, .lkey = e->pd->local_dma_lkey };
	struct ib_rdma_wr wr = {
		.wr = { .wr_cqe = &e->cqe, .sg_list = &sge, .num_sge = len ? 1 : 0, .opcode = op,
			.send_flags = IB_SEND_SIGNALED },
		.remote_addr = raddr,
		.rkey = rkey,
	};

	return ib_post_send(e->id->qp, &wr.wr, NULL);
}

/* Waits for the next completion; an error if any failed. */
static int poll_one(struct end *e)
{
	e->consumed++;
	if (!wait_event_timeout(e->wq, atomic_read(&e->done) >= e->consumed, TIMEOUT))
		return -ETIMEDOUT;
	return atomic_read(&e->failed) ? -EIO : 0;
}

static void init_end(struct end *e)
{
	init_completion(&e->established);
	init_waitqueue_head(&e->wq);
	e->cqe.done = wr_done;
}

static int cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct end *e = id == client.id ? &client : &server;
	struct rdma_conn_param p = { .responder_resources = 1, .initiator_depth = 1,
				     .rnr_retry_count = 7, .retry_count = 7 };
	int ret;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, 5000);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (garbage()) {
			p.private_data = hello;
			p.private_data_len = sizeof(hello);
		}
		p.responder_resources = p.initiator_depth = read_depth(id->device);
		ret = setup_end(e, id) ?: rdma_connect_locked(id, &p);
		break;
	case RDMA_CM_EVENT_CONNECT_REQUEST:
		/* One client; the server's end is set up here and accepted. */
		ret = setup_end(&server, id);
		p.responder_resources = p.initiator_depth = read_depth(id->device);
		if (!ret) {
			target.addr = server.dma;
			target.rkey = server.pd->unsafe_global_rkey;
			p.private_data = &target;
			p.private_data_len = sizeof(target);
			unsigned int n = streaming_sends ? 2 * window : 1;

			while (!ret && n--)
				ret = post_recv(&server);
			ret = ret ?: rdma_accept(id, &p);
		}
		if (ret) {
			server.id = NULL;
			server.error = ret;
			complete(&server.established);
		}
		return ret;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (e == &client && ev->param.conn.private_data_len >= sizeof(target))
			memcpy(&target, ev->param.conn.private_data, sizeof(target));
		complete(&e->established);
		return 0;
	case RDMA_CM_EVENT_DISCONNECTED:
		if (e == &client)
			complete(&disconnected);
		return 0;
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		return 0;
	default:
		ret = -ECONNREFUSED;
	}
	if (ret) {
		e->error = ret;
		complete(&e->established);
	}
	return 0;
}

static struct completion served;
static int served_ret;

/*
 * The server: echo every message (pingpong), take every message (send), or
 * wait for the SEND that closes the writes.
 */
static int server_fn(void *arg)
{
	unsigned int i, n = 1;
	int ret = 0;

	if (!strcmp(test, "pingpong"))
		n = warmup + iters;
	else if (streaming_sends)
		n = iters;
	for (i = 0; !ret && i < n; i++) {
		ret = poll_one(&server);
		/* A streamed message's receive is reposted by the callback. */
		if (!ret && !streaming_sends)
			ret = post_recv(&server);
		if (!ret && !strcmp(test, "pingpong"))
			ret = post_send(&server, IB_WR_SEND, size, 0, 0) ?: poll_one(&server);
	}
	served_ret = ret;
	complete(&served);
	return 0;
}

/* kofi_verbs' header (wire.rs): op, flags, credits, len, data, tag. */
#define KOFI_HEADER_LEN 24
#define KOFI_OP_CTS 6
#define KOFI_OP_WFIN 7
#define KOFI_OP_CLOSE 8

/* Writes the bad peer's SEND into the client's buffer; returns its length. */
static u32 garbage_frame(void)
{
	u8 *b = client.buf;
	bool cts = !strcmp(test, "garbage_cts");

	memset(b, 0xff, size);
	if (!strcmp(test, "garbage_short"))
		return 4;
	if (!strcmp(test, "garbage_op"))
		return KOFI_HEADER_LEN;
	/*
	 * An answer about a rendezvous message no one announced, or a close
	 * that took 0x5eed SENDs of a peer that sent a few.
	 */
	memset(b, 0, KOFI_HEADER_LEN + 16);
	b[0] = cts ? KOFI_OP_CTS : !strcmp(test, "garbage_close") ? KOFI_OP_CLOSE : KOFI_OP_WFIN;
	put_unaligned_le64(0x5eed, b + 8);
	if (!cts)
		return KOFI_HEADER_LEN;
	/* The body: a key, then the cookie again. */
	put_unaligned_le64(1, b + KOFI_HEADER_LEN);
	put_unaligned_le64(0x5eed, b + KOFI_HEADER_LEN + 8);
	return KOFI_HEADER_LEN + 16;
}

/* A bad peer: one malformed SEND; kofi must disconnect. */
static int run_garbage(struct sockaddr_in *sin)
{
	int ret;

	client.id = rdma_create_id(&init_net, cm_handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(client.id)) {
		ret = PTR_ERR(client.id);
		client.id = NULL;
		return ret;
	}
	ret = rdma_resolve_addr(client.id, NULL, (struct sockaddr *)sin, 5000);
	if (ret)
		return ret;
	if (!wait_for_completion_timeout(&client.established, TIMEOUT))
		return -ETIMEDOUT;
	if (client.error)
		return client.error;
	ret = post_send(&client, IB_WR_SEND, garbage_frame(), 0, 0) ?: poll_one(&client);
	if (ret)
		return ret;
	if (!wait_for_completion_timeout(&disconnected, TIMEOUT))
		return -ETIMEDOUT;
	pr_info("kofi_raw_verbs: %s: the peer disconnected\n", test);
	return 0;
}

static int run(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	unsigned int i, posted = 0, done = 0;
	ktime_t start;
	s64 ns, kbs;
	int ret;

	if (!in4_pton(addr, -1, (u8 *)&sin.sin_addr, '\0', NULL))
		return -EINVAL;
	streaming_sends = !strcmp(test, "send");
	/* The server posts twice the window: within its 64 receive WRs. */
	if (!window || window > 32)
		return -EINVAL;
	init_end(&server);
	init_end(&client);
	init_completion(&served);
	if (garbage())
		return run_garbage(&sin);
	listener = rdma_create_id(&init_net, cm_handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(listener))
		return PTR_ERR(listener);
	ret = rdma_bind_addr(listener, (struct sockaddr *)&sin) ?: rdma_listen(listener, 1);
	if (ret)
		return ret;
	client.id = rdma_create_id(&init_net, cm_handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(client.id)) {
		ret = PTR_ERR(client.id);
		client.id = NULL;
		return ret;
	}
	ret = rdma_resolve_addr(client.id, NULL, (struct sockaddr *)&sin, 5000);
	if (ret)
		return ret;
	if (!wait_for_completion_timeout(&client.established, TIMEOUT) ||
	    !wait_for_completion_timeout(&server.established, TIMEOUT))
		return -ETIMEDOUT;
	if (client.error || server.error)
		return client.error ?: server.error;
	if (IS_ERR(kthread_run(server_fn, NULL, "kofi_raw_verbs")))
		return -ENOMEM;

	start = ktime_get();
	if (!strcmp(test, "pingpong")) {
		for (i = 0; !ret && i < warmup + iters; i++) {
			if (i == warmup)
				start = ktime_get();
			ret = post_recv(&client) ?: post_send(&client, IB_WR_SEND, size, 0, 0) ?:
			      poll_one(&client) ?: poll_one(&client);
		}
	} else {
		/*
		 * Writes, reads or sends, window at a time (reads: at most as
		 * many as the connection lets be outstanding); the writes' and
		 * reads' stream ends with a SEND (a send's completion says it
		 * was received already).
		 */
		enum ib_wr_opcode op = streaming_sends ? IB_WR_SEND :
				       reads()	       ? IB_WR_RDMA_READ :
							 IB_WR_RDMA_WRITE;
		unsigned int in_flight = reads() ? min(window, (unsigned int)read_depth(client.id->device)) :
						   window;

		while (!ret && done < iters) {
			while (!ret && posted < iters && posted - done < in_flight) {
				ret = post_send(&client, op, size, target.addr, target.rkey);
				posted++;
			}
			if (!ret)
				ret = poll_one(&client);
			done++;
		}
		if (!streaming_sends)
			ret = ret ?: post_send(&client, IB_WR_SEND, 0, 0, 0) ?: poll_one(&client);
	}
	ns = ktime_to_ns(ktime_sub(ktime_get(), start));
	/* kB/s, printed as MB/s with two decimals (small messages move few MB/s). */
	kbs = (s64)size * iters * 1000000 / (ns ?: 1);
	if (!wait_for_completion_timeout(&served, TIMEOUT))
		return -ETIMEDOUT;
	ret = ret ?: served_ret;
	if (ret)
		return ret;
	if (!strcmp(test, "pingpong"))
		pr_info("kofi_raw_verbs: pingpong %u x %u: %lld ns\n", size, iters,
			ns / (iters ?: 1));
	else
		pr_info("kofi_raw_verbs: %s %u x %u: %lld.%02lld MB/s\n", test, size, iters,
			kbs / 1000, kbs % 1000 / 10);
	return 0;
}

static int __init kofi_raw_verbs_init(void)
{
	int ret = run();

	if (client.id)
		rdma_disconnect(client.id);
	teardown_end(&client);
	teardown_end(&server);
	if (!IS_ERR_OR_NULL(listener))
		rdma_destroy_id(listener);
	if (ret)
		pr_err("kofi_raw_verbs: %s: %d\n", test, ret);
	return ret;
}

static void __exit kofi_raw_verbs_exit(void)
{
}

module_init(kofi_raw_verbs_init);
module_exit(kofi_raw_verbs_exit);
MODULE_DESCRIPTION("kofi benchmark baseline: a raw in-kernel RDMA verbs loop");
MODULE_LICENSE("GPL");
