/* SPDX-License-Identifier: GPL-2.0 */
/* kofi: remote memory access, after libfabric's <rdma/fi_rma.h> (fi_rma(3)). */
#ifndef _KOFI_FI_RMA_H
#define _KOFI_FI_RMA_H

#include <kofi/fi_endpoint.h>

/* A remote buffer: @addr is an offset in the region named by @key (see fi_mr_attr). */
struct fi_rma_iov {
	u64 addr;
	size_t len;
	u64 key;
};

/**
 * struct fi_msg_rma - an RMA for fi_readmsg()/fi_writemsg()
 * @msg_iov: local buffers as kvecs; or NULL, with @msg_bvec set
 * @msg_bvec: kofi: local buffers as bio_vecs; or NULL
 * @desc: per-iov descriptors, or NULL
 * @iov_count: entries in the local array
 * @addr: the peer, for connectionless endpoints
 * @rma_iov: the remote buffers; their lengths add up to the local ones'
 * @rma_iov_count: entries in @rma_iov
 * @context: returned in the completion
 * @data: remote CQ data for writes with FI_REMOTE_CQ_DATA
 */
struct fi_msg_rma {
	const struct kvec *msg_iov;
	const struct bio_vec *msg_bvec;
	void **desc;
	size_t iov_count;
	fi_addr_t addr;
	const struct fi_rma_iov *rma_iov;
	size_t rma_iov_count;
	void *context;
	u64 data;
};

ssize_t fi_read(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr,
		u64 addr, u64 key, void *context);
ssize_t fi_readv(struct fid_ep *ep, const struct kvec *iov, void **desc, size_t count,
		 fi_addr_t src_addr, u64 addr, u64 key, void *context);
ssize_t fi_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg, u64 flags);
ssize_t fi_write(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr,
		 u64 addr, u64 key, void *context);
ssize_t fi_writev(struct fid_ep *ep, const struct kvec *iov, void **desc, size_t count,
		  fi_addr_t dest_addr, u64 addr, u64 key, void *context);
ssize_t fi_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg, u64 flags);
ssize_t fi_inject_write(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr,
			u64 addr, u64 key);
ssize_t fi_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc, u64 data,
		     fi_addr_t dest_addr, u64 addr, u64 key, void *context);
/* fi_inject_write with remote CQ data. */
ssize_t fi_inject_writedata(struct fid_ep *ep, const void *buf, size_t len, u64 data,
			    fi_addr_t dest_addr, u64 addr, u64 key);

#endif /* _KOFI_FI_RMA_H */
