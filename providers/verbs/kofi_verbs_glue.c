// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_verbs: the C side. See kofi_verbs_glue.h.
 */
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/vmalloc.h>
#include <net/net_namespace.h>
#include <rdma/ib_cm.h>
#include "kofi_verbs_glue.h"

static int kverbs_add_one(struct ib_device *dev)
{
	kofi_verbs_device_add(dev);
	return 0;
}

static void kverbs_remove_one(struct ib_device *dev, void *client_data)
{
	kofi_verbs_device_remove(dev);
}

static struct ib_client kverbs_client = {
	.name = "kofi_verbs",
	.add = kverbs_add_one,
	.remove = kverbs_remove_one,
};

int kverbs_client_register(void)
{
	return ib_register_client(&kverbs_client);
}

void kverbs_client_unregister(void)
{
	ib_unregister_client(&kverbs_client);
}

const char *kverbs_dev_name(struct ib_device *dev)
{
	return dev_name(&dev->dev);
}

void kverbs_dev_limits(struct ib_device *dev, struct kverbs_limits *out)
{
	struct ib_port_attr pattr = {};

	out->max_sge = min(dev->attrs.max_send_sge, dev->attrs.max_recv_sge);
	out->max_sge_rd = dev->attrs.max_sge_rd;
	out->max_qp_wr = dev->attrs.max_qp_wr;
	out->max_cqe = dev->attrs.max_cqe;
	out->max_mr_pages = dev->attrs.max_fast_reg_page_list_len;
	out->max_qp = dev->attrs.max_qp;
	out->max_cq = dev->attrs.max_cq;
	out->max_mr = dev->attrs.max_mr;
	out->active = false;
	out->iwarp = rdma_protocol_iwarp(dev, rdma_start_port(dev));
	out->max_msg = 0;
	if (!ib_query_port(dev, rdma_start_port(dev), &pattr)) {
		out->active = pattr.state == IB_PORT_ACTIVE;
		out->max_msg = pattr.max_msg_sz;
	}
}

struct ib_pd *kverbs_alloc_pd(struct ib_device *dev)
{
	struct ib_pd *pd = ib_alloc_pd(dev, 0);

	return IS_ERR(pd) ? NULL : pd;
}

void kverbs_dealloc_pd(struct ib_pd *pd)
{
	ib_dealloc_pd(pd);
}

u32 kverbs_pd_lkey(struct ib_pd *pd)
{
	return pd->local_dma_lkey;
}

struct ib_cq *kverbs_create_cq(struct ib_device *dev, int nr_cqe,
			       void (*event)(struct ib_cq *cq, void *context), void *context)
{
	struct ib_cq_init_attr attr = { .cqe = nr_cqe };
	struct ib_cq *cq = ib_create_cq(dev, event, NULL, context, &attr);

	if (IS_ERR(cq))
		return NULL;
	if (ib_req_notify_cq(cq, IB_CQ_NEXT_COMP)) {
		ib_destroy_cq(cq);
		return NULL;
	}
	return cq;
}

int kverbs_poll_cq(struct ib_cq *cq)
{
	struct ib_wc wcs[8];
	int n, i, total = 0;

	do {
		n = ib_poll_cq(cq, ARRAY_SIZE(wcs), wcs);
		for (i = 0; i < n; i++)
			if (wcs[i].wr_cqe)
				wcs[i].wr_cqe->done(cq, &wcs[i]);
		total += max(n, 0);
	} while (n == ARRAY_SIZE(wcs));
	return total;
}

bool kverbs_arm_cq(struct ib_cq *cq)
{
	return ib_req_notify_cq(cq, IB_CQ_NEXT_COMP | IB_CQ_REPORT_MISSED_EVENTS) > 0;
}

void kverbs_destroy_cq(struct ib_cq *cq)
{
	ib_destroy_cq(cq);
}

bool kverbs_can_wake(void)
{
	return !in_hardirq() && !irqs_disabled();
}

struct rdma_cm_id *kverbs_create_id(rdma_cm_event_handler handler, void *context)
{
	struct rdma_cm_id *id = rdma_create_id(&init_net, handler, context, RDMA_PS_TCP, IB_QPT_RC);

	return IS_ERR(id) ? NULL : id;
}

struct ib_device *kverbs_id_device(struct rdma_cm_id *id)
{
	return id->device;
}

struct ib_qp *kverbs_id_qp(struct rdma_cm_id *id)
{
	return id->qp;
}

void *kverbs_id_context(struct rdma_cm_id *id)
{
	return id->context;
}

int kverbs_qp_fail(struct ib_qp *qp)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };

	return ib_modify_qp(qp, &attr, IB_QP_STATE);
}

void kverbs_id_set_handler(struct rdma_cm_id *id, rdma_cm_event_handler handler, void *context)
{
	id->event_handler = handler;
	id->context = context;
}

int kverbs_id_addr(struct rdma_cm_id *id, bool peer, struct sockaddr_storage *out)
{
	struct sockaddr *sa = peer ? (struct sockaddr *)&id->route.addr.dst_addr :
				     (struct sockaddr *)&id->route.addr.src_addr;
	int len = sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					      sizeof(struct sockaddr_in);

	memcpy(out, sa, len);
	return len;
}

int kverbs_create_qp(struct rdma_cm_id *id, struct ib_pd *pd, struct ib_cq *cq, u32 sq_depth,
		     u32 rq_depth, u32 max_sge, u32 *max_inline)
{
	int ret;
	struct ib_qp_init_attr attr = {
		.send_cq = cq,
		.recv_cq = cq,
		.sq_sig_type = IB_SIGNAL_REQ_WR,
		.qp_type = IB_QPT_RC,
		.cap = {
			.max_send_wr = sq_depth,
			.max_recv_wr = rq_depth,
			.max_send_sge = max_sge,
			/* A receive buffer: header, then payload in two pieces. */
			.max_recv_sge = 3,
			.max_inline_data = *max_inline,
		},
	};

	ret = rdma_create_qp(id, pd, &attr);
	if (ret == -EINVAL && attr.cap.max_inline_data) {
		/* A device without inline sends. */
		attr.cap.max_inline_data = 0;
		ret = rdma_create_qp(id, pd, &attr);
	}
	*max_inline = ret ? 0 : attr.cap.max_inline_data;
	return ret;
}

/*
 * RDMA READs in flight per connection: this side's own (initiator depth,
 * the ORD) and the peer's it serves (responder resources, the IRD). Both
 * sides of a kofi connection issue READs (RMA and rendezvous), so each asks
 * for what its device allows, as nvme-rdma does; one READ at a time makes
 * a READ-heavy consumer, such as a block target, wait a round trip per
 * READ.
 */
static void kverbs_conn_param(struct rdma_conn_param *p, const void *data, u8 len,
			      u32 initiator_depth, u32 responder_resources)
{
	memset(p, 0, sizeof(*p));
	p->private_data = data;
	p->private_data_len = len;
	p->initiator_depth = min_t(u32, initiator_depth, U8_MAX);
	p->responder_resources = min_t(u32, responder_resources, U8_MAX);
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

int kverbs_connect(struct rdma_cm_id *id, const void *data, u8 len)
{
	const struct ib_device_attr *attrs = &id->device->attrs;
	struct rdma_conn_param p;

	kverbs_conn_param(&p, data, len, attrs->max_qp_init_rd_atom, attrs->max_qp_rd_atom);
	/* Called from the ROUTE_RESOLVED callback, which holds the handler lock. */
	return rdma_connect_locked(id, &p);
}

int kverbs_accept(struct rdma_cm_id *id, const void *data, u8 len,
		  const struct kverbs_read_depths *peer)
{
	const struct ib_device_attr *attrs = &id->device->attrs;
	struct rdma_conn_param p;
	int ret;

	/* No more than the peer serves or asks for, nor than this device can. */
	kverbs_conn_param(&p, data, len,
			  min_t(u32, peer->initiator_depth, attrs->max_qp_init_rd_atom),
			  min_t(u32, peer->responder_resources, attrs->max_qp_rd_atom));
	/* Outside the CONNECT_REQUEST handler, rdma_accept needs its lock. */
	rdma_lock_handler(id);
	ret = rdma_accept(id, &p);
	rdma_unlock_handler(id);
	return ret;
}

int kverbs_reject(struct rdma_cm_id *id, const void *data, u8 len)
{
	return rdma_reject(id, data, len, IB_CM_REJ_CONSUMER_DEFINED);
}

void kverbs_event_read_depths(const struct rdma_cm_event *ev, struct kverbs_read_depths *out)
{
	/* rdma_cm gives them from the receiver's side: what it may use. */
	out->initiator_depth = ev->param.conn.initiator_depth;
	out->responder_resources = ev->param.conn.responder_resources;
}

u32 kverbs_event_private(const struct rdma_cm_event *ev, const void **data)
{
	*data = ev->param.conn.private_data;
	return ev->param.conn.private_data ? ev->param.conn.private_data_len : 0;
}

int kverbs_post_send(struct ib_qp *qp, struct ib_cqe *cqe, u32 opcode, const struct ib_sge *sge,
		     u32 nsge, u64 remote_addr, u32 rkey, bool inline_data)
{
	struct ib_rdma_wr wr = {
		.wr = {
			.wr_cqe = cqe,
			.sg_list = (struct ib_sge *)sge,
			.num_sge = nsge,
			.opcode = opcode,
			.send_flags = IB_SEND_SIGNALED | (inline_data ? IB_SEND_INLINE : 0),
		},
		.remote_addr = remote_addr,
		.rkey = rkey,
	};

	return ib_post_send(qp, &wr.wr, NULL);
}

int kverbs_post_recv(struct ib_qp *qp, struct ib_cqe *cqe, const struct ib_sge *sge, u32 nsge)
{
	struct ib_recv_wr wr = {
		.wr_cqe = cqe,
		.sg_list = (struct ib_sge *)sge,
		.num_sge = nsge,
	};

	return ib_post_recv(qp, &wr, NULL);
}

static enum dma_data_direction kverbs_dir(bool to_device)
{
	return to_device ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
}

/*
 * Maps the first piece of the @len bytes at @base that the device takes at
 * once: all of them for a device reaching memory by its kernel address
 * (vmalloc'd or not) and for linear memory; vmalloc memory up to the end of
 * its page. The piece's length, or -ENOMEM.
 */
static long kverbs_map_piece(struct ib_device *dev, void *base, size_t len,
			     enum dma_data_direction dir, u64 *dma)
{
	size_t off = offset_in_page(base), piece = len;

	if (ib_uses_virt_dma(dev) || !is_vmalloc_addr(base)) {
		*dma = ib_dma_map_single(dev, base, len, dir);
	} else {
		piece = min_t(size_t, len, PAGE_SIZE - off);
		*dma = ib_dma_map_page(dev, vmalloc_to_page(base), off, piece, dir);
	}
	return ib_dma_mapping_error(dev, *dma) ? -ENOMEM : piece;
}

/* How many pieces kverbs_map_piece() maps the @len bytes at @base in. */
static size_t kverbs_pieces(struct ib_device *dev, const void *base, size_t len)
{
	if (ib_uses_virt_dma(dev) || !is_vmalloc_addr(base))
		return 1;
	return DIV_ROUND_UP(offset_in_page(base) + len, PAGE_SIZE);
}

int kverbs_map_kvec(struct ib_device *dev, void *base, size_t len, bool to_device, u32 lkey,
		    struct ib_sge *sge, u32 max)
{
	enum dma_data_direction dir = kverbs_dir(to_device);
	u32 n = 0;

	if (len > U32_MAX)
		return -EINVAL;
	while (len) {
		long piece;
		u64 addr;

		if (n == max) {
			kverbs_unmap(dev, sge, n, to_device);
			return -E2BIG;
		}
		piece = kverbs_map_piece(dev, base, len, dir, &addr);
		if (piece < 0) {
			kverbs_unmap(dev, sge, n, to_device);
			return piece;
		}
		sge[n++] = (struct ib_sge){ .addr = addr, .length = piece, .lkey = lkey };
		base += piece;
		len -= piece;
	}
	return n;
}

int kverbs_map_page(struct ib_device *dev, struct page *page, u32 offset, u32 len,
		    bool to_device, u32 lkey, struct ib_sge *sge)
{
	u64 addr = ib_dma_map_page(dev, page, offset, len, kverbs_dir(to_device));

	if (ib_dma_mapping_error(dev, addr))
		return -ENOMEM;
	*sge = (struct ib_sge){ .addr = addr, .length = len, .lkey = lkey };
	return 1;
}

void kverbs_unmap(struct ib_device *dev, const struct ib_sge *sge, u32 n, bool to_device)
{
	u32 i;

	for (i = 0; i < n; i++)
		ib_dma_unmap_page(dev, sge[i].addr, sge[i].length, kverbs_dir(to_device));
}

void kverbs_sync_for_cpu(struct ib_device *dev, u64 addr, size_t len, bool to_device)
{
	ib_dma_sync_single_for_cpu(dev, addr, len, kverbs_dir(to_device));
}

void kverbs_sync_for_device(struct ib_device *dev, u64 addr, size_t len, bool to_device)
{
	ib_dma_sync_single_for_device(dev, addr, len, kverbs_dir(to_device));
}

struct kverbs_region {
	struct ib_device *dev;
	struct sg_table sgt;
	int nents;
	int access;
	u32 delta;
	u32 count;				/* MRs of the memory, pieces */
	struct ib_mr *mrs[KVERBS_PIECES_MAX];
	/* With more than one piece: the key table, mapped, and its MR. */
	struct kverbs_key_table *table;
	struct scatterlist table_sg;
	bool table_mapped;
	struct ib_mr *table_mr;
	u16 nonce;
};

static struct page *kverbs_page_of(const void *addr)
{
	return is_vmalloc_addr(addr) ? vmalloc_to_page(addr) : virt_to_page(addr);
}

/* The region's memory as one scatterlist entry per page it touches. */
static int kverbs_region_sg(struct kverbs_region *r, const struct kvec *kv,
			    const struct bio_vec *bv, u32 count)
{
	struct scatterlist *sg;
	u32 i, pages = 0;
	int ret;

	for (i = 0; i < count; i++) {
		size_t off = kv ? offset_in_page(kv[i].iov_base) : offset_in_page(bv[i].bv_offset);
		size_t len = kv ? kv[i].iov_len : bv[i].bv_len;

		if (!len)
			return -EINVAL;
		pages += DIV_ROUND_UP(off + len, PAGE_SIZE);
	}
	ret = sg_alloc_table(&r->sgt, pages, GFP_KERNEL);
	if (ret)
		return ret;
	sg = r->sgt.sgl;
	for (i = 0; i < count; i++) {
		const u8 *base = kv ? kv[i].iov_base : NULL;
		struct page *page = kv ? NULL : bv[i].bv_page + bv[i].bv_offset / PAGE_SIZE;
		size_t off = kv ? offset_in_page(base) : offset_in_page(bv[i].bv_offset);
		size_t len = kv ? kv[i].iov_len : bv[i].bv_len;

		while (len) {
			size_t chunk = min_t(size_t, len, PAGE_SIZE - off);

			sg_set_page(sg, kv ? kverbs_page_of(base) : page, chunk, off);
			sg = sg_next(sg);
			if (kv)
				base += chunk;
			else
				page++;
			len -= chunk;
			off = 0;
		}
	}
	return 0;
}

static void kverbs_region_release(struct kverbs_region *r)
{
	u32 i;

	if (r->table_mr)
		ib_dereg_mr(r->table_mr);
	if (r->table_mapped)
		ib_dma_unmap_sg(r->dev, &r->table_sg, 1, DMA_TO_DEVICE);
	kfree(r->table);
	for (i = 0; i < r->count; i++)
		ib_dereg_mr(r->mrs[i]);
	if (r->nents)
		ib_dma_unmap_sg(r->dev, r->sgt.sgl, r->sgt.orig_nents, DMA_BIDIRECTIONAL);
	sg_free_table(&r->sgt);
	kfree(r);
}

/*
 * The MR of the @n mapped entries from @sg on, the region's bytes from
 * @start on; its iova is what peers name those bytes by, plus the delta.
 */
static struct ib_mr *kverbs_piece_mr(struct kverbs_region *r, struct ib_pd *pd,
				     struct scatterlist *sg, int n, u64 iova, int *err)
{
	struct ib_mr *mr = ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, n);
	int mapped;

	if (IS_ERR(mr)) {
		*err = PTR_ERR(mr);
		return NULL;
	}
	mapped = ib_map_mr_sg(mr, sg, n, NULL, PAGE_SIZE);
	/* Inner pieces that do not meet at page boundaries cannot map. */
	if (mapped != n) {
		*err = mapped < 0 ? mapped : -EINVAL;
		ib_dereg_mr(mr);
		return NULL;
	}
	mr->iova = iova;
	ib_update_fast_reg_key(mr, get_random_u8());
	return mr;
}

/* The key table of a region in pieces (starts[i]: piece i's first address). */
static int kverbs_region_table(struct kverbs_region *r, struct ib_pd *pd, const u64 *starts,
			       u64 end)
{
	int err = -ENOMEM;
	u32 i;

	BUILD_BUG_ON(sizeof(struct kverbs_key_table) != 24 + 16 * KVERBS_PIECES_MAX);
	BUILD_BUG_ON(PAGE_SIZE > 1 << (KVERBS_KEY_NONCE_SHIFT - 32));
	/* A page of its own: the table MR maps whole pages. */
	r->table = kzalloc(PAGE_SIZE, GFP_KERNEL);
	if (!r->table)
		return err;
	r->table->magic = cpu_to_le32(KVERBS_TABLE_MAGIC);
	r->table->count = cpu_to_le32(r->count);
	r->nonce = get_random_u16() & KVERBS_KEY_NONCE_MASK;
	r->table->nonce = cpu_to_le64(r->nonce);
	r->table->end = cpu_to_le64(end);
	for (i = 0; i < r->count; i++) {
		r->table->piece[i].start = cpu_to_le64(starts[i]);
		r->table->piece[i].rkey = cpu_to_le32(r->mrs[i]->rkey);
	}
	sg_init_one(&r->table_sg, r->table, PAGE_SIZE);
	if (!ib_dma_map_sg(r->dev, &r->table_sg, 1, DMA_TO_DEVICE))
		return err;
	r->table_mapped = true;
	r->table_mr = kverbs_piece_mr(r, pd, &r->table_sg, 1, 0, &err);
	return r->table_mr ? 0 : err;
}

static struct kverbs_region *kverbs_region_mrs(struct kverbs_region *r, struct ib_pd *pd,
					       int nents, u64 offset, bool remote_read,
					       bool remote_write, int *err);

struct kverbs_region *kverbs_region_alloc(struct ib_pd *pd, const struct kvec *kv,
					  const struct bio_vec *bv, u32 count, u64 offset,
					  bool remote_read, bool remote_write, int *err)
{
	struct kverbs_region *r = kzalloc(sizeof(*r), GFP_KERNEL);

	*err = -ENOMEM;
	if (!r)
		return NULL;
	r->dev = pd->device;
	*err = kverbs_region_sg(r, kv, bv, count);
	if (*err) {
		kfree(r);
		return NULL;
	}
	r->nents = ib_dma_map_sg(r->dev, r->sgt.sgl, r->sgt.orig_nents, DMA_BIDIRECTIONAL);
	*err = -ENOMEM;
	if (!r->nents) {
		kverbs_region_release(r);
		return NULL;
	}
	return kverbs_region_mrs(r, pd, r->nents, offset, remote_read, remote_write, err);
}

struct kverbs_region *kverbs_region_of_sges(struct ib_pd *pd, const struct ib_sge *sge, u32 n,
					    bool remote_read, bool remote_write, int *err)
{
	struct kverbs_region *r = kzalloc(sizeof(*r), GFP_KERNEL);
	struct scatterlist *sg;
	u32 i, pages = 0;

	*err = -ENOMEM;
	if (!r)
		return NULL;
	r->dev = pd->device;
	for (i = 0; i < n; i++) {
		/*
		 * A software device takes an MR's pages from its addresses
		 * (rxe: virt_to_page): those of linear memory only.
		 */
		if (ib_uses_virt_dma(r->dev) &&
		    !virt_addr_valid((void *)(uintptr_t)sge[i].addr)) {
			*err = -EINVAL;
			kfree(r);
			return NULL;
		}
		pages += DIV_ROUND_UP(offset_in_page(sge[i].addr) + sge[i].length, PAGE_SIZE);
	}
	if (!pages || sg_alloc_table(&r->sgt, pages, GFP_KERNEL)) {
		*err = pages ? -ENOMEM : -EINVAL;
		kfree(r);
		return NULL;
	}
	/*
	 * One entry per page the SGEs touch, as kverbs_region_sg makes them,
	 * with their DMA addresses set: mapped already (r->nents stays 0, so
	 * the release unmaps nothing).
	 */
	sg = r->sgt.sgl;
	for (i = 0; i < n; i++) {
		u64 addr = sge[i].addr;
		u32 len = sge[i].length;

		while (len) {
			u32 chunk = min_t(u32, len, PAGE_SIZE - offset_in_page(addr));

			sg_dma_address(sg) = addr;
			sg_dma_len(sg) = chunk;
			sg = sg_next(sg);
			addr += chunk;
			len -= chunk;
		}
	}
	return kverbs_region_mrs(r, pd, pages, 0, remote_read, remote_write, err);
}

/* The MRs of a region whose @nents scatterlist entries are DMA-mapped. */
static struct kverbs_region *kverbs_region_mrs(struct kverbs_region *r, struct ib_pd *pd,
					       int nents, u64 offset, bool remote_read,
					       bool remote_write, int *err)
{
	u64 starts[KVERBS_PIECES_MAX], at = 0;
	struct scatterlist *sg, *first;
	int max_pages, i, n;
	u32 p0;

	max_pages = max_t(int, r->dev->attrs.max_fast_reg_page_list_len, 1);
	*err = -EINVAL;
	if (DIV_ROUND_UP(nents, max_pages) > KVERBS_PIECES_MAX)
		goto fail;
	/* Peers name byte k of the region offset + k; the iova adds delta. */
	p0 = sg_dma_address(r->sgt.sgl) & (PAGE_SIZE - 1);
	r->delta = (p0 - offset) & (PAGE_SIZE - 1);
	first = r->sgt.sgl;
	n = 0;
	for_each_sg(r->sgt.sgl, sg, nents, i) {
		if (!n) {
			first = sg;
			starts[r->count] = offset + at;
		}
		at += sg_dma_len(sg);
		if (++n < max_pages && i + 1 < nents)
			continue;
		r->mrs[r->count] = kverbs_piece_mr(r, pd, first, n,
						   starts[r->count] + r->delta, err);
		if (!r->mrs[r->count])
			goto fail;
		r->count++;
		n = 0;
	}
	if (r->count > 1) {
		*err = kverbs_region_table(r, pd, starts, offset + at);
		if (*err)
			goto fail;
	}
	r->access = IB_ACCESS_LOCAL_WRITE | (remote_read ? IB_ACCESS_REMOTE_READ : 0) |
		    (remote_write ? IB_ACCESS_REMOTE_WRITE : 0);
	*err = 0;
	return r;

fail:
	kverbs_region_release(r);
	return NULL;
}

u64 kverbs_region_key(const struct kverbs_region *r)
{
	if (r->table_mr)
		return KVERBS_KEY_TABLE | (u64)r->nonce << KVERBS_KEY_NONCE_SHIFT |
		       (u64)r->delta << 32 | r->table_mr->rkey;
	return (u64)r->delta << 32 | r->mrs[0]->rkey;
}

int kverbs_region_sge(const struct kverbs_region *r, u64 offset, u32 len, struct ib_sge *sge)
{
	struct ib_mr *mr = r->mrs[0];

	if (r->count != 1 || offset > mr->length || len > mr->length - offset)
		return -EINVAL;
	*sge = (struct ib_sge){ .addr = mr->iova + offset, .length = len, .lkey = mr->lkey };
	return 0;
}

u32 kverbs_region_wrs(const struct kverbs_region *r)
{
	return r->count + (r->table_mr ? 1 : 0);
}

int kverbs_post_reg(struct ib_qp *qp, struct ib_cqe *cqe, struct kverbs_region *r, u32 index)
{
	bool table = index == r->count;
	struct ib_reg_wr wr = {
		.wr = {
			.wr_cqe = cqe,
			.opcode = IB_WR_REG_MR,
			.send_flags = IB_SEND_SIGNALED,
		},
	};

	if (index > r->count || (table && !r->table_mr))
		return -EINVAL;
	wr.mr = table ? r->table_mr : r->mrs[index];
	wr.key = wr.mr->rkey;
	wr.access = table ? IB_ACCESS_REMOTE_READ : r->access;
	return ib_post_send(qp, &wr.wr, NULL);
}

void kverbs_region_free(struct kverbs_region *r)
{
	kverbs_region_release(r);
}

struct kverbs_chunk {
	u64 start;		/* what buffers are found by (see the header) */
	u64 dma;
	u32 len;
};

struct kverbs_local {
	struct ib_device *dev;
	bool pages;		/* bio_vecs, found by physical address */
	u32 count;
	struct kverbs_chunk chunk[];
};

static int kverbs_chunk_cmp(const void *a, const void *b)
{
	const struct kverbs_chunk *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void kverbs_local_unmap(struct kverbs_local *l)
{
	u32 i;

	for (i = 0; i < l->count; i++)
		ib_dma_unmap_page(l->dev, l->chunk[i].dma, l->chunk[i].len, DMA_BIDIRECTIONAL);
}

static void kverbs_local_push(struct kverbs_local *l, u64 start, u64 dma, u32 len)
{
	l->chunk[l->count++] = (struct kverbs_chunk){ .start = start, .dma = dma, .len = len };
}

struct kverbs_local *kverbs_local_alloc(struct ib_device *dev, const struct kvec *kv,
					const struct bio_vec *bv, u32 count, int *err)
{
	struct kverbs_local *l;
	size_t chunks = 0;
	u32 i;

	for (i = 0; i < count; i++) {
		size_t len = kv ? kv[i].iov_len : bv[i].bv_len;

		*err = -EINVAL;
		if (len > U32_MAX)
			return NULL;
		chunks += kv ? kverbs_pieces(dev, kv[i].iov_base, len) : 1;
	}
	*err = -ENOMEM;
	l = kvzalloc(struct_size(l, chunk, chunks), GFP_KERNEL);
	if (!l)
		return NULL;
	l->dev = dev;
	l->pages = !kv;
	for (i = 0; i < count; i++) {
		u64 dma;

		if (kv) {
			u8 *base = kv[i].iov_base;
			size_t len = kv[i].iov_len;

			while (len) {
				long piece = kverbs_map_piece(dev, base, len, DMA_BIDIRECTIONAL, &dma);

				if (piece < 0)
					goto fail;
				kverbs_local_push(l, (uintptr_t)base, dma, piece);
				base += piece;
				len -= piece;
			}
		} else if (bv[i].bv_len) {
			dma = ib_dma_map_page(dev, bv[i].bv_page, bv[i].bv_offset, bv[i].bv_len,
					      DMA_BIDIRECTIONAL);
			if (ib_dma_mapping_error(dev, dma))
				goto fail;
			kverbs_local_push(l, page_to_phys(bv[i].bv_page) + bv[i].bv_offset, dma,
					  bv[i].bv_len);
		}
	}
	sort(l->chunk, l->count, sizeof(l->chunk[0]), kverbs_chunk_cmp, NULL);
	*err = 0;
	return l;
fail:
	kverbs_local_unmap(l);
	kvfree(l);
	return NULL;
}

int kverbs_local_sges(const struct kverbs_local *l, const void *addr, struct page *page,
		      u32 offset, size_t len, bool to_device, u32 lkey, struct ib_sge *sge,
		      u32 max)
{
	u64 at = page ? page_to_phys(page) + offset : (uintptr_t)addr;
	u32 lo = 0, hi = l->count, n = 0;

	if (!len)
		return 0;
	if (!!page != l->pages)
		return -EINVAL;
	/* The last chunk starting at or before @at. */
	while (hi - lo > 1) {
		u32 mid = lo + (hi - lo) / 2;

		if (l->chunk[mid].start <= at)
			lo = mid;
		else
			hi = mid;
	}
	for (; lo < l->count && len; lo++) {
		const struct kverbs_chunk *c = &l->chunk[lo];
		u64 skip = at - c->start;
		u32 take;

		if (at < c->start || skip >= c->len)
			return -EINVAL;
		take = min_t(u64, len, c->len - skip);
		if (n && sge[n - 1].addr + sge[n - 1].length == c->dma + skip &&
		    (u64)sge[n - 1].length + take <= U32_MAX) {
			sge[n - 1].length += take;
		} else {
			if (n == max)
				return -E2BIG;
			sge[n++] = (struct ib_sge){ .addr = c->dma + skip, .length = take,
						    .lkey = lkey };
		}
		ib_dma_sync_single_for_device(l->dev, c->dma + skip, take, kverbs_dir(to_device));
		at += take;
		len -= take;
	}
	return len ? -EINVAL : n;
}

void kverbs_local_free(struct kverbs_local *l)
{
	kverbs_local_unmap(l);
	kvfree(l);
}

#include "../common/kofi_timer.c"
