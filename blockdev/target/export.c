// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_blkt: an export. The backing device is opened by path; a passive
 * endpoint listens on the export's provider, address and port, and each
 * connection request naming the export becomes a connection (one initiator
 * queue) with its own CQ. The export's EQ handler queues cm_work, which
 * accepts, rejects and tears down: all connection changes happen there.
 */
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/string.h>
#include "kofi_blkt.h"

/* A CM event with room for the largest private data. */
struct blkt_cm_event {
	struct fi_eq_cm_entry entry;
	u8 data[KOFI_CM_DATA_MAX];
};

static void eq_handler(struct fid_eq *eq)
{
	struct blkt_export *exp = eq->fid.context;

	queue_work(blkt_wq, &exp->cm_work);
}

void blkt_conn_fail(struct blkt_conn *conn)
{
	WRITE_ONCE(conn->failed, true);
	queue_work(blkt_wq, &conn->exp->cm_work);
}

static bool bios_idle(struct blkt_conn *conn)
{
	bool idle;

	spin_lock_irq(&conn->done_lock);
	idle = !conn->bios;
	spin_unlock_irq(&conn->done_lock);
	return idle;
}

static void conn_free(struct blkt_conn *conn)
{
	unsigned int i;

	if (conn->cq)
		fi_close(&conn->cq->fid);
	for (i = 0; conn->rx_pages && i < conn->depth; i++)
		if (conn->rx_pages[i])
			__free_page(conn->rx_pages[i]);
	kfree(conn->rx_pages);
	if (conn->resp_page)
		__free_page(conn->resp_page);
	kvfree(conn->slots);
	kfree(conn->recvs);
	kfree(conn);
}

/* A page per receive for inline writes; 0 or ENOMEM. */
static int alloc_rx_pages(struct blkt_conn *conn)
{
	unsigned int i;

	conn->rx_pages = kcalloc(conn->depth, sizeof(*conn->rx_pages), GFP_KERNEL);
	if (!conn->rx_pages)
		return ENOMEM;
	for (i = 0; i < conn->depth; i++) {
		conn->rx_pages[i] = alloc_page(GFP_KERNEL);
		if (!conn->rx_pages[i])
			return ENOMEM;
	}
	return 0;
}

/*
 * Closes the endpoint (its posted receives and RMAs end), waits for the
 * bios in flight, and frees the connection. The caller took it off the
 * export's list.
 */
static void conn_teardown(struct blkt_conn *conn)
{
	mutex_lock(&conn->io_lock);
	fi_close(&conn->ep->fid);
	conn->ep = NULL;
	mutex_unlock(&conn->io_lock);
	wait_event(conn->bios_idle, bios_idle(conn));
	cancel_work_sync(&conn->io_work);
	blkt_conn_release_pages(conn);
	pr_info("kofi_blkt: %s: queue %u closed\n", conn->exp->spec.name, conn->queue);
	conn_free(conn);
}

static void reject(struct blkt_export *exp, struct fi_info *info, int err)
{
	struct kofi_blk_reject rej = {
		.magic = cpu_to_le32(KOFI_BLK_MAGIC),
		.status = cpu_to_le32(err),
	};

	fi_reject(exp->pep, info->handle, &rej, sizeof(rej));
}

/* The connection for a request's private data, or an errno to reject with. */
static int conn_open(struct blkt_export *exp, struct fi_info *info,
		     const struct kofi_blk_connect *req, struct blkt_conn **out)
{
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_MSG,
		/* io_work reads the CQ: the provider's progress is made there. */
		.flags = KOFI_CQ_HANDLER_PROGRESS,
		.comp_handler = blkt_cq_handler,
	};
	u16 depth = le16_to_cpu(req->depth);
	struct blkt_conn *conn;
	unsigned int i;
	int ret;

	if (!depth || depth > KOFI_BLK_DEPTH_MAX)
		return EINVAL;
	conn = kzalloc(sizeof(*conn), GFP_KERNEL);
	if (!conn)
		return ENOMEM;
	conn->exp = exp;
	conn->queue = le16_to_cpu(req->queue);
	conn->depth = depth;
	conn->tx_iov_limit = max_t(size_t, info->tx_attr->iov_limit, 1);
	conn->send_after_write = info->tx_attr->msg_order & FI_ORDER_SAW;
	/* A command and its data land in two buffers: its own and a page. */
	conn->inline_max = info->rx_attr->iov_limit >= 2 ? BLKT_INLINE_MAX : 0;
	/* A response and a read's data go from two buffers: its page and one. */
	BUILD_BUG_ON(KOFI_BLK_DEPTH_MAX * sizeof(struct kofi_blk_resp) > PAGE_SIZE);
	if (info->tx_attr->iov_limit >= 1 + BLKT_INLINE_MAX / PAGE_SIZE)
		conn->read_inline_max = min_t(u32, le32_to_cpu(req->read_inline_max),
					      BLKT_INLINE_MAX);
	INIT_LIST_HEAD(&conn->held);
	INIT_WORK(&conn->io_work, blkt_io_work);
	mutex_init(&conn->io_lock);
	spin_lock_init(&conn->done_lock);
	INIT_LIST_HEAD(&conn->bio_done);
	init_waitqueue_head(&conn->bios_idle);
	conn->recvs = kcalloc(depth, sizeof(*conn->recvs), GFP_KERNEL);
	conn->slots = kvcalloc(depth, sizeof(*conn->slots), GFP_KERNEL);
	if (conn->read_inline_max)
		conn->resp_page = alloc_page(GFP_KERNEL);
	if (!conn->recvs || !conn->slots || (conn->inline_max && alloc_rx_pages(conn)) ||
	    (conn->read_inline_max && !conn->resp_page)) {
		conn_free(conn);
		return ENOMEM;
	}
	for (i = 0; i < depth; i++) {
		conn->slots[i].conn = conn;
		INIT_LIST_HEAD(&conn->slots[i].bio_done);
	}
	/* Room for every receive, RMA and response of depth commands. */
	cq_attr.size = depth * (2 + BLKT_MAX_PAGES);
	ret = fi_cq_open(exp->domain, &cq_attr, &conn->cq, conn);
	if (!ret)
		ret = fi_endpoint(exp->domain, info, &conn->ep, conn);
	if (ret) {
		conn_free(conn);
		return -ret;
	}
	ret = fi_ep_bind(conn->ep, &exp->eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(conn->ep, &conn->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_enable(conn->ep);
	if (!ret)
		ret = blkt_conn_post_recvs(conn);
	if (ret) {
		fi_close(&conn->ep->fid);
		conn_free(conn);
		return -ret;
	}
	*out = conn;
	return 0;
}

static void connection_request(struct blkt_export *exp, struct blkt_cm_event *ev, size_t len)
{
	struct fi_info *info = ev->entry.info;
	const struct kofi_blk_connect *req = (const void *)ev->data;
	struct kofi_blk_accept acc = {
		.magic = cpu_to_le32(KOFI_BLK_MAGIC),
		.version = cpu_to_le16(KOFI_BLK_VERSION),
		.sectors = cpu_to_le64(exp->sectors),
		.block_size = cpu_to_le32(exp->block_size),
		.max_io = cpu_to_le32(BLKT_MAX_IO),
	};
	struct blkt_conn *conn;
	int err;

	if (READ_ONCE(exp->stopping)) {
		fi_freeinfo(info);
		return;
	}
	if (len < sizeof(ev->entry) + sizeof(*req) ||
	    le32_to_cpu(req->magic) != KOFI_BLK_MAGIC ||
	    le16_to_cpu(req->version) != KOFI_BLK_VERSION) {
		err = EPROTO;
	} else if (strnlen(req->name, KOFI_BLK_NAME_MAX) == KOFI_BLK_NAME_MAX ||
		   strcmp(req->name, exp->spec.name)) {
		err = ENOENT;
	} else {
		err = conn_open(exp, info, req, &conn);
	}
	if (err) {
		pr_info("kofi_blkt: %s: connection refused (%d)\n", exp->spec.name, -err);
		reject(exp, info, err);
		fi_freeinfo(info);
		return;
	}
	fi_freeinfo(info);
	acc.inline_max = cpu_to_le32(conn->inline_max);
	acc.read_inline_max = cpu_to_le32(conn->read_inline_max);
	mutex_lock(&exp->lock);
	list_add_tail(&conn->node, &exp->conns);
	mutex_unlock(&exp->lock);
	err = fi_accept(conn->ep, &acc, sizeof(acc));
	if (err)
		blkt_conn_fail(conn);
	else
		pr_info("kofi_blkt: %s: queue %u connected (depth %u)\n", exp->spec.name,
			conn->queue, conn->depth);
}

/* The live connection whose endpoint is @fid, if any; exp->lock held. */
static struct blkt_conn *conn_of(struct blkt_export *exp, fid_t fid)
{
	struct blkt_conn *conn;

	list_for_each_entry(conn, &exp->conns, node)
		if (&conn->ep->fid == fid)
			return conn;
	return NULL;
}

static void conn_event(struct blkt_export *exp, fid_t fid)
{
	struct blkt_conn *conn;

	mutex_lock(&exp->lock);
	conn = conn_of(exp, fid);
	if (conn)
		WRITE_ONCE(conn->failed, true);
	mutex_unlock(&exp->lock);
}

static void reap_failed(struct blkt_export *exp, bool all)
{
	struct blkt_conn *conn, *next;
	LIST_HEAD(dead);

	mutex_lock(&exp->lock);
	list_for_each_entry_safe(conn, next, &exp->conns, node)
		if (all || READ_ONCE(conn->failed))
			list_move_tail(&conn->node, &dead);
	mutex_unlock(&exp->lock);
	list_for_each_entry_safe(conn, next, &dead, node) {
		list_del(&conn->node);
		conn_teardown(conn);
	}
}

/* The passive endpoint stopped listening; cm_lock held. */
static void listener_lost(struct blkt_export *exp, int err)
{
	pr_info("kofi_blkt: %s: no longer listening on %s %s:%s (%d); trying again\n",
		exp->spec.name, exp->spec.provider, exp->spec.addr, exp->spec.port, -err);
	if (!READ_ONCE(exp->stopping))
		queue_delayed_work(blkt_wq, &exp->relisten_work,
				   msecs_to_jiffies(BLKT_RELISTEN_MS));
}

static void cm_work(struct work_struct *work)
{
	struct blkt_export *exp = container_of(work, struct blkt_export, cm_work);
	struct blkt_cm_event *ev;
	ssize_t n;
	u32 event;

	ev = kmalloc(sizeof(*ev), GFP_KERNEL);
	mutex_lock(&exp->cm_lock);
	while (ev) {
		n = fi_eq_read(exp->eq, &event, ev, sizeof(*ev), 0);
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry err = {};

			if (fi_eq_readerr(exp->eq, &err, 0) <= 0)
				continue;
			if (exp->pep && err.fid == &exp->pep->fid)
				listener_lost(exp, err.err);
			else	/* A connection that failed before or after its accept. */
				conn_event(exp, err.fid);
			continue;
		}
		if (n < (ssize_t)sizeof(ev->entry))
			break;
		if (event == FI_CONNREQ)
			connection_request(exp, ev, n);
		else if (event == FI_SHUTDOWN)
			conn_event(exp, ev->entry.fid);
	}
	mutex_unlock(&exp->cm_lock);
	kfree(ev);
	reap_failed(exp, false);
}

int blkt_export_conns(struct blkt_export *exp)
{
	struct blkt_conn *conn;
	int n = 0;

	mutex_lock(&exp->lock);
	list_for_each_entry(conn, &exp->conns, node)
		n++;
	mutex_unlock(&exp->lock);
	return n;
}

/* The provider's info for the export's address, into exp->info. */
static int get_info(struct blkt_export *exp)
{
	struct fi_info *hints = fi_allocinfo();
	int ret;

	if (!hints)
		return -ENOMEM;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_RMA;
	hints->fabric_attr->prov_name = kstrdup(exp->spec.provider, GFP_KERNEL);
	ret = hints->fabric_attr->prov_name ? 0 : -ENOMEM;
	if (!ret)
		ret = fi_getinfo(KOFI_ABI_VERSION, exp->spec.addr, exp->spec.port, FI_SOURCE,
				 hints, &exp->info);
	fi_freeinfo(hints);
	return ret;
}

/* The domain and the listening passive endpoint, on exp->info's device. */
static int listen_pep(struct blkt_export *exp)
{
	int ret = fi_domain(exp->fabric, exp->info, &exp->domain, exp);

	if (!ret)
		ret = fi_passive_ep(exp->fabric, exp->info, &exp->pep, exp);
	if (!ret)
		ret = fi_pep_bind(exp->pep, &exp->eq->fid, 0);
	return ret ?: fi_listen(exp->pep);
}

/* Closes what listen_pep() and get_info() opened. */
static void close_pep(struct blkt_export *exp)
{
	if (exp->pep)
		fi_close(&exp->pep->fid);
	exp->pep = NULL;
	if (exp->domain)
		fi_close(&exp->domain->fid);
	exp->domain = NULL;
	fi_freeinfo(exp->info);
	exp->info = NULL;
}

static int listen_on(struct blkt_export *exp)
{
	struct fi_eq_attr eq_attr = { .event_handler = eq_handler };
	int ret = get_info(exp);

	if (!ret)
		ret = fi_fabric(exp->info->fabric_attr, &exp->fabric, exp);
	if (!ret)
		ret = fi_eq_open(exp->fabric, &eq_attr, &exp->eq, exp);
	return ret ?: listen_pep(exp);
}

/*
 * The device under the passive endpoint went, and with it every connection
 * of the export (its domain's): once they are torn down, the domain and
 * passive endpoint are opened again on what the address has now, as nvmet
 * repairs a port. Initiators reconnect on their own.
 */
static void relisten_work(struct work_struct *work)
{
	struct blkt_export *exp = container_of(to_delayed_work(work), struct blkt_export,
					       relisten_work);
	int ret;

	mutex_lock(&exp->cm_lock);
	reap_failed(exp, true);
	close_pep(exp);
	ret = get_info(exp);
	if (!ret)
		ret = listen_pep(exp);
	if (ret) {
		close_pep(exp);
		if (!READ_ONCE(exp->stopping))
			queue_delayed_work(blkt_wq, &exp->relisten_work,
					   msecs_to_jiffies(BLKT_RELISTEN_MS));
	} else {
		pr_info("kofi_blkt: %s: listening again on %s %s:%s\n", exp->spec.name,
			exp->spec.provider, exp->spec.addr, exp->spec.port);
	}
	mutex_unlock(&exp->cm_lock);
}

static void export_free(struct blkt_export *exp)
{
	/*
	 * cm_work no longer answers requests nor asks to listen again; the
	 * passive endpoint goes next.
	 */
	WRITE_ONCE(exp->stopping, true);
	cancel_work_sync(&exp->cm_work);
	cancel_delayed_work_sync(&exp->relisten_work);
	if (exp->pep)
		fi_close(&exp->pep->fid);
	exp->pep = NULL;
	reap_failed(exp, true);
	/* The EQ handler or a connection's io_work may have queued it again. */
	cancel_work_sync(&exp->cm_work);
	close_pep(exp);
	if (exp->eq)
		fi_close(&exp->eq->fid);
	if (exp->fabric)
		fi_close(&exp->fabric->fid);
	if (!IS_ERR_OR_NULL(exp->bdev_file))
		fput(exp->bdev_file);
	kfree(exp);
}

int blkt_export_start(const struct blkt_export_spec *spec, struct blkt_export **out)
{
	struct blkt_export *exp = kzalloc(sizeof(*exp), GFP_KERNEL);
	struct block_device *bdev;
	int ret;

	if (!exp)
		return -ENOMEM;
	exp->spec = *spec;
	INIT_WORK(&exp->cm_work, cm_work);
	INIT_DELAYED_WORK(&exp->relisten_work, relisten_work);
	mutex_init(&exp->cm_lock);
	mutex_init(&exp->lock);
	INIT_LIST_HEAD(&exp->conns);
	exp->bdev_file = bdev_file_open_by_path(spec->path, BLK_OPEN_READ | BLK_OPEN_WRITE,
						exp, NULL);
	if (IS_ERR(exp->bdev_file)) {
		ret = PTR_ERR(exp->bdev_file);
		pr_info("kofi_blkt: %s: cannot open %s (%d)\n", spec->name, spec->path, ret);
		goto fail;
	}
	bdev = file_bdev(exp->bdev_file);
	exp->sectors = bdev_nr_sectors(bdev);
	exp->block_size = bdev_logical_block_size(bdev);
	ret = listen_on(exp);
	if (ret) {
		pr_info("kofi_blkt: %s: cannot listen on %s %s:%s (%d)\n", spec->name,
			spec->provider, spec->addr, spec->port, ret);
		goto fail;
	}
	*out = exp;
	return 0;
fail:
	export_free(exp);
	return ret;
}

/* Stops listening, ends every connection (its initiator sees it go), frees. */
void blkt_export_stop(struct blkt_export *exp)
{
	export_free(exp);
}
