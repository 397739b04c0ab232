/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kofi_verbs: the C side of the provider. rdma_cm and ib_verbs calls that are
 * macros or static inlines (which bindgen cannot bind), the ib_client, DMA
 * mapping and fast memory registration. Everything here is a thin call into
 * the RDMA core; the provider's logic is in Rust.
 */
#ifndef _KOFI_VERBS_GLUE_H
#define _KOFI_VERBS_GLUE_H

#include <linux/types.h>
#include <linux/uio.h>
#include <linux/bvec.h>
#include <linux/socket.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

/* A device's limits, for fi_getinfo and for sizing queues. */
struct kverbs_limits {
	u32 max_sge;
	u32 max_sge_rd;
	u32 max_qp_wr;
	u32 max_cqe;
	u32 max_msg;
	u32 max_mr_pages;
	u32 max_qp;
	u32 max_cq;
	u32 max_mr;
	bool active;
	/* iWARP: the MPA initiator must send the first frame. */
	bool iwarp;
};

/* The ib_client: calls kofi_verbs_device_add/remove (Rust) per device. */
int kverbs_client_register(void);
void kverbs_client_unregister(void);
void kofi_verbs_device_add(struct ib_device *dev);
void kofi_verbs_device_remove(struct ib_device *dev);

const char *kverbs_dev_name(struct ib_device *dev);
void kverbs_dev_limits(struct ib_device *dev, struct kverbs_limits *out);

/* NULL on failure. */
struct ib_pd *kverbs_alloc_pd(struct ib_device *dev);
void kverbs_dealloc_pd(struct ib_pd *pd);
u32 kverbs_pd_lkey(struct ib_pd *pd);
/*
 * A CQ its owner polls (kverbs_poll_cq) in process context. @event(cq,
 * @context) runs, in the driver's context (softirq, its own thread, or with
 * interrupts off: kverbs_can_wake() tells), at the first completion after
 * the CQ was armed: it is armed when made and by kverbs_arm_cq. NULL on
 * failure.
 */
struct ib_cq *kverbs_create_cq(struct ib_device *dev, int nr_cqe,
			       void (*event)(struct ib_cq *cq, void *context), void *context);
/* Polls every completion @cq holds, each to its ib_cqe's done: how many. */
int kverbs_poll_cq(struct ib_cq *cq);
/* Arms @cq again: true when completions may have come in unreported (poll). */
bool kverbs_arm_cq(struct ib_cq *cq);
void kverbs_destroy_cq(struct ib_cq *cq);
/* Whether this context may wake a sleeping task (interrupts on, not hardirq). */
bool kverbs_can_wake(void);

struct rdma_cm_id *kverbs_create_id(rdma_cm_event_handler handler, void *context);
struct ib_device *kverbs_id_device(struct rdma_cm_id *id);
struct ib_qp *kverbs_id_qp(struct rdma_cm_id *id);
void *kverbs_id_context(struct rdma_cm_id *id);
/* A connection request's new id gets its own handler and context. */
void kverbs_id_set_handler(struct rdma_cm_id *id, rdma_cm_event_handler handler, void *context);
/* The local (or, with @peer, remote) address; its length. */
int kverbs_id_addr(struct rdma_cm_id *id, bool peer, struct sockaddr_storage *out);
/* @max_inline: asked for; on return, what the QP takes inline. */
int kverbs_create_qp(struct rdma_cm_id *id, struct ib_pd *pd, struct ib_cq *cq, u32 sq_depth,
		     u32 rq_depth, u32 max_sge, u32 *max_inline);
/* Moves @qp to the error state: what it holds completes flushed. */
int kverbs_qp_fail(struct ib_qp *qp);
/* From the id's own event callback (ROUTE_RESOLVED). */
int kverbs_connect(struct rdma_cm_id *id, const void *data, u8 len);
/*
 * The RDMA READ depths a connection request offers, seen from the side that
 * accepts: the READs it may issue (initiator_depth) and serve
 * (responder_resources).
 */
struct kverbs_read_depths {
	u8 initiator_depth;
	u8 responder_resources;
};

int kverbs_accept(struct rdma_cm_id *id, const void *data, u8 len,
		  const struct kverbs_read_depths *peer);
int kverbs_reject(struct rdma_cm_id *id, const void *data, u8 len);
/* The event's private data and its length (0 when none). */
u32 kverbs_event_private(const struct rdma_cm_event *ev, const void **data);
void kverbs_event_read_depths(const struct rdma_cm_event *ev, struct kverbs_read_depths *out);

/*
 * A work request of @opcode (IB_WR_*), signaled, completing at @cqe. With
 * @inline_data the device copies the bytes at posting (the SGEs then hold
 * kernel virtual addresses).
 */
int kverbs_post_send(struct ib_qp *qp, struct ib_cqe *cqe, u32 opcode, const struct ib_sge *sge,
		     u32 nsge, u64 remote_addr, u32 rkey, bool inline_data);
int kverbs_post_recv(struct ib_qp *qp, struct ib_cqe *cqe, const struct ib_sge *sge, u32 nsge);

/*
 * DMA mapping of @len bytes at @base (linear, vmalloc or stack memory) into
 * at most @max SGEs with @lkey: the number filled, or a negative error.
 */
int kverbs_map_kvec(struct ib_device *dev, void *base, size_t len, bool to_device, u32 lkey,
		    struct ib_sge *sge, u32 max);
int kverbs_map_page(struct ib_device *dev, struct page *page, u32 offset, u32 len,
		    bool to_device, u32 lkey, struct ib_sge *sge);
void kverbs_unmap(struct ib_device *dev, const struct ib_sge *sge, u32 n, bool to_device);
void kverbs_sync_for_cpu(struct ib_device *dev, u64 addr, size_t len, bool to_device);
void kverbs_sync_for_device(struct ib_device *dev, u64 addr, size_t len, bool to_device);

/*
 * A memory region for remote access, fast-registered. Its key for peers is
 * the rkey in the low 32 bits and, in bits 32-47, what a peer adds to an
 * RMA address (regions are addressed by offset; the device needs the iova's
 * in-page offset to be the memory's).
 *
 * A region longer than the device's fast-registration page list takes one
 * MR per piece of at most that many pages, and a key table peers read
 * first: bit 63 of its key is KVERBS_KEY_TABLE, bits 48-62 a random nonce
 * the table repeats (a peer never takes an older table whose rkey the
 * device gave out again for this one), bits 32-47 the delta, and the low
 * 32 bits the rkey of the table, at address 0. The table (little endian,
 * the layout wire.rs decodes): magic, count, nonce, the address one past
 * the region's end, then each piece's first address and rkey.
 */
#define KVERBS_KEY_TABLE	(1ULL << 63)
#define KVERBS_KEY_NONCE_SHIFT	48
#define KVERBS_KEY_NONCE_MASK	0x7fff
#define KVERBS_TABLE_MAGIC	0x6b6b7462	/* "btkk" */
#define KVERBS_PIECES_MAX	32

struct kverbs_key_table {
	__le32 magic;
	__le32 count;
	__le64 nonce;
	__le64 end;
	struct {
		__le64 start;
		__le32 rkey;
		__le32 rsvd;
	} piece[KVERBS_PIECES_MAX];
};

struct kverbs_region;
struct kverbs_region *kverbs_region_alloc(struct ib_pd *pd, const struct kvec *kv,
					  const struct bio_vec *bv, u32 count, u64 offset,
					  bool remote_read, bool remote_write, int *err);
/*
 * A region of @n SGEs already DMA-mapped (a kverbs_local's, which must
 * outlive it), at RMA address 0: its MRs only.
 */
struct kverbs_region *kverbs_region_of_sges(struct ib_pd *pd, const struct ib_sge *sge, u32 n,
					    bool remote_read, bool remote_write, int *err);
u64 kverbs_region_key(const struct kverbs_region *r);
/*
 * The SGE of @len bytes at byte @offset of a region of one MR, for the
 * device to place a READ's data there (its lkey); -EINVAL for a region in
 * pieces or a range outside it.
 */
int kverbs_region_sge(const struct kverbs_region *r, u64 offset, u32 len, struct ib_sge *sge);
/* Registration work requests the region needs: one per MR (pieces, table). */
u32 kverbs_region_wrs(const struct kverbs_region *r);
/* Posts the region's registration work request @index, completing at @cqe. */
int kverbs_post_reg(struct ib_qp *qp, struct ib_cqe *cqe, struct kverbs_region *r, u32 index);
void kverbs_region_free(struct kverbs_region *r);

/*
 * A registered region's memory DMA-mapped once, for the operations whose
 * local buffers carry its descriptor: chunks (a linear kvec whole, vmalloc
 * memory by page, a bio_vec whole) sorted by the address a buffer is found
 * by (a kvec's kernel virtual address; a bio_vec's physical address).
 */
struct kverbs_local;
struct kverbs_local *kverbs_local_alloc(struct ib_device *dev, const struct kvec *kv,
					const struct bio_vec *bv, u32 count, int *err);
/*
 * SGEs with @lkey for @len bytes at @addr (a kvec's) or at @page + @offset
 * (a bio_vec's), merged where the chunks meet, handed to the device
 * (synced for it): the number filled; -E2BIG past @max SGEs, -EINVAL
 * when the region does not hold the bytes.
 */
int kverbs_local_sges(const struct kverbs_local *l, const void *addr, struct page *page,
		      u32 offset, size_t len, bool to_device, u32 lkey, struct ib_sge *sge,
		      u32 max);
void kverbs_local_free(struct kverbs_local *l);

#endif /* _KOFI_VERBS_GLUE_H */
