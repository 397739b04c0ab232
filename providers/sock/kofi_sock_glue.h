/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private to kofi_sock.ko: the kernel socket operations the Rust provider
 * needs, in C because struct sock is opaque to Rust and several of them are
 * inline. Every call is nonblocking.
 */
#ifndef _KOFI_SOCK_GLUE_H
#define _KOFI_SOCK_GLUE_H

#include <linux/socket.h>
#include <linux/uio.h>
#include <linux/bvec.h>

struct socket;
struct workqueue_struct;

int ksock_create(int family, struct socket **res);
void ksock_release(struct socket *sock);
/* What a socket's callbacks call, with its owner: the socket's user data. */
struct ksock_waker {
	void (*wake)(const void *owner);
	const void *owner;
};

/* Callbacks of @sock call @waker (which stays put) until detached. */
void ksock_attach(struct socket *sock, const struct ksock_waker *waker);
void ksock_detach(struct socket *sock);
int ksock_listen(struct socket *sock, const struct sockaddr_storage *addr, int backlog);
int ksock_accept(struct socket *sock, struct socket **res);
int ksock_connect(struct socket *sock, const struct sockaddr_storage *addr);
/* Whether received bytes wait to be read. */
bool ksock_readable(struct socket *sock);
/*
 * Whether a read could find something: bytes, EOF or an error (false: it
 * would block, and the socket's data_ready or state_change comes first).
 */
bool ksock_has_input(struct socket *sock);
/* Bytes TCP holds ready to read (a lower bound: more may arrive). */
size_t ksock_inq(struct socket *sock);
/* 1: established; 0: still connecting; negative: the socket's error. */
int ksock_state(struct socket *sock);
/* Bytes received, -EAGAIN when it would block, 0 on EOF. */
int ksock_recv(struct socket *sock, const struct kvec *iov, size_t nr, size_t len);
/* Receives up to @len bytes into what @iter describes (which is not advanced). */
int ksock_recv_iter(struct socket *sock, const struct iov_iter *iter, size_t len);
/*
 * Sends @hdr_len bytes at @hdr (none: the rest of a frame's payload) then
 * what @payload describes (NULL: none; not advanced; TCP copies it) in one
 * call, as far as the socket takes them: the bytes sent, counting the
 * header's; -EAGAIN when the socket is full. A payload of many pieces may leave it to the header alone
 * (sent with MSG_MORE), and the caller sends the payload next.
 */
int ksock_send_frame(struct socket *sock, const void *hdr, size_t hdr_len,
		     const struct iov_iter *payload, bool more);
void ksock_shutdown(struct socket *sock);
int ksock_getname(struct socket *sock, struct sockaddr_storage *addr, bool peer);
/* Parses @node (an IPv4 or IPv6 literal, or NULL for any) and @port. */

unsigned int ksock_noio_save(void);
void ksock_noio_restore(unsigned int flags);

#endif
