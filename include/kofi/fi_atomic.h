/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kofi: atomic operations, after libfabric's <rdma/fi_atomic.h> (fi_atomic(3)).
 *
 * An atomic operation applies @op element by element to an array of
 * @datatype in a peer's region (fi_rma_ioc: offset, element count, key), in
 * one step with respect to every other atomic operation on that memory:
 * fi_atomic* updates it, fi_fetch_atomic* also returns the old values,
 * fi_compare_atomic* updates where the compare values say. The endpoint
 * needs FI_ATOMIC in its caps (kofi offers it on FI_EP_RDM endpoints);
 * elsewhere every call returns -FI_EOPNOTSUPP. What is supported is what
 * fi_query_atomic() and the fi_*atomicvalid() calls say (atomic.rst).
 */
#ifndef _KOFI_FI_ATOMIC_H
#define _KOFI_FI_ATOMIC_H

#include <kofi/fi_rma.h>

enum fi_datatype {
	FI_INT8,
	FI_UINT8,
	FI_INT16,
	FI_UINT16,
	FI_INT32,
	FI_UINT32,
	FI_INT64,
	FI_UINT64,
	FI_FLOAT,
	FI_DOUBLE,
	FI_FLOAT_COMPLEX,
	FI_DOUBLE_COMPLEX,
	FI_LONG_DOUBLE,
	FI_LONG_DOUBLE_COMPLEX,
	FI_DATATYPE_LAST
};

enum fi_op {
	FI_MIN,
	FI_MAX,
	FI_SUM,
	FI_PROD,
	FI_LOR,
	FI_LAND,
	FI_BOR,
	FI_BAND,
	FI_LXOR,
	FI_BXOR,
	FI_ATOMIC_READ,
	FI_ATOMIC_WRITE,
	FI_CSWAP,
	FI_CSWAP_NE,
	FI_CSWAP_LE,
	FI_CSWAP_LT,
	FI_CSWAP_GE,
	FI_CSWAP_GT,
	FI_MSWAP,
	FI_ATOMIC_OP_LAST
};

/* fi_query_atomic() flags: the fetching or the comparing form. */
#define FI_FETCH_ATOMIC		(1ULL << 58)
#define FI_COMPARE_ATOMIC	(1ULL << 59)

/* Local elements: @count elements of the operation's datatype at @addr. */
struct fi_ioc {
	void *addr;
	size_t count;
};

/* Remote elements: @count elements at offset @addr of the region @key names. */
struct fi_rma_ioc {
	u64 addr;
	size_t count;
	u64 key;
};

/**
 * struct fi_msg_atomic - an atomic operation for fi_*atomicmsg()
 * @msg_iov: the operands (what fi_atomic adds, writes, compares with ...)
 * @desc: per-iov descriptors, or NULL
 * @iov_count: entries in @msg_iov
 * @addr: the peer, for connectionless endpoints
 * @rma_iov: the target elements; their counts add up to the operands'
 * @rma_iov_count: entries in @rma_iov
 * @datatype: @op: what is done
 * @context: returned in the completion
 * @data: remote CQ data (not offered by kofi: FI_REMOTE_CQ_DATA is refused)
 */
struct fi_msg_atomic {
	const struct fi_ioc *msg_iov;
	void **desc;
	size_t iov_count;
	fi_addr_t addr;
	const struct fi_rma_ioc *rma_iov;
	size_t rma_iov_count;
	enum fi_datatype datatype;
	enum fi_op op;
	void *context;
	u64 data;
};

/* What fi_query_atomic() says: elements one operation takes, bytes of one. */
struct fi_atomic_attr {
	size_t count;
	size_t size;
};

ssize_t fi_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc,
		  fi_addr_t dest_addr, u64 addr, u64 key, enum fi_datatype datatype,
		  enum fi_op op, void *context);
ssize_t fi_atomicv(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
		   fi_addr_t dest_addr, u64 addr, u64 key, enum fi_datatype datatype,
		   enum fi_op op, void *context);
ssize_t fi_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg, u64 flags);
ssize_t fi_inject_atomic(struct fid_ep *ep, const void *buf, size_t count, fi_addr_t dest_addr,
			 u64 addr, u64 key, enum fi_datatype datatype, enum fi_op op);
ssize_t fi_fetch_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			void *result, void *result_desc, fi_addr_t dest_addr, u64 addr, u64 key,
			enum fi_datatype datatype, enum fi_op op, void *context);
ssize_t fi_fetch_atomicv(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			 struct fi_ioc *resultv, void **result_desc, size_t result_count,
			 fi_addr_t dest_addr, u64 addr, u64 key, enum fi_datatype datatype,
			 enum fi_op op, void *context);
ssize_t fi_fetch_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			   struct fi_ioc *resultv, void **result_desc, size_t result_count,
			   u64 flags);
ssize_t fi_compare_atomic(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			  const void *compare, void *compare_desc, void *result, void *result_desc,
			  fi_addr_t dest_addr, u64 addr, u64 key, enum fi_datatype datatype,
			  enum fi_op op, void *context);
ssize_t fi_compare_atomicv(struct fid_ep *ep, const struct fi_ioc *iov, void **desc, size_t count,
			   const struct fi_ioc *comparev, void **compare_desc, size_t compare_count,
			   struct fi_ioc *resultv, void **result_desc, size_t result_count,
			   fi_addr_t dest_addr, u64 addr, u64 key, enum fi_datatype datatype,
			   enum fi_op op, void *context);
ssize_t fi_compare_atomicmsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			     const struct fi_ioc *comparev, void **compare_desc, size_t compare_count,
			     struct fi_ioc *resultv, void **result_desc, size_t result_count,
			     u64 flags);
int fi_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op, size_t *count);
int fi_fetch_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
			 size_t *count);
int fi_compare_atomicvalid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
			   size_t *count);
int fi_query_atomic(struct fid_domain *domain, enum fi_datatype datatype, enum fi_op op,
		    struct fi_atomic_attr *attr, u64 flags);

#endif /* _KOFI_FI_ATOMIC_H */
