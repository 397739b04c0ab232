// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_pingpong: the kernel counterpart of fabtests' fi_msg_pingpong.
 *
 * mode=server listens on addr:port and answers every message; mode=client
 * connects and sends iters messages of size bytes, each answered, checks
 * every byte and reports the round-trip time and bandwidth; mode=both runs
 * the server in a thread and the client in the caller, over one provider.
 * For `make bench`: warmup round trips before the clock, and
 * verify_in_clock=N, which leaves the full check of the timed replies to
 * one after the clock (each still checked by its number), as the raw
 * baseline does.
 * The module's init returns when the run is over: 0 when every message came
 * back intact, an error otherwise (so insmod's status is the verdict).
 */
#include <linux/completion.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/math64.h>
#include <linux/slab.h>
#include <linux/string_helpers.h>
#include <linux/vmalloc.h>
#include <kofi/fabric.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_eq.h>

#include "../common/kofi_sample.h"

static char *prov = "sock";
module_param(prov, charp, 0444);
MODULE_PARM_DESC(prov, "provider (sock, verbs, ...)");
static char *mode = "both";
module_param(mode, charp, 0444);
MODULE_PARM_DESC(mode, "server, client or both");
static char *addr = "127.0.0.1";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "the server's address");
static char *port = "7500";
module_param(port, charp, 0444);
MODULE_PARM_DESC(port, "the server's port");
static unsigned int size = 4096;
module_param(size, uint, 0444);
MODULE_PARM_DESC(size, "message size in bytes");
static unsigned int iters = 100;
module_param(iters, uint, 0444);
MODULE_PARM_DESC(iters, "round trips");
static char *ep_type = "msg";
module_param(ep_type, charp, 0444);
MODULE_PARM_DESC(ep_type,
		 "msg (a connection) or rdm (reliable datagrams through an AV: the core's layer over the provider's msg endpoints; mode=both only)");
static unsigned int warmup;
module_param(warmup, uint, 0444);
MODULE_PARM_DESC(warmup, "round trips before the clock starts (verified, not timed)");
static bool verify_in_clock = true;
module_param(verify_in_clock, bool, 0444);
MODULE_PARM_DESC(verify_in_clock,
		 "check every byte of every timed reply (N: only its number inside the clock, every byte of the last after it, as a benchmark's baseline would)");
static bool reject;
module_param(reject, bool, 0444);
MODULE_PARM_DESC(reject, "server: refuse the client; client: expect to be refused");
static int timeout_ms = 30000;
module_param(timeout_ms, int, 0444);
MODULE_PARM_DESC(timeout_ms, "how long to wait for any one event");

#define V FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)

/* Private data each side sends, and checks it got from the other. */
static const char hello[] = "kofi-pingpong hello";
static const char welcome[] = "kofi-pingpong welcome";
static const char refusal[] = "kofi-pingpong no";

struct end {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_pep *pep;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
	/* rdm: the address vector and the peer's address in it. */
	struct fid_av *av;
	fi_addr_t peer;
	u8 *tx, *rx;
};

/* The fabric, domain, EQ, CQ and buffers of one side; @ep_type's info for @service. */
static int open_common(struct end *e, enum fi_ep_type ep_type, const char *service, u64 flags)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_eq_attr eq_attr = {};
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };
	int ret;

	if (!hints)
		return -ENOMEM;
	hints->ep_attr->type = ep_type;
	hints->caps = FI_MSG;
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
	e->tx = vmalloc(size + 1);
	e->rx = vmalloc(size + 1);
	if (!ret && (!e->tx || !e->rx))
		ret = -ENOMEM;
	return ret;
}

static void close_end(struct end *e)
{
	if (e->ep)
		fi_close(&e->ep->fid);
	if (e->pep)
		fi_close(&e->pep->fid);
	if (e->cq)
		fi_close(&e->cq->fid);
	if (e->av)
		fi_close(&e->av->fid);
	if (e->eq)
		fi_close(&e->eq->fid);
	if (e->domain)
		fi_close(&e->domain->fid);
	if (e->fabric)
		fi_close(&e->fabric->fid);
	fi_freeinfo(e->info);
	vfree(e->tx);
	vfree(e->rx);
}

/* The server's part: echo warmup + iters messages to the peer. */
static int echo(struct end *e)
{
	unsigned int i;
	int ret = 0;

	for (i = 0; !ret && i < warmup + iters; i++) {
		ret = fi_recv(e->ep, e->rx, size, NULL, FI_ADDR_UNSPEC, NULL);
		if (!ret)
			ret = sample_wait_cq(e->cq, timeout_ms);
		if (!ret)
			ret = fi_send(e->ep, e->rx, size, NULL, e->peer, NULL);
		if (!ret)
			ret = sample_wait_cq(e->cq, timeout_ms);
	}
	return ret;
}

/*
 * The client's part: warmup round trips, then iters timed ones (*@ns).
 * The pattern is written once, outside the clock (a byte loop per round
 * trip cost more than the round trip under TCG, as the profile showed);
 * each message is told from the last by its number in its first bytes.
 */
static int round_trips(struct end *e, s64 *ns)
{
	ktime_t start = ktime_get();
	unsigned int i, j;
	int ret = 0;

	for (j = 0; j < size; j++)
		e->tx[j] = (u8)(j * 7);
	for (i = 0; !ret && i < warmup + iters; i++) {
		bool timed = i >= warmup;

		if (i == warmup)
			start = ktime_get();
		memcpy(e->tx, &i, min_t(size_t, size, sizeof(i)));
		ret = fi_recv(e->ep, e->rx, size, NULL, FI_ADDR_UNSPEC, NULL);
		if (!ret)
			ret = fi_send(e->ep, e->tx, size, NULL, e->peer, NULL);
		if (!ret)
			ret = sample_wait_cq(e->cq, timeout_ms);
		if (!ret)
			ret = sample_wait_cq(e->cq, timeout_ms);
		if (ret)
			break;
		if (!timed || verify_in_clock)
			ret = memcmp(e->tx, e->rx, size) ? -EIO : 0;
		else
			ret = memcmp(e->tx, e->rx, min_t(size_t, size, sizeof(i))) ? -EIO : 0;
	}
	*ns = ktime_to_ns(ktime_sub(ktime_get(), start));
	/* Outside the clock: the last reply, every byte. */
	if (!ret && memcmp(e->tx, e->rx, size))
		ret = -EIO;
	return ret;
}

/*
 * The round trip in microseconds, the bandwidth both ways in human units
 * ("2.30 MB/s", "512 kB/s": never a 0 for a slow run) and, last, the round
 * trip in ns for make bench to read.
 */
static void report(s64 ns, const char *kind)
{
	u64 bytes_per_s = ns > 0 ? mul_u64_u64_div_u64((u64)2 * size * iters, NSEC_PER_SEC, ns) : 0;
	char bw[16];

	string_get_size(bytes_per_s, 1, STRING_UNITS_10, bw, sizeof(bw));
	pr_info("kofi_pingpong: %s%s: %u round trips of %u bytes: %lld us each, %s/s, %lld ns\n",
		prov, kind, iters, size, iters ? ns / 1000 / iters : 0, bw,
		iters ? ns / iters : 0);
}

/* The server's part: accept one client, echo iters messages. */
static int serve(struct completion *listening)
{
	struct end e = {};
	struct cm_event ev;
	int ret;

	ret = open_common(&e, FI_EP_MSG, port, FI_SOURCE);
	if (!ret)
		ret = fi_passive_ep(e.fabric, e.info, &e.pep, NULL);
	if (!ret)
		ret = fi_pep_bind(e.pep, &e.eq->fid, 0);
	if (!ret)
		ret = fi_listen(e.pep);
	if (listening)
		complete(listening);
	if (!ret)
		ret = sample_wait_cm(e.eq, FI_CONNREQ, &ev, timeout_ms);
	if (!ret && memcmp(ev.data, hello, sizeof(hello))) {
		pr_err("kofi_pingpong: server: the client's private data is wrong\n");
		ret = -EPROTO;
	}
	if (!ret && reject) {
		ret = fi_reject(e.pep, ev.entry.info->handle, refusal, sizeof(refusal));
		fi_freeinfo(ev.entry.info);
		close_end(&e);
		return ret;
	}
	if (!ret) {
		ret = sample_enable_ep(e.domain, ev.entry.info, e.eq, e.cq, &e.ep);
		if (!ret)
			ret = fi_accept(e.ep, welcome, sizeof(welcome));
		fi_freeinfo(ev.entry.info);
	}
	if (!ret)
		ret = sample_wait_cm(e.eq, FI_CONNECTED, &ev, timeout_ms);
	if (!ret)
		ret = echo(&e);
	/* The client shuts the connection down; the server must hear it. */
	if (!ret)
		ret = sample_wait_cm(e.eq, FI_SHUTDOWN, &ev, timeout_ms);
	if (ret)
		pr_err("kofi_pingpong: server: %s (%d)\n", fi_strerror(ret), ret);
	close_end(&e);
	return ret;
}

static int client(void)
{
	struct end e = {};
	struct cm_event ev;
	s64 ns = 0;
	int ret;

	ret = open_common(&e, FI_EP_MSG, port, 0);
	if (!ret)
		ret = sample_enable_ep(e.domain, e.info, e.eq, e.cq, &e.ep);
	if (!ret)
		ret = fi_connect(e.ep, NULL, hello, sizeof(hello));
	if (!ret)
		ret = sample_wait_cm(e.eq, FI_CONNECTED, &ev, timeout_ms);
	if (reject) {
		/* Refused is the expected outcome. */
		if (ret == -FI_ECONNREFUSED) {
			pr_info("kofi_pingpong: %s: refused, as expected\n", prov);
			ret = 0;
		} else {
			ret = ret ?: -EPROTO;
		}
		close_end(&e);
		return ret;
	}
	if (!ret && memcmp(ev.data, welcome, sizeof(welcome))) {
		pr_err("kofi_pingpong: client: the server's private data is wrong\n");
		ret = -EPROTO;
	}
	if (!ret)
		ret = round_trips(&e, &ns);
	if (!ret)
		ret = fi_shutdown(e.ep, 0);
	if (!ret)
		ret = sample_wait_cm(e.eq, FI_SHUTDOWN, &ev, timeout_ms);
	if (!ret)
		report(ns, "");
	else
		pr_err("kofi_pingpong: client: %s (%d)\n", fi_strerror(ret), ret);
	close_end(&e);
	return ret;
}

/*
 * ep_type=rdm: an FI_EP_RDM endpoint on @own's port, with the peer (on
 * @peer's) in its AV. No connection code: the core connects on the first
 * message.
 */
static int rdm_open(struct end *e, const char *own, const char *peer)
{
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	int ret = open_common(e, FI_EP_RDM, own, FI_SOURCE);

	if (!ret)
		ret = fi_av_open(e->domain, &av_attr, &e->av, NULL);
	if (!ret)
		ret = fi_endpoint(e->domain, e->info, &e->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->cq->fid, FI_SEND | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->av->fid, 0);
	if (!ret)
		ret = fi_enable(e->ep);
	if (!ret && fi_av_insertsvc(e->av, addr, peer, &e->peer, 0, NULL) != 1)
		ret = -EINVAL;
	return ret;
}

/* The ports of the two RDM endpoints: the server's is port, the client's next. */
static void rdm_ports(char *server, char *client)
{
	unsigned int p = 0;

	if (kstrtouint(port, 10, &p))
		p = 0;
	snprintf(server, 8, "%u", p);
	snprintf(client, 8, "%u", p + 1);
}

static int rdm_serve(struct completion *listening)
{
	char server[8], client[8];
	struct end e = {};
	int ret;

	rdm_ports(server, client);
	ret = rdm_open(&e, server, client);
	if (listening)
		complete(listening);
	if (!ret)
		ret = echo(&e);
	if (ret)
		pr_err("kofi_pingpong: rdm server: %s (%d)\n", fi_strerror(ret), ret);
	close_end(&e);
	return ret;
}

static int rdm_client(void)
{
	char server[8], client[8];
	struct end e = {};
	s64 ns = 0;
	int ret;

	rdm_ports(server, client);
	ret = rdm_open(&e, client, server);
	if (!ret)
		ret = round_trips(&e, &ns);
	if (!ret)
		report(ns, " rdm");
	else
		pr_err("kofi_pingpong: rdm client: %s (%d)\n", fi_strerror(ret), ret);
	close_end(&e);
	return ret;
}

static int __init kofi_pingpong_init(void)
{
	if (!size || size > (64 << 20))
		return -EINVAL;
	if (!strcmp(ep_type, "rdm"))
		/* The server's reply goes to the client's fixed port: one module. */
		return strcmp(mode, "both") ? -EINVAL :
					      sample_run(mode, "kofi_pingpong", rdm_serve, rdm_client);
	if (strcmp(ep_type, "msg"))
		return -EINVAL;
	return sample_run(mode, "kofi_pingpong", serve, client);
}

static void __exit kofi_pingpong_exit(void)
{
}

module_init(kofi_pingpong_init);
module_exit(kofi_pingpong_exit);
MODULE_IMPORT_NS(KOFI_NS);
MODULE_DESCRIPTION("kofi pingpong: round trips between two endpoints, verified");
MODULE_LICENSE("GPL");
