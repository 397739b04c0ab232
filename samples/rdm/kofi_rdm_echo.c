// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_rdm_echo: reliable datagram endpoints (FI_EP_RDM) talking to many
 * peers through an address vector, with no connection code: the core makes
 * the connections over the provider's MSG endpoints.
 *
 * mode=server opens eps endpoints on addr, ports port..port+eps-1, and
 * echoes every message to its source; mode=client opens eps endpoints on
 * local (ports the system picks), puts the servers in its AV with
 * fi_av_insertsvc and sends iters messages from each of its endpoints to
 * each server endpoint, each echoed and checked byte for byte; mode=both
 * runs both in one module.
 *
 * Sources are checked both ways (FI_SOURCE, fi_cq_readfrom): a client's
 * message names the client; the server inserts the name into its AV on the
 * first message, which therefore arrives from FI_ADDR_NOTAVAIL, and every
 * later message must come from that AV address. The client checks each
 * echo comes from the server endpoint it sent to. insmod's status is the
 * verdict.
 */
#include <linux/delay.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/slab.h>

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
static char *local = "";
module_param(local, charp, 0444);
MODULE_PARM_DESC(local, "client: its own address (default: addr)");
static int port = 7700;
module_param(port, int, 0444);
MODULE_PARM_DESC(port, "the first server endpoint's port");
static unsigned int eps = 4;
module_param(eps, uint, 0444);
MODULE_PARM_DESC(eps, "endpoints on each side (1 to 8)");
static unsigned int iters = 20;
module_param(iters, uint, 0444);
MODULE_PARM_DESC(iters, "messages from each client endpoint to each server endpoint");
static unsigned int size = 1024;
module_param(size, uint, 0444);
MODULE_PARM_DESC(size, "message size in bytes (64 to 65536)");
static int timeout_ms = 30000;
module_param(timeout_ms, int, 0444);
MODULE_PARM_DESC(timeout_ms, "how long to wait for any one message");

#define V FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)
#define EPS_MAX 8
#define BUFS 8
#define MAGIC 0x31455220	/* " RE1" */
#define NAME_MAX_LEN 28
#define BODY 48		/* header, then the pattern */

/* A message: who sent it and which one it is, then bytes derived from that. */
struct head {
	u32 magic;
	u32 seq;
	u32 client;
	u32 name_len;
	u8 name[NAME_MAX_LEN];
};

struct net {
	struct fi_info *info[EPS_MAX];
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_ep *ep[EPS_MAX];
	struct fid_cq *cq[EPS_MAX];
	u8 *buf[EPS_MAX][BUFS];
	int n;
};

static u8 pattern(const struct head *h, size_t i)
{
	return (u8)(h->seq * 7 + i * 13 + h->client);
}

static int open_net(struct net *t, const char *node, int first_port, int n)
{
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .size = 256 };
	struct fi_info *hints = fi_allocinfo();
	char service[8];
	int i, j, ret = -ENOMEM;

	memset(t, 0, sizeof(*t));
	if (!hints)
		return -ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_SOURCE;
	hints->fabric_attr->prov_name = kstrdup(prov, GFP_KERNEL);
	for (i = 0; i < n; i++) {
		snprintf(service, sizeof(service), "%d", first_port ? first_port + i : 0);
		ret = fi_getinfo(V, node, service, FI_SOURCE, hints, &t->info[i]);
		if (ret)
			goto out;
	}
	ret = fi_fabric(t->info[0]->fabric_attr, &t->fabric, NULL);
	if (!ret)
		ret = fi_domain(t->fabric, t->info[0], &t->domain, NULL);
	if (!ret)
		ret = fi_av_open(t->domain, &av_attr, &t->av, NULL);
	for (i = 0; !ret && i < n; i++) {
		t->n = i + 1;
		ret = fi_cq_open(t->domain, &cq_attr, &t->cq[i], NULL);
		if (!ret)
			ret = fi_endpoint(t->domain, t->info[i], &t->ep[i], NULL);
		if (!ret)
			ret = fi_ep_bind(t->ep[i], &t->cq[i]->fid, FI_SEND | FI_RECV);
		if (!ret)
			ret = fi_ep_bind(t->ep[i], &t->av->fid, 0);
		if (!ret)
			ret = fi_enable(t->ep[i]);
		for (j = 0; !ret && j < BUFS; j++) {
			t->buf[i][j] = kzalloc(size, GFP_KERNEL);
			if (!t->buf[i][j])
				ret = -ENOMEM;
		}
	}
out:
	fi_freeinfo(hints);
	return ret;
}

static void close_net(struct net *t)
{
	int i, j;

	if (!t)
		return;
	for (i = 0; i < t->n; i++) {
		if (t->ep[i])
			fi_close(&t->ep[i]->fid);
		if (t->cq[i])
			fi_close(&t->cq[i]->fid);
		for (j = 0; j < BUFS; j++)
			kfree(t->buf[i][j]);
	}
	if (t->av)
		fi_close(&t->av->fid);
	if (t->domain)
		fi_close(&t->domain->fid);
	if (t->fabric)
		fi_close(&t->fabric->fid);
	for (i = 0; i < EPS_MAX; i++)
		fi_freeinfo(t->info[i]);
}

/*
 * The next completion of @cq and its source; an error entry as -err, its
 * context in @e.
 */
static int next(struct fid_cq *cq, struct fi_cq_data_entry *e, fi_addr_t *src, int wait_ms)
{
	ssize_t ret = fi_cq_sreadfrom(cq, e, 1, src, NULL, wait_ms);

	if (ret == -FI_EAVAIL) {
		struct fi_cq_err_entry err = {};

		fi_cq_readerr(cq, &err, 0);
		e->op_context = err.op_context;
		return -err.err;
	}
	return ret < 0 ? ret : 0;
}

/* Contexts: buffer k of an endpoint, as a receive or as the echo's send. */
#define CTX(k, send) ((void *)(uintptr_t)(((k) << 1 | (send)) + 16))
#define CTX_BUF(c) ((int)(((uintptr_t)(c) - 16) >> 1))
#define CTX_SEND(c) ((((uintptr_t)(c) - 16) & 1) != 0)

/*
 * The clients the server has met: their names, AV addresses and the echoes
 * they got. A client run that gave up part way (insmod is retried until the
 * server listens on every port) may have met it too: the server is done
 * when eps clients have had all their echoes, whatever the others got.
 */
struct known {
	u8 name[NAME_MAX_LEN];
	u32 len;
	fi_addr_t addr;
	unsigned int echoed;
};

#define KNOWN_MAX (4 * EPS_MAX)

static int serve(struct completion *listening)
{
	struct net *t = kzalloc(sizeof(*t), GFP_KERNEL);
	struct known *known;
	struct fi_cq_data_entry e;
	struct head *h;
	fi_addr_t src;
	/* The client each buffer's echo goes to. */
	unsigned int echo_to[EPS_MAX][BUFS];
	unsigned int each = eps * iters, whole = 0, done = 0, lost = 0, nknown = 0, k;
	int i, ret, idle = 0;

	known = kcalloc(KNOWN_MAX, sizeof(*known), GFP_KERNEL);
	ret = known && t ? open_net(t, addr, port, eps) : -ENOMEM;
	for (i = 0; !ret && i < t->n; i++)
		for (k = 0; !ret && k < BUFS; k++)
			ret = fi_recv(t->ep[i], t->buf[i][k], size, NULL, FI_ADDR_UNSPEC, CTX(k, 0));
	if (listening)
		complete(listening);
	while (!ret && whole < eps) {
		bool any = false;

		for (i = 0; !ret && i < t->n; i++) {
			ret = next(t->cq[i], &e, &src, 0);
			if (ret == -FI_EAGAIN) {
				ret = 0;
				continue;
			}
			if (ret && !CTX_SEND(e.op_context))
				break;
			any = true;
			k = CTX_BUF(e.op_context);
			if (CTX_SEND(e.op_context)) {
				/*
				 * Echoed (or not: its client gave up and went):
				 * the buffer takes the next message.
				 */
				if (ret) {
					lost++;
				} else {
					done++;
					if (++known[echo_to[i][k]].echoed == each)
						whole++;
				}
				ret = fi_recv(t->ep[i], t->buf[i][k], size, NULL, FI_ADDR_UNSPEC,
					      CTX(k, 0));
				continue;
			}
			h = (struct head *)t->buf[i][k];
			if (e.len != size || h->magic != MAGIC || h->name_len > NAME_MAX_LEN) {
				ret = -EPROTO;
				break;
			}
			for (k = 0; k < nknown; k++)
				if (known[k].len == h->name_len &&
				    !memcmp(known[k].name, h->name, h->name_len))
					break;
			if (k == nknown) {
				/* A client not in the AV yet: no source to name. */
				if (src != FI_ADDR_NOTAVAIL || nknown == KNOWN_MAX) {
					pr_err("kofi_rdm_echo: server: unknown client from %llx\n", src);
					ret = -EPROTO;
					break;
				}
				if (fi_av_insert(t->av, h->name, 1, &known[k].addr, 0, NULL) != 1) {
					ret = -EINVAL;
					break;
				}
				memcpy(known[k].name, h->name, h->name_len);
				known[k].len = h->name_len;
				nknown++;
			} else if (src != known[k].addr) {
				pr_err("kofi_rdm_echo: server: source %llx, not %llx\n", src,
				       known[k].addr);
				ret = -EPROTO;
				break;
			}
			echo_to[i][CTX_BUF(e.op_context)] = k;
			ret = fi_sendto(t->ep[i], h, size, NULL, known[k].addr,
					CTX(CTX_BUF(e.op_context), 1));
		}
		if (!any && !ret && ++idle > timeout_ms) {
			ret = -ETIMEDOUT;
			break;
		}
		if (any)
			idle = 0;
		else
			usleep_range(1000, 2000);
	}
	if (!ret)
		pr_info("kofi_rdm_echo: server: %s: %u messages from %u clients echoed (%u whole), %u to clients gone, sources verified\n",
			prov, done, nknown, whole, lost);
	else
		pr_err("kofi_rdm_echo: server: %s (%d) after %u messages\n", fi_strerror(ret), ret,
		       done);
	close_net(t);
	kfree(t);
	kfree(known);
	return ret;
}

static int client(void)
{
	const char *me = *local ? local : addr;
	struct net *t = kzalloc(sizeof(*t), GFP_KERNEL);
	struct fi_cq_data_entry e;
	fi_addr_t server[EPS_MAX], src;
	struct head *tx, *rx;
	char service[8];
	u64 ns;
	ktime_t start;
	unsigned int it, c, j, i, rounds = 0;
	size_t len;
	int ret, got;

	ret = t ? open_net(t, me, 0, eps) : -ENOMEM;
	for (j = 0; !ret && j < eps; j++) {
		snprintf(service, sizeof(service), "%d", port + j);
		ret = fi_av_insertsvc(t->av, addr, service, &server[j], 0, NULL) == 1 ? 0 : -EINVAL;
	}
	start = ktime_get();
	for (it = 0; !ret && it < iters; it++)
		for (c = 0; !ret && c < eps; c++)
			for (j = 0; !ret && j < eps; j++) {
				tx = (struct head *)t->buf[c][0];
				rx = (struct head *)t->buf[c][1];
				len = NAME_MAX_LEN;
				memset(tx, 0, size);
				ret = fi_getname(&t->ep[c]->fid, tx->name, &len);
				tx->magic = MAGIC;
				tx->seq = it * eps + j;
				tx->client = c;
				tx->name_len = len;
				for (i = BODY; i < size; i++)
					((u8 *)tx)[i] = pattern(tx, i);
				if (!ret)
					ret = fi_recv(t->ep[c], rx, size, NULL, server[j], CTX(1, 0));
				if (!ret)
					ret = fi_sendto(t->ep[c], tx, size, NULL, server[j], CTX(0, 1));
				/* The send's completion and the echo, in either order. */
				for (got = 0; !ret && got < 2; got++) {
					ret = next(t->cq[c], &e, &src, timeout_ms);
					if (!ret && !CTX_SEND(e.op_context) && src != server[j]) {
						pr_err("kofi_rdm_echo: client: echo from %llx, not %llx\n",
						       src, server[j]);
						ret = -EPROTO;
					}
				}
				if (!ret && memcmp(tx, rx, size))
					ret = -EIO;
				rounds++;
			}
	ns = ktime_to_ns(ktime_sub(ktime_get(), start));
	if (!ret)
		pr_info("kofi_rdm_echo: %s: %u x %u endpoints, %u echoes of %u bytes, sources verified: %lld us each\n",
			prov, eps, eps, rounds, size, rounds ? ns / 1000 / rounds : 0);
	else
		pr_err("kofi_rdm_echo: client: %s (%d)\n", fi_strerror(ret), ret);
	close_net(t);
	kfree(t);
	return ret;
}

static int __init kofi_rdm_echo_init(void)
{
	if (size < BODY || size > 65536 || !eps || eps > EPS_MAX || !iters)
		return -EINVAL;
	return sample_run(mode, "kofi_rdm_echo", serve, client);
}

static void __exit kofi_rdm_echo_exit(void)
{
}

module_init(kofi_rdm_echo_init);
module_exit(kofi_rdm_echo_exit);
MODULE_IMPORT_NS(KOFI_NS);
MODULE_DESCRIPTION("kofi RDM echo: many endpoints, one AV each side, sources verified");
MODULE_LICENSE("GPL");
