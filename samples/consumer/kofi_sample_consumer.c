// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_sample_consumer: a small kofi consumer.
 *
 * At load it checks the core's ABI version, lists what fi_getinfo offers,
 * and, when prov= names a provider, opens a fabric, domain, event queue,
 * completion queue and endpoint on it, binds and enables the endpoint, and
 * with loopback=1 sends itself a message (providers that deliver an
 * endpoint's sends to its own receives, such as the test provider). It
 * keeps the objects until it is unloaded, so the provider stays pinned.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <kofi/kofi_provider.h>

static char *prov;
module_param(prov, charp, 0444);
MODULE_PARM_DESC(prov, "provider to open (e.g. test); none: only list providers");
static bool loopback;
module_param(loopback, bool, 0444);
MODULE_PARM_DESC(loopback, "send a message to the endpoint itself");

static struct {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_cq *cq;
	struct fid_ep *ep;
} s;

static const char *ep_type_name(enum fi_ep_type type)
{
	switch (type) {
	case FI_EP_MSG: return "FI_EP_MSG";
	case FI_EP_RDM: return "FI_EP_RDM";
	case FI_EP_DGRAM: return "FI_EP_DGRAM";
	default: return "FI_EP_UNSPEC";
	}
}

static void list_providers(void)
{
	struct fi_info *info = NULL, *i;
	int ret;

	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, NULL,
			 &info);
	if (ret) {
		pr_info("kofi_sample_consumer: fi_getinfo: %s (%d)\n", fi_strerror(ret), ret);
		return;
	}
	for (i = info; i; i = i->next)
		pr_info("kofi_sample_consumer: provider %s: %s, %s, caps %#llx, domain %s\n",
			i->fabric_attr->prov_name, ep_type_name(i->ep_attr->type),
			i->addr_format == FI_SOCKADDR_IN6 ? "IPv6" :
			i->addr_format == FI_SOCKADDR_IN ? "IPv4" : "other addresses",
			i->caps, i->domain_attr->name ? i->domain_attr->name : "-");
	fi_freeinfo(info);
}

static void close_all(void)
{
	if (s.ep)
		fi_close(&s.ep->fid);
	if (s.cq)
		fi_close(&s.cq->fid);
	if (s.eq)
		fi_close(&s.eq->fid);
	if (s.domain)
		fi_close(&s.domain->fid);
	if (s.fabric)
		fi_close(&s.fabric->fid);
	fi_freeinfo(s.info);
	memset(&s, 0, sizeof(s));
}

static int send_to_self(void)
{
	static const char msg[] = "hello through kofi";
	char buf[sizeof(msg)] = {};
	struct fi_cq_data_entry e[2];
	int ret, got = 0;

	ret = fi_recv(s.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, buf);
	if (!ret)
		ret = fi_send(s.ep, msg, sizeof(msg), NULL, 0, (void *)msg);
	while (!ret && got < 2) {
		ret = fi_cq_sread(s.cq, &e[got], 1, NULL, 1000);
		if (ret > 0) {
			got += ret;
			ret = 0;
		}
	}
	if (ret)
		return ret;
	pr_info("kofi_sample_consumer: sent and received \"%s\" (%zu bytes)\n", buf,
		e[0].op_context == buf ? e[0].len : e[1].len);
	return strcmp(buf, msg) ? -EIO : 0;
}

static int open_provider(void)
{
	struct fi_info *hints = fi_allocinfo();
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA };
	struct fi_eq_attr eq_attr = {};
	int ret;

	if (!hints)
		return -ENOMEM;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = kstrdup(prov, GFP_KERNEL);
	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints,
			 &s.info);
	fi_freeinfo(hints);
	if (ret)
		goto fail;
	ret = fi_fabric(s.info->fabric_attr, &s.fabric, NULL);
	if (!ret)
		ret = fi_domain(s.fabric, s.info, &s.domain, NULL);
	if (!ret)
		ret = fi_eq_open(s.fabric, &eq_attr, &s.eq, NULL);
	if (!ret)
		ret = fi_cq_open(s.domain, &cq_attr, &s.cq, NULL);
	if (!ret)
		ret = fi_endpoint(s.domain, s.info, &s.ep, NULL);
	if (!ret)
		ret = fi_ep_bind(s.ep, &s.eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(s.ep, &s.cq->fid, FI_SEND | FI_RECV);
	if (!ret)
		ret = fi_enable(s.ep);
	if (ret)
		goto fail;
	pr_info("kofi_sample_consumer: opened fabric, domain, EQ, CQ and an enabled endpoint on %s\n",
		prov);
	if (loopback) {
		ret = send_to_self();
		if (ret)
			goto fail;
	}
	return 0;
fail:
	pr_err("kofi_sample_consumer: provider %s: %s (%d)\n", prov, fi_strerror(ret), ret);
	close_all();
	return ret;
}

static int __init kofi_sample_consumer_init(void)
{
	u32 version = fi_version();

	pr_info("kofi_sample_consumer: fi_version() = %u.%u (built against %u.%u)\n",
		FI_MAJOR(version), FI_MINOR(version), FI_MAJOR_VERSION, FI_MINOR_VERSION);
	if (FI_MAJOR(version) != FI_MAJOR_VERSION) {
		pr_err("kofi_sample_consumer: core ABI major version mismatch\n");
		return -EPROTO;
	}
	list_providers();
	return prov ? open_provider() : 0;
}

static void __exit kofi_sample_consumer_exit(void)
{
	close_all();
	pr_info("kofi_sample_consumer: unloaded\n");
}

module_init(kofi_sample_consumer_init);
module_exit(kofi_sample_consumer_exit);
MODULE_IMPORT_NS(KOFI_NS);
MODULE_DESCRIPTION("kofi sample consumer: discovers providers and uses one through the core");
MODULE_LICENSE("GPL");
