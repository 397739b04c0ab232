// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_held_request: a consumer that reads a connection request and holds it
 * unanswered, while test_verbs.sh deletes the device underneath.
 *
 * Loading listens at @addr:@port, connects a client of the same domain to
 * it, and keeps the FI_CONNREQ's info (neither fi_endpoint, fi_reject nor
 * fi_freeinfo): loading succeeds once it holds one. rdma_cm's removal of a
 * device waits for every id on it, so the removal must not wait for this
 * consumer. Unloading then answers the held request as a late consumer
 * would, and prints what came of it:
 *
 *   kofi_held_request: endpoint <fi_endpoint's return>, listener <error>
 *
 * where the listener's error is the passive endpoint's EQ error entry,
 * negated (0 if none came).
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <kofi/fabric.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_eq.h>

static char *prov = "verbs";
module_param(prov, charp, 0444);
MODULE_PARM_DESC(prov, "provider");
static char *addr = "10.0.2.10";
module_param(addr, charp, 0444);
MODULE_PARM_DESC(addr, "address to listen at and connect to");
static char *port = "7900";
module_param(port, charp, 0444);
MODULE_PARM_DESC(port, "port");

#define WAIT_MS 10000

static struct fid_fabric *fabric;
static struct fid_domain *domain;
static struct fid_eq *peq, *ceq;
static struct fid_cq *ccq;
static struct fid_pep *pep;
static struct fid_ep *client;
/* The request, held from load to unload. */
static struct fi_info *held;

static struct fi_info *info_for(const char *node, u64 flags)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	int ret;

	if (!hints)
		return ERR_PTR(-ENOMEM);
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = kstrdup(prov, GFP_KERNEL);
	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), node, port, flags,
			 hints, &info);
	fi_freeinfo(hints);
	return ret ? ERR_PTR(ret) : info;
}

static void close_all(void)
{
	if (client)
		fi_close(&client->fid);
	if (ccq)
		fi_close(&ccq->fid);
	if (ceq)
		fi_close(&ceq->fid);
	if (pep)
		fi_close(&pep->fid);
	if (peq)
		fi_close(&peq->fid);
	if (domain)
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
}

/* Listens, connects, and reads the request: 0 once it is held. */
static int hold_a_request(void)
{
	struct fi_eq_attr eq_attr = { .size = 16 };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA, .size = 16 };
	struct {
		struct fi_eq_cm_entry entry;
		u8 data[KOFI_CM_DATA_MAX];
	} ev;
	struct fi_info *src, *dst;
	u32 event = 0;
	ssize_t n;
	int ret;

	src = info_for(addr, FI_SOURCE);
	if (IS_ERR(src))
		return PTR_ERR(src);
	ret = fi_fabric(src->fabric_attr, &fabric, NULL) ?:
	      fi_domain(fabric, src, &domain, NULL) ?:
	      fi_eq_open(fabric, &eq_attr, &peq, NULL) ?:
	      fi_passive_ep(fabric, src, &pep, NULL) ?:
	      fi_pep_bind(pep, &peq->fid, 0) ?:
	      fi_listen(pep);
	fi_freeinfo(src);
	if (ret)
		return ret;
	dst = info_for(addr, 0);
	if (IS_ERR(dst))
		return PTR_ERR(dst);
	ret = fi_eq_open(fabric, &eq_attr, &ceq, NULL) ?:
	      fi_cq_open(domain, &cq_attr, &ccq, NULL) ?:
	      fi_endpoint(domain, dst, &client, NULL) ?:
	      fi_ep_bind(client, &ceq->fid, 0) ?:
	      fi_ep_bind(client, &ccq->fid, FI_SEND | FI_RECV) ?:
	      fi_enable(client) ?:
	      fi_connect(client, NULL, NULL, 0);
	fi_freeinfo(dst);
	if (ret)
		return ret;
	n = fi_eq_sread(peq, &event, &ev, sizeof(ev), WAIT_MS, 0);
	if (n < 0)
		return n;
	if (event != FI_CONNREQ || !ev.entry.info)
		return -EPROTO;
	held = ev.entry.info;
	return 0;
}

static int __init held_request_init(void)
{
	int ret = hold_a_request();

	if (ret) {
		pr_err("kofi_held_request: no request held: %d\n", ret);
		close_all();
		return ret;
	}
	pr_info("kofi_held_request: holding a request\n");
	return 0;
}

static void __exit held_request_exit(void)
{
	struct fi_eq_err_entry err = {};
	struct fid_ep *ep = NULL;
	int listener = 0, ret;
	u32 event;
	u8 buf[sizeof(struct fi_eq_cm_entry)];

	/* Whatever the passive endpoint heard of its device's removal. */
	while (fi_eq_read(peq, &event, buf, sizeof(buf), 0) == -FI_EAVAIL) {
		if (fi_eq_readerr(peq, &err, 0) < 0)
			break;
		listener = -err.err;
	}
	ret = fi_endpoint(domain, held, &ep, NULL);
	if (!ret)
		fi_close(&ep->fid);
	fi_freeinfo(held);
	close_all();
	pr_info("kofi_held_request: endpoint %d, listener %d\n", ret, listener);
}

module_init(held_request_init);
module_exit(held_request_exit);
MODULE_IMPORT_NS(KOFI_NS);
MODULE_DESCRIPTION("kofi test: a connection request held unanswered while its device goes");
MODULE_LICENSE("GPL");
