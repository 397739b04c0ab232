// SPDX-License-Identifier: GPL-2.0

//! kofi_verbs' message protocol over RC SENDs (pure logic).
//!
//! Every SEND starts with a 16-byte header and lands in one of the
//! receiver's provider buffers, so messages may arrive before their receive
//! is posted and a short receive truncates instead of breaking the QP.
//! Messages longer than a buffer go as segments, in order. Each SEND uses a
//! credit (a buffer the peer has posted); headers return credits.
//!
//! Header, little endian: op u8, flags u8, credits u16, len u32 (the whole
//! message), data u64 (remote CQ data).

/// A message segment.
pub(crate) const OP_MSG: u8 = 1;
/// Remote CQ data of an RDMA write that precedes it.
pub(crate) const OP_WRITE_DATA: u8 = 2;
/// Credits only.
pub(crate) const OP_CREDIT: u8 = 3;

pub(crate) const FLAG_FIRST: u8 = 1;
pub(crate) const FLAG_LAST: u8 = 2;
pub(crate) const FLAG_CQ_DATA: u8 = 4;

pub(crate) const HEADER_LEN: usize = 16;

#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub(crate) struct Header {
    pub(crate) op: u8,
    pub(crate) flags: u8,
    pub(crate) credits: u16,
    pub(crate) len: u32,
    pub(crate) data: u64,
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0] = self.op;
        b[1] = self.flags;
        b[2..4].copy_from_slice(&self.credits.to_le_bytes());
        b[4..8].copy_from_slice(&self.len.to_le_bytes());
        b[8..16].copy_from_slice(&self.data.to_le_bytes());
        b
    }

    /// The header of a received SEND, or `None` for a malformed one.
    pub(crate) fn decode(b: &[u8]) -> Option<Header> {
        let b: &[u8; HEADER_LEN] = b.get(..HEADER_LEN)?.try_into().ok()?;
        let h = Header {
            op: b[0],
            flags: b[1],
            credits: u16::from_le_bytes([b[2], b[3]]),
            len: u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
            data: u64::from_le_bytes([b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]]),
        };
        matches!(h.op, OP_MSG | OP_WRITE_DATA | OP_CREDIT).then_some(h)
    }
}

/// Connection private data: a length byte, then the consumer's bytes (IB
/// pads private data to a fixed size, so the length travels with it).
pub(crate) fn cm_data_decode(b: &[u8]) -> &[u8] {
    match b.split_first() {
        Some((&n, rest)) if (n as usize) <= rest.len() => &rest[..n as usize],
        _ => &[],
    }
}
