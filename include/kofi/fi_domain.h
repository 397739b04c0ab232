/* SPDX-License-Identifier: GPL-2.0 */
/* kofi: domains and memory registration, after libfabric's <rdma/fi_domain.h>. */
#ifndef _KOFI_FI_DOMAIN_H
#define _KOFI_FI_DOMAIN_H

#include <kofi/fabric.h>
#include <kofi/fi_eq.h>

struct fid_domain {
	struct fid fid;
};

/**
 * struct fid_mr - a registered memory region
 * @mem_desc: the descriptor to pass as @desc with local buffers in this region
 * @key: the key a peer uses to reach the region with RMA
 */
struct fid_mr {
	struct fid fid;
	void *mem_desc;
	u64 key;
};

/* What the iovs of a registration, message or RMA point at. */
enum kofi_iov_type {
	KOFI_IOV_KVEC,		/* struct kvec: kernel virtual addresses */
	KOFI_IOV_BVEC,		/* struct bio_vec: pages, for page-based storage I/O */
};

/**
 * struct fi_mr_attr - a memory registration
 * @mr_iov: the region's kvecs (with KOFI_IOV_KVEC)
 * @mr_bvec: the region's bio_vecs (with KOFI_IOV_BVEC)
 * @iov_count: entries in @mr_iov or @mr_bvec, 1 to the domain's mr_iov_limit
 * @iov_type: which of the two is used
 * @access: FI_SEND, FI_RECV, FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE
 * @offset: the RMA address of the region's first byte (kofi addresses a
 *	region by offset, not by virtual address: FI_MR_VIRT_ADDR is not set)
 * @requested_key: the key to use, unless the domain has FI_MR_PROV_KEY
 * @context: the consumer's context for the fid
 */
struct fi_mr_attr {
	const struct kvec *mr_iov;
	const struct bio_vec *mr_bvec;
	size_t iov_count;
	enum kofi_iov_type iov_type;
	u64 access;
	u64 offset;
	u64 requested_key;
	void *context;
};

/**
 * struct fid_av - an address vector: the peers of connectionless (FI_EP_RDM)
 * endpoints, each named by an fi_addr_t
 */
struct fid_av {
	struct fid fid;
};

/**
 * struct fi_av_attr - attributes of an address vector
 * @type: FI_AV_MAP (fi_addr_t values are opaque) or FI_AV_TABLE (indices
 *	0, 1, 2, ... in insertion order); FI_AV_UNSPEC picks FI_AV_MAP
 * @rx_ctx_bits: 0 (no scalable endpoints)
 * @count: the number of addresses expected (a hint; 0 for the default)
 * @ep_per_node: ignored
 * @name: NULL (no shared AVs)
 * @map_addr: NULL
 * @flags: 0 (inserts complete synchronously; no FI_EVENT)
 *
 * Addresses are struct sockaddr_in or sockaddr_in6, as fi_getname() gives
 * them for an FI_EP_RDM endpoint.
 */
struct fi_av_attr {
	enum fi_av_type type;
	int rx_ctx_bits;
	size_t count;
	size_t ep_per_node;
	const char *name;
	void *map_addr;
	u64 flags;
};

#define KOFI_AV_COUNT_MAX (1 << 20)

/*
 * Counters (fi_cntr(3)): a count of completed operations and a count of
 * failed ones, implemented once, in the core, for every provider. Bind one to
 * an endpoint with fi_ep_bind() and any of FI_SEND, FI_RECV, FI_READ,
 * FI_WRITE (operations the endpoint started or received) and FI_REMOTE_READ,
 * FI_REMOTE_WRITE (RMA a peer aimed at the endpoint: only on endpoints whose
 * info has FI_RMA_EVENT). Every operation counts, whether or not it asked for
 * a CQ entry (fi_inject included); a failed one adds to the error count.
 */
enum fi_cntr_events {
	FI_CNTR_EVENTS_COMP,	/* count completed operations (the only kind) */
	FI_CNTR_EVENTS_BYTES,	/* not supported: -FI_ENOSYS */
};

/**
 * struct fi_cntr_attr - attributes of a counter
 * @events: FI_CNTR_EVENTS_COMP
 * @wait_obj: FI_WAIT_UNSPEC or FI_WAIT_QUEUE (fi_cntr_wait sleeps on a
 *	kernel wait queue), or FI_WAIT_NONE (fi_cntr_wait is -FI_ENOSYS)
 * @wait_set: NULL
 * @flags: 0
 */
struct fi_cntr_attr {
	enum fi_cntr_events events;
	enum fi_wait_obj wait_obj;
	void *wait_set;
	u64 flags;
};

struct fid_cntr {
	struct fid fid;
};

int fi_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
		 void *context);
/* The counts; 0 for something that is not an open counter. */
u64 fi_cntr_read(struct fid_cntr *cntr);
u64 fi_cntr_readerr(struct fid_cntr *cntr);
int fi_cntr_add(struct fid_cntr *cntr, u64 value);
int fi_cntr_adderr(struct fid_cntr *cntr, u64 value);
int fi_cntr_set(struct fid_cntr *cntr, u64 value);
int fi_cntr_seterr(struct fid_cntr *cntr, u64 value);
/*
 * Sleeps (process context) until the count reaches @threshold: 0; or until
 * the error count changes (-FI_EAVAIL), @timeout ms pass (-FI_ETIMEDOUT;
 * negative: no timeout) or a signal comes (-EINTR). fi_close of a counter a
 * thread waits on is -FI_EBUSY.
 */
int fi_cntr_wait(struct fid_cntr *cntr, u64 threshold, int timeout);

#define KOFI_MR_ACCESS (FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

int fi_domain(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **domain,
	      void *context);
int fi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
	       void *context);

int fi_mr_reg(struct fid_domain *domain, const void *buf, size_t len, u64 access, u64 offset,
	      u64 requested_key, u64 flags, struct fid_mr **mr, void *context);
int fi_mr_regv(struct fid_domain *domain, const struct kvec *iov, size_t count, u64 access,
	       u64 offset, u64 requested_key, u64 flags, struct fid_mr **mr, void *context);
int fi_mr_regbv(struct fid_domain *domain, const struct bio_vec *bvec, size_t count, u64 access,
		u64 offset, u64 requested_key, u64 flags, struct fid_mr **mr, void *context);
int fi_mr_regattr(struct fid_domain *domain, const struct fi_mr_attr *attr, u64 flags,
		  struct fid_mr **mr);
void *fi_mr_desc(struct fid_mr *mr);

/*
 * In a domain opened with FI_MR_ENDPOINT in its mr_mode (offered only to
 * consumers whose hints list it), a region is created disabled: bind it to
 * one FI_EP_MSG endpoint of the domain with fi_mr_bind() (@flags 0), then
 * fi_mr_enable() it. Operations posted on that endpoint after fi_mr_enable()
 * returns may use it, and its key may travel in them: the endpoint's peer can
 * reach the region once it has received one of them (a provider orders the
 * registration before them and need not wait for it, which is what makes
 * per-I/O registration cheap). Until enabled, RMA with its key fails. An
 * endpoint with regions bound to it is not closed (-FI_EBUSY): close them
 * first. In other domains fi_mr_bind() is -FI_EINVAL and fi_mr_enable() of a
 * region (enabled at registration) returns 0.
 */
int fi_mr_bind(struct fid_mr *mr, struct fid *bfid, u64 flags);
int fi_mr_enable(struct fid_mr *mr);

int fi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
	       void *context);
/*
 * @addr holds @count sockaddrs one after another, each as long as its family's
 * (sockaddr_in: 16 bytes, sockaddr_in6: 28). Return: the number inserted;
 * @fi_addr[i] is FI_ADDR_NOTAVAIL for each address that was not.
 */
int fi_av_insert(struct fid_av *av, const void *addr, size_t count, fi_addr_t *fi_addr,
		 u64 flags, void *context);
/* One numeric IPv4/IPv6 @node and @service (a port number). Return: 1 or -errno. */
int fi_av_insertsvc(struct fid_av *av, const char *node, const char *service,
		    fi_addr_t *fi_addr, u64 flags, void *context);
int fi_av_remove(struct fid_av *av, fi_addr_t *fi_addr, size_t count, u64 flags);
/* Copies the address (up to *@addrlen bytes) and sets *@addrlen to its size. */
int fi_av_lookup(struct fid_av *av, fi_addr_t fi_addr, void *addr, size_t *addrlen);
/*
 * "a.b.c.d:port" or "[v6]:port" into @buf (truncated to *@len, NUL-ended);
 * *@len becomes the size needed. Return: @buf, or NULL for a bad address.
 */
const char *fi_av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len);
u64 fi_mr_key(struct fid_mr *mr);

#endif /* _KOFI_FI_DOMAIN_H */
