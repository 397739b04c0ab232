// SPDX-License-Identifier: GPL-2.0

//! What an FI_EP_RDM endpoint puts on its MSG connections. Pure logic,
//! tested on the host.
//!
//! A message travels as one or more segments, each one MSG send of a header
//! and up to a segment of payload; a message's segments are sent back to
//! back on one connection, so the receiver knows a continuation from the
//! connection's state. The connection request carries the requester's name
//! (the address its peers have in their AVs), which is how the accepting
//! side knows who the peer is for FI_SOURCE.

use crate::addr::Name;

/// Bytes of a segment header.
pub(crate) const HDR_LEN: usize = 24;
const MAGIC: u8 = 0xd7;
/// The segment is part of a message.
pub(crate) const OP_MSG: u8 = 1;
/// Asks the peer to let an idle connection go.
pub(crate) const OP_BYE: u8 = 2;
/// The peer sends nothing more on the connection: close it.
pub(crate) const OP_BYE_ACK: u8 = 3;
/// An atomic operation on a region of the receiver (`AtomicRequest`).
pub(crate) const OP_ATOMIC: u8 = 4;
/// The answer to one (`AtomicAnswer`).
pub(crate) const OP_ATOMIC_ACK: u8 = 5;
/// A large message's announcement: its header, then the sender's id for
/// it (le64); the receiver asks for the bytes once a receive takes it.
pub(crate) const OP_RTS: u8 = 6;
/// The receiver's request for an announced message's bytes (`Cts`).
pub(crate) const OP_CTS: u8 = 7;
/// The message carries remote CQ data.
pub(crate) const FLAG_DATA: u8 = 1;
/// The message is tagged (fi_tagged): only tagged receives match it.
pub(crate) const FLAG_TAG: u8 = 2;

/// A segment header: magic, op, flags, a zero byte, the message's length
/// (le32), remote CQ data (le64), the tag (le64).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    /// The message's length in bytes.
    pub(crate) total: u32,
    /// Remote CQ data, when the sender gave some.
    pub(crate) data: Option<u64>,
    /// The tag of a tagged message.
    pub(crate) tag: Option<u64>,
}

/// Why a segment is refused; the connection is then dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Malformed {
    Short,
    Magic,
    Op,
    Flags,
}

fn le64(b: &[u8]) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[..8]);
    u64::from_le_bytes(v)
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; HDR_LEN] {
        let mut b = [0u8; HDR_LEN];
        b[0] = MAGIC;
        b[1] = OP_MSG;
        b[2] = if self.data.is_some() { FLAG_DATA } else { 0 }
            | if self.tag.is_some() { FLAG_TAG } else { 0 };
        b[4..8].copy_from_slice(&self.total.to_le_bytes());
        b[8..16].copy_from_slice(&self.data.unwrap_or(0).to_le_bytes());
        b[16..24].copy_from_slice(&self.tag.unwrap_or(0).to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Header, Malformed> {
        Self::decode_as(b, OP_MSG)
    }

    /// The header of a frame of `op` (OP_MSG or OP_RTS).
    fn decode_as(b: &[u8], op: u8) -> Result<Header, Malformed> {
        if b.len() < HDR_LEN {
            return Err(Malformed::Short);
        }
        if b[0] != MAGIC {
            return Err(Malformed::Magic);
        }
        if b[1] != op {
            return Err(Malformed::Op);
        }
        if b[2] & !(FLAG_DATA | FLAG_TAG) != 0 || b[3] != 0 {
            return Err(Malformed::Flags);
        }
        let total = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        let data = (b[2] & FLAG_DATA != 0).then_some(le64(&b[8..16]));
        let tag = (b[2] & FLAG_TAG != 0).then_some(le64(&b[16..24]));
        Ok(Header { total, data, tag })
    }
}

/// Bytes of an announcement (OP_RTS).
pub(crate) const RTS_LEN: usize = HDR_LEN + 8;

/// A large message's announcement: the segment header with OP_RTS, then
/// the sender's id for the message (le64), which the receiver's `Cts` and
/// the tagged MSG message carrying the bytes name. Its `total` is the whole
/// message's; no payload follows.
pub(crate) fn rts(h: &Header, id: u64) -> [u8; RTS_LEN] {
    let mut b = [0u8; RTS_LEN];
    b[..HDR_LEN].copy_from_slice(&h.encode());
    b[1] = OP_RTS;
    b[HDR_LEN..].copy_from_slice(&id.to_le_bytes());
    b
}

/// The header and id of an announcement, which must be exactly one.
pub(crate) fn rts_decode(b: &[u8]) -> Result<(Header, u64), Malformed> {
    if b.len() != RTS_LEN {
        return Err(Malformed::Short);
    }
    let h = Header::decode_as(b, OP_RTS)?;
    Ok((h, le64(&b[HDR_LEN..])))
}

/// Bytes of a `Cts`.
pub(crate) const CTS_LEN: usize = 16;

/// The receiver's request for announced message `id`: `len` bytes of it
/// (less than its total when the receive truncates; 0 when the receive
/// drops it, and nothing is sent). 16 bytes: magic, OP_CTS, two zero bytes,
/// len le32, id le64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cts {
    pub(crate) id: u64,
    pub(crate) len: u32,
}

impl Cts {
    pub(crate) fn encode(&self) -> [u8; CTS_LEN] {
        let mut b = [0u8; CTS_LEN];
        b[0] = MAGIC;
        b[1] = OP_CTS;
        b[4..8].copy_from_slice(&self.len.to_le_bytes());
        b[8..16].copy_from_slice(&self.id.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Option<Cts> {
        if b.len() != CTS_LEN || b[0] != MAGIC || b[1] != OP_CTS || b[2..4] != [0; 2] {
            return None;
        }
        Some(Cts {
            len: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            id: le64(&b[8..16]),
        })
    }
}

/// The header of control segment `op` (OP_BYE or OP_BYE_ACK).
pub(crate) fn control(op: u8) -> [u8; HDR_LEN] {
    let mut b = [0u8; HDR_LEN];
    b[0] = MAGIC;
    b[1] = op;
    b
}

/// The op of a well-formed control segment, or `None` for anything else.
pub(crate) fn control_op(b: &[u8]) -> Option<u8> {
    let op = *b.get(1)?;
    let known = op == OP_BYE || op == OP_BYE_ACK;
    (b.len() == HDR_LEN && known && b == control(op)).then_some(op)
}

/// The op of a frame that starts with the magic byte (frames are as long
/// as their op says: an answer may be shorter than a segment header).
pub(crate) fn frame_op(b: &[u8]) -> Option<u8> {
    (b.len() >= 2 && b[0] == MAGIC).then_some(b[1])
}

/// Bytes before an atomic request's operands.
pub(crate) const ATOMIC_HDR: usize = 40;

/// An atomic operation as it travels: 40 bytes (magic, OP_ATOMIC, op,
/// datatype, kind, three zero bytes, count le32, four zero bytes, id le64,
/// offset le64, key le64), then `count` operands and, for a compare, `count`
/// compare values (le64 each).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct AtomicRequest {
    pub(crate) op: u8,
    pub(crate) datatype: u8,
    pub(crate) kind: u8,
    pub(crate) id: u64,
    pub(crate) addr: u64,
    pub(crate) key: u64,
    pub(crate) count: usize,
}

impl AtomicRequest {
    /// Bytes of the whole frame.
    pub(crate) fn frame_len(&self) -> usize {
        let values = if self.kind == 2 { 2 } else { 1 };
        ATOMIC_HDR + values * 8 * self.count
    }

    pub(crate) fn encode_header(&self) -> [u8; ATOMIC_HDR] {
        let mut b = [0u8; ATOMIC_HDR];
        b[0] = MAGIC;
        b[1] = OP_ATOMIC;
        b[2] = self.op;
        b[3] = self.datatype;
        b[4] = self.kind;
        b[8..12].copy_from_slice(&(self.count as u32).to_le_bytes());
        b[16..24].copy_from_slice(&self.id.to_le_bytes());
        b[24..32].copy_from_slice(&self.addr.to_le_bytes());
        b[32..40].copy_from_slice(&self.key.to_le_bytes());
        b
    }

    /// The request in `b`, whose length must be exactly its frame's, with
    /// at most `max` elements.
    pub(crate) fn decode(b: &[u8], max: usize) -> Result<AtomicRequest, Malformed> {
        if b.len() < ATOMIC_HDR {
            return Err(Malformed::Short);
        }
        if b[0] != MAGIC {
            return Err(Malformed::Magic);
        }
        if b[1] != OP_ATOMIC || b[4] > 2 {
            return Err(Malformed::Op);
        }
        if b[5..8] != [0; 3] || b[12..16] != [0; 4] {
            return Err(Malformed::Flags);
        }
        let count = u32::from_le_bytes([b[8], b[9], b[10], b[11]]) as usize;
        let r = AtomicRequest {
            op: b[2],
            datatype: b[3],
            kind: b[4],
            id: le64(&b[16..24]),
            addr: le64(&b[24..32]),
            key: le64(&b[32..40]),
            count,
        };
        if count == 0 || count > max || b.len() != r.frame_len() {
            return Err(Malformed::Short);
        }
        Ok(r)
    }

    /// Operand `i` (and its compare value) of a request frame `b`.
    pub(crate) fn values(&self, b: &[u8], i: usize) -> (u64, u64) {
        let at = ATOMIC_HDR + 8 * i;
        let operand = le64(&b[at..at + 8]);
        let compare = if self.kind == 2 {
            let c = ATOMIC_HDR + 8 * (self.count + i);
            le64(&b[c..c + 8])
        } else {
            0
        };
        (operand, compare)
    }
}

/// Bytes before an answer's old values.
pub(crate) const ANSWER_HDR: usize = 16;

/// The answer to an atomic request: 16 bytes (magic, OP_ATOMIC_ACK, two
/// zero bytes, status le32: 0 or a positive FI_E*, id le64), then the old
/// values (le64 each) when the request fetched and succeeded.
pub(crate) fn answer_header(id: u64, status: u32) -> [u8; ANSWER_HDR] {
    let mut b = [0u8; ANSWER_HDR];
    b[0] = MAGIC;
    b[1] = OP_ATOMIC_ACK;
    b[4..8].copy_from_slice(&status.to_le_bytes());
    b[8..16].copy_from_slice(&id.to_le_bytes());
    b
}

/// The id and status of an answer frame, and its old values.
pub(crate) fn answer_decode(b: &[u8]) -> Option<(u64, u32, &[u8])> {
    if b.len() < ANSWER_HDR || b[0] != MAGIC || b[1] != OP_ATOMIC_ACK || b[2..4] != [0; 2] {
        return None;
    }
    let values = &b[ANSWER_HDR..];
    if values.len() % 8 != 0 {
        return None;
    }
    let status = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
    Some((le64(&b[8..16]), status, values))
}

/// The private data of a connection request: a tag and the requester's name.
pub(crate) const CM_TAG: [u8; 4] = *b"kRDM";
/// Bytes of the largest request payload (fits every provider's limit: 55 on
/// kofi_verbs).
pub(crate) const CM_MAX: usize = 4 + crate::addr::SIN6_LEN;

/// The payload naming `name`, and its length.
pub(crate) fn cm_encode(name: &Name) -> ([u8; CM_MAX], usize) {
    let mut b = [0u8; CM_MAX];
    b[..4].copy_from_slice(&CM_TAG);
    let n = name.as_bytes();
    b[4..4 + n.len()].copy_from_slice(n);
    (b, 4 + n.len())
}

/// The requester's name in a request's payload.
pub(crate) fn cm_decode(b: &[u8]) -> Option<Name> {
    if b.len() < 4 || b[..4] != CM_TAG {
        return None;
    }
    let name = Name::parse(&b[4..]).ok()?;
    (name.as_bytes().len() == b.len() - 4 && !name.is_wildcard()).then_some(name)
}
