/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kofi error numbers, after libfabric's <rdma/fi_errno.h>. Calls return
 * negative values. Where the kernel has an errno it is used as is
 * (FI_EINVAL == EINVAL); kofi's own start at FI_ERRNO_OFFSET, above the
 * errnos the kernel returns to callers and below MAX_ERRNO, so IS_ERR_VALUE
 * still holds for them.
 */
#ifndef _KOFI_FI_ERRNO_H
#define _KOFI_FI_ERRNO_H

#include <linux/errno.h>

#define FI_SUCCESS		0
#define FI_EPERM		EPERM
#define FI_ENOENT		ENOENT
#define FI_EINTR		EINTR
#define FI_EIO			EIO
#define FI_E2BIG		E2BIG
#define FI_EBADF		EBADF
#define FI_EAGAIN		EAGAIN
#define FI_ENOMEM		ENOMEM
#define FI_EACCES		EACCES
#define FI_EFAULT		EFAULT
#define FI_EBUSY		EBUSY
#define FI_ENODEV		ENODEV
#define FI_EINVAL		EINVAL
#define FI_EMFILE		EMFILE
#define FI_ENOSPC		ENOSPC
#define FI_ENOSYS		ENOSYS
#define FI_EWOULDBLOCK		EWOULDBLOCK
#define FI_ENOMSG		ENOMSG
#define FI_ENODATA		ENODATA
#define FI_EOVERFLOW		EOVERFLOW
#define FI_EMSGSIZE		EMSGSIZE
#define FI_ENOPROTOOPT		ENOPROTOOPT
#define FI_EOPNOTSUPP		EOPNOTSUPP
#define FI_EADDRINUSE		EADDRINUSE
#define FI_EADDRNOTAVAIL	EADDRNOTAVAIL
#define FI_ENETDOWN		ENETDOWN
#define FI_ENETUNREACH		ENETUNREACH
#define FI_ECONNABORTED		ECONNABORTED
#define FI_ECONNRESET		ECONNRESET
#define FI_ENOBUFS		ENOBUFS
#define FI_EISCONN		EISCONN
#define FI_ENOTCONN		ENOTCONN
#define FI_ESHUTDOWN		ESHUTDOWN
#define FI_ETIMEDOUT		ETIMEDOUT
#define FI_ECONNREFUSED		ECONNREFUSED
#define FI_EHOSTDOWN		EHOSTDOWN
#define FI_EHOSTUNREACH		EHOSTUNREACH
#define FI_EALREADY		EALREADY
#define FI_EINPROGRESS		EINPROGRESS
#define FI_ECANCELED		ECANCELED
#define FI_EKEYREJECTED		EKEYREJECTED
#define FI_EPROTO		EPROTO

#define FI_ERRNO_OFFSET		256
#define FI_EOTHER		(FI_ERRNO_OFFSET + 0)	/* unspecified error */
#define FI_ETOOSMALL		(FI_ERRNO_OFFSET + 1)	/* provided buffer is too small */
#define FI_EOPBADSTATE		(FI_ERRNO_OFFSET + 2)	/* operation not permitted in current state */
#define FI_EAVAIL		(FI_ERRNO_OFFSET + 3)	/* error available: read it with readerr */
#define FI_EBADFLAGS		(FI_ERRNO_OFFSET + 4)	/* flags not supported */
#define FI_ENOEQ		(FI_ERRNO_OFFSET + 5)	/* missing or unavailable event queue */
#define FI_EDOMAIN		(FI_ERRNO_OFFSET + 6)	/* invalid resource domain */
#define FI_ENOCQ		(FI_ERRNO_OFFSET + 7)	/* missing or unavailable completion queue */
#define FI_ECRC			(FI_ERRNO_OFFSET + 8)	/* CRC error */
#define FI_ETRUNC		(FI_ERRNO_OFFSET + 9)	/* truncation error */
#define FI_ENOKEY		(FI_ERRNO_OFFSET + 10)	/* required key not available */
#define FI_ENOAV		(FI_ERRNO_OFFSET + 11)	/* missing or unavailable address vector */
#define FI_EOVERRUN		(FI_ERRNO_OFFSET + 12)	/* queue has been overrun */
#define FI_ERRNO_MAX		(FI_ERRNO_OFFSET + 13)

/**
 * fi_strerror() - a readable name for a kofi error
 * @errnum: an error number, positive or negative
 *
 * Return: a static string; "Unknown error" for numbers kofi does not know.
 * Context: any.
 */
const char *fi_strerror(int errnum);

#endif /* _KOFI_FI_ERRNO_H */
