/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kofi: the provider interface ("exports down").
 *
 * A provider module fills a static struct kofi_provider and calls
 * kofi_provider_register(KOFI_ABI_VERSION, &prov) at load and
 * kofi_provider_deregister(&prov) at unload. The core pins the provider's
 * module while any fabric of it is open, so rmmod of a provider in use fails.
 *
 * The core allocates every object (struct fid_*) and calls the provider's
 * open op to set it up; the provider keeps its state in fid.prov_data. The
 * core has checked the arguments and the object's state before any op runs,
 * and calls no op with a lock of its own held, so ops may sleep unless said
 * otherwise. The close ops must not return before the provider is done with
 * the object: no completion or event for it may be reported after.
 *
 * The many forms of each data call reach the provider as one: fi_send,
 * fi_sendv, fi_inject and fi_senddata as sendmsg (with FI_INJECT or
 * FI_REMOTE_CQ_DATA in @flags); likewise recvmsg, readmsg, writemsg. An op
 * left NULL makes the call return -FI_ENOSYS.
 */
#ifndef _KOFI_PROVIDER_H
#define _KOFI_PROVIDER_H

#include <linux/module.h>
#include <linux/uio.h>
#include <linux/socket.h>
#include <kofi/fabric.h>
#include <kofi/fi_domain.h>
#include <kofi/fi_endpoint.h>
#include <kofi/fi_cm.h>
#include <kofi/fi_rma.h>
#include <kofi/fi_tagged.h>
#include <kofi/fi_atomic.h>
#include <kofi/fi_eq.h>

struct kofi_domain_ops {
	int (*open)(struct fid_fabric *fabric, const struct fi_info *info,
		    struct fid_domain *domain);
	void (*close)(struct fid_domain *domain);
	/*
	 * Optional: register @mr with the provider (hardware, say). The core
	 * has copied the iovs and, unless the provider sets mr->key here,
	 * assigns the key after. The core sets mr->mem_desc to @mr itself
	 * after: a descriptor a data call carries is a region of the
	 * endpoint's domain the core has checked (fi_mr_desc() in mr.rst), and
	 * the provider finds its state of the region through it.
	 */
	int (*mr_reg)(struct fid_domain *domain, struct fid_mr *mr, const struct fi_mr_attr *attr,
		      u64 flags);
	void (*mr_close)(struct fid_mr *mr);
	/*
	 * ABI 1.2, optional: in an FI_MR_ENDPOINT domain, make @mr usable for
	 * operations posted on @ep after this returns (and for its peer's RMA
	 * once such an operation carried the key), without waiting for the
	 * registration to complete. The core has checked that @mr is bound to
	 * @ep, an FI_EP_MSG endpoint of @domain, and not enabled yet. NULL: the
	 * region is usable as registered.
	 */
	int (*mr_enable)(struct fid_domain *domain, struct fid_mr *mr, struct fid_ep *ep);
};

/**
 * struct kofi_atomic - an atomic operation as the provider gets it
 * @msg: the operation and its operands
 * @comparev: @compare_count: compare values (fi_compare_atomic*), or none
 * @resultv: @result_count: where the old values go (fetching forms), or none
 */
struct kofi_atomic {
	const struct fi_msg_atomic *msg;
	const struct fi_ioc *comparev;
	size_t compare_count;
	struct fi_ioc *resultv;
	size_t result_count;
};

struct kofi_ep_ops {
	int (*open)(struct fid_domain *domain, const struct fi_info *info, struct fid_ep *ep);
	void (*close)(struct fid_ep *ep);
	/* Optional: the core has recorded the binding of a CQ or an EQ. */
	int (*bind)(struct fid_ep *ep, struct fid *bfid, u64 flags);
	int (*enable)(struct fid_ep *ep);
	int (*connect)(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen);
	int (*accept)(struct fid_ep *ep, const void *param, size_t paramlen);
	int (*shutdown)(struct fid_ep *ep, u64 flags);
	int (*getname)(struct fid_ep *ep, void *addr, size_t *addrlen);
	int (*getpeer)(struct fid_ep *ep, void *addr, size_t *addrlen);
	int (*getopt)(struct fid_ep *ep, int level, int optname, void *optval, size_t *optlen);
	int (*setopt)(struct fid_ep *ep, int level, int optname, const void *optval,
		      size_t optlen);
	ssize_t (*sendmsg)(struct fid_ep *ep, const struct fi_msg *msg, u64 flags);
	ssize_t (*recvmsg)(struct fid_ep *ep, const struct fi_msg *msg, u64 flags);
	ssize_t (*readmsg)(struct fid_ep *ep, const struct fi_msg_rma *msg, u64 flags);
	ssize_t (*writemsg)(struct fid_ep *ep, const struct fi_msg_rma *msg, u64 flags);
	/*
	 * ABI 1.1, optional: takes back the oldest receive posted with
	 * @context that no data has reached yet, reports it with
	 * kofi_ep_complete_error(FI_ECANCELED) and returns 0; -FI_EBUSY when
	 * that receive is being filled (it completes as usual), -FI_ENOENT when
	 * none waits. The core calls it only for providers built for 1.1 on.
	 */
	ssize_t (*cancel)(struct fid_ep *ep, void *context);
	/*
	 * ABI 1.3, optional: tagged messages (fi_tagged.h), for endpoints whose
	 * info offers FI_TAGGED. The forms reach the provider as these two, as
	 * the untagged ones do; trecvmsg gets FI_PEEK, FI_CLAIM and FI_DISCARD
	 * as the consumer gave them (checked to be a valid combination). The
	 * core calls them only for providers built for 1.3 on.
	 */
	ssize_t (*tsendmsg)(struct fid_ep *ep, const struct fi_msg_tagged *msg, u64 flags);
	ssize_t (*trecvmsg)(struct fid_ep *ep, const struct fi_msg_tagged *msg, u64 flags);
	/*
	 * ABI 1.3, optional: atomic operations (fi_atomic.h), for endpoints
	 * whose info offers FI_ATOMIC. The three forms reach the provider as
	 * this one op; the core checked the arrays (present, element counts
	 * that agree); the provider refuses a datatype or op it does not
	 * serve (-FI_EOPNOTSUPP).
	 */
	ssize_t (*atomicmsg)(struct fid_ep *ep, const struct kofi_atomic *atomic, u64 flags);
	/*
	 * ABI 1.4, optional: make the progress the endpoint can, without
	 * waiting for its peer (read what its transport holds, fill posted
	 * receives, report them, send what is queued). The core calls it in a
	 * consumer's thread sleeping in fi_cq_sread() of the CQ @ep reports
	 * receives to, after the provider asked with
	 * kofi_ep_progress_request(), and never after the close op began. (For
	 * the core's RDM endpoints' MSG endpoints, the thread may be the RDM
	 * endpoint's work item when no consumer sleeps.)
	 */
	void (*progress)(struct fid_ep *ep);
};

struct kofi_pep_ops {
	int (*open)(struct fid_fabric *fabric, const struct fi_info *info, struct fid_pep *pep);
	void (*close)(struct fid_pep *pep);
	int (*listen)(struct fid_pep *pep);
	/* @handle is the request's; the core releases it after. */
	int (*reject)(struct fid_pep *pep, struct fid *handle, const void *param, size_t paramlen);
	int (*getname)(struct fid_pep *pep, void *addr, size_t *addrlen);
	/*
	 * The last reference to a connection request (from
	 * kofi_connreq_alloc()) is gone: accepted, rejected, or its info freed
	 * unanswered. Called once per request, in process context.
	 */
	void (*connreq_release)(struct fid *handle);
};

/**
 * struct kofi_provider - a provider's dispatch table
 * @name: unique, at most FI_NAME_MAX - 1 characters; fi_getinfo hints name it
 *	in fabric_attr->prov_name, and the module carries alias "kofi-<name>"
 * @version: the provider's own version, FI_VERSION(major, minor)
 * @owner: THIS_MODULE
 * @priority: fi_getinfo lists providers of higher priority first
 * @getinfo: the infos the provider offers for @node/@service; build them with
 *	fi_allocinfo()/fi_dupinfo() (the core filters them by @hints again
 *	and frees them with fi_freeinfo())
 * @freeinfo: optional: called on each of the provider's infos just before
 *	the core frees it
 * @fabric: set up @fabric (allocated by the core) for @attr
 * @fabric_close: undo @fabric
 * @cleanup: optional: called at deregistration
 * @domain_ops: @ep_ops: @pep_ops: the per-object dispatch tables
 * @core_private: the core's; zero it
 */
struct kofi_provider {
	const char *name;
	u32 version;
	struct module *owner;
	int priority;
	int (*getinfo)(u32 version, const char *node, const char *service, u64 flags,
		       const struct fi_info *hints, struct fi_info **info);
	void (*freeinfo)(struct fi_info *info);
	int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric *fabric, void *context);
	void (*fabric_close)(struct fid_fabric *fabric);
	void (*cleanup)(void);
	const struct kofi_domain_ops *domain_ops;
	const struct kofi_ep_ops *ep_ops;
	const struct kofi_pep_ops *pep_ops;
	void *core_private;
};

int kofi_provider_register(u32 version, struct kofi_provider *prov);
void kofi_provider_deregister(struct kofi_provider *prov);

/*
 * Reporting completions and events. All may be called from process or
 * softirq context (not hardirq), with provider locks held.
 */

/**
 * kofi_ep_complete() - report a completed operation of @ep
 * @flags: FI_SEND, FI_RECV, FI_READ, FI_WRITE or FI_REMOTE_WRITE, with FI_MSG
 *	or FI_RMA (FI_TAGGED: kofi_ep_complete_tagged()), FI_REMOTE_CQ_DATA when
 *	@data is valid, and the operation's FI_COMPLETION
 *
 * Goes to the CQ bound for transmit or for receive, as @flags says, and is
 * dropped when that CQ was bound with FI_SELECTIVE_COMPLETION and @flags
 * lacks FI_COMPLETION. Return: 0, -FI_EOVERRUN when the CQ was full (the
 * overrun is reported to the consumer in order), -FI_ENOCQ when none is bound.
 */
int kofi_ep_complete(struct fid_ep *ep, u64 flags, void *op_context, size_t len, void *buf,
		     u64 data);
/*
 * As kofi_ep_complete(), for a tagged message (@flags with FI_TAGGED): @tag
 * is the message's, shown in FI_CQ_FORMAT_TAGGED entries.
 */
int kofi_ep_complete_tagged(struct fid_ep *ep, u64 flags, void *op_context, size_t len,
			    void *buf, u64 data, u64 tag);
/*
 * As kofi_ep_complete(), for a failed operation; @err->err is a positive
 * FI_E* (@err->tag: a tagged receive's or message's tag).
 */
int kofi_ep_complete_error(struct fid_ep *ep, const struct fi_cq_err_entry *err);

/**
 * kofi_ep_progress_request() - have a consumer's thread make @ep's progress
 *
 * For a provider whose transport calls it back in softirq (data arrived):
 * when a consumer sleeps in fi_cq_sread() on the CQ @ep reports receives
 * to, that thread is woken to call @ep's progress op, saving the provider
 * a hand-off to its own work item and the wake-up after it. Any context
 * but hardirq.
 *
 * Return: true when a consumer's thread will call the progress op (the
 * provider need do nothing more); false when none sleeps there (or too
 * many endpoints wait for it already): the provider makes the progress
 * itself, as it would without this call.
 */
bool kofi_ep_progress_request(struct fid_ep *ep);

/* FI_CONNECTED or FI_SHUTDOWN for @ep, with the peer's private data. */
int kofi_ep_event(struct fid_ep *ep, u32 event, const void *data, size_t datalen);
/* A connection error for @ep (@err: positive FI_E*, e.g. FI_ECONNREFUSED). */
int kofi_ep_event_error(struct fid_ep *ep, int err, int prov_errno, const void *data,
			size_t datalen);

/*
 * @pep no longer listens (its device was removed): an error entry for it on
 * its EQ (@err: positive FI_E*, e.g. FI_ENODEV). The consumer may listen again.
 */
int kofi_pep_event_error(struct fid_pep *pep, int err, int prov_errno);
/* A new connection request's handle, for the info of an FI_CONNREQ. Process context. */
struct fid *kofi_connreq_alloc(struct fid_pep *pep, void *prov_data);
/* FI_CONNREQ on @pep's EQ; @info (with info->handle set) passes to the consumer. */
int kofi_pep_connreq(struct fid_pep *pep, struct fi_info *info, const void *data,
		     size_t datalen);

/*
 * The core's memory registration table, for software providers that serve
 * RMA themselves. kofi_mr_get() finds the region by @key, checks that
 * [@addr, @addr + @len) lies in it and that it grants @access
 * (FI_REMOTE_READ or FI_REMOTE_WRITE), and holds it: fi_close() of the
 * region waits until kofi_mr_put(). kofi_mr_iter() sets @iter over those
 * bytes (@direction: ITER_SOURCE to read from the region, ITER_DEST to write
 * into it).
 */
int kofi_mr_get(struct fid_domain *domain, u64 key, u64 addr, size_t len, u64 access,
		struct fid_mr **mr);
void kofi_mr_iter(struct fid_mr *mr, unsigned int direction, u64 addr, size_t len,
		  struct iov_iter *iter);
void kofi_mr_put(struct fid_mr *mr);

/*
 * For IP providers: parses a numeric IPv4 or IPv6 @node (NULL: the IPv4 any
 * address) and @port into @addr; the length of @addr's family's sockaddr.
 */
int kofi_sockaddr_parse(const char *node, u16 port, struct sockaddr_storage *addr);
size_t kofi_sockaddr_len(const struct sockaddr_storage *addr);

#endif /* _KOFI_PROVIDER_H */
