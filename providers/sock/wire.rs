// SPDX-License-Identifier: GPL-2.0

//! The kofi_sock wire protocol: every frame on a connection is a 64-byte
//! header, little-endian, followed by `len` bytes of payload. Its encoder
//! and parser are pure Rust without kernel dependencies, shared by the module
//! and the host crate that tests and fuzzes them. Documented in
//! `Documentation/kofi/sock-wire.rst`.
//!
//! The parser checks everything a peer controls before anything else looks
//! at it: magic, version, operation, reserved bits, flags, and every length
//! against the limits of the receiving endpoint.

/// "KOFI" as a little-endian u32.
pub(crate) const MAGIC: u32 = 0x4946_4f4b;
pub(crate) const VERSION: u8 = 1;
pub(crate) const HEADER_LEN: usize = 64;
/// The most private data connect, accept and reject carry.
pub(crate) const CM_DATA_MAX: u64 = 256;

/// The operation a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Op {
    /// Client to server, after TCP connects: private data.
    Connect = 1,
    /// Server to client: private data.
    Accept = 2,
    /// Server to client: private data; the server closes after.
    Reject = 3,
    /// A message: payload, remote CQ data with `FLAG_CQ_DATA`.
    Send = 4,
    /// An RMA write of the payload to `key`/`addr`; answered by WriteAck
    /// (with `FLAG_NO_ANSWER`: only when it fails).
    Write = 5,
    /// Completes the write `id` with `status`.
    WriteAck = 6,
    /// Asks for `rma_len` bytes at `key`/`addr`; answered by ReadResp.
    ReadReq = 7,
    /// Answers the read `id`: `status`, and on success the bytes.
    ReadResp = 8,
    /// The peer is shutting the connection down.
    Shutdown = 9,
}

impl Op {
    fn from_u8(v: u8) -> Option<Op> {
        Some(match v {
            1 => Op::Connect,
            2 => Op::Accept,
            3 => Op::Reject,
            4 => Op::Send,
            5 => Op::Write,
            6 => Op::WriteAck,
            7 => Op::ReadReq,
            8 => Op::ReadResp,
            9 => Op::Shutdown,
            _ => return None,
        })
    }
}

/// Remote CQ data is valid (Send, Write).
pub(crate) const FLAG_CQ_DATA: u16 = 1 << 0;
/// A tagged message (Send): `key` holds its tag.
pub(crate) const FLAG_TAGGED: u16 = 1 << 1;
/// A Write its writer completed once TCP took it (FI_INJECT_COMPLETE): the
/// target answers only a failure, which ends the connection.
pub(crate) const FLAG_NO_ANSWER: u16 = 1 << 2;
const KNOWN_FLAGS: u16 = FLAG_CQ_DATA | FLAG_TAGGED | FLAG_NO_ANSWER;

/// A decoded header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Header {
    pub(crate) op: Option<Op>,
    pub(crate) flags: u16,
    /// A positive errno for WriteAck, ReadResp and Reject; else 0.
    pub(crate) status: u32,
    /// Bytes of payload after the header.
    pub(crate) len: u64,
    /// An RMA's region; a tagged Send's tag.
    pub(crate) key: u64,
    pub(crate) addr: u64,
    /// Remote CQ data (with FLAG_CQ_DATA).
    pub(crate) data: u64,
    /// The initiator's tag of an RMA, echoed in its answer.
    pub(crate) id: u64,
    /// Bytes a ReadReq asks for.
    pub(crate) rma_len: u64,
}

/// What the receiving endpoint accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The largest message or RMA.
    pub(crate) max_msg: u64,
}

/// Why a header was refused. Any of these ends the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WireError {
    BadMagic,
    BadVersion(u8),
    BadOp(u8),
    BadFlags(u16),
    Reserved,
    /// A length out of the limits, or present where none belongs.
    BadLength,
    /// A status where none belongs, or none where one does.
    BadStatus,
}

fn u16_at(b: &[u8; HEADER_LEN], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8; HEADER_LEN], at: usize) -> u32 {
    let mut v = [0u8; 4];
    v.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(v)
}

fn u64_at(b: &[u8; HEADER_LEN], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}

impl Header {
    pub(crate) fn new(op: Op) -> Header {
        Header {
            op: Some(op),
            ..Header::default()
        }
    }

    /// A Send's tag: None for an untagged message.
    pub(crate) fn tag(&self) -> Option<u64> {
        (self.flags & FLAG_TAGGED != 0).then_some(self.key)
    }

    /// The header's bytes.
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&MAGIC.to_le_bytes());
        b[4] = VERSION;
        b[5] = self.op.map_or(0, |op| op as u8);
        b[6..8].copy_from_slice(&self.flags.to_le_bytes());
        b[8..12].copy_from_slice(&self.status.to_le_bytes());
        // 12..16 reserved, zero.
        b[16..24].copy_from_slice(&self.len.to_le_bytes());
        b[24..32].copy_from_slice(&self.key.to_le_bytes());
        b[32..40].copy_from_slice(&self.addr.to_le_bytes());
        b[40..48].copy_from_slice(&self.data.to_le_bytes());
        b[48..56].copy_from_slice(&self.id.to_le_bytes());
        b[56..64].copy_from_slice(&self.rma_len.to_le_bytes());
        b
    }

    /// Decodes and checks a header from a peer.
    pub(crate) fn parse(b: &[u8; HEADER_LEN], limits: &Limits) -> Result<Header, WireError> {
        if u32_at(b, 0) != MAGIC {
            return Err(WireError::BadMagic);
        }
        if b[4] != VERSION {
            return Err(WireError::BadVersion(b[4]));
        }
        let op = Op::from_u8(b[5]).ok_or(WireError::BadOp(b[5]))?;
        let flags = u16_at(b, 6);
        if flags & !KNOWN_FLAGS != 0 {
            return Err(WireError::BadFlags(flags));
        }
        if u32_at(b, 12) != 0 {
            return Err(WireError::Reserved);
        }
        let h = Header {
            op: Some(op),
            flags,
            status: u32_at(b, 8),
            len: u64_at(b, 16),
            key: u64_at(b, 24),
            addr: u64_at(b, 32),
            data: u64_at(b, 40),
            id: u64_at(b, 48),
            rma_len: u64_at(b, 56),
        };
        h.check(op, limits)?;
        Ok(h)
    }

    fn check(&self, op: Op, limits: &Limits) -> Result<(), WireError> {
        let cq_data_allowed = matches!(op, Op::Send | Op::Write);
        if self.flags & FLAG_CQ_DATA != 0 && !cq_data_allowed {
            return Err(WireError::BadFlags(self.flags));
        }
        if self.flags & FLAG_TAGGED != 0 && op != Op::Send {
            return Err(WireError::BadFlags(self.flags));
        }
        if self.flags & FLAG_NO_ANSWER != 0 && op != Op::Write {
            return Err(WireError::BadFlags(self.flags));
        }
        let status_allowed = matches!(op, Op::WriteAck | Op::ReadResp | Op::Reject);
        if self.status != 0 && !status_allowed {
            return Err(WireError::BadStatus);
        }
        if self.status > 4095 {
            return Err(WireError::BadStatus);
        }
        let ok = match op {
            Op::Connect | Op::Accept | Op::Reject => self.len <= CM_DATA_MAX && self.rma_len == 0,
            Op::Send => self.len <= limits.max_msg && self.rma_len == 0,
            Op::Write => {
                self.len <= limits.max_msg
                    && self.rma_len == self.len
                    && self.addr.checked_add(self.len).is_some()
            }
            Op::ReadReq => {
                self.len == 0
                    && self.rma_len <= limits.max_msg
                    && self.addr.checked_add(self.rma_len).is_some()
            }
            // A failed read carries no bytes.
            Op::ReadResp => {
                self.len <= limits.max_msg
                    && self.rma_len == 0
                    && (self.status == 0 || self.len == 0)
            }
            Op::WriteAck | Op::Shutdown => self.len == 0 && self.rma_len == 0,
        };
        if ok {
            Ok(())
        } else {
            Err(WireError::BadLength)
        }
    }
}
