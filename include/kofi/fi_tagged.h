/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kofi: tagged messages, after libfabric's <rdma/fi_tagged.h> (fi_tagged(3)).
 *
 * A tagged message carries a 64-bit tag; a tagged receive takes the first
 * tagged message (in arrival order) whose tag equals its own in every bit
 * not set in @ignore: (tag | ignore) == (msg_tag | ignore). Tagged and
 * untagged messages never match each other. A message no receive matches
 * waits for one (an unexpected message). The endpoint needs FI_TAGGED in
 * its caps (kofi offers it on MSG and RDM endpoints); without it every call
 * returns -FI_EOPNOTSUPP. Completions carry FI_TAGGED and the message's
 * tag (FI_CQ_FORMAT_TAGGED's @tag; fi_cq_err_entry's @tag).
 */
#ifndef _KOFI_FI_TAGGED_H
#define _KOFI_FI_TAGGED_H

#include <kofi/fi_endpoint.h>

/*
 * fi_trecvmsg() flags. FI_PEEK (fabric.h) looks for an unexpected message
 * without taking it: a completion with its length, tag and data (no bytes
 * copied, @buf NULL), or an FI_ENOMSG error entry. FI_PEEK | FI_CLAIM also
 * reserves it for a later fi_trecvmsg() with FI_CLAIM and the same context
 * (not NULL), which receives it whatever its tag and @ignore; nothing else
 * matches a claimed message. FI_DISCARD with FI_PEEK or FI_CLAIM drops the message instead
 * (its completion has @len 0 with FI_CLAIM; the buffers are not used).
 */
#define FI_CLAIM		(1ULL << 59)
#define FI_DISCARD		(1ULL << 58)

/**
 * struct fi_msg_tagged - a message for fi_tsendmsg()/fi_trecvmsg()
 * @msg_iov: the buffers, as kvecs; or NULL, with @msg_bvec set
 * @msg_bvec: kofi: the buffers, as bio_vecs; or NULL
 * @desc: per-iov descriptors, or NULL
 * @iov_count: entries in the one array used; 0 for an empty message
 * @addr: the peer (a receive: FI_ADDR_UNSPEC, or a source with FI_DIRECTED_RECV)
 * @tag: the message's tag; a receive's tag to match
 * @ignore: a receive's tag bits that need not match; 0 on sends
 * @context: returned in the completion
 * @data: remote CQ data, sent with FI_REMOTE_CQ_DATA
 */
struct fi_msg_tagged {
	const struct kvec *msg_iov;
	const struct bio_vec *msg_bvec;
	void **desc;
	size_t iov_count;
	fi_addr_t addr;
	u64 tag;
	u64 ignore;
	void *context;
	u64 data;
};

ssize_t fi_tsend(struct fid_ep *ep, const void *buf, size_t len, void *desc, fi_addr_t dest_addr,
		 u64 tag, void *context);
ssize_t fi_tsendv(struct fid_ep *ep, const struct kvec *iov, void **desc, size_t count,
		  fi_addr_t dest_addr, u64 tag, void *context);
ssize_t fi_tsendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, u64 flags);
ssize_t fi_tinject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest_addr, u64 tag);
ssize_t fi_tsenddata(struct fid_ep *ep, const void *buf, size_t len, void *desc, u64 data,
		     fi_addr_t dest_addr, u64 tag, void *context);
ssize_t fi_tinjectdata(struct fid_ep *ep, const void *buf, size_t len, u64 data,
		       fi_addr_t dest_addr, u64 tag);
ssize_t fi_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc, fi_addr_t src_addr,
		 u64 tag, u64 ignore, void *context);
ssize_t fi_trecvv(struct fid_ep *ep, const struct kvec *iov, void **desc, size_t count,
		  fi_addr_t src_addr, u64 tag, u64 ignore, void *context);
ssize_t fi_trecvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg, u64 flags);

#endif /* _KOFI_FI_TAGGED_H */
