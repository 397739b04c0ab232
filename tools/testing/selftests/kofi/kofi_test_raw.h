/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Raw TCP clients for the suites: a peer that speaks no provider's
 * handshake, or drops the connection at once, as a port scan or a client
 * of another protocol would.
 */
#ifndef KOFI_TEST_RAW_H
#define KOFI_TEST_RAW_H

#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inet.h>
#include <linux/net.h>
#include <linux/socket.h>
#include <net/net_namespace.h>
#include <kofi/compat.h>

/* A raw TCP connection to @node (IPv4 or IPv6, numeric):@port, or NULL. */
static inline struct socket *raw_open(const char *node, u16 port)
{
	struct sockaddr_storage ss = {};
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	struct socket *sock;

	if (in4_pton(node, -1, (u8 *)&sin->sin_addr, '\0', NULL)) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
	} else if (in6_pton(node, -1, (u8 *)&sin6->sin6_addr, '\0', NULL)) {
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
	} else {
		return NULL;
	}
	if (sock_create_kern(&init_net, ss.ss_family, SOCK_STREAM, IPPROTO_TCP, &sock))
		return NULL;
	if (kernel_connect(sock, KOFI_SOCKADDR_ARG(&ss), sizeof(ss), 0)) {
		sock_release(sock);
		return NULL;
	}
	return sock;
}

static inline int raw_send(struct socket *sock, const void *bytes, size_t len)
{
	struct msghdr msg = {};
	struct kvec iov = { (void *)bytes, len };

	return kernel_sendmsg(sock, &msg, &iov, 1, len) == len ? 0 : -EIO;
}

#endif
