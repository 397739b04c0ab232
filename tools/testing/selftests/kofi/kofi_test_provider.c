// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_test_provider: a provider fixture for the core's tests. It registers
 * provider "test" and completes operations locally: an endpoint's sends land
 * in its own posted receives, RMA reaches its own domain's regions through
 * the core's key table, fi_connect is answered at once with FI_CONNECTED
 * (echoing the private data), and kofi_test_inject_connreq() makes a passive
 * endpoint see a connection request.
 */
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uio.h>
#include <kofi/kofi_provider.h>
#include "kofi_test_provider.h"

#define TEST_MAX_RECV 16

struct test_recv {
	struct kvec iov[4];
	size_t count;
	void *context;
	u64 flags;
};

struct test_ep {
	struct fid_domain *domain;
	spinlock_t lock;
	struct test_recv recv[TEST_MAX_RECV];
	unsigned int head, len;
};

static atomic_t test_fabrics = ATOMIC_INIT(0);
static atomic_t test_connreq_released = ATOMIC_INIT(0);

int kofi_test_open_fabrics(void)
{
	return atomic_read(&test_fabrics);
}
EXPORT_SYMBOL_GPL(kofi_test_open_fabrics);

int kofi_test_connreq_released(void)
{
	return atomic_read(&test_connreq_released);
}
EXPORT_SYMBOL_GPL(kofi_test_connreq_released);

static struct fi_info *test_info(enum fi_ep_type type, u64 caps, u64 mode)
{
	struct fi_info *info = fi_allocinfo();

	if (!info)
		return NULL;
	info->caps = caps;
	info->mode = mode;
	info->addr_format = FI_SOCKADDR_IN;
	info->ep_attr->type = type;
	info->ep_attr->max_msg_size = TEST_MAX_MSG;
	info->tx_attr->iov_limit = TEST_IOV_LIMIT;
	info->tx_attr->rma_iov_limit = TEST_IOV_LIMIT;
	info->tx_attr->inject_size = TEST_INJECT_SIZE;
	info->tx_attr->size = 64;
	info->rx_attr->iov_limit = TEST_IOV_LIMIT;
	info->rx_attr->size = TEST_MAX_RECV;
	info->domain_attr->mr_mode = FI_MR_PROV_KEY;
	info->domain_attr->mr_iov_limit = TEST_IOV_LIMIT;
	info->domain_attr->cq_data_size = sizeof(u64);
	info->domain_attr->threading = FI_THREAD_SAFE;
	info->domain_attr->data_progress = FI_PROGRESS_AUTO;
	info->domain_attr->name = kstrdup("test0", GFP_KERNEL);
	info->fabric_attr->name = kstrdup("testfabric", GFP_KERNEL);
	if (!info->domain_attr->name || !info->fabric_attr->name) {
		fi_freeinfo(info);
		return NULL;
	}
	return info;
}

static int test_getinfo(u32 version, const char *node, const char *service, u64 flags,
			const struct fi_info *hints, struct fi_info **info)
{
	struct fi_info *msg, *rdm;

	msg = test_info(FI_EP_MSG, FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			FI_REMOTE_READ | FI_REMOTE_WRITE, 0);
	rdm = test_info(FI_EP_RDM, FI_MSG | FI_SEND | FI_RECV, FI_CONTEXT);
	if (!msg || !rdm) {
		fi_freeinfo(msg);
		fi_freeinfo(rdm);
		return -ENOMEM;
	}
	msg->next = rdm;
	*info = msg;
	return 0;
}

static int test_fabric(struct fi_fabric_attr *attr, struct fid_fabric *fabric, void *context)
{
	atomic_inc(&test_fabrics);
	return 0;
}

static void test_fabric_close(struct fid_fabric *fabric)
{
	atomic_dec(&test_fabrics);
}

static int test_domain_open(struct fid_fabric *fabric, const struct fi_info *info,
			    struct fid_domain *domain)
{
	return 0;
}

static int test_ep_open(struct fid_domain *domain, const struct fi_info *info, struct fid_ep *ep)
{
	struct test_ep *t = kzalloc(sizeof(*t), GFP_KERNEL);

	if (!t)
		return -ENOMEM;
	spin_lock_init(&t->lock);
	t->domain = domain;
	ep->fid.prov_data = t;
	return 0;
}

static void test_ep_close(struct fid_ep *ep)
{
	kfree(ep->fid.prov_data);
}

static int test_connect(struct fid_ep *ep, const void *addr, const void *param, size_t len)
{
	return kofi_ep_event(ep, FI_CONNECTED, param, len);
}

static int test_shutdown(struct fid_ep *ep, u64 flags)
{
	return kofi_ep_event(ep, FI_SHUTDOWN, NULL, 0);
}

static int test_getname(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	static const char name[] = "test-ep";

	if (*addrlen < sizeof(name)) {
		*addrlen = sizeof(name);
		return -FI_ETOOSMALL;
	}
	memcpy(addr, name, sizeof(name));
	*addrlen = sizeof(name);
	return 0;
}

static ssize_t test_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, u64 flags)
{
	struct test_ep *t = ep->fid.prov_data;
	struct test_recv *r;
	ssize_t ret = 0;

	if (msg->msg_bvec || msg->iov_count > ARRAY_SIZE(r->iov))
		return -FI_EOPNOTSUPP;
	spin_lock_bh(&t->lock);
	if (t->len == TEST_MAX_RECV) {
		ret = -FI_EAGAIN;
	} else {
		r = &t->recv[(t->head + t->len++) % TEST_MAX_RECV];
		memcpy(r->iov, msg->msg_iov, msg->iov_count * sizeof(struct kvec));
		r->count = msg->iov_count;
		r->context = msg->context;
		r->flags = flags;
	}
	spin_unlock_bh(&t->lock);
	return ret;
}

/* Copies @count kvecs into @buf; returns the bytes copied. */
static size_t gather(const struct kvec *iov, size_t count, u8 *buf)
{
	size_t i, n = 0;

	for (i = 0; i < count; i++) {
		memcpy(buf + n, iov[i].iov_base, iov[i].iov_len);
		n += iov[i].iov_len;
	}
	return n;
}

/* Copies up to @len bytes of @buf into @count kvecs; returns the bytes copied. */
static size_t scatter(const u8 *buf, size_t len, const struct kvec *iov, size_t count)
{
	size_t i, n = 0;

	for (i = 0; i < count && n < len; i++) {
		size_t chunk = min(len - n, iov[i].iov_len);

		memcpy(iov[i].iov_base, buf + n, chunk);
		n += chunk;
	}
	return n;
}

static size_t kvec_total(const struct kvec *iov, size_t count)
{
	size_t i, n = 0;

	for (i = 0; i < count; i++)
		n += iov[i].iov_len;
	return n;
}

/* Loopback: the message lands in the endpoint's oldest posted receive. */
static ssize_t test_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, u64 flags)
{
	struct test_ep *t = ep->fid.prov_data;
	struct test_recv r;
	size_t len, copied;
	u8 *buf;

	if (msg->msg_bvec)
		return -FI_EOPNOTSUPP;
	len = kvec_total(msg->msg_iov, msg->iov_count);
	buf = kvmalloc(max_t(size_t, len, 1), GFP_KERNEL);
	if (!buf)
		return -FI_ENOMEM;
	gather(msg->msg_iov, msg->iov_count, buf);
	spin_lock_bh(&t->lock);
	if (!t->len) {
		spin_unlock_bh(&t->lock);
		kvfree(buf);
		return -FI_EAGAIN;
	}
	r = t->recv[t->head];
	t->head = (t->head + 1) % TEST_MAX_RECV;
	t->len--;
	spin_unlock_bh(&t->lock);

	copied = scatter(buf, len, r.iov, r.count);
	kvfree(buf);
	if (copied < len) {
		struct fi_cq_err_entry err = {
			.op_context = r.context,
			.flags = FI_RECV | FI_MSG,
			.len = copied,
			.olen = len - copied,
			.err = FI_ETRUNC,
		};
		kofi_ep_complete_error(ep, &err);
	} else {
		kofi_ep_complete(ep, FI_RECV | FI_MSG | (r.flags & FI_COMPLETION) |
				 (flags & FI_REMOTE_CQ_DATA), r.context, len, NULL, msg->data);
	}
	kofi_ep_complete(ep, FI_SEND | FI_MSG | (flags & FI_COMPLETION), msg->context, 0, NULL, 0);
	return 0;
}

/* RMA against the endpoint's own domain, through the core's key table. */
static ssize_t test_rma(struct fid_ep *ep, const struct fi_msg_rma *msg, u64 flags, bool write)
{
	struct test_ep *t = ep->fid.prov_data;
	size_t total, off = 0, i;
	int ret = 0;
	u8 *buf;

	if (msg->msg_bvec)
		return -FI_EOPNOTSUPP;
	total = kvec_total(msg->msg_iov, msg->iov_count);
	buf = kvmalloc(max_t(size_t, total, 1), GFP_KERNEL);
	if (!buf)
		return -FI_ENOMEM;
	if (write)
		gather(msg->msg_iov, msg->iov_count, buf);
	for (i = 0; i < msg->rma_iov_count && !ret; i++) {
		const struct fi_rma_iov *r = &msg->rma_iov[i];
		struct fid_mr *mr;
		struct iov_iter remote;
		size_t n;

		ret = kofi_mr_get(t->domain, r->key, r->addr, r->len,
				  write ? FI_REMOTE_WRITE : FI_REMOTE_READ, &mr);
		if (ret)
			break;
		kofi_mr_iter(mr, write ? ITER_DEST : ITER_SOURCE, r->addr, r->len, &remote);
		if (write)
			n = copy_to_iter(buf + off, r->len, &remote);
		else
			n = copy_from_iter(buf + off, r->len, &remote);
		kofi_mr_put(mr);
		off += r->len;
		if (n != r->len)
			ret = -FI_EIO;
	}
	if (!ret && !write)
		scatter(buf, total, msg->msg_iov, msg->iov_count);
	kvfree(buf);
	if (ret) {
		struct fi_cq_err_entry err = {
			.op_context = msg->context,
			.flags = FI_RMA | (write ? FI_WRITE : FI_READ),
			.err = -ret,
			.prov_errno = ret,
		};
		kofi_ep_complete_error(ep, &err);
		return 0;
	}
	if (write && (flags & FI_REMOTE_CQ_DATA))
		kofi_ep_complete(ep, FI_REMOTE_WRITE | FI_RMA | FI_REMOTE_CQ_DATA, NULL, total,
				 NULL, msg->data);
	kofi_ep_complete(ep, FI_RMA | (write ? FI_WRITE : FI_READ) | (flags & FI_COMPLETION),
			 msg->context, total, NULL, 0);
	return 0;
}

static ssize_t test_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, u64 flags)
{
	return test_rma(ep, msg, flags, true);
}

static ssize_t test_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, u64 flags)
{
	return test_rma(ep, msg, flags, false);
}

static int test_pep_open(struct fid_fabric *fabric, const struct fi_info *info,
			 struct fid_pep *pep)
{
	return 0;
}

static int test_listen(struct fid_pep *pep)
{
	return 0;
}

static int test_reject(struct fid_pep *pep, struct fid *handle, const void *param, size_t len)
{
	return 0;
}

static void test_connreq_release(struct fid *handle)
{
	atomic_inc(&test_connreq_released);
}

/* Makes @pep see a connection request carrying @data. */
int kofi_test_inject_connreq(struct fid_pep *pep, const void *data, size_t len)
{
	struct fi_info *info;

	info = test_info(FI_EP_MSG, FI_MSG | FI_SEND | FI_RECV, 0);
	if (!info)
		return -ENOMEM;
	info->handle = kofi_connreq_alloc(pep, NULL);
	if (!info->handle) {
		fi_freeinfo(info);
		return -ENOMEM;
	}
	return kofi_pep_connreq(pep, info, data, len);
}
EXPORT_SYMBOL_GPL(kofi_test_inject_connreq);

static const struct kofi_domain_ops test_domain_ops = {
	.open = test_domain_open,
};

static const struct kofi_ep_ops test_ep_ops = {
	.open = test_ep_open,
	.close = test_ep_close,
	.connect = test_connect,
	.shutdown = test_shutdown,
	.getname = test_getname,
	.sendmsg = test_sendmsg,
	.recvmsg = test_recvmsg,
	.readmsg = test_readmsg,
	.writemsg = test_writemsg,
};

static const struct kofi_pep_ops test_pep_ops = {
	.open = test_pep_open,
	.listen = test_listen,
	.reject = test_reject,
	.connreq_release = test_connreq_release,
};

static struct kofi_provider test_provider = {
	.name = "test",
	.version = FI_VERSION(1, 0),
	.owner = THIS_MODULE,
	.priority = 0,
	.getinfo = test_getinfo,
	.fabric = test_fabric,
	.fabric_close = test_fabric_close,
	.domain_ops = &test_domain_ops,
	.ep_ops = &test_ep_ops,
	.pep_ops = &test_pep_ops,
};

static int __init test_provider_init(void)
{
	return kofi_provider_register(KOFI_ABI_VERSION, &test_provider);
}

static void __exit test_provider_exit(void)
{
	kofi_provider_deregister(&test_provider);
}

module_init(test_provider_init);
module_exit(test_provider_exit);
MODULE_IMPORT_NS(KOFI_NS);
MODULE_ALIAS("kofi-test");
MODULE_DESCRIPTION("kofi test provider: completes operations locally, for the core's tests");
MODULE_LICENSE("GPL");
