// SPDX-License-Identifier: GPL-2.0

//! kofi_verbs' message protocol over RC SENDs (pure logic).
//!
//! Every SEND starts with a 24-byte header and lands in one of the
//! receiver's provider buffers, so messages may arrive before their receive
//! is posted and a short receive truncates instead of breaking the QP.
//! Messages longer than a buffer go as segments, in order. Each SEND uses a
//! credit (a buffer the peer has posted); headers return credits.
//!
//! Header, little endian: op u8, flags u8, credits u16, len u32 (the whole
//! message), data u64 (remote CQ data), tag u64 (a tagged message's, with
//! FLAG_TAGGED; zero otherwise).
//!
//! A large message goes by rendezvous instead: its sender registers the
//! buffers for remote reading and SENDs a header (OP_RTS) followed by the
//! region's key and a cookie; the receiver RDMA-READs the message straight
//! into the posted receive and answers OP_FIN with the cookie in `data`.
//! On iWARP, where a READ's sink must be a region the peer may write
//! anyway and READs are the slow direction, the receiver answers OP_CTS
//! instead: its receive's region, which the sender RDMA-WRITEs the message
//! into before OP_WFIN; then OP_FIN as after a read.
//!
//! A side that closes says first how many SENDs of its peer it took
//! (OP_CLOSE): a SEND among them is done even when the QP fails before
//! its own completion says so (siw fails a SEND whose last bytes went out
//! when the peer's close lands before it looks; IB flushes one whose ACK
//! comes after the peer's disconnect).

/// A message segment.
pub(crate) const OP_MSG: u8 = 1;
/// Remote CQ data of an RDMA write that precedes it.
pub(crate) const OP_WRITE_DATA: u8 = 2;
/// Credits only.
pub(crate) const OP_CREDIT: u8 = 3;
/// A large message ready to be read: [`RtsBody`] follows the header.
pub(crate) const OP_RTS: u8 = 4;
/// A rendezvous read is done: `data` is the cookie of its OP_RTS.
pub(crate) const OP_FIN: u8 = 5;
/// Write the announced message here: [`RtsBody`] follows the header (the
/// key of the receive's region, the OP_RTS's cookie); `len` is how many of
/// its bytes the receive takes.
pub(crate) const OP_CTS: u8 = 6;
/// The RDMA WRITEs an OP_CTS asked for are placed: `data` is the cookie.
pub(crate) const OP_WFIN: u8 = 7;
/// The sender closes: `data` is how many SENDs of ours it took.
pub(crate) const OP_CLOSE: u8 = 8;

pub(crate) const FLAG_FIRST: u8 = 1;
pub(crate) const FLAG_LAST: u8 = 2;
pub(crate) const FLAG_CQ_DATA: u8 = 4;
/// A tagged message (OP_MSG, OP_RTS): `tag` is its tag.
pub(crate) const FLAG_TAGGED: u8 = 8;

pub(crate) const HEADER_LEN: usize = 24;

#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct Header {
    pub(crate) op: u8,
    pub(crate) flags: u8,
    pub(crate) credits: u16,
    pub(crate) len: u32,
    pub(crate) data: u64,
    pub(crate) tag: u64,
}

impl Header {
    /// A message's tag: None for an untagged one.
    pub(crate) fn tag(&self) -> Option<u64> {
        (self.flags & FLAG_TAGGED != 0).then_some(self.tag)
    }

    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0] = self.op;
        b[1] = self.flags;
        b[2..4].copy_from_slice(&self.credits.to_le_bytes());
        b[4..8].copy_from_slice(&self.len.to_le_bytes());
        b[8..16].copy_from_slice(&self.data.to_le_bytes());
        b[16..24].copy_from_slice(&self.tag.to_le_bytes());
        b
    }

    /// The header of a received SEND, or `None` for a malformed one.
    pub(crate) fn decode(b: &[u8]) -> Option<Header> {
        let b: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
        let u64_at = |at: usize| {
            let mut v = [0u8; 8];
            v.copy_from_slice(&b[at..at + 8]);
            u64::from_le_bytes(v)
        };
        let h = Header {
            op: b[0],
            flags: b[1],
            credits: u16::from_le_bytes([b[2], b[3]]),
            len: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            data: u64_at(8),
            tag: u64_at(16),
        };
        let known = matches!(
            h.op,
            OP_MSG | OP_WRITE_DATA | OP_CREDIT | OP_RTS | OP_FIN | OP_CTS | OP_WFIN | OP_CLOSE
        );
        // Only messages are tagged.
        let tag_ok = h.flags & FLAG_TAGGED == 0 || matches!(h.op, OP_MSG | OP_RTS);
        (known && tag_ok).then_some(h)
    }
}

/// What follows an OP_RTS header: the key of the sender's region (offset
/// 0 is the message's first byte) and the cookie its OP_FIN returns.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct RtsBody {
    pub(crate) key: u64,
    pub(crate) cookie: u64,
}

pub(crate) const RTS_BODY_LEN: usize = 16;

impl RtsBody {
    pub(crate) fn encode(&self) -> [u8; RTS_BODY_LEN] {
        let mut b = [0u8; RTS_BODY_LEN];
        b[..8].copy_from_slice(&self.key.to_le_bytes());
        b[8..].copy_from_slice(&self.cookie.to_le_bytes());
        b
    }

    /// The body after an OP_RTS header, or `None` when too short.
    pub(crate) fn decode(b: &[u8]) -> Option<RtsBody> {
        let b: &[u8; RTS_BODY_LEN] = b.get(..RTS_BODY_LEN)?.try_into().ok()?;
        let (key, cookie) = b.split_at(8);
        Some(RtsBody {
            key: u64::from_le_bytes(key.try_into().ok()?),
            cookie: u64::from_le_bytes(cookie.try_into().ok()?),
        })
    }
}

/// The consumer's private data on connect, accept and reject at most (an IB
/// connect request carries 56 bytes, less the length byte).
pub(crate) const CM_DATA_MAX: usize = 55;

/// Connection private data as it goes: a length byte, then the consumer's
/// bytes (IB pads private data to a fixed size, so the length travels).
#[derive(Clone, Copy)]
pub(crate) struct CmData {
    bytes: [u8; CM_DATA_MAX + 1],
}

impl CmData {
    /// The encoding of `param`, or `None` when it is too long.
    pub(crate) fn encode(param: &[u8]) -> Option<CmData> {
        if param.len() > CM_DATA_MAX {
            return None;
        }
        let mut bytes = [0u8; CM_DATA_MAX + 1];
        bytes[0] = param.len() as u8;
        bytes[1..=param.len()].copy_from_slice(param);
        Some(CmData { bytes })
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..=self.bytes[0] as usize]
    }
}

/// The consumer's bytes of received private data (see [`CmData`]).
pub(crate) fn cm_data_decode(b: &[u8]) -> &[u8] {
    match b.split_first() {
        Some((&n, rest)) if (n as usize) <= rest.len() => &rest[..n as usize],
        _ => &[],
    }
}

/// Bit 63 of a key: the region has a key table (a region longer than one
/// MR can map, in pieces), which a peer reads before it uses the key. The
/// key's low 32 bits are the table's rkey, at address 0; bits 32-47 are
/// what to add to an address, as for every key; bits 48-62 a nonce the
/// table repeats, so a table whose rkey the device gave out again is never
/// taken for an older one's. The layout is `struct kverbs_key_table` of
/// kofi_verbs_glue.h.
pub(crate) const KEY_TABLE: u64 = 1 << 63;
/// The bits of a key that a peer adds to an address.
pub(crate) const KEY_DELTA: u64 = 0xffff << 32;
/// Where a table key's nonce starts, and its bits.
pub(crate) const KEY_NONCE_SHIFT: u32 = 48;
pub(crate) const KEY_NONCE_MASK: u64 = 0x7fff;
/// What identifies a key table.
pub(crate) const TABLE_MAGIC: u32 = 0x6b6b_7462;
/// Pieces of a region at most.
pub(crate) const PIECES_MAX: usize = 32;
/// The bytes of a key table a peer reads.
pub(crate) const TABLE_LEN: usize = 24 + 16 * PIECES_MAX;

/// Whether `key` names a region in pieces, whose key table a peer reads
/// first ([`KEY_TABLE`]).
pub(crate) fn names_table(key: u64) -> bool {
    key & KEY_TABLE != 0
}

/// Where an access at `addr` of the region of key `key` (one MR's, not a
/// table's) goes: the address the device is given, and the rkey.
pub(crate) fn remote(key: u64, addr: u64) -> (u64, u32) {
    (addr.wrapping_add(key >> 32), key as u32)
}

/// A region's key table: each piece's first address and rkey, in order,
/// and the address one past the region's end.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct KeyTable {
    count: usize,
    end: u64,
    pieces: [(u64, u32); PIECES_MAX],
}

impl KeyTable {
    /// The table of key `key` in `b`, or `None` when it is malformed (a
    /// peer's bytes: wrong magic, another key's nonce, no pieces or too
    /// many, pieces out of order or empty).
    pub(crate) fn decode(key: u64, b: &[u8]) -> Option<KeyTable> {
        let b: &[u8; TABLE_LEN] = b.get(..TABLE_LEN)?.try_into().ok()?;
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| u64::from(u32_at(i)) | u64::from(u32_at(i + 4)) << 32;
        let nonce = key >> KEY_NONCE_SHIFT & KEY_NONCE_MASK;
        if u32_at(0) != TABLE_MAGIC || u64_at(8) != nonce {
            return None;
        }
        let count = u32_at(4) as usize;
        if count == 0 || count > PIECES_MAX {
            return None;
        }
        let mut t = KeyTable {
            count,
            end: u64_at(16),
            pieces: [(0, 0); PIECES_MAX],
        };
        for (i, piece) in t.pieces.iter_mut().take(count).enumerate() {
            *piece = (u64_at(24 + 16 * i), u32_at(32 + 16 * i));
        }
        let starts_rise = t.pieces[..count].windows(2).all(|w| w[0].0 < w[1].0);
        (starts_rise && t.pieces[count - 1].0 < t.end).then_some(t)
    }

    /// The piece holding address `addr`: its rkey and how many bytes of it
    /// lie from `addr` on; `None` outside the region.
    pub(crate) fn piece_at(&self, addr: u64) -> Option<(u32, u64)> {
        let pieces = &self.pieces[..self.count];
        if addr < pieces[0].0 || addr >= self.end {
            return None;
        }
        let i = pieces.partition_point(|p| p.0 <= addr) - 1;
        let next = pieces.get(i + 1).map_or(self.end, |p| p.0);
        Some((pieces[i].1, next - addr))
    }

    /// Splits `len` bytes at `addr` of the region whose key is `key` into
    /// `(addr, len, key)` pieces, each with its piece's own key; `None`
    /// when a byte lies outside the region.
    pub(crate) fn split(
        &self,
        key: u64,
        mut addr: u64,
        mut len: u64,
        mut out: impl FnMut(u64, u64, u64) -> bool,
    ) -> Option<()> {
        let delta = key & KEY_DELTA;
        if len == 0 {
            // Nothing is accessed: any piece's key serves.
            return out(addr, 0, delta | u64::from(self.pieces[0].1)).then_some(());
        }
        loop {
            let (rkey, room) = self.piece_at(addr)?;
            let n = len.min(room);
            if !out(addr, n, delta | u64::from(rkey)) {
                return None;
            }
            len -= n;
            if len == 0 {
                return Some(());
            }
            addr += n;
        }
    }
}
