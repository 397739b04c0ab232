// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_blkt: a connection's commands. A command arrives in one of the
 * connection's receive buffers and is copied to its tag's slot, and the
 * buffer is posted again at once. A write fi_read()s the initiator's pages
 * into pages of the slot, then goes to the device as a bio; a read goes to
 * the device first, then fi_write()s the initiator's pages. A write whose
 * data came inline, in the receive's page, goes to the device at once with
 * that page (the receive gets a new one).
 *
 * An inline read (KOFI_BLK_INLINE) is answered with its data in the
 * response's message, sent from the connection's response page and the
 * read's pages, which wait in a blkt_held for the send to complete: no
 * RMA. Another read is answered right behind its writes when the provider
 * orders a send after earlier writes (FI_ORDER_SAW, as nvmet-rdma chains
 * its data and response): its pages move to a blkt_held until the writes
 * complete, and the slot is free for the tag's next command. Without that
 * order, or when the held pages cannot be allocated, the response is
 * injected when the last RMA has completed, as a write's always is.
 *
 * Everything but the bio's end runs in the connection's io_work, one at a
 * time; the bio's end only queues its slot and the work.
 */
#include <linux/bio.h>
#include <linux/slab.h>
#include "kofi_blkt.h"

static void free_bvec_pages(struct bio_vec *bvecs, unsigned int *nr_pages)
{
	unsigned int i;

	for (i = 0; i < *nr_pages; i++)
		__free_page(bvecs[i].bv_page);
	*nr_pages = 0;
}

static void slot_free_pages(struct blkt_slot *slot)
{
	free_bvec_pages(slot->bvecs, &slot->nr_pages);
}

static void release_held(struct blkt_held *held)
{
	list_del(&held->node);
	free_bvec_pages(held->bvecs, &held->nr_pages);
	kfree(held);
}

void blkt_conn_release_pages(struct blkt_conn *conn)
{
	struct blkt_held *held, *next;
	unsigned int i;

	for (i = 0; i < conn->depth; i++)
		slot_free_pages(&conn->slots[i]);
	list_for_each_entry_safe(held, next, &conn->held, node)
		release_held(held);
}

/* Posts receive @i: its command buffer, and its page for inline data. */
static int post_recv(struct blkt_conn *conn, unsigned int i)
{
	struct kofi_blk_cmd *buf = &conn->recvs[i];
	struct kvec iov[2] = { { buf, sizeof(*buf) } };
	size_t count = 1;
	ssize_t ret;

	if (conn->inline_max) {
		iov[1] = (struct kvec){ page_address(conn->rx_pages[i]), conn->inline_max };
		count = 2;
	}
	ret = fi_recvv(conn->ep, iov, NULL, count, 0, buf);
	return ret < 0 ? ret : 0;
}

int blkt_conn_post_recvs(struct blkt_conn *conn)
{
	unsigned int i;
	int ret;

	for (i = 0; i < conn->depth; i++) {
		ret = post_recv(conn, i);
		if (ret)
			return ret;
	}
	return 0;
}

void blkt_cq_handler(struct fid_cq *cq)
{
	struct blkt_conn *conn = cq->fid.context;

	queue_work(blkt_wq, &conn->io_work);
}

/* Answers the slot's command and frees it for the tag's next use. */
static void respond(struct blkt_slot *slot)
{
	struct blkt_conn *conn = slot->conn;
	struct kofi_blk_resp resp = {
		.tag = slot->cmd.tag,
		.gen = slot->cmd.gen,
		.status = cpu_to_le32(slot->status),
	};
	ssize_t ret;

	slot_free_pages(slot);
	slot->busy = false;
	if (!conn->ep)
		return;
	ret = fi_inject(conn->ep, &resp, sizeof(resp), 0);
	if (ret < 0) {
		/* The queue holds depth responses and RMAs; full is a broken peer. */
		pr_warn_ratelimited("kofi_blkt: %s queue %u: response not sent (%zd)\n",
				    conn->exp->spec.name, conn->queue, ret);
		blkt_conn_fail(conn);
	}
}

static void fail_slot(struct blkt_slot *slot, int err)
{
	if (!slot->status)
		slot->status = err;
}

static int alloc_pages_for(struct blkt_slot *slot, u32 len)
{
	while (len) {
		u32 part = min_t(u32, len, PAGE_SIZE);
		struct page *page = alloc_page(GFP_NOIO);

		if (!page)
			return -ENOMEM;
		bvec_set_page(&slot->bvecs[slot->nr_pages++], page, part, 0);
		len -= part;
	}
	return 0;
}

static void bio_ended(struct bio *bio)
{
	struct blkt_slot *slot = bio->bi_private;
	struct blkt_conn *conn = slot->conn;
	unsigned long flags;

	if (bio->bi_status)
		fail_slot(slot, -blk_status_to_errno(bio->bi_status));
	bio_put(bio);
	/*
	 * The connection may be freed as soon as bios reads 0: touch it only
	 * under the lock its teardown takes to read that.
	 */
	spin_lock_irqsave(&conn->done_lock, flags);
	list_add_tail(&slot->bio_done, &conn->bio_done);
	queue_work(blkt_wq, &conn->io_work);
	if (!--conn->bios)
		wake_up(&conn->bios_idle);
	spin_unlock_irqrestore(&conn->done_lock, flags);
}

static void submit(struct blkt_slot *slot)
{
	struct blkt_conn *conn = slot->conn;
	struct block_device *bdev = file_bdev(conn->exp->bdev_file);
	struct kofi_blk_cmd *cmd = &slot->cmd;
	blk_opf_t opf;
	struct bio *bio;
	unsigned int i;

	switch (cmd->opcode) {
	case KOFI_BLK_READ:
		opf = REQ_OP_READ;
		break;
	case KOFI_BLK_WRITE:
		opf = REQ_OP_WRITE | REQ_SYNC | (cmd->flags & KOFI_BLK_FUA ? REQ_FUA : 0);
		break;
	default:
		opf = REQ_OP_WRITE | REQ_PREFLUSH;
		break;
	}
	bio = bio_alloc(bdev, slot->nr_pages, opf, GFP_NOIO);
	bio->bi_iter.bi_sector = le64_to_cpu(cmd->sector);
	for (i = 0; i < slot->nr_pages; i++)
		__bio_add_page(bio, slot->bvecs[i].bv_page, slot->bvecs[i].bv_len, 0);
	bio->bi_private = slot;
	bio->bi_end_io = bio_ended;
	spin_lock_irq(&conn->done_lock);
	conn->bios++;
	spin_unlock_irq(&conn->done_lock);
	submit_bio(bio);
}

/*
 * Moves @nr_pages pages to (a read's data, FI_WRITE) or from (a write's,
 * FI_READ) the initiator's region that @cmd names, in as many operations as
 * the provider's iov limit asks for; each completes with @context (and
 * the completion level in @flags), and counts in @pending while it is in
 * flight.
 */
static int post_rma(struct blkt_conn *conn, const struct kofi_blk_cmd *cmd,
		    struct bio_vec *bvecs, unsigned int nr_pages, void *context,
		    bool to_initiator, u64 flags, unsigned int *pending)
{
	u64 addr = le64_to_cpu(cmd->addr);
	unsigned int first = 0;

	if (!conn->ep)
		return -ENOTCONN;
	while (first < nr_pages) {
		unsigned int n = min_t(size_t, nr_pages - first, conn->tx_iov_limit);
		struct fi_rma_iov rma = { .addr = addr, .key = le64_to_cpu(cmd->key) };
		struct fi_msg_rma msg = {
			.msg_bvec = &bvecs[first],
			.iov_count = n,
			.rma_iov = &rma,
			.rma_iov_count = 1,
			.context = context,
		};
		unsigned int i;
		ssize_t ret;

		for (i = first; i < first + n; i++)
			rma.len += bvecs[i].bv_len;
		ret = to_initiator ? fi_writemsg(conn->ep, &msg, FI_COMPLETION | flags) :
				     fi_readmsg(conn->ep, &msg, FI_COMPLETION | flags);
		if (ret < 0)
			return ret;
		(*pending)++;
		addr += rma.len;
		first += n;
	}
	return 0;
}

/* The slot's RMA: each operation completes with the slot as its context. */
static int start_rma(struct blkt_slot *slot, bool to_initiator)
{
	return post_rma(slot->conn, &slot->cmd, slot->bvecs, slot->nr_pages, slot,
			to_initiator, 0, &slot->rma_pending);
}

/*
 * Moves the slot's pages to a new blkt_held on the connection's list, where
 * they wait for the operations that send them; NULL when it cannot be had
 * (the pages stay with the slot).
 */
static struct blkt_held *hold_pages(struct blkt_slot *slot)
{
	struct blkt_held *held = kmalloc(sizeof(*held), GFP_NOIO);

	if (!held)
		return NULL;
	held->nr_pages = slot->nr_pages;
	held->pending = 0;
	memcpy(held->bvecs, slot->bvecs, slot->nr_pages * sizeof(*held->bvecs));
	slot->nr_pages = 0;
	list_add_tail(&held->node, &slot->conn->held);
	return held;
}

/*
 * Writes a read's data and answers right behind it (FI_ORDER_SAW: the data
 * is in the initiator's pages when the answer arrives); the pages wait in a
 * blkt_held for the writes to complete. False when the provider does not
 * keep that order or the blkt_held cannot be had: the caller answers after
 * the writes complete instead. The pages need only have been sent when they
 * are freed (FI_INJECT_COMPLETE): the order, not the writes' completions,
 * puts the data ahead of the answer. kofi_sock then sends no
 * acknowledgement of the writes back, nor wakes this side for one; and
 * FI_MORE (the answer follows at once) lets it send data and answer in one
 * TCP segment.
 */
static bool answer_read_early(struct blkt_slot *slot)
{
	struct blkt_conn *conn = slot->conn;
	struct blkt_held *held;

	if (!conn->send_after_write)
		return false;
	held = hold_pages(slot);
	if (!held)
		return false;
	if (post_rma(conn, &slot->cmd, held->bvecs, held->nr_pages, held, true,
		     FI_INJECT_COMPLETE | FI_MORE, &held->pending))
		fail_slot(slot, EIO);
	/* Writes already posted still complete into the blkt_held. */
	if (!held->pending)
		release_held(held);
	respond(slot);
	return true;
}

/*
 * Answers an inline read: the response, then its data, in one message.
 * The pages wait in a blkt_held until the send completes, and the slot is
 * free at once (the response's bytes are in the response page, under the
 * tag, which is not used again before the initiator has this message).
 */
static void answer_read_inline(struct blkt_slot *slot)
{
	struct blkt_conn *conn = slot->conn;
	u16 tag = le16_to_cpu(slot->cmd.tag);
	struct kofi_blk_resp *resp = page_address(conn->resp_page) + tag * sizeof(*resp);
	struct bio_vec iov[1 + BLKT_INLINE_MAX / PAGE_SIZE];
	struct fi_msg msg = { .msg_bvec = iov };
	struct blkt_held *held;
	ssize_t ret;

	/* check_cmd kept it to one page; after the endpoint's close, no send. */
	if (!conn->ep || slot->nr_pages >= ARRAY_SIZE(iov)) {
		fail_slot(slot, EIO);
		respond(slot);
		return;
	}
	held = hold_pages(slot);
	if (!held) {
		fail_slot(slot, ENOMEM);
		respond(slot);
		return;
	}
	*resp = (struct kofi_blk_resp){ .tag = slot->cmd.tag, .gen = slot->cmd.gen };
	bvec_set_page(&iov[0], conn->resp_page, sizeof(*resp), tag * sizeof(*resp));
	memcpy(&iov[1], held->bvecs, held->nr_pages * sizeof(*iov));
	msg.iov_count = 1 + held->nr_pages;
	msg.context = held;
	held->pending = 1;
	slot->busy = false;
	ret = fi_sendmsg(conn->ep, &msg, FI_COMPLETION);
	if (ret < 0) {
		/* As a response that cannot go: the peer broke the protocol. */
		pr_warn_ratelimited("kofi_blkt: %s queue %u: response not sent (%zd)\n",
				    conn->exp->spec.name, conn->queue, ret);
		release_held(held);
		blkt_conn_fail(conn);
	}
}

/* Checks a command against the export; 0 or the errno to answer with. */
static int check_cmd(struct blkt_conn *conn, const struct kofi_blk_cmd *cmd)
{
	struct blkt_export *exp = conn->exp;
	u64 sector = le64_to_cpu(cmd->sector);
	u32 len = le32_to_cpu(cmd->len);
	u32 lbs_sectors = exp->block_size >> SECTOR_SHIFT;

	switch (cmd->opcode) {
	case KOFI_BLK_FLUSH:
		return len || cmd->flags ? EINVAL : 0;
	case KOFI_BLK_READ:
		if (cmd->flags & ~KOFI_BLK_INLINE ||
		    (cmd->flags && le32_to_cpu(cmd->len) > conn->read_inline_max))
			return EINVAL;
		break;
	case KOFI_BLK_WRITE:
		if (cmd->flags & ~(KOFI_BLK_FUA | KOFI_BLK_INLINE))
			return EINVAL;
		break;
	default:
		return EOPNOTSUPP;
	}
	if (!len || len > BLKT_MAX_IO || len % exp->block_size || sector % lbs_sectors)
		return EINVAL;
	if (sector >= exp->sectors || (len >> SECTOR_SHIFT) > exp->sectors - sector)
		return ERANGE;
	return 0;
}

/*
 * The slot takes receive @i's page with a write's @len inline bytes; a new
 * page takes its place. ENOMEM when there is none: the data is lost.
 */
static int take_inline(struct blkt_slot *slot, unsigned int i, u32 len)
{
	struct blkt_conn *conn = slot->conn;
	struct page *fresh = alloc_page(GFP_NOIO);

	if (!fresh)
		return ENOMEM;
	bvec_set_page(&slot->bvecs[0], conn->rx_pages[i], len, 0);
	slot->nr_pages = 1;
	conn->rx_pages[i] = fresh;
	return 0;
}

/* Command @buf, of receive @i, arrived with @inline_len bytes of data. */
static void command_arrived(struct blkt_conn *conn, struct kofi_blk_cmd *buf, u32 inline_len)
{
	u16 tag = le16_to_cpu(buf->tag);
	unsigned int i = buf - conn->recvs;
	struct blkt_slot *slot;
	int ret;

	if (tag >= conn->depth || conn->slots[tag].busy) {
		/* Nothing to answer: the initiator broke the protocol. */
		pr_warn_ratelimited("kofi_blkt: %s queue %u: bad tag %u\n",
				    conn->exp->spec.name, conn->queue, tag);
		blkt_conn_fail(conn);
		return;
	}
	slot = &conn->slots[tag];
	slot->cmd = *buf;
	slot->busy = true;
	slot->status = 0;
	slot->rma_pending = 0;
	slot->status = check_cmd(conn, &slot->cmd);
	if (!slot->status && inline_len)
		slot->status = take_inline(slot, i, inline_len);
	else if (!slot->status && slot->cmd.opcode != KOFI_BLK_FLUSH &&
		 alloc_pages_for(slot, le32_to_cpu(slot->cmd.len)))
		slot->status = ENOMEM;
	/* After the page is taken: the receive is posted with its new one. */
	ret = post_recv(conn, i);
	if (ret) {
		blkt_conn_fail(conn);
		return;
	}
	if (slot->status) {
		respond(slot);
		return;
	}
	if (slot->cmd.opcode != KOFI_BLK_WRITE || inline_len) {
		submit(slot);
		return;
	}
	ret = start_rma(slot, false);
	if (ret) {
		fail_slot(slot, EIO);
		/* Operations already posted still complete into this slot. */
		if (!slot->rma_pending)
			respond(slot);
	}
}

static void rma_completed(struct blkt_slot *slot)
{
	if (--slot->rma_pending)
		return;
	if (slot->status || slot->cmd.opcode == KOFI_BLK_READ)
		respond(slot);
	else
		submit(slot);
}

/* A read's or flush's bio, or a write's, has ended. */
static void bio_completed(struct blkt_slot *slot)
{
	if (slot->status || slot->cmd.opcode != KOFI_BLK_READ) {
		respond(slot);
		return;
	}
	if (slot->cmd.flags & KOFI_BLK_INLINE) {
		answer_read_inline(slot);
		return;
	}
	if (answer_read_early(slot))
		return;
	if (start_rma(slot, true)) {
		fail_slot(slot, EIO);
		if (!slot->rma_pending)
			respond(slot);
	}
}

static struct blkt_slot *slot_of(struct blkt_conn *conn, void *context)
{
	struct blkt_slot *slot = context;

	if (slot < conn->slots || slot >= conn->slots + conn->depth)
		return NULL;
	return slot;
}

static struct blkt_held *held_of(struct blkt_conn *conn, void *context)
{
	struct blkt_held *held;

	list_for_each_entry(held, &conn->held, node)
		if (held == context)
			return held;
	return NULL;
}

static struct kofi_blk_cmd *recv_of(struct blkt_conn *conn, void *context)
{
	struct kofi_blk_cmd *buf = context;

	if (buf < conn->recvs || buf >= conn->recvs + conn->depth)
		return NULL;
	return buf;
}

static void completion(struct blkt_conn *conn, const struct fi_cq_msg_entry *e)
{
	struct kofi_blk_cmd *buf = recv_of(conn, e->op_context);
	struct blkt_held *held;
	struct blkt_slot *slot;

	if (buf) {
		/* An inline write's data follows it (its length checked below). */
		u32 inline_len = buf->flags & KOFI_BLK_INLINE && buf->opcode == KOFI_BLK_WRITE ?
				 le32_to_cpu(buf->len) : 0;

		if (e->len != sizeof(*buf) + inline_len) {
			pr_warn_ratelimited("kofi_blkt: %s queue %u: command of %zu bytes\n",
					    conn->exp->spec.name, conn->queue, e->len);
			blkt_conn_fail(conn);
			return;
		}
		command_arrived(conn, buf, inline_len);
		return;
	}
	slot = slot_of(conn, e->op_context);
	if (slot && slot->busy && slot->rma_pending) {
		rma_completed(slot);
		return;
	}
	held = held_of(conn, e->op_context);
	if (held && !--held->pending)
		release_held(held);
}

static void error_completion(struct blkt_conn *conn, const struct fi_cq_err_entry *e)
{
	struct blkt_slot *slot = slot_of(conn, e->op_context);
	struct blkt_held *held;

	if (slot && slot->busy && slot->rma_pending) {
		/* A bad key or a region too short: the initiator hears EIO. */
		fail_slot(slot, EIO);
		rma_completed(slot);
		return;
	}
	held = held_of(conn, e->op_context);
	if (held) {
		/*
		 * The read was answered already, or its answer (with its
		 * data) failed. On verbs the failed write ended the QP and
		 * the answer never left; kofi_sock refuses only a write to a
		 * key or range the initiator did not register. Either way the
		 * connection is not to be trusted.
		 */
		pr_warn_ratelimited("kofi_blkt: %s queue %u: answered read's data failed (%d)\n",
				    conn->exp->spec.name, conn->queue, e->err);
		if (!--held->pending)
			release_held(held);
		blkt_conn_fail(conn);
		return;
	}
	/* A receive flushed by the connection's end, or worse. */
	if (e->err != FI_ECANCELED)
		pr_warn_ratelimited("kofi_blkt: %s queue %u: completion error %d\n",
				    conn->exp->spec.name, conn->queue, e->err);
	blkt_conn_fail(conn);
}

void blkt_io_work(struct work_struct *work)
{
	struct blkt_conn *conn = container_of(work, struct blkt_conn, io_work);
	struct fi_cq_msg_entry entries[16];
	struct blkt_slot *slot, *next;
	LIST_HEAD(ended);
	ssize_t n, i;

	mutex_lock(&conn->io_lock);
	for (;;) {
		n = fi_cq_read(conn->cq, entries, ARRAY_SIZE(entries));
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {};

			if (fi_cq_readerr(conn->cq, &err, 0) > 0 && conn->ep)
				error_completion(conn, &err);
			continue;
		}
		if (n <= 0)
			break;
		/* After the endpoint's close only the teardown frees pages. */
		for (i = 0; i < n && conn->ep; i++)
			completion(conn, &entries[i]);
	}
	spin_lock_irq(&conn->done_lock);
	list_splice_init(&conn->bio_done, &ended);
	spin_unlock_irq(&conn->done_lock);
	list_for_each_entry_safe(slot, next, &ended, bio_done) {
		list_del_init(&slot->bio_done);
		bio_completed(slot);
	}
	mutex_unlock(&conn->io_lock);
}
