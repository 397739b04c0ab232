// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_bw: streaming bandwidth, the kernel counterpart of fabtests'
 * fi_msg_bw and fi_rma_bw.
 *
 * test=msg streams iters messages of size bytes with window of them in
 * flight, and stops the clock when the receiver says it has them all;
 * test=write and test=read stream RMA into and out of a region the server
 * registers and names in its accept's private data (an RMA completes when
 * the target has answered). mode=both runs the server in a thread. Every
 * buffer slot carries its own pattern, checked outside the clock when the
 * run is over (messages and writes where they landed, reads where they were
 * read into). The module's init returns when the run is over (0: every
 * operation succeeded and every byte arrived) and prints the CPU time the
 * machine spent from the clock's start to its end, then the bandwidth:
 *   kofi_bw: cpu busy in the clock: <ns> ns
 *   kofi_bw: <prov> <test> <size> bytes x <iters>: <MB/s, two decimals> MB/s
 * With pairs=N (mode=both), N pairs of endpoints (ports port, port+1, ...)
 * connect first, then stream at once from one start; the line gives their
 * aggregate bandwidth, "... x <iters> x <N> pairs: <MB/s> MB/s".
 */
#include <linux/completion.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <kofi/fabric.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_eq.h>
#include <kofi/fi_rma.h>

#include "../common/cpu_busy.h"
#include "../common/kofi_sample.h"

static char *prov = "sock";
module_param(prov, charp, 0444);
static char *mode = "both";
module_param(mode, charp, 0444);
static char *test = "msg";
module_param(test, charp, 0444);
MODULE_PARM_DESC(test, "msg, write or read");
static char *addr = "127.0.0.1";
module_param(addr, charp, 0444);
static char *port = "7510";
module_param(port, charp, 0444);
static unsigned int size = 65536;
module_param(size, uint, 0444);
static unsigned int iters = 200;
module_param(iters, uint, 0444);
static unsigned int window = 16;
module_param(window, uint, 0444);
MODULE_PARM_DESC(window, "operations in flight");
static unsigned int pairs = 1;
module_param(pairs, uint, 0444);
MODULE_PARM_DESC(pairs, "mode=both: endpoint pairs streaming at once (aggregate bandwidth)");

#define V FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)
#define WAIT_MS 60000

/* One pair's part of a run: its port, and how its two sides did. */
struct stream {
	char port[8];
	struct completion listening, served, connected, finished;
	int serve_ret, client_ret;
	/* When its clock stopped, and the machine's CPU time then. */
	ktime_t end;
	u64 busy_end;
};

/* Every client is connected: the clocks start. */
static DECLARE_COMPLETION(go);
/* With mode=both, every clock has stopped: the servers check what came
 * only now, outside every pair's clock and CPU time. */
static DECLARE_COMPLETION(stopped);

/* What the server's accept tells the client: its region. */
struct region_desc {
	u64 key;
	u64 addr;
};

struct end {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_pep *pep;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
	struct fid_mr *mr;
	u8 *buf;
};

static bool is_rma(void)
{
	return strcmp(test, "msg");
}

/* Slot @s of a window: its own bytes. */
static u8 slot_byte(unsigned int s, size_t j)
{
	return (u8)(s * 31 + j * 7 + 1);
}

static void fill_slots(u8 *buf)
{
	unsigned int s;
	size_t j;

	for (s = 0; s < window; s++)
		for (j = 0; j < size; j++)
			buf[(size_t)s * size + j] = slot_byte(s, j);
}

/* 0 when the slots the run used hold their bytes; -EILSEQ otherwise. */
static int check_slots(const u8 *buf, const char *who)
{
	unsigned int s;
	size_t j;

	for (s = 0; s < min(window, iters); s++)
		for (j = 0; j < size; j++)
			if (buf[(size_t)s * size + j] != slot_byte(s, j)) {
				pr_err("kofi_bw: %s: slot %u byte %zu corrupt\n", who, s, j);
				return -EILSEQ;
			}
	return 0;
}

static int open_end(struct end *e, const char *service, u64 flags)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_eq_attr eq_attr = {};
	struct fi_cq_attr cq_attr = { .size = 4 * window + 8 };
	int ret;

	if (!hints)
		return -ENOMEM;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | (is_rma() ? FI_RMA : 0);
	hints->fabric_attr->prov_name = kstrdup(prov, GFP_KERNEL);
	ret = fi_getinfo(V, addr, service, flags, hints, &e->info);
	fi_freeinfo(hints);
	if (!ret)
		ret = fi_fabric(e->info->fabric_attr, &e->fabric, NULL);
	if (!ret)
		ret = fi_domain(e->fabric, e->info, &e->domain, NULL);
	if (!ret)
		ret = fi_eq_open(e->fabric, &eq_attr, &e->eq, NULL);
	if (!ret)
		ret = fi_cq_open(e->domain, &cq_attr, &e->cq, NULL);
	e->buf = vzalloc((size_t)size * window);
	return ret ?: (e->buf ? 0 : -ENOMEM);
}

static void close_end(struct end *e)
{
	if (e->ep)
		fi_close(&e->ep->fid);
	if (e->mr)
		fi_close(&e->mr->fid);
	if (e->pep)
		fi_close(&e->pep->fid);
	if (e->cq)
		fi_close(&e->cq->fid);
	if (e->eq)
		fi_close(&e->eq->fid);
	if (e->domain)
		fi_close(&e->domain->fid);
	if (e->fabric)
		fi_close(&e->fabric->fid);
	fi_freeinfo(e->info);
	vfree(e->buf);
}

static int serve(struct stream *st)
{
	struct end e = {};
	struct cm_event ev;
	struct region_desc rd = {};
	unsigned int i, got = 0;
	u8 done;
	int ret;

	ret = open_end(&e, st->port, FI_SOURCE);
	/* What reads take. */
	if (!ret && !strcmp(test, "read"))
		fill_slots(e.buf);
	if (!ret && is_rma()) {
		ret = fi_mr_reg(e.domain, e.buf, (size_t)size * window,
				FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &e.mr, NULL);
		rd.key = ret ? 0 : fi_mr_key(e.mr);
	}
	if (!ret)
		ret = fi_passive_ep(e.fabric, e.info, &e.pep, NULL);
	if (!ret)
		ret = fi_pep_bind(e.pep, &e.eq->fid, 0);
	if (!ret)
		ret = fi_listen(e.pep);
	complete(&st->listening);
	if (!ret)
		ret = sample_wait_cm(e.eq, FI_CONNREQ, &ev, WAIT_MS);
	if (!ret) {
		ret = sample_enable_ep(e.domain, ev.entry.info, e.eq, e.cq, &e.ep);
		fi_freeinfo(ev.entry.info);
	}
	/* Receives before the accept: nothing the client sends waits. */
	if (!ret && is_rma())
		ret = fi_recv(e.ep, &done, 1, NULL, 0, NULL);
	for (i = 0; !ret && !is_rma() && i < window; i++)
		ret = fi_recv(e.ep, e.buf + (size_t)i * size, size, NULL, 0, NULL);
	if (!ret)
		ret = fi_accept(e.ep, &rd, sizeof(rd));
	if (!ret)
		ret = sample_wait_cm(e.eq, FI_CONNECTED, &ev, WAIT_MS);
	if (is_rma()) {
		/* The client's "done" message, after its last RMA completed. */
		if (!ret)
			ret = sample_wait_cq(e.cq, WAIT_MS);
	} else {
		while (!ret && got < iters) {
			ret = sample_wait_cq(e.cq, WAIT_MS);
			got++;
			/* Message k lands in slot k % window, as it was sent. */
			if (!ret && got + window <= iters)
				ret = fi_recv(e.ep, e.buf + (size_t)((got - 1) % window) * size, size,
					      NULL, 0, NULL);
		}
	}
	/* Tell the client everything arrived, then close only after it has:
	 * a send's completion may mean no more than that the transport took it
	 * (iWARP), and closing first could flush the client's receive. */
	if (!ret)
		ret = fi_send(e.ep, e.buf, 1, NULL, 0, NULL);
	if (!ret)
		ret = sample_wait_cq(e.cq, WAIT_MS);
	/* What messages and writes brought, checked once the client's clock
	 * has stopped (for messages, at this word), and every other pair's
	 * with it: the raw baselines check nothing in theirs. Byte by byte
	 * under TCG, a 16 MiB window checked inside the clock cost a 1 MiB
	 * message stream a third of its rate. */
	if (!ret && !strcmp(mode, "both"))
		wait_for_completion(&stopped);
	if (!ret && strcmp(test, "read"))
		ret = check_slots(e.buf, "server");
	if (!ret)
		ret = sample_wait_cm(e.eq, FI_SHUTDOWN, &ev, WAIT_MS);
	if (ret)
		pr_err("kofi_bw: server: %s (%d)\n", fi_strerror(ret), ret);
	close_end(&e);
	return ret;
}

static int post(struct end *e, const struct region_desc *rd, unsigned int i)
{
	u8 *buf = e->buf + (size_t)(i % window) * size;
	u64 raddr = rd->addr + (u64)(i % window) * size;

	if (!strcmp(test, "write"))
		return fi_write(e->ep, buf, size, NULL, 0, raddr, rd->key, NULL);
	if (!strcmp(test, "read"))
		return fi_read(e->ep, buf, size, NULL, 0, raddr, rd->key, NULL);
	return fi_send(e->ep, buf, size, NULL, 0, NULL);
}

/* Streams once every client is connected (the run's start); @st->end is
 * when the server had it all. */
static int client(struct stream *st)
{
	struct end e = {};
	struct cm_event ev;
	struct region_desc rd = {};
	unsigned int posted = 0, done = 0;
	u8 ack;
	int ret;

	ret = open_end(&e, st->port, 0);
	if (!ret)
		ret = sample_enable_ep(e.domain, e.info, e.eq, e.cq, &e.ep);
	if (!ret)
		ret = fi_connect(e.ep, NULL, NULL, 0);
	if (!ret)
		ret = sample_wait_cm(e.eq, FI_CONNECTED, &ev, WAIT_MS);
	if (!ret && is_rma())
		memcpy(&rd, ev.data, sizeof(rd));
	if (!ret)
		ret = fi_recv(e.ep, &ack, 1, NULL, 0, &ack);
	/* What messages and writes carry (reads bring the server's). */
	if (!ret && strcmp(test, "read"))
		fill_slots(e.buf);
	complete(&st->connected);
	wait_for_completion(&go);
	while (!ret && done < iters) {
		while (!ret && posted < iters && posted - done < window) {
			ret = post(&e, &rd, posted);
			posted++;
		}
		if (!ret)
			ret = sample_wait_cq(e.cq, WAIT_MS);
		done++;
	}
	/* msg: the receiver's word that everything arrived; RMA: release it. */
	if (!ret && !is_rma())
		ret = sample_wait_cq(e.cq, WAIT_MS);
	st->end = ktime_get();
	st->busy_end = cpu_busy_ns();
	if (!ret && !strcmp(test, "read"))
		ret = check_slots(e.buf, "client");
	/* RMA: release the server, and wait for its word (before it checks). */
	if (!ret && is_rma()) {
		ret = fi_send(e.ep, e.buf, 1, NULL, 0, NULL);
		if (!ret)
			ret = sample_wait_cq(e.cq, WAIT_MS);
		if (!ret)
			ret = sample_wait_cq(e.cq, WAIT_MS);
	}
	if (ret)
		pr_err("kofi_bw: client: %s (%d)\n", fi_strerror(ret), ret);
	/* A client that failed before its connection must not hold the start. */
	complete(&st->connected);
	close_end(&e);
	return ret;
}

static int serve_thread(void *arg)
{
	struct stream *st = arg;

	st->serve_ret = serve(st);
	complete(&st->served);
	return 0;
}

static int client_thread(void *arg)
{
	struct stream *st = arg;

	st->client_ret = client(st);
	complete(&st->finished);
	return 0;
}

/* Starts @fn in a thread for each of @n streams; returns how many started. */
static unsigned int start_sides(struct stream *sts, unsigned int n, int (*fn)(void *),
				bool servers)
{
	struct task_struct *t;
	unsigned int k;

	for (k = 0; k < n; k++) {
		t = kthread_run(fn, &sts[k], "kofi_bw/%c%u", servers ? 's' : 'c', k);
		if (IS_ERR(t))
			break;
	}
	return k;
}

/* The aggregate bandwidth of @n streams that all began at @start, when the
 * machine had been busy @busy_start ns, and the CPU time they took. */
static void report(const struct stream *sts, unsigned int n, ktime_t start, u64 busy_start)
{
	ktime_t end = start;
	u64 busy_end = busy_start;
	unsigned int k;
	s64 ns, kbs;

	for (k = 0; k < n; k++)
		if (ktime_after(sts[k].end, end)) {
			end = sts[k].end;
			busy_end = sts[k].busy_end;
		}
	ns = ktime_to_ns(ktime_sub(end, start));
	/* Before the bandwidth: scripts take the last kofi_bw line for it. */
	pr_info("kofi_bw: cpu busy in the clock: %llu ns\n", busy_end - busy_start);
	/* kB/s, printed as MB/s with two decimals (small messages move few MB/s). */
	kbs = div64_s64((s64)size * iters * n * 1000000, ns ?: 1);
	if (n == 1)
		pr_info("kofi_bw: %s %s %u bytes x %u: %lld.%02lld MB/s\n", prov, test, size,
			iters, kbs / 1000, kbs % 1000 / 10);
	else
		pr_info("kofi_bw: %s %s %u bytes x %u x %u pairs: %lld.%02lld MB/s\n", prov, test,
			size, iters, n, kbs / 1000, kbs % 1000 / 10);
}

static int run(void)
{
	bool both = !strcmp(mode, "both"), server = !strcmp(mode, "server");
	unsigned int n = both ? pairs : 1, k, servers = 0, clients = 0;
	struct stream *sts;
	unsigned int base;
	ktime_t start;
	u64 busy_start;
	int ret = 0;

	if ((!both && !server && strcmp(mode, "client")) || kstrtouint(port, 10, &base) ||
	    base + n > 65536)
		return -EINVAL;
	sts = kcalloc(n, sizeof(*sts), GFP_KERNEL);
	if (!sts)
		return -ENOMEM;
	for (k = 0; k < n; k++) {
		snprintf(sts[k].port, sizeof(sts[k].port), "%u", base + k);
		init_completion(&sts[k].listening);
		init_completion(&sts[k].served);
		init_completion(&sts[k].connected);
		init_completion(&sts[k].finished);
	}
	if (server) {
		ret = serve(&sts[0]);
		goto out;
	}
	if (both) {
		servers = start_sides(sts, n, serve_thread, true);
		for (k = 0; k < servers; k++)
			wait_for_completion(&sts[k].listening);
	}
	if (servers == n || !both)
		clients = start_sides(sts, n, client_thread, false);
	for (k = 0; k < clients; k++)
		wait_for_completion(&sts[k].connected);
	busy_start = cpu_busy_ns();
	start = ktime_get();
	complete_all(&go);
	for (k = 0; k < clients; k++) {
		wait_for_completion(&sts[k].finished);
		ret = ret ?: sts[k].client_ret;
	}
	complete_all(&stopped);
	/* A server whose client never came waits for it until WAIT_MS. */
	for (k = 0; k < servers; k++) {
		wait_for_completion(&sts[k].served);
		ret = ret ?: sts[k].serve_ret;
	}
	if (!ret && clients < n)
		ret = -EAGAIN;
	if (!ret)
		report(sts, n, start, busy_start);
out:
	kfree(sts);
	return ret;
}

static int __init kofi_bw_init(void)
{
	if (!size || size > (16 << 20) || !iters || !window || window > 256 || !pairs ||
	    pairs > 64)
		return -EINVAL;
	if (strcmp(test, "msg") && strcmp(test, "write") && strcmp(test, "read"))
		return -EINVAL;
	return run();
}

static void __exit kofi_bw_exit(void)
{
}

module_init(kofi_bw_init);
module_exit(kofi_bw_exit);
MODULE_IMPORT_NS(KOFI_NS);
MODULE_DESCRIPTION("kofi bandwidth: streaming messages, RMA writes or reads");
MODULE_LICENSE("GPL");
