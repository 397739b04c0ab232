/* SPDX-License-Identifier: GPL-2.0 */
/* kofi: endpoints and messages, after libfabric's <rdma/fi_endpoint.h>. */
#ifndef _KOFI_FI_ENDPOINT_H
#define _KOFI_FI_ENDPOINT_H

#include <kofi/fabric.h>
#include <kofi/fi_domain.h>

struct fid_ep {
	struct fid fid;
};

struct fid_pep {
	struct fid fid;
};

/**
 * struct fi_msg - a message for fi_sendmsg()/fi_recvmsg()
 * @msg_iov: the buffers, as kvecs; or NULL, with @msg_bvec set
 * @msg_bvec: kofi: the buffers, as bio_vecs (page-based I/O); or NULL
 * @desc: per-iov descriptors from fi_mr_desc() (each NULL or of the region
 *        holding that buffer), or NULL
 * @iov_count: entries in the one array used; 0 for an empty message
 * @addr: the peer, for connectionless endpoints; ignored on FI_EP_MSG
 * @context: returned in the completion
 * @data: remote CQ data, sent with FI_REMOTE_CQ_DATA
 */
struct fi_msg {
	const struct kvec *msg_iov;
	const struct bio_vec *msg_bvec;
	void **desc;
	size_t iov_count;
	fi_addr_t addr;
	void *context;
	u64 data;
};

/* fi_ep_bind() flags. */
#define FI_SELECTIVE_COMPLETION (1ULL << 59)

/* fi_getopt()/fi_setopt() levels and options. */
enum {
	FI_OPT_ENDPOINT,
};

enum {
	FI_OPT_MIN_MULTI_RECV,	/* size_t */
	FI_OPT_CM_DATA_SIZE,	/* size_t, read-only */
	/*
	 * kofi, FI_EP_RDM endpoints: the connections (to peers, over the
	 * provider's MSG endpoints) kept open; beyond it the least recently
	 * used idle one is closed, without losing anything sent on it.
	 * size_t, at least 1; KOFI_RDM_CONN_CACHE_DEFAULT.
	 */
	KOFI_OPT_RDM_CONN_CACHE = 0x1000,
	KOFI_OPT_RDM_CONNS,	/* size_t, read-only: connections open now */
	/*
	 * kofi, FI_EP_RDM endpoints: the peer records kept (one per name the
	 * endpoint sent to or heard from); beyond it the record of a peer with
	 * nothing open, queued or unread is reused, and a new peer is refused
	 * only while every record is in use. size_t, 1 to KOFI_RDM_PEERS_MAX
	 * (the default); a lower bound applies to records made after it.
	 */
	KOFI_OPT_RDM_PEERS,
};

#define KOFI_RDM_CONN_CACHE_DEFAULT 64
#define KOFI_RDM_PEERS_MAX 4096

int fi_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		void *context);
int fi_passive_ep(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
		  void *context);
int fi_ep_bind(struct fid_ep *ep, struct fid *bfid, u64 flags);
int fi_pep_bind(struct fid_pep *pep, struct fid *bfid, u64 flags);
int fi_enable(struct fid_ep *ep);
int fi_getopt(struct fid *fid, int level, int optname, void *optval, size_t *optlen);
int fi_setopt(struct fid *fid, int level, int optname, const void *optval, size_t optlen);

ssize_t fi_send(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr,
		void *context);
ssize_t fi_sendv(struct fid_ep *ep, const struct kvec *iov, void **desc, size_t count,
		 fi_addr_t dest_addr, void *context);
ssize_t fi_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, u64 flags);
ssize_t fi_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr);
ssize_t fi_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc, u64 data,
		    fi_addr_t dest_addr, void *context);
/* fi_inject with remote CQ data. */
ssize_t fi_injectdata(struct fid_ep *ep, const void *buf, size_t len, u64 data,
		      fi_addr_t dest_addr);
ssize_t fi_recv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr,
		void *context);
ssize_t fi_recvv(struct fid_ep *ep, const struct kvec *iov, void **desc, size_t count,
		 fi_addr_t src_addr, void *context);
ssize_t fi_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, u64 flags);

/*
 * Takes back a posted receive of endpoint @fid: the oldest one posted with
 * @context that no data has reached yet completes with an FI_ECANCELED
 * error entry carrying @context (reported whatever FI_COMPLETION said).
 * Returns 0; -FI_EBUSY when that receive is being filled (it completes as
 * usual); -FI_ENOENT when none is waiting (it completed, or never was);
 * -EINVAL when @fid is no endpoint; -FI_ENOSYS when its provider cannot.
 * Sends and RMA, once posted, run to their completion.
 */
ssize_t fi_cancel(struct fid *fid, void *context);

/*
 * The Reliable Datagram forms the kofi slides name: fi_send()/fi_recv() to or
 * from an address of the endpoint's AV (FI_ADDR_UNSPEC: from any peer).
 */
ssize_t fi_sendto(struct fid_ep *ep, const void *buf, size_t len, void *desc,
		  fi_addr_t dest_addr, void *context);
ssize_t fi_recvfrom(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr,
		    void *context);

#endif /* _KOFI_FI_ENDPOINT_H */
