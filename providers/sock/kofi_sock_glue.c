// SPDX-License-Identifier: GPL-2.0
/*
 * kofi_sock: the C side. Kernel socket operations for the Rust provider,
 * and the socket callbacks that hand events to it.
 */
#include <linux/bvec.h>
#include <linux/inet.h>
#include <linux/net.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/timer.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <net/tcp.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <kofi/kofi_provider.h>
#include <kofi/compat.h>
#include "kofi_sock_glue.h"

int ksock_create(int family, struct socket **res)
{
	struct socket *sock;
	int ret;

	ret = sock_create_kern(&init_net, family, SOCK_STREAM, IPPROTO_TCP, &sock);
	if (ret)
		return ret;
	/* Storage I/O may run in the reclaim path: never recurse into it. */
	sock->sk->sk_allocation = GFP_NOIO;
	sock->sk->sk_use_task_frag = false;
	sock_set_reuseaddr(sock->sk);
	tcp_sock_set_nodelay(sock->sk);
	*res = sock;
	return 0;
}

void ksock_release(struct socket *sock)
{
	sock_release(sock);
}

/* Wakes the owner, if still attached (ksock_detach waits for this). */
static void ksock_wake(struct sock *sk)
{
	const struct ksock_waker *waker;

	read_lock_bh(&sk->sk_callback_lock);
	rcu_read_lock();
	waker = rcu_dereference_sk_user_data(sk);
	if (waker)
		waker->wake(waker->owner);
	rcu_read_unlock();
	read_unlock_bh(&sk->sk_callback_lock);
}

static void ksock_data_ready(struct sock *sk)
{
	ksock_wake(sk);
}

static void ksock_write_space(struct sock *sk)
{
	/* Only when a blocked sender can make progress again. */
	if (sk_stream_is_writeable(sk))
		ksock_wake(sk);
}

static void ksock_state_change(struct sock *sk)
{
	ksock_wake(sk);
}

void ksock_attach(struct socket *sock, const struct ksock_waker *waker)
{
	struct sock *sk = sock->sk;

	write_lock_bh(&sk->sk_callback_lock);
	/*
	 * A listener's user data must not be copied to the sockets it
	 * accepts: they get owners of their own.
	 */
	__rcu_assign_sk_user_data_with_flags(sk, (void *)waker, SK_USER_DATA_NOCOPY);
	sk->sk_data_ready = ksock_data_ready;
	sk->sk_write_space = ksock_write_space;
	sk->sk_state_change = ksock_state_change;
	write_unlock_bh(&sk->sk_callback_lock);
}

void ksock_detach(struct socket *sock)
{
	struct sock *sk = sock->sk;

	/* Taking the lock for writing waits out callbacks in progress. */
	write_lock_bh(&sk->sk_callback_lock);
	rcu_assign_sk_user_data(sk, NULL);
	write_unlock_bh(&sk->sk_callback_lock);
	synchronize_rcu();
}

int ksock_listen(struct socket *sock, const struct sockaddr_storage *addr, int backlog)
{
	int ret = kernel_bind(sock, KOFI_SOCKADDR_ARG(addr), kofi_sockaddr_len(addr));

	return ret ?: kernel_listen(sock, backlog);
}

int ksock_accept(struct socket *sock, struct socket **res)
{
	int ret = kernel_accept(sock, res, O_NONBLOCK);

	if (ret)
		return ret;
	(*res)->sk->sk_allocation = GFP_NOIO;
	(*res)->sk->sk_use_task_frag = false;
	tcp_sock_set_nodelay((*res)->sk);
	return 0;
}

int ksock_connect(struct socket *sock, const struct sockaddr_storage *addr)
{
	int ret = kernel_connect(sock, KOFI_SOCKADDR_ARG(addr), kofi_sockaddr_len(addr), O_NONBLOCK);

	return ret == -EINPROGRESS ? 0 : ret;
}

bool ksock_readable(struct socket *sock)
{
	return !skb_queue_empty_lockless(&sock->sk->sk_receive_queue);
}

bool ksock_has_input(struct socket *sock)
{
	struct sock *sk = sock->sk;

	return !skb_queue_empty_lockless(&sk->sk_receive_queue) ||
	       (READ_ONCE(sk->sk_shutdown) & RCV_SHUTDOWN) || READ_ONCE(sk->sk_err) ||
	       READ_ONCE(sk->sk_state) != TCP_ESTABLISHED;
}

/*
 * Without the socket's lock, as a lower bound: rcv_nxt only grows, and only
 * the connection's reader (under its mutex) moves copied_seq.
 */
size_t ksock_inq(struct socket *sock)
{
	int n = tcp_inq(sock->sk);

	return n > 0 ? n : 0;
}

int ksock_state(struct socket *sock)
{
	struct sock *sk = sock->sk;
	int err = sock_error(sk);

	if (err)
		return err;
	switch (READ_ONCE(sk->sk_state)) {
	case TCP_ESTABLISHED:
		return 1;
	case TCP_SYN_SENT:
	case TCP_SYN_RECV:
		return 0;
	default:
		return -ECONNRESET;
	}
}

int ksock_recv(struct socket *sock, const struct kvec *iov, size_t nr, size_t len)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };

	return kernel_recvmsg(sock, &msg, (struct kvec *)iov, nr, len, MSG_DONTWAIT);
}

int ksock_recv_iter(struct socket *sock, const struct iov_iter *iter, size_t len)
{
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT };

	msg.msg_iter = *iter;
	iov_iter_truncate(&msg.msg_iter, len);
	return sock_recvmsg(sock, &msg, MSG_DONTWAIT);
}

/*
 * Pieces a frame sends in one call (on the stack, 16 bytes each): its header
 * and the payload's, up to 128 KiB of pages not aligned to one (kofi_blk's
 * largest I/O in the benchmark); a larger payload goes in a call of its own,
 * after the header's (about 4 us more under TCG).
 */
#define KSOCK_FRAME_PIECES 34

/*
 * The pieces of @it that its next @len bytes span (KSOCK_FRAME_PIECES when
 * there are more): a small answer from a large region is a piece or two,
 * not the region's whole vector.
 */
static unsigned long ksock_pieces(const struct iov_iter *it, size_t len)
{
	size_t skip = it->iov_offset, got = 0;
	unsigned long i;

	for (i = 0; i < it->nr_segs && got < len; i++) {
		if (i == KSOCK_FRAME_PIECES)
			return KSOCK_FRAME_PIECES;
		got += (iov_iter_is_kvec(it) ? it->kvec[i].iov_len : it->bvec[i].bv_len) - skip;
		skip = 0;
	}
	return i;
}

int ksock_send_frame(struct socket *sock, const void *hdr, size_t hdr_len,
		     const struct iov_iter *payload, bool more)
{
	struct msghdr msg = {
		.msg_flags = MSG_DONTWAIT | MSG_NOSIGNAL | (more ? MSG_MORE : 0),
	};
	size_t len = payload ? iov_iter_count(payload) : 0;
	union {
		struct kvec kv[KSOCK_FRAME_PIECES];
		struct bio_vec bv[KSOCK_FRAME_PIECES];
	} p;
	unsigned long i, n = 0;
	struct kvec head = { .iov_base = (void *)hdr, .iov_len = hdr_len };

	/*
	 * One sendmsg for the frame: header and payload in the same skb, one
	 * socket lock, one push (two calls cost about 4 us a message under
	 * TCG, the profile in bench.rst). The header goes into the payload's
	 * kind of vector: a kvec, or the page of a kmalloc'd header.
	 */
	if (!len) {
		return kernel_sendmsg(sock, &msg, &head, 1, hdr_len);
	} else if (!hdr_len) {
		msg.msg_iter = *payload;
		return sock_sendmsg(sock, &msg);
	}
	if (iov_iter_is_kvec(payload) || iov_iter_is_bvec(payload))
		n = ksock_pieces(payload, len);
	if (iov_iter_is_kvec(payload) && n < KSOCK_FRAME_PIECES) {
		p.kv[0] = head;
		for (i = 0; i < n; i++)
			p.kv[i + 1] = payload->kvec[i];
		p.kv[1].iov_base += payload->iov_offset;
		p.kv[1].iov_len -= payload->iov_offset;
		iov_iter_kvec(&msg.msg_iter, ITER_SOURCE, p.kv, n + 1, hdr_len + len);
	} else if (iov_iter_is_bvec(payload) && n < KSOCK_FRAME_PIECES && virt_addr_valid(hdr) &&
		   offset_in_page(hdr) + hdr_len <= PAGE_SIZE) {
		bvec_set_virt(&p.bv[0], (void *)hdr, hdr_len);
		for (i = 0; i < n; i++)
			p.bv[i + 1] = payload->bvec[i];
		p.bv[1].bv_offset += payload->iov_offset;
		p.bv[1].bv_len -= payload->iov_offset;
		iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, p.bv, n + 1, hdr_len + len);
	} else {
		msg.msg_flags |= MSG_MORE;
		return kernel_sendmsg(sock, &msg, &head, 1, hdr_len);
	}
	return sock_sendmsg(sock, &msg);
}

void ksock_shutdown(struct socket *sock)
{
	kernel_sock_shutdown(sock, SHUT_RDWR);
}

int ksock_getname(struct socket *sock, struct sockaddr_storage *addr, bool peer)
{
	return peer ? kernel_getpeername(sock, (struct sockaddr *)addr) :
		      kernel_getsockname(sock, (struct sockaddr *)addr);
}

unsigned int ksock_noio_save(void)
{
	return memalloc_noio_save();
}

void ksock_noio_restore(unsigned int flags)
{
	memalloc_noio_restore(flags);
}

#include "../common/kofi_timer.c"
