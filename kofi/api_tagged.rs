// SPDX-License-Identifier: GPL-2.0

//! The exported tagged calls (fi_tagged.h): each builds a tagged message
//! and calls `Endpoint::tsend` or `Endpoint::trecv` (ep_data.rs), which
//! check what the untagged calls check, on an endpoint with FI_TAGGED.

use crate::abi;
use crate::api_data::{one_kvec, plain};
use crate::context::Context;
use crate::errno::to_c_ssize;
use crate::flags::*;
use crate::iov::local_of;
use crate::msg::{Msg, TaggedMsg};
use crate::object::{lookup, Endpoint};
use core::ptr;
use kernel::ffi::c_void;
use kernel::prelude::*;

/// The typed form of a consumer's `fi_msg_tagged`.
///
/// # Safety
///
/// `msg` is null or a message whose arrays hold their counts (ABI), valid
/// for `'a`.
unsafe fn tagged_in<'a>(msg: *const abi::fi_msg_tagged) -> Result<TaggedMsg<'a>> {
    // SAFETY: The caller's guarantee.
    let m = unsafe { msg.as_ref() }.ok_or(EINVAL)?;
    Ok(TaggedMsg {
        msg: Msg {
            // SAFETY: The caller's guarantee.
            local: unsafe { local_of!(m) }?,
            addr: m.addr,
            context: Context::of(m.context),
            data: m.data,
        },
        tag: m.tag,
        ignore: m.ignore,
    })
}

fn tsendmsg(ep: *mut abi::fid_ep, msg: *const abi::fi_msg_tagged, flags: u64) -> Result<usize> {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    // SAFETY: The consumer's message (ABI).
    let m = unsafe { tagged_in(msg) }?;
    // SAFETY: The consumer's buffers and descriptors (the ABI's terms).
    unsafe { e.tsend(&m, flags) }.map(|()| 0)
}

fn trecvmsg(ep: *mut abi::fid_ep, msg: *const abi::fi_msg_tagged, flags: u64) -> Result<usize> {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    // SAFETY: The consumer's message (ABI).
    let m = unsafe { tagged_in(msg) }?;
    // SAFETY: The consumer's buffers and descriptors (the ABI's terms).
    unsafe { e.trecv(&m, flags) }.map(|()| 0)
}

/// A completion flag for a `*msg` call, as `fi_sendmsg`/`fi_recvmsg` do.
fn with_completion(ep: *mut abi::fid_ep, rx: bool, flags: u64) -> Result<u64> {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    Ok(e.call_flags(rx, flags))
}

#[allow(clippy::too_many_arguments)]
fn tagged(
    iov: *const abi::kvec,
    desc: *mut *mut c_void,
    count: usize,
    addr: u64,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
    data: u64,
) -> abi::fi_msg_tagged {
    abi::fi_msg_tagged {
        msg_iov: iov,
        msg_bvec: ptr::null(),
        desc,
        iov_count: count,
        addr,
        tag,
        ignore,
        context,
        data,
    }
}

/// A tagged send of one buffer: fi_tsend, fi_tinject, fi_tsenddata, ...
#[allow(clippy::too_many_arguments)]
fn tsend_one(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    mut desc: *mut c_void,
    dest_addr: u64,
    tag: u64,
    context: *mut c_void,
    data: u64,
    flags: u64,
) -> isize {
    let kvec = match one_kvec(buf, len) {
        Ok(k) => k,
        Err(e) => return e.to_errno() as isize,
    };
    let msg = tagged(&kvec, &mut desc, 1, dest_addr, tag, 0, context, data);
    to_c_ssize(tsendmsg(ep, &msg, flags))
}

/// `fi_tsend()`.
#[no_mangle]
pub(crate) extern "C" fn fi_tsend(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    dest_addr: u64,
    tag: u64,
    context: *mut c_void,
) -> isize {
    let flags = plain(ep, false);
    tsend_one(ep, buf, len, desc, dest_addr, tag, context, 0, flags)
}

/// `fi_tsendv()`.
#[no_mangle]
pub(crate) extern "C" fn fi_tsendv(
    ep: *mut abi::fid_ep,
    iov: *const abi::kvec,
    desc: *mut *mut c_void,
    count: usize,
    dest_addr: u64,
    tag: u64,
    context: *mut c_void,
) -> isize {
    let msg = tagged(iov, desc, count, dest_addr, tag, 0, context, 0);
    to_c_ssize(tsendmsg(ep, &msg, plain(ep, false)))
}

/// `fi_tsendmsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_tsendmsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg_tagged,
    flags: u64,
) -> isize {
    to_c_ssize(with_completion(ep, false, flags).and_then(|f| tsendmsg(ep, msg, f)))
}

/// `fi_tinject()`: the buffer may be reused at once; no completion.
#[no_mangle]
pub(crate) extern "C" fn fi_tinject(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    dest_addr: u64,
    tag: u64,
) -> isize {
    let (desc, ctx) = (ptr::null_mut(), ptr::null_mut());
    tsend_one(ep, buf, len, desc, dest_addr, tag, ctx, 0, FI_INJECT)
}

/// `fi_tsenddata()`: a tagged send with remote CQ data.
#[no_mangle]
pub(crate) extern "C" fn fi_tsenddata(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    data: u64,
    dest_addr: u64,
    tag: u64,
    context: *mut c_void,
) -> isize {
    let flags = plain(ep, false) | FI_REMOTE_CQ_DATA;
    tsend_one(ep, buf, len, desc, dest_addr, tag, context, data, flags)
}

/// `fi_tinjectdata()`: fi_tinject with remote CQ data.
#[no_mangle]
pub(crate) extern "C" fn fi_tinjectdata(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    data: u64,
    dest_addr: u64,
    tag: u64,
) -> isize {
    let (desc, ctx) = (ptr::null_mut(), ptr::null_mut());
    let flags = FI_INJECT | FI_REMOTE_CQ_DATA;
    tsend_one(ep, buf, len, desc, dest_addr, tag, ctx, data, flags)
}

/// `fi_trecv()`.
#[no_mangle]
pub(crate) extern "C" fn fi_trecv(
    ep: *mut abi::fid_ep,
    buf: *mut c_void,
    len: usize,
    mut desc: *mut c_void,
    src_addr: u64,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
) -> isize {
    let kvec = match one_kvec(buf, len) {
        Ok(k) => k,
        Err(e) => return e.to_errno() as isize,
    };
    let msg = tagged(&kvec, &mut desc, 1, src_addr, tag, ignore, context, 0);
    to_c_ssize(trecvmsg(ep, &msg, plain(ep, true)))
}

/// `fi_trecvv()`.
#[no_mangle]
pub(crate) extern "C" fn fi_trecvv(
    ep: *mut abi::fid_ep,
    iov: *const abi::kvec,
    desc: *mut *mut c_void,
    count: usize,
    src_addr: u64,
    tag: u64,
    ignore: u64,
    context: *mut c_void,
) -> isize {
    let msg = tagged(iov, desc, count, src_addr, tag, ignore, context, 0);
    to_c_ssize(trecvmsg(ep, &msg, plain(ep, true)))
}

/// `fi_trecvmsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_trecvmsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg_tagged,
    flags: u64,
) -> isize {
    to_c_ssize(with_completion(ep, true, flags).and_then(|f| trecvmsg(ep, msg, f)))
}
