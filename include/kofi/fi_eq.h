/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kofi: completion and event queues, after libfabric's <rdma/fi_eq.h>.
 *
 * Queues are implemented once, in the core. fi_cq_sread()/fi_eq_sread() sleep
 * on a kernel wait queue; a consumer that must not sleep may instead set a
 * completion handler, called whenever an entry is added: it runs in the
 * context of whoever added the entry, which may be softirq, so it must not
 * sleep (typically it queues work).
 */
#ifndef _KOFI_FI_EQ_H
#define _KOFI_FI_EQ_H

#include <kofi/fabric.h>

/*
 * kofi: FI_WAIT_UNSPEC is 0 (libfabric's 0 is FI_WAIT_NONE), so a zeroed
 * attr gets the default, a kernel wait queue, and fi_cq_sread works.
 */
enum fi_wait_obj {
	FI_WAIT_UNSPEC,		/* the default: a kernel wait queue */
	FI_WAIT_NONE,		/* no blocking reads: sread returns -FI_ENOSYS */
	FI_WAIT_SET,
	FI_WAIT_FD,
	FI_WAIT_MUTEX_COND,
	FI_WAIT_YIELD,
	FI_WAIT_POLLFD,
	FI_WAIT_QUEUE = 32,	/* kofi: a kernel wait queue */
};

enum fi_cq_format {
	FI_CQ_FORMAT_UNSPEC,	/* FI_CQ_FORMAT_CONTEXT */
	FI_CQ_FORMAT_CONTEXT,
	FI_CQ_FORMAT_MSG,
	FI_CQ_FORMAT_DATA,
	FI_CQ_FORMAT_TAGGED,
};

enum fi_cq_wait_cond {
	FI_CQ_COND_NONE,
	FI_CQ_COND_THRESHOLD,
};

struct fid_cq;
struct fid_eq;

/* Called when an entry is added; may run in softirq context: must not sleep. */
typedef void (*kofi_cq_handler_t)(struct fid_cq *cq);
typedef void (*kofi_eq_handler_t)(struct fid_eq *eq);

/*
 * kofi: fi_cq_attr.flags KOFI_CQ_HANDLER_PROGRESS (with a comp_handler): the
 * consumer makes the progress providers ask of the queue, from its first
 * fi_cq_read() on (until then the providers make it themselves: the
 * connection's handshake, say). The handler is called also when a provider
 * has work for an endpoint bound to the queue (kofi_sock: its socket became
 * readable or writable), with no entry added yet; the consumer's next
 * fi_cq_read()/fi_cq_readfrom() makes that progress in its own thread
 * before reading, where the provider's own work item would otherwise make
 * it and call the handler: one hand-off fewer per completion for a
 * consumer that reads its queue from a work item anyway (as NVMe-oF's
 * io_work does). On such a queue those reads may sleep: process context
 * only (-EINVAL otherwise), never under a spinlock; after each handler
 * call read until -FI_EAGAIN, or the endpoints' progress waits for the
 * next read. A provider's own waits inside a call (a region's close) reap
 * what they wait for themselves.
 */
#define KOFI_CQ_HANDLER_PROGRESS	(1ULL << 0)

#define KOFI_CQ_SIZE_DEFAULT 1024
#define KOFI_CQ_SIZE_MAX 65536

/**
 * struct fi_cq_attr - attributes of a completion queue
 * @size: entries the queue holds (0: KOFI_CQ_SIZE_DEFAULT; at most
 *	KOFI_CQ_SIZE_MAX); one more completion is an overrun
 * @flags: 0, or KOFI_CQ_HANDLER_PROGRESS (see above)
 * @format: the format fi_cq_read() returns
 * @wait_obj: FI_WAIT_NONE, FI_WAIT_UNSPEC or FI_WAIT_QUEUE
 * @signaling_vector: ignored (libfabric reads it only with FI_AFFINITY in
 *	@flags, which kofi does not take)
 * @wait_cond: FI_CQ_COND_NONE, or FI_CQ_COND_THRESHOLD: fi_cq_sread()'s
 *	@cond is then the number of entries to wait for (a value cast to a
 *	pointer, as libfabric reads it; at most @count)
 * @wait_set: NULL
 * @comp_handler: kofi: optional, see the top of this file
 */
struct fi_cq_attr {
	size_t size;
	u64 flags;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	int signaling_vector;
	enum fi_cq_wait_cond wait_cond;
	void *wait_set;
	kofi_cq_handler_t comp_handler;
};

struct fi_cq_entry {
	void *op_context;
};

struct fi_cq_msg_entry {
	void *op_context;
	u64 flags;
	size_t len;
};

struct fi_cq_data_entry {
	void *op_context;
	u64 flags;
	size_t len;
	void *buf;
	u64 data;
};

/* FI_CQ_FORMAT_TAGGED (fi_tagged.h): @tag is a tagged message's. */
struct fi_cq_tagged_entry {
	void *op_context;
	u64 flags;
	size_t len;
	void *buf;
	u64 data;
	u64 tag;
};

struct fi_cq_err_entry {
	void *op_context;
	u64 flags;
	size_t len;
	void *buf;
	u64 data;
	u64 tag;
	size_t olen;		/* bytes that did not fit (FI_ETRUNC) */
	int err;		/* positive FI_E* */
	int prov_errno;
	void *err_data;
	size_t err_data_size;
};

struct fid_cq {
	struct fid fid;
};

/* EQ events. */
enum {
	FI_NOTIFY,
	FI_CONNREQ,
	FI_CONNECTED,
	FI_SHUTDOWN,
	FI_MR_COMPLETE,
	FI_AV_COMPLETE,
	FI_JOIN_COMPLETE,
};

#define KOFI_EQ_SIZE_DEFAULT 256
#define KOFI_EQ_SIZE_MAX 4096
/* Largest entry an EQ carries: a CM entry with the most private data. */
#define KOFI_CM_DATA_MAX 256

/**
 * struct fi_eq_attr - attributes of an event queue
 * @size: entries the queue holds (0: KOFI_EQ_SIZE_DEFAULT)
 * @flags: 0
 * @wait_obj: FI_WAIT_NONE, FI_WAIT_UNSPEC or FI_WAIT_QUEUE
 * @signaling_vector: ignored
 * @wait_set: NULL
 * @event_handler: kofi: optional, see the top of this file
 */
struct fi_eq_attr {
	size_t size;
	u64 flags;
	enum fi_wait_obj wait_obj;
	int signaling_vector;
	void *wait_set;
	kofi_eq_handler_t event_handler;
};

struct fi_eq_entry {
	fid_t fid;
	void *context;
	u64 data;
};

struct fi_eq_err_entry {
	fid_t fid;
	void *context;
	u64 data;
	int err;		/* positive FI_E* */
	int prov_errno;
	void *err_data;		/* a rejection's private data (see fi_eq_readerr) */
	size_t err_data_size;	/* in: room at err_data, or 0; out: bytes there */
};

/* FI_CONNREQ, FI_CONNECTED and FI_SHUTDOWN; @data holds the peer's private data. */
struct fi_eq_cm_entry {
	fid_t fid;
	struct fi_info *info;
	u8 data[];
};

struct fid_eq {
	struct fid fid;
};

int fi_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
	       void *context);

ssize_t fi_cq_read(struct fid_cq *cq, void *buf, size_t count);
ssize_t fi_cq_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf, u64 flags);
ssize_t fi_cq_sread(struct fid_cq *cq, void *buf, size_t count, const void *cond, int timeout);
int fi_cq_signal(struct fid_cq *cq);
/*
 * As fi_cq_read()/fi_cq_sread(), with each entry's source in @src_addr: the
 * sender's fi_addr_t in the receiving FI_EP_RDM endpoint's AV (FI_SOURCE), or
 * FI_ADDR_NOTAVAIL (a sender not in the AV; transmit completions; FI_EP_MSG).
 */
ssize_t fi_cq_readfrom(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src_addr);
ssize_t fi_cq_sreadfrom(struct fid_cq *cq, void *buf, size_t count, fi_addr_t *src_addr,
			const void *cond, int timeout);

/*
 * The text of an error entry's prov_errno, copied into @buf (at most @len
 * bytes with the NUL; @buf returned) when @buf is set, else a static string;
 * NULL when @cq is not a CQ. A negative prov_errno is a kernel errno
 * (kofi_sock); a positive one a device's status (kofi_verbs: ib_wc_status).
 * @err_data is not read.
 */
const char *fi_cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data, char *buf,
			   size_t len);

ssize_t fi_eq_read(struct fid_eq *eq, u32 *event, void *buf, size_t len, u64 flags);
ssize_t fi_eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf, u64 flags);
ssize_t fi_eq_write(struct fid_eq *eq, u32 event, const void *buf, size_t len, u64 flags);
ssize_t fi_eq_sread(struct fid_eq *eq, u32 *event, void *buf, size_t len, int timeout,
		    u64 flags);
/* As fi_cq_strerror(), for an EQ error entry. */
const char *fi_eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data, char *buf,
			   size_t len);

#endif /* _KOFI_FI_EQ_H */
