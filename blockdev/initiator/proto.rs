// SPDX-License-Identifier: GPL-2.0

//! The kofi_blk wire protocol, as `blockdev/kofi_blk_proto.h` defines it
//! (read here through bindgen): encoding and checked decoding of the
//! handshake's private data, commands and responses, little-endian.

use crate::abi;
use crate::errno;
use core::mem::size_of;
use kernel::prelude::*;

pub(crate) const CONNECT_LEN: usize = size_of::<abi::kofi_blk_connect>();
pub(crate) const ACCEPT_LEN: usize = size_of::<abi::kofi_blk_accept>();
pub(crate) const REJECT_LEN: usize = size_of::<abi::kofi_blk_reject>();
pub(crate) const COMMAND_LEN: usize = size_of::<abi::kofi_blk_cmd>();
pub(crate) const RESPONSE_LEN: usize = size_of::<abi::kofi_blk_resp>();
const _: () = assert!(CONNECT_LEN == 48 && ACCEPT_LEN == 32 && REJECT_LEN == 8);
const _: () = assert!(COMMAND_LEN == 40 && RESPONSE_LEN == 16);
const _: () = assert!(
    core::mem::offset_of!(abi::kofi_blk_connect, read_inline_max) == 12
        && core::mem::offset_of!(abi::kofi_blk_accept, read_inline_max) == 28
);

pub(crate) const READ: u8 = abi::kofi_blk_opcode_KOFI_BLK_READ as u8;
pub(crate) const WRITE: u8 = abi::kofi_blk_opcode_KOFI_BLK_WRITE as u8;
pub(crate) const FLUSH: u8 = abi::kofi_blk_opcode_KOFI_BLK_FLUSH as u8;
pub(crate) const NAME_MAX: usize = abi::KOFI_BLK_NAME_MAX as usize;
pub(crate) const DEPTH_MAX: u16 = abi::KOFI_BLK_DEPTH_MAX as u16;

fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

fn get<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&buf[at..at + N]);
    out
}

/// The connect's private data: `export`'s name, the queue and its depth,
/// and the bytes of a read its receives hold past a response.
pub(crate) fn connect(
    export: &[u8],
    queue: u16,
    depth: u16,
    read_inline_max: u32,
) -> Result<[u8; CONNECT_LEN]> {
    if export.is_empty() || export.len() >= NAME_MAX || depth == 0 || depth > DEPTH_MAX {
        return Err(EINVAL);
    }
    let mut b = [0u8; CONNECT_LEN];
    put(&mut b, 0, &abi::KOFI_BLK_MAGIC.to_le_bytes());
    put(&mut b, 4, &(abi::KOFI_BLK_VERSION as u16).to_le_bytes());
    put(&mut b, 6, &queue.to_le_bytes());
    put(&mut b, 8, &depth.to_le_bytes());
    put(&mut b, 12, &read_inline_max.to_le_bytes());
    put(&mut b, 16, export);
    Ok(b)
}

/// The device as the target describes it in its accept.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Accept {
    pub(crate) sectors: u64,
    pub(crate) block_size: u32,
    pub(crate) max_io: u32,
    /// A write's bytes a command may carry (0: none).
    pub(crate) inline_max: u32,
    /// A read's bytes a response may carry (0: none).
    pub(crate) read_inline_max: u32,
}

/// Decodes and checks an accept's private data, the answer to a connect
/// that offered `read_inline_max`.
pub(crate) fn accept(b: &[u8], read_inline_max: u32) -> Result<Accept> {
    if b.len() < ACCEPT_LEN
        || u32::from_le_bytes(get(b, 0)) != abi::KOFI_BLK_MAGIC
        || u16::from_le_bytes(get(b, 4)) != abi::KOFI_BLK_VERSION as u16
    {
        return Err(errno::eproto());
    }
    let a = Accept {
        sectors: u64::from_le_bytes(get(b, 8)),
        block_size: u32::from_le_bytes(get(b, 16)),
        max_io: u32::from_le_bytes(get(b, 20)),
        inline_max: u32::from_le_bytes(get(b, 24)),
        read_inline_max: u32::from_le_bytes(get(b, 28)),
    };
    let bs_ok = (512..=4096).contains(&a.block_size) && a.block_size.is_power_of_two();
    if !bs_ok
        || a.max_io < a.block_size
        || a.max_io % a.block_size != 0
        || a.sectors == 0
        || a.read_inline_max > read_inline_max
    {
        return Err(errno::eproto());
    }
    Ok(a)
}

/// The errno (positive) of a rejection's private data, if it is one.
pub(crate) fn reject(b: &[u8]) -> Option<i32> {
    if b.len() < REJECT_LEN || u32::from_le_bytes(get(b, 0)) != abi::KOFI_BLK_MAGIC {
        return None;
    }
    let status = u32::from_le_bytes(get(b, 4));
    (1..4096).contains(&status).then_some(status as i32)
}

/// A command.
#[derive(Clone, Copy)]
pub(crate) struct Command {
    pub(crate) opcode: u8,
    pub(crate) fua: bool,
    /// A write whose data follows the command in its message, or a read
    /// whose data follows its response in the response's.
    pub(crate) inline: bool,
    pub(crate) tag: u16,
    pub(crate) gen: u32,
    pub(crate) sector: u64,
    pub(crate) len: u32,
    pub(crate) key: u64,
}

impl Command {
    pub(crate) fn encode(&self) -> [u8; COMMAND_LEN] {
        let mut b = [0u8; COMMAND_LEN];
        b[0] = self.opcode;
        let fua = if self.fua { abi::KOFI_BLK_FUA as u8 } else { 0 };
        let inline = if self.inline {
            abi::KOFI_BLK_INLINE as u8
        } else {
            0
        };
        b[1] = fua | inline;
        put(&mut b, 2, &self.tag.to_le_bytes());
        put(&mut b, 4, &self.gen.to_le_bytes());
        put(&mut b, 8, &self.sector.to_le_bytes());
        put(&mut b, 16, &self.len.to_le_bytes());
        put(&mut b, 24, &self.key.to_le_bytes());
        // addr (32..40): the region starts at offset 0.
        b
    }
}

/// A response.
pub(crate) struct Response {
    pub(crate) tag: u16,
    pub(crate) gen: u32,
    /// 0 or a positive errno.
    pub(crate) status: u32,
}

impl Response {
    pub(crate) fn decode(b: &[u8]) -> Option<Response> {
        if b.len() != RESPONSE_LEN {
            return None;
        }
        Some(Response {
            tag: u16::from_le_bytes(get(b, 0)),
            gen: u32::from_le_bytes(get(b, 4)),
            status: u32::from_le_bytes(get(b, 8)),
        })
    }
}

/// A response's status as the request's result.
pub(crate) fn status_result(status: u32) -> Result {
    match status {
        0 => Ok(()),
        status => Err(status_error(status)),
    }
}

/// A response's status as the request's error: the target's errno when it
/// is one a block request can carry, else EIO.
fn status_error(status: u32) -> Error {
    match status {
        s if s == kernel::bindings::ENOSPC
            || s == kernel::bindings::EOPNOTSUPP
            || s == kernel::bindings::ENOMEM =>
        {
            Error::from_errno(-(s as i32))
        }
        _ => EIO,
    }
}
