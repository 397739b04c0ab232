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
        if b.len() < HDR_LEN {
            return Err(Malformed::Short);
        }
        if b[0] != MAGIC {
            return Err(Malformed::Magic);
        }
        if b[1] != OP_MSG {
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
