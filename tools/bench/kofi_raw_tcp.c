// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_raw_tcp: the baseline kofi_sock is measured against. The simplest
 * fast in-kernel TCP loop: blocking kernel_sendmsg/kernel_recvmsg with
 * MSG_WAITALL, TCP_NODELAY, connections over loopback, servers in threads.
 * test=pingpong bounces size bytes iters times; test=bw streams
 * iters messages and waits for a 1-byte acknowledgement, on streams=N
 * connections at once (started together once all are connected). Prints
 *   kofi_raw_tcp: pingpong <size> x <iters>: <ns> ns
 *   kofi_raw_tcp: bw <size> x <iters>: <MB/s, two decimals> MB/s
 *   kofi_raw_tcp: bw <size> x <iters> x <N> streams: <MB/s> MB/s   (N > 1)
 * and before a bw line the CPU time the machine spent in its clock, as
 * kofi_bw does:
 *   kofi_raw_tcp: cpu busy in the clock: <ns> ns
 */
#include <linux/completion.h>
#include <linux/in.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/net.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <net/net_namespace.h>
#include <net/tcp.h>
#include <kofi/compat.h>

#include "../../samples/common/cpu_busy.h"

static char *test = "pingpong";
module_param(test, charp, 0444);
static unsigned int size = 4096;
module_param(size, uint, 0444);
static unsigned int iters = 100;
module_param(iters, uint, 0444);
static int port = 7800;
module_param(port, int, 0444);
static unsigned int warmup;
module_param(warmup, uint, 0444);
MODULE_PARM_DESC(warmup, "pingpong: round trips before the clock starts");
static unsigned int streams = 1;
module_param(streams, uint, 0444);
MODULE_PARM_DESC(streams, "bw: connections streaming at once (aggregate bandwidth)");

static bool pingpong(void)
{
	return !strcmp(test, "pingpong");
}

/* Messages sent in all: a pingpong's warm-up comes before its timed ones. */
static unsigned int messages(void)
{
	return pingpong() ? warmup + iters : iters;
}

static int xfer(struct socket *s, void *buf, size_t len, bool out)
{
	struct kvec iov = { buf, len };
	struct msghdr msg = { .msg_flags = out ? MSG_NOSIGNAL : MSG_WAITALL };
	int ret = out ? kernel_sendmsg(s, &msg, &iov, 1, len) :
			kernel_recvmsg(s, &msg, &iov, 1, len, MSG_WAITALL);

	return ret == len ? 0 : (ret < 0 ? ret : -EIO);
}

/* One connection: its two sides, each in a thread. */
struct stream {
	struct socket *listener;
	struct completion served, connected, finished;
	int serve_ret, client_ret;
	/* pingpong: when the timed round trips began; both: when the last ended. */
	ktime_t start, end;
	/* The machine's CPU time at the end. */
	u64 busy_end;
};

/* Every client is connected: the clocks start. */
static DECLARE_COMPLETION(go);

static int server_fn(void *arg)
{
	struct stream *st = arg;
	struct socket *c = NULL;
	u8 *buf = vmalloc(size);
	unsigned int i;
	int ret = buf ? kernel_accept(st->listener, &c, 0) : -ENOMEM;

	if (!ret)
		tcp_sock_set_nodelay(c->sk);
	for (i = 0; !ret && i < messages(); i++) {
		ret = xfer(c, buf, size, false);
		if (!ret && pingpong())
			ret = xfer(c, buf, size, true);
	}
	if (!ret && !pingpong())
		ret = xfer(c, buf, 1, true);
	if (c)
		sock_release(c);
	vfree(buf);
	st->serve_ret = ret;
	complete(&st->served);
	return 0;
}

static int client_fn(void *arg)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct stream *st = arg;
	struct socket *c = NULL;
	u8 *buf = vzalloc(size);
	unsigned int i;
	int ret = buf ? sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP, &c) :
			-ENOMEM;

	if (!ret) {
		tcp_sock_set_nodelay(c->sk);
		ret = kernel_connect(c, KOFI_SOCKADDR_ARG(&sin), sizeof(sin), 0);
	}
	complete(&st->connected);
	wait_for_completion(&go);
	st->start = ktime_get();
	for (i = 0; !ret && i < messages(); i++) {
		if (i == warmup && pingpong())
			st->start = ktime_get();
		ret = xfer(c, buf, size, true);
		if (!ret && pingpong())
			ret = xfer(c, buf, size, false);
	}
	if (!ret && !pingpong())
		ret = xfer(c, buf, 1, false);
	st->end = ktime_get();
	st->busy_end = cpu_busy_ns();
	if (c)
		sock_release(c);
	vfree(buf);
	st->client_ret = ret;
	complete(&st->finished);
	return 0;
}

static int __init kofi_raw_tcp_init(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	unsigned int n = streams, k, servers = 0, clients = 0;
	struct socket *listener = NULL;
	struct task_struct *t;
	struct stream *sts;
	ktime_t start, end;
	u64 busy_start, busy_end;
	s64 ns, kbs;
	int ret;

	if (!n || n > 64 || (pingpong() && n > 1) || (!pingpong() && strcmp(test, "bw")))
		return -EINVAL;
	sts = kcalloc(n, sizeof(*sts), GFP_KERNEL);
	if (!sts)
		return -ENOMEM;
	ret = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP, &listener);
	if (!ret) {
		sock_set_reuseaddr(listener->sk);
		ret = kernel_bind(listener, KOFI_SOCKADDR_ARG(&sin), sizeof(sin));
	}
	if (!ret)
		ret = kernel_listen(listener, n);
	for (k = 0; !ret && k < n; k++) {
		sts[k].listener = listener;
		init_completion(&sts[k].served);
		init_completion(&sts[k].connected);
		init_completion(&sts[k].finished);
		t = kthread_run(server_fn, &sts[k], "kofi_raw_tcp/s%u", k);
		if (IS_ERR(t))
			ret = PTR_ERR(t);
		else
			servers++;
	}
	/* A pingpong's client runs here, in insmod's context, as
	 * kofi_pingpong's does; streams run in threads, as kofi_bw's pairs. */
	if (!ret && pingpong()) {
		complete_all(&go);
		client_fn(&sts[0]);
		clients = 1;
	}
	for (k = 0; !ret && !pingpong() && k < n; k++) {
		t = kthread_run(client_fn, &sts[k], "kofi_raw_tcp/c%u", k);
		if (IS_ERR(t))
			ret = PTR_ERR(t);
		else
			clients++;
	}
	for (k = 0; k < clients; k++)
		wait_for_completion(&sts[k].connected);
	busy_start = cpu_busy_ns();
	start = ktime_get();
	complete_all(&go);
	end = start;
	busy_end = busy_start;
	for (k = 0; k < clients; k++) {
		wait_for_completion(&sts[k].finished);
		ret = ret ?: sts[k].client_ret;
		if (ktime_after(sts[k].end, end)) {
			end = sts[k].end;
			busy_end = sts[k].busy_end;
		}
	}
	/* Servers still waiting for a connection are woken by the shutdown. */
	if (listener)
		kernel_sock_shutdown(listener, SHUT_RDWR);
	for (k = 0; k < servers; k++) {
		wait_for_completion(&sts[k].served);
		ret = ret ?: sts[k].serve_ret;
	}
	if (ret)
		goto out;
	if (pingpong()) {
		ns = ktime_to_ns(ktime_sub(sts[0].end, sts[0].start));
		pr_info("kofi_raw_tcp: pingpong %u x %u: %lld ns\n", size, iters, ns / iters);
		goto out;
	}
	ns = ktime_to_ns(ktime_sub(end, start));
	/* Before the bandwidth, as kofi_bw prints it. */
	pr_info("kofi_raw_tcp: cpu busy in the clock: %llu ns\n", busy_end - busy_start);
	/* kB/s, printed as MB/s with two decimals (small messages move few MB/s). */
	kbs = div64_s64((s64)size * iters * n * 1000000, ns ?: 1);
	if (n == 1)
		pr_info("kofi_raw_tcp: bw %u x %u: %lld.%02lld MB/s\n", size, iters, kbs / 1000,
			kbs % 1000 / 10);
	else
		pr_info("kofi_raw_tcp: bw %u x %u x %u streams: %lld.%02lld MB/s\n", size, iters, n,
			kbs / 1000, kbs % 1000 / 10);
out:
	if (listener)
		sock_release(listener);
	kfree(sts);
	return ret;
}

static void __exit kofi_raw_tcp_exit(void)
{
}

module_init(kofi_raw_tcp_init);
module_exit(kofi_raw_tcp_exit);
MODULE_DESCRIPTION("kofi benchmark baseline: raw in-kernel TCP");
MODULE_LICENSE("GPL");
