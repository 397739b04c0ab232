/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kofi: kernel OpenFabrics Interfaces, fabric-level definitions.
 *
 * Mirrors libfabric's <rdma/fabric.h>: capabilities, modes, attributes,
 * struct fi_info, fids and the control calls. This header is the one source
 * of the kofi ABI: the Rust core and providers read it through bindgen.
 *
 * Unlike libfabric, every fi_* call is a real function exported by kofi.ko
 * (namespace KOFI), which checks its arguments and the object's state before
 * it dispatches to the provider. Objects are allocated and owned by the core;
 * see Documentation/kofi/overview.rst.
 */
#ifndef _KOFI_FABRIC_H
#define _KOFI_FABRIC_H

#include <linux/types.h>
#include <linux/uio.h>
#include <linux/bvec.h>
#include <linux/version.h>
#include <kofi/fi_errno.h>

/*
 * kofi's symbol namespace: a consumer module says MODULE_IMPORT_NS(KOFI_NS).
 * 6.13 made namespaces string literals; this is right for either kernel.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define KOFI_NS "KOFI"
#else
#define KOFI_NS KOFI
#endif

#define FI_MAJOR_VERSION 1
#define FI_MINOR_VERSION 4

#define FI_VERSION(major, minor) (((major) << 16) | (minor))
#define FI_MAJOR(version) ((version) >> 16)
#define FI_MINOR(version) ((version) & 0xFFFF)
#define FI_VERSION_GE(v1, v2) ((v1) >= (v2))

/* The version this header describes, for bindgen (it cannot expand FI_VERSION). */
#define KOFI_ABI_VERSION ((FI_MAJOR_VERSION << 16) | FI_MINOR_VERSION)

#define FI_NAME_MAX 64

typedef u64 fi_addr_t;
#define FI_ADDR_UNSPEC ((fi_addr_t)-1)
#define FI_ADDR_NOTAVAIL ((fi_addr_t)-1)

/* Capabilities (fi_info.caps) and operation flags share one bit space. */
#define FI_MSG			(1ULL << 1)
#define FI_RMA			(1ULL << 2)
#define FI_TAGGED		(1ULL << 3)
#define FI_ATOMIC		(1ULL << 4)
#define FI_READ			(1ULL << 8)
#define FI_WRITE		(1ULL << 9)
#define FI_RECV			(1ULL << 10)
#define FI_SEND			(1ULL << 11)
#define FI_TRANSMIT		FI_SEND
#define FI_REMOTE_READ		(1ULL << 12)
#define FI_REMOTE_WRITE		(1ULL << 13)
#define FI_MULTI_RECV		(1ULL << 16)
#define FI_REMOTE_CQ_DATA	(1ULL << 17)
#define FI_MORE			(1ULL << 18)
#define FI_PEEK			(1ULL << 19)
#define FI_TRIGGER		(1ULL << 20)
#define FI_FENCE		(1ULL << 21)
#define FI_COMPLETION		(1ULL << 24)
#define FI_EVENT		FI_COMPLETION
#define FI_INJECT		(1ULL << 25)
#define FI_INJECT_COMPLETE	(1ULL << 26)
#define FI_TRANSMIT_COMPLETE	(1ULL << 27)
#define FI_DELIVERY_COMPLETE	(1ULL << 28)
#define FI_LOCAL_COMM		(1ULL << 51)
#define FI_REMOTE_COMM		(1ULL << 52)
#define FI_PROV_ATTR_ONLY	(1ULL << 54)
#define FI_NUMERICHOST		(1ULL << 55)
#define FI_RMA_EVENT		(1ULL << 56)
#define FI_SOURCE		(1ULL << 57)
#define FI_NAMED_RX_CTX		(1ULL << 58)
#define FI_DIRECTED_RECV	(1ULL << 59)

/* Mode bits (fi_info.mode): what the consumer agrees to do for the provider. */
#define FI_CONTEXT		(1ULL << 59)
#define FI_MSG_PREFIX		(1ULL << 58)
#define FI_ASYNC_IOV		(1ULL << 57)
#define FI_RX_CQ_DATA		(1ULL << 56)
#define FI_LOCAL_MR		(1ULL << 55)

/* Memory registration modes (fi_domain_attr.mr_mode). */
#define FI_MR_LOCAL		(1 << 0)
#define FI_MR_RAW		(1 << 1)
#define FI_MR_VIRT_ADDR		(1 << 2)
#define FI_MR_ALLOCATED		(1 << 3)
#define FI_MR_PROV_KEY		(1 << 4)
#define FI_MR_MMU_NOTIFY	(1 << 5)
#define FI_MR_RMA_EVENT		(1 << 6)
#define FI_MR_ENDPOINT		(1 << 7)

/* Message ordering (fi_tx_attr/fi_rx_attr.msg_order) */
#define FI_ORDER_NONE		0ULL
#define FI_ORDER_RAR		(1ULL << 0)
#define FI_ORDER_RAW		(1ULL << 1)
#define FI_ORDER_RAS		(1ULL << 2)
#define FI_ORDER_WAR		(1ULL << 3)
#define FI_ORDER_WAW		(1ULL << 4)
#define FI_ORDER_WAS		(1ULL << 5)
#define FI_ORDER_SAR		(1ULL << 6)
#define FI_ORDER_SAW		(1ULL << 7)
#define FI_ORDER_SAS		(1ULL << 8)
#define FI_ORDER_STRICT		0x1FFULL
#define FI_ORDER_DATA		(1ULL << 16)

enum fi_ep_type {
	FI_EP_UNSPEC,
	FI_EP_MSG,
	FI_EP_DGRAM,
	FI_EP_RDM,
};

/* Address formats (fi_info.addr_format). */
enum {
	FI_FORMAT_UNSPEC,	/* void * */
	FI_SOCKADDR,		/* struct sockaddr */
	FI_SOCKADDR_IN,		/* struct sockaddr_in */
	FI_SOCKADDR_IN6,	/* struct sockaddr_in6 */
	FI_SOCKADDR_IB,		/* struct sockaddr_ib */
};

enum fi_threading {
	FI_THREAD_UNSPEC,
	FI_THREAD_SAFE,
	FI_THREAD_FID,
	FI_THREAD_DOMAIN,
	FI_THREAD_COMPLETION,
	FI_THREAD_ENDPOINT,
};

enum fi_progress {
	FI_PROGRESS_UNSPEC,
	FI_PROGRESS_AUTO,
	FI_PROGRESS_MANUAL,
};

enum fi_resource_mgmt {
	FI_RM_UNSPEC,
	FI_RM_DISABLED,
	FI_RM_ENABLED,
};

enum fi_av_type {
	FI_AV_UNSPEC,
	FI_AV_MAP,
	FI_AV_TABLE,
};

struct fi_tx_attr {
	u64 caps;
	u64 mode;
	u64 op_flags;
	u64 msg_order;
	u64 comp_order;
	size_t inject_size;	/* largest fi_inject/fi_inject_write */
	size_t size;		/* transmit queue depth */
	size_t iov_limit;	/* most iovs in one send or RMA */
	size_t rma_iov_limit;	/* most fi_rma_iov in one RMA */
};

struct fi_rx_attr {
	u64 caps;
	u64 mode;
	u64 op_flags;
	u64 msg_order;
	u64 comp_order;
	size_t total_buffered_recv;
	size_t size;		/* receive queue depth */
	size_t iov_limit;
};

struct fi_ep_attr {
	enum fi_ep_type type;
	u32 protocol;
	u32 protocol_version;
	size_t max_msg_size;
	size_t msg_prefix_size;
	size_t max_order_raw_size;
	size_t max_order_war_size;
	size_t max_order_waw_size;
	u64 mem_tag_format;
	size_t tx_ctx_cnt;
	size_t rx_ctx_cnt;
};

struct fid_fabric;
struct fid_domain;

struct fi_domain_attr {
	struct fid_domain *domain;
	char *name;
	enum fi_threading threading;
	enum fi_progress control_progress;
	enum fi_progress data_progress;
	enum fi_resource_mgmt resource_mgmt;
	enum fi_av_type av_type;
	int mr_mode;
	size_t mr_key_size;
	size_t cq_data_size;	/* bytes of remote CQ data (0: none) */
	size_t cq_cnt;
	size_t ep_cnt;
	size_t tx_ctx_cnt;
	size_t rx_ctx_cnt;
	size_t max_ep_tx_ctx;
	size_t max_ep_rx_ctx;
	size_t mr_iov_limit;
	u64 caps;
	u64 mode;
	size_t mr_cnt;
};

struct fi_fabric_attr {
	struct fid_fabric *fabric;
	char *name;
	char *prov_name;
	u32 prov_version;
	u32 api_version;
};

/* Protocols (fi_ep_attr.protocol). */
enum {
	FI_PROTO_UNSPEC,
	FI_PROTO_RDMA_CM_IB_RC,
	FI_PROTO_IWARP,
	FI_PROTO_SOCK_TCP = 10,
	/*
	 * kofi: an FI_EP_RDM endpoint the core builds over the provider's
	 * FI_EP_MSG ones (rdm.rst); protocol_version holds the MSG info's
	 * protocol. A provider's own RDM offer keeps its protocol.
	 */
	FI_PROTO_KOFI_RDM = 0x4b52,
};

struct fid;
typedef struct fid *fid_t;

/**
 * struct fi_info - a description of one way to reach the fabric
 *
 * Lists of these come from fi_getinfo() and are freed with fi_freeinfo().
 * Every pointer in it is owned by the info (fi_dupinfo() copies deeply).
 * On an FI_CONNREQ event, @handle names the pending connection: pass the
 * info to fi_endpoint() and fi_accept(), or to fi_reject().
 */
struct fi_info {
	struct fi_info *next;
	u64 caps;
	u64 mode;
	u32 addr_format;
	size_t src_addrlen;
	size_t dest_addrlen;
	void *src_addr;
	void *dest_addr;
	fid_t handle;
	struct fi_tx_attr *tx_attr;
	struct fi_rx_attr *rx_attr;
	struct fi_ep_attr *ep_attr;
	struct fi_domain_attr *domain_attr;
	struct fi_fabric_attr *fabric_attr;
};

/* Object classes (fid.fclass). */
enum {
	FI_CLASS_UNSPEC,
	FI_CLASS_FABRIC,
	FI_CLASS_DOMAIN,
	FI_CLASS_EP,
	FI_CLASS_SEP,
	FI_CLASS_RX_CTX,
	FI_CLASS_SRX_CTX,
	FI_CLASS_TX_CTX,
	FI_CLASS_STX_CTX,
	FI_CLASS_PEP,
	FI_CLASS_INTERFACE,
	FI_CLASS_AV,
	FI_CLASS_MR,
	FI_CLASS_EQ,
	FI_CLASS_CQ,
	FI_CLASS_CNTR,
	FI_CLASS_WAIT,
	FI_CLASS_POLL,
	FI_CLASS_CONNREQ,
};

/**
 * struct fid - the head of every kofi object
 * @fclass: FI_CLASS_*; the core checks it on every call
 * @context: the consumer's context, as passed when the object was opened
 * @prov_data: the provider's state for this object, set by its open op
 *
 * Objects are allocated, reference-counted and freed by the core; a
 * consumer or provider must not free one itself, only fi_close() it.
 */
struct fid {
	size_t fclass;
	void *context;
	void *prov_data;
};

struct fid_fabric {
	struct fid fid;
	u32 api_version;
};

/* Control commands (fi_control). */
enum {
	FI_GETFIDFLAG,
	FI_SETFIDFLAG,
	FI_GETOPSFLAG,
	FI_SETOPSFLAG,
	FI_ALIAS,
	FI_GETWAIT,
	FI_ENABLE,
	FI_BACKLOG,
	FI_GET_RAW_MR,
	FI_MAP_RAW_MR,
	FI_UNMAP_KEY,
	FI_QUEUE_WORK,
	FI_CANCEL_WORK,
	FI_FLUSH_WORK,
	FI_REFRESH,
	FI_DUP,
	FI_GETWAITOBJ,
	FI_GETVAL,
	FI_SETVAL,
};

/* fi_getinfo() flags, beyond FI_SOURCE and FI_NUMERICHOST. */
#define KOFI_GETINFO_FLAGS (FI_SOURCE | FI_NUMERICHOST | FI_PROV_ATTR_ONLY)

/**
 * fi_version() - the ABI version of the loaded kofi core
 *
 * Return: FI_VERSION(major, minor). A consumer built against a different
 * major version must not use the core.
 * Context: any.
 */
u32 fi_version(void);

int fi_getinfo(u32 version, const char *node, const char *service, u64 flags,
	       const struct fi_info *hints, struct fi_info **info);
void fi_freeinfo(struct fi_info *info);
struct fi_info *fi_dupinfo(const struct fi_info *info);
struct fi_info *fi_allocinfo(void);

int fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
int fi_close(struct fid *fid);
int fi_control(struct fid *fid, int command, void *arg);

#endif /* _KOFI_FABRIC_H */
