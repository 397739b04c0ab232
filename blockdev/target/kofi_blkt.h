/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kofi_blkt: the kofi_blk target. An export is a backing block device served
 * on one provider, address and port (export.c); each initiator queue is a
 * connection whose commands move data by RMA and reach the device as bios
 * (io.c). kofi_blkt_main.c holds the exports and the control files.
 */
#ifndef _KOFI_BLKT_H
#define _KOFI_BLKT_H

#include <linux/blkdev.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <kofi/fabric.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_eq.h>
#include <kofi/fi_rma.h>
#include "../kofi_blk_proto.h"

/* Bytes one command moves at most; announced in the accept. */
#define BLKT_MAX_IO		(128 * 1024)
#define BLKT_MAX_PAGES		(BLKT_MAX_IO / PAGE_SIZE)
/*
 * A write's bytes a command may carry, and a read's bytes a response may
 * (KOFI_BLK_INLINE): one page each.
 */
#define BLKT_INLINE_MAX		PAGE_SIZE

/* How often a lost listener is tried again. */
#define BLKT_RELISTEN_MS	1000

/* What a user asks for in add_export. */
struct blkt_export_spec {
	char name[KOFI_BLK_NAME_MAX];
	char path[64];
	char provider[16];
	char addr[64];
	char port[8];
};

struct blkt_export {
	struct list_head node;		/* in the module's list of exports */
	struct blkt_export_spec spec;
	struct file *bdev_file;
	u64 sectors;
	u32 block_size;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	/* Reads the EQ: accepts, and tears down failed connections. */
	struct work_struct cm_work;
	/*
	 * Listens again after the passive endpoint stopped (its RDMA device
	 * was removed), every BLKT_RELISTEN_MS until the address has a device.
	 */
	struct delayed_work relisten_work;
	/* Held by cm_work and relisten_work: info, domain and pep change. */
	struct mutex cm_lock;
	struct mutex lock;		/* conns */
	struct list_head conns;
	bool stopping;			/* being removed: no new connection */
};

/* One command of a connection, by tag. */
struct blkt_slot {
	struct blkt_conn *conn;
	struct kofi_blk_cmd cmd;
	bool busy;			/* from the command until its response */
	unsigned int nr_pages;
	struct bio_vec bvecs[BLKT_MAX_PAGES];
	unsigned int rma_pending;	/* RMA operations not completed yet */
	int status;			/* the first error, a positive errno */
	struct list_head bio_done;	/* on the connection's list when its bio ended */
};

/*
 * A read's pages after its answer: with FI_ORDER_SAW the response goes out
 * right behind the data's fi_write()s, or an inline read's response carries
 * them, and the pages stay here, off the slot (whose tag the initiator may
 * use again at once), until those operations complete.
 */
struct blkt_held {
	struct list_head node;		/* in the connection's held list */
	unsigned int nr_pages;
	unsigned int pending;		/* operations not completed yet */
	struct bio_vec bvecs[BLKT_MAX_PAGES];
};

struct blkt_conn {
	struct list_head node;		/* in the export's conns */
	struct blkt_export *exp;
	struct fid_ep *ep;
	struct fid_cq *cq;
	u16 queue, depth;
	size_t tx_iov_limit;		/* local bio_vecs per RMA operation */
	/* The provider orders a send after earlier writes (FI_ORDER_SAW). */
	bool send_after_write;
	struct list_head held;		/* blkt_held; only io_work and teardown */
	struct kofi_blk_cmd *recvs;	/* depth receive buffers */
	/*
	 * With inline writes (inline_max, 0 when the provider cannot receive
	 * into two buffers), each receive's page for a write's data, which
	 * the command's slot takes over (a new page replaces it).
	 */
	u32 inline_max;
	struct page **rx_pages;
	/*
	 * A read's bytes a response may carry (KOFI_BLK_INLINE; at most what
	 * the initiator offered, 0 when the provider cannot send a response
	 * and its data from two buffers), and the page the responses that
	 * carry data are sent from, one kofi_blk_resp per tag (a tag's is
	 * written again only after the initiator has its last one).
	 */
	u32 read_inline_max;
	struct page *resp_page;
	struct blkt_slot *slots;	/* depth */
	/* Handles completions and ended bios; one at a time (a work item). */
	struct work_struct io_work;
	/* Held by io_work; the teardown takes it to close ep and set it NULL. */
	struct mutex io_lock;
	bool failed;			/* set once; cm_work tears it down */
	spinlock_t done_lock;		/* bio_done and bios */
	struct list_head bio_done;
	unsigned int bios;		/* bios in flight */
	wait_queue_head_t bios_idle;
};

extern struct workqueue_struct *blkt_wq;

/* export.c */
int blkt_export_start(const struct blkt_export_spec *spec, struct blkt_export **out);
void blkt_export_stop(struct blkt_export *exp);
int blkt_export_conns(struct blkt_export *exp);
void blkt_conn_fail(struct blkt_conn *conn);

/* io.c */
int blkt_conn_post_recvs(struct blkt_conn *conn);
void blkt_io_work(struct work_struct *work);
void blkt_cq_handler(struct fid_cq *cq);
void blkt_conn_release_pages(struct blkt_conn *conn);

#endif /* _KOFI_BLKT_H */
