// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_raw_tcp: the baseline kofi_sock is measured against. The simplest
 * fast in-kernel TCP loop: blocking kernel_sendmsg/kernel_recvmsg with
 * MSG_WAITALL, TCP_NODELAY, one connection over loopback, server in a
 * thread. test=pingpong bounces size bytes iters times; test=bw streams
 * iters messages and waits for a 1-byte acknowledgement. Prints
 *   kofi_raw_tcp: pingpong <size> x <iters>: <ns> ns
 *   kofi_raw_tcp: bw <size> x <iters>: <MB/s, two decimals> MB/s
 */
#include <linux/completion.h>
#include <linux/in.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/net.h>
#include <linux/vmalloc.h>
#include <net/net_namespace.h>
#include <net/tcp.h>

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

/* Messages sent in all: a pingpong's warm-up comes before its timed ones. */
static unsigned int messages(void)
{
	return strcmp(test, "pingpong") ? iters : warmup + iters;
}

static int xfer(struct socket *s, void *buf, size_t len, bool out)
{
	struct kvec iov = { buf, len };
	struct msghdr msg = { .msg_flags = out ? MSG_NOSIGNAL : MSG_WAITALL };
	int ret = out ? kernel_sendmsg(s, &msg, &iov, 1, len) :
			kernel_recvmsg(s, &msg, &iov, 1, len, MSG_WAITALL);

	return ret == len ? 0 : (ret < 0 ? ret : -EIO);
}

struct server {
	struct socket *listener;
	struct completion done;
	int ret;
};

static int server_fn(void *arg)
{
	struct server *sv = arg;
	struct socket *c = NULL;
	u8 *buf = vmalloc(size);
	unsigned int i;
	int ret = buf ? kernel_accept(sv->listener, &c, 0) : -ENOMEM;

	if (!ret)
		tcp_sock_set_nodelay(c->sk);
	for (i = 0; !ret && i < messages(); i++) {
		ret = xfer(c, buf, size, false);
		if (!ret && !strcmp(test, "pingpong"))
			ret = xfer(c, buf, size, true);
	}
	if (!ret && strcmp(test, "pingpong"))
		ret = xfer(c, buf, 1, true);
	if (c)
		sock_release(c);
	vfree(buf);
	sv->ret = ret;
	complete(&sv->done);
	return 0;
}

static int __init kofi_raw_tcp_init(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct server sv = {};
	struct socket *c = NULL;
	struct task_struct *t;
	u8 *buf = vzalloc(size);
	unsigned int i;
	ktime_t start;
	s64 ns, kbs;
	int ret;

	if (!buf)
		return -ENOMEM;
	init_completion(&sv.done);
	ret = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP, &sv.listener);
	if (!ret) {
		sock_set_reuseaddr(sv.listener->sk);
		ret = kernel_bind(sv.listener, (struct sockaddr *)&sin, sizeof(sin));
	}
	if (!ret)
		ret = kernel_listen(sv.listener, 1);
	if (ret)
		goto out;
	t = kthread_run(server_fn, &sv, "kofi_raw_tcp");
	if (IS_ERR(t)) {
		ret = PTR_ERR(t);
		goto out;
	}
	ret = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP, &c);
	if (!ret) {
		tcp_sock_set_nodelay(c->sk);
		ret = kernel_connect(c, (struct sockaddr *)&sin, sizeof(sin), 0);
	}
	start = ktime_get();
	for (i = 0; !ret && i < messages(); i++) {
		if (i == warmup && !strcmp(test, "pingpong"))
			start = ktime_get();
		ret = xfer(c, buf, size, true);
		if (!ret && !strcmp(test, "pingpong"))
			ret = xfer(c, buf, size, false);
	}
	if (!ret && strcmp(test, "pingpong"))
		ret = xfer(c, buf, 1, false);
	ns = ktime_to_ns(ktime_sub(ktime_get(), start));
	/* kB/s, printed as MB/s with two decimals (small messages move few MB/s). */
	kbs = (s64)size * iters * 1000000 / (ns ?: 1);
	if (c)
		sock_release(c);
	wait_for_completion(&sv.done);
	ret = ret ?: sv.ret;
	if (!ret && !strcmp(test, "pingpong"))
		pr_info("kofi_raw_tcp: pingpong %u x %u: %lld ns\n", size, iters, ns / iters);
	else if (!ret)
		pr_info("kofi_raw_tcp: bw %u x %u: %lld.%02lld MB/s\n", size, iters, kbs / 1000,
			kbs % 1000 / 10);
out:
	if (sv.listener)
		sock_release(sv.listener);
	vfree(buf);
	return ret;
}

static void __exit kofi_raw_tcp_exit(void)
{
}

module_init(kofi_raw_tcp_init);
module_exit(kofi_raw_tcp_exit);
MODULE_DESCRIPTION("kofi benchmark baseline: raw in-kernel TCP");
MODULE_LICENSE("GPL");
