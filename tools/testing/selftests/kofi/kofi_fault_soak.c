// SPDX-License-Identifier: GPL-2.0
/*
 * The fault soak: a consumer's whole flow over one provider, repeated while
 * test_faults.sh makes allocations fail inside the kofi modules. Each round
 * listens, connects with private data, accepts, sends a message each way,
 * writes and reads a region by RMA, shuts down and closes; then opens two
 * RDM endpoints, puts them in an AV and sends between them. Nothing is
 * asserted about which call fails: every call must answer 0 or an error,
 * every wait is bounded, and every object must close (fi_close 0) so that
 * nothing leaks (kmemleak) or is touched after its time (KASAN). With
 * must_pass=1 every round must succeed and its data arrive intact: the
 * run after the faults, showing the provider was left healthy.
 *
 * Reports KTAP on load: one result per module load, named by label.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include <kofi/fabric.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_eq.h>
#include <kofi/fi_rma.h>

static char *prov = "sock";
module_param(prov, charp, 0444);
MODULE_PARM_DESC(prov, "provider under test");
static char *node = "127.0.0.1";
module_param(node, charp, 0444);
MODULE_PARM_DESC(node, "local address the endpoints use");
static int port_base = 7600;
module_param(port_base, int, 0444);
MODULE_PARM_DESC(port_base, "the first round's port; each round takes the next");
static int rounds = 10;
module_param(rounds, int, 0444);
MODULE_PARM_DESC(rounds, "rounds of the whole flow");
static bool must_pass;
module_param(must_pass, bool, 0444);
MODULE_PARM_DESC(must_pass, "every round must succeed (faults off)");
static char *label = "sock_ipv4";
module_param(label, charp, 0444);
MODULE_PARM_DESC(label, "the result's name");

#define V FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)
#define WAIT_MS 3000
#define MSG_LEN 4096
#define RMA_LEN 65536

/* Calls whose close refused (a leak in the making); fails the run. */
static int close_failures;

static void soak_close(struct fid *fid)
{
	if (fid && fi_close(fid)) {
		close_failures++;
		pr_err("kofi_fault_soak: fi_close(class %zu) refused\n", fid->fclass);
	}
}

static struct fi_info *soak_info(enum fi_ep_type type, const char *service, u64 flags)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;

	if (!hints)
		return NULL;
	hints->ep_attr->type = type;
	hints->fabric_attr->prov_name = kstrdup(prov, GFP_KERNEL);
	if (type == FI_EP_RDM)
		hints->caps = FI_MSG | FI_SOURCE;
	if (hints->fabric_attr->prov_name)
		fi_getinfo(V, node, service, flags, hints, &info);
	fi_freeinfo(hints);
	return info;
}

/* Waits for @want on @eq; 0, or an error (an error entry is read). A
 * connection request's info is returned in @req for the caller to free. */
static int cm_wait(struct fid_eq *eq, u32 want, struct fi_info **req)
{
	struct {
		struct fi_eq_cm_entry entry;
		u8 data[KOFI_CM_DATA_MAX];
	} ev;
	struct fi_eq_err_entry err;
	u32 event;
	ssize_t n = fi_eq_sread(eq, &event, &ev, sizeof(ev), WAIT_MS, 0);

	if (n == -FI_EAVAIL) {
		fi_eq_readerr(eq, &err, 0);
		return -err.err ?: -EIO;
	}
	if (n < 0)
		return n;
	if (event == FI_CONNREQ) {
		if (req)
			*req = ev.entry.info;
		else
			fi_freeinfo(ev.entry.info);
	}
	return event == want ? 0 : -EPROTO;
}

static int cq_wait(struct fid_cq *cq)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	ssize_t n = fi_cq_sread(cq, &e, 1, NULL, WAIT_MS);

	if (n == -FI_EAVAIL) {
		fi_cq_readerr(cq, &err, 0);
		return -err.err ?: -EIO;
	}
	return n == 1 ? 0 : (n < 0 ? n : -EIO);
}

struct end {
	struct fid_ep *ep;
	struct fid_eq *eq;
	struct fid_cq *cq;
};

static int end_open(struct fid_fabric *fabric, struct fid_domain *domain, struct fi_info *info,
		    struct end *e)
{
	struct fi_eq_attr eq_attr = { .size = 16 };
	struct fi_cq_attr cq_attr = { .size = 64, .format = FI_CQ_FORMAT_DATA };
	int ret;

	ret = fi_eq_open(fabric, &eq_attr, &e->eq, NULL);
	if (!ret)
		ret = fi_cq_open(domain, &cq_attr, &e->cq, NULL);
	if (!ret)
		ret = fi_endpoint(domain, info, &e->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(e->ep, &e->cq->fid, FI_SEND | FI_RECV);
	if (!ret)
		ret = fi_enable(e->ep);
	return ret;
}

static void end_close(struct end *e)
{
	soak_close(e->ep ? &e->ep->fid : NULL);
	soak_close(e->cq ? &e->cq->fid : NULL);
	soak_close(e->eq ? &e->eq->fid : NULL);
}

static void fill(u8 *buf, size_t len, u8 seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (u8)(seed + i * 7);
}

/* Connection, messages, RMA, shutdown, over MSG endpoints. */
static int msg_round(int round)
{
	struct fi_info *src = NULL, *dst = NULL, *req = NULL;
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fid_eq *peq = NULL;
	struct fid_pep *pep = NULL;
	struct fid_mr *mr = NULL;
	struct end c = {}, s = {};
	struct fi_eq_attr eq_attr = { .size = 16 };
	u8 *out = kmalloc(MSG_LEN, GFP_KERNEL), *in = kzalloc(MSG_LEN, GFP_KERNEL);
	u8 *region = vzalloc(RMA_LEN), *local = vmalloc(RMA_LEN);
	char port[8];
	int ret = -ENOMEM;

	snprintf(port, sizeof(port), "%d", port_base + round);
	if (!out || !in || !region || !local)
		goto out;
	src = soak_info(FI_EP_MSG, port, FI_SOURCE);
	dst = soak_info(FI_EP_MSG, port, 0);
	if (!src || !dst)
		goto out;
	ret = fi_fabric(src->fabric_attr, &fabric, NULL);
	if (!ret)
		ret = fi_domain(fabric, src, &domain, NULL);
	if (!ret)
		ret = fi_eq_open(fabric, &eq_attr, &peq, NULL);
	if (!ret)
		ret = fi_passive_ep(fabric, src, &pep, NULL);
	if (!ret)
		ret = fi_pep_bind(pep, &peq->fid, 0);
	if (!ret)
		ret = fi_listen(pep);
	if (!ret)
		ret = end_open(fabric, domain, dst, &c);
	if (!ret)
		ret = fi_recv(c.ep, in, MSG_LEN, NULL, 0, in);
	if (!ret)
		ret = fi_connect(c.ep, NULL, "soak", 5);
	if (!ret)
		ret = cm_wait(peq, FI_CONNREQ, &req);
	if (!ret)
		ret = end_open(fabric, domain, req, &s);
	if (!ret)
		ret = fi_accept(s.ep, NULL, 0);
	if (!ret)
		ret = cm_wait(s.eq, FI_CONNECTED, NULL);
	if (!ret)
		ret = cm_wait(c.eq, FI_CONNECTED, NULL);
	if (ret)
		goto out;

	/* A message each way, data checked. */
	fill(out, MSG_LEN, round);
	ret = fi_send(s.ep, out, MSG_LEN, NULL, 0, out);
	if (!ret)
		ret = cq_wait(c.cq);
	if (!ret)
		ret = cq_wait(s.cq);
	if (!ret && memcmp(in, out, MSG_LEN))
		ret = -EILSEQ;
	if (!ret)
		ret = fi_recv(s.ep, in, MSG_LEN, NULL, 0, in);
	if (!ret)
		ret = fi_send(c.ep, out, MSG_LEN, NULL, 0, out);
	if (!ret)
		ret = cq_wait(s.cq);
	if (!ret)
		ret = cq_wait(c.cq);
	if (ret)
		goto out;

	/* RMA: write a region, read it back. */
	ret = fi_mr_reg(domain, region, RMA_LEN, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr,
			NULL);
	fill(local, RMA_LEN, round + 1);
	if (!ret)
		ret = fi_write(c.ep, local, RMA_LEN, NULL, 0, 0, fi_mr_key(mr), local);
	if (!ret)
		ret = cq_wait(c.cq);
	if (!ret && memcmp(region, local, RMA_LEN))
		ret = -EILSEQ;
	if (!ret) {
		memset(local, 0, RMA_LEN);
		ret = fi_read(c.ep, local, RMA_LEN, NULL, 0, 0, fi_mr_key(mr), local);
	}
	if (!ret)
		ret = cq_wait(c.cq);
	if (!ret && memcmp(region, local, RMA_LEN))
		ret = -EILSEQ;
	if (!ret)
		ret = fi_shutdown(c.ep, 0);
out:
	/* Endpoints first: nothing touches the buffers after. */
	end_close(&c);
	end_close(&s);
	soak_close(mr ? &mr->fid : NULL);
	soak_close(pep ? &pep->fid : NULL);
	soak_close(peq ? &peq->fid : NULL);
	soak_close(domain ? &domain->fid : NULL);
	soak_close(fabric ? &fabric->fid : NULL);
	fi_freeinfo(req);
	fi_freeinfo(src);
	fi_freeinfo(dst);
	kfree(out);
	kfree(in);
	vfree(region);
	vfree(local);
	return ret;
}

/* An RDM message large enough to go by rendezvous (rdm.rst). */
#define RDM_LARGE (600 * 1024)

/* Two RDM endpoints in one AV, a message between them: on odd rounds one
 * that goes by rendezvous. */
static int rdm_round(int round)
{
	struct fi_info *info = soak_info(FI_EP_RDM, "0", FI_SOURCE);
	struct fid_fabric *fabric = NULL;
	struct fid_domain *domain = NULL;
	struct fid_av *av = NULL;
	struct fi_av_attr av_attr = { .type = FI_AV_MAP };
	struct fi_cq_attr cq_attr = { .size = 64, .format = FI_CQ_FORMAT_DATA };
	struct fid_ep *ep[2] = {};
	struct fid_cq *cq[2] = {};
	fi_addr_t addr[2];
	size_t n = round % 2 ? RDM_LARGE : MSG_LEN;
	u8 *out = vmalloc(n), *in = vzalloc(n);
	u8 name[64];
	size_t len;
	int i, ret = -ENOMEM;

	if (!info || !out || !in)
		goto out;
	ret = fi_fabric(info->fabric_attr, &fabric, NULL);
	if (!ret)
		ret = fi_domain(fabric, info, &domain, NULL);
	if (!ret)
		ret = fi_av_open(domain, &av_attr, &av, NULL);
	for (i = 0; i < 2 && !ret; i++) {
		ret = fi_cq_open(domain, &cq_attr, &cq[i], NULL);
		if (!ret)
			ret = fi_endpoint(domain, info, &ep[i], NULL);
		if (!ret)
			ret = fi_ep_bind(ep[i], &cq[i]->fid, FI_SEND | FI_RECV);
		if (!ret)
			ret = fi_ep_bind(ep[i], &av->fid, 0);
		if (!ret)
			ret = fi_enable(ep[i]);
		len = sizeof(name);
		if (!ret)
			ret = fi_getname(&ep[i]->fid, name, &len);
		if (!ret)
			ret = fi_av_insert(av, name, 1, &addr[i], 0, NULL) == 1 ? 0 : -ENOMEM;
	}
	if (ret)
		goto out;
	fill(out, n, round);
	ret = fi_recv(ep[0], in, n, NULL, FI_ADDR_UNSPEC, in);
	if (!ret)
		ret = fi_send(ep[1], out, n, NULL, addr[0], out);
	if (!ret)
		ret = cq_wait(cq[0]);
	if (!ret)
		ret = cq_wait(cq[1]);
	if (!ret && memcmp(in, out, n))
		ret = -EILSEQ;
out:
	for (i = 0; i < 2; i++) {
		soak_close(ep[i] ? &ep[i]->fid : NULL);
		soak_close(cq[i] ? &cq[i]->fid : NULL);
	}
	soak_close(av ? &av->fid : NULL);
	soak_close(domain ? &domain->fid : NULL);
	soak_close(fabric ? &fabric->fid : NULL);
	fi_freeinfo(info);
	vfree(out);
	vfree(in);
	return ret;
}

static int __init soak_init(void)
{
	int r, msg_ok = 0, rdm_ok = 0, bad_data = 0;

	for (r = 0; r < rounds; r++) {
		int m = msg_round(r), d = rdm_round(r);

		msg_ok += !m;
		rdm_ok += !d;
		bad_data += (m == -EILSEQ) + (d == -EILSEQ);
		if (must_pass && (m || d))
			pr_info("kofi_fault_soak: %s round %d: msg %d, rdm %d\n", label, r, m, d);
	}
	pr_info("kofi_fault_soak: %s: %d rounds, %d MSG and %d RDM rounds whole, %d closes refused\n",
		label, rounds, msg_ok, rdm_ok, close_failures);
	/* A result in the guest script's format (it prints it on stdout). */
	if (close_failures || bad_data || (must_pass && (msg_ok < rounds || rdm_ok < rounds)))
		pr_info("kofi_fault_soak: not ok %s # msg %d/%d rdm %d/%d closes refused %d corrupt %d\n",
			label, msg_ok, rounds, rdm_ok, rounds, close_failures, bad_data);
	else
		pr_info("kofi_fault_soak: ok %s # msg %d/%d rdm %d/%d\n", label, msg_ok, rounds,
			rdm_ok, rounds);
	return 0;
}

static void __exit soak_exit(void)
{
}

module_init(soak_init);
module_exit(soak_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kofi fault soak: a consumer's flow under injected allocation failures");
MODULE_IMPORT_NS(KOFI_NS);
