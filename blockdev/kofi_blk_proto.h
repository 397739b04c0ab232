/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kofi_blk wire protocol, shared by the initiator (kofi_blk, Rust, which
 * reads this file through bindgen) and the target (kofi_blkt, C).
 * Documentation/kofi/blk.rst describes it; every field is little-endian.
 *
 * One MSG endpoint per initiator queue. The handshake is the connection's
 * private data: kofi_blk_connect with fi_connect, kofi_blk_accept with
 * fi_accept, kofi_blk_reject with fi_reject. Then each I/O is one command
 * (initiator to target) and one response (target to initiator), both sent
 * with fi_inject. Data moves by RMA as NVMe-oF moves it: the initiator
 * registers the request's pages and names them in the command (key, addr);
 * the target fi_read()s a write's data and fi_write()s a read's data before
 * it answers. A small write may carry its data in the command's message
 * instead (KOFI_BLK_INLINE, up to the accept's inline_max), as NVMe-oF's
 * in-capsule data: no registration and no read of the initiator's pages.
 * A small read may have its data come in the response's message
 * (KOFI_BLK_INLINE, up to the accept's read_inline_max), as nvme-tcp's
 * C2HData: no registration and no write to the initiator's pages.
 */
#ifndef _KOFI_BLK_PROTO_H
#define _KOFI_BLK_PROTO_H

#include <linux/types.h>

#define KOFI_BLK_MAGIC		0x6b626c6bU	/* "kblk" */
#define KOFI_BLK_VERSION	2
/* An export's name, NUL-padded (at most KOFI_BLK_NAME_MAX - 1 characters). */
#define KOFI_BLK_NAME_MAX	32
/* Commands in flight per queue at most: tags are 0 .. depth - 1. */
#define KOFI_BLK_DEPTH_MAX	128

/* fi_connect's private data: which export, which queue, how deep. */
struct kofi_blk_connect {
	__le32 magic;
	__le16 version;
	__le16 queue;
	__le16 depth;
	__le16 rsvd;
	/* A read's bytes a response may carry: the room of the initiator's
	 * receives past the response (0: none). */
	__le32 read_inline_max;
	char name[KOFI_BLK_NAME_MAX];
};

/* fi_accept's private data: the device. */
struct kofi_blk_accept {
	__le32 magic;
	__le16 version;
	__le16 rsvd;
	__le64 sectors;		/* capacity in 512-byte sectors */
	__le32 block_size;	/* logical block size in bytes */
	__le32 max_io;		/* bytes one command moves at most */
	__le32 inline_max;	/* a write's bytes a command may carry (0: none) */
	/* A read's bytes a response may carry: at most the connect's (0: none). */
	__le32 read_inline_max;
};

/* fi_reject's private data: why (a positive errno: ENOENT for no such export). */
struct kofi_blk_reject {
	__le32 magic;
	__le32 status;
};

enum kofi_blk_opcode {
	KOFI_BLK_READ = 1,
	KOFI_BLK_WRITE = 2,
	KOFI_BLK_FLUSH = 3,	/* len 0: the backing device's cache to stable media */
};

/* kofi_blk_cmd.flags: the write is on stable media when it is answered. */
#define KOFI_BLK_FUA		0x01
/*
 * kofi_blk_cmd.flags: a write whose @len bytes follow the command in its
 * message (at most the accept's inline_max), or a read whose @len bytes
 * follow a successful response in its message (at most the accept's
 * read_inline_max; a failed one's response comes alone); @key and @addr
 * are unused.
 */
#define KOFI_BLK_INLINE		0x02

/*
 * A command. @gen is the initiator's count of uses of @tag, echoed in the
 * response so a late answer to an earlier use is told apart. @key and @addr
 * name the initiator's registered pages (len bytes), unused for FLUSH.
 */
struct kofi_blk_cmd {
	__u8 opcode;
	__u8 flags;
	__le16 tag;
	__le32 gen;
	__le64 sector;
	__le32 len;
	__le32 rsvd;
	__le64 key;
	__le64 addr;
};

/* A response: @status is 0 or a positive errno (EIO, EINVAL, ...). */
struct kofi_blk_resp {
	__le16 tag;
	__le16 rsvd;
	__le32 gen;
	__le32 status;
	__le32 rsvd2;
};

#endif /* _KOFI_BLK_PROTO_H */
