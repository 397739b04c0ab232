// SPDX-License-Identifier: GPL-2.0

//! The exported data calls: each converts its C arguments into a typed
//! message and calls the endpoint's typed operation (ep_data.rs), which
//! checks it and reaches the provider as one op (sendmsg, recvmsg, readmsg,
//! writemsg).

use crate::abi;
use crate::context::Context;
use crate::errno::{self, to_c_ssize};
use crate::flags::*;
use crate::iov::{array_of, local_of, Iov, Local};
use crate::msg::{Msg, Rma, RmaMsg};
use crate::object::{lookup, Endpoint};
use core::ptr;
use core::slice::from_ref;
use kernel::ffi::c_void;
use kernel::prelude::*;

/// Runs a data call on the endpoint `ep` names; its C return.
pub(crate) fn on_endpoint(ep: *mut abi::fid_ep, call: impl FnOnce(&Endpoint) -> Result) -> isize {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open (ABI).
    let result = unsafe { lookup::<Endpoint>(ep) }.and_then(call);
    to_c_ssize(result.map(|()| 0))
}

/// The flags of a plain call on the endpoint `ep` names (none for a bad
/// one, which the call then refuses).
pub(crate) fn plain(ep: *mut abi::fid_ep, rx: bool) -> u64 {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open (ABI).
    unsafe { lookup::<Endpoint>(ep) }.map_or(0, |e| e.plain_flags(rx))
}

/// One buffer as a kvec: -EINVAL for a null one with bytes.
pub(crate) fn one_kvec(buf: *const c_void, len: usize) -> Result<abi::kvec> {
    if buf.is_null() && len != 0 {
        return Err(EINVAL);
    }
    Ok(abi::kvec {
        iov_base: buf.cast_mut(),
        iov_len: len,
    })
}

/// The typed form of a consumer's `fi_msg`.
///
/// # Safety
///
/// `msg` is null or a message whose arrays hold their counts (ABI), valid
/// for `'a`.
unsafe fn msg_in<'a>(msg: *const abi::fi_msg) -> Result<Msg<'a>> {
    // SAFETY: The caller's guarantee.
    let m = unsafe { msg.as_ref() }.ok_or(EINVAL)?;
    Ok(Msg {
        // SAFETY: The caller's guarantee.
        local: unsafe { local_of!(m) }?,
        addr: m.addr,
        context: Context::of(m.context),
        data: m.data,
    })
}

/// `fi_sendmsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_sendmsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg,
    flags: u64,
) -> isize {
    on_endpoint(ep, |e| {
        // SAFETY: The consumer's message (ABI).
        let m = unsafe { msg_in(msg) }?;
        // SAFETY: The consumer's buffers and descriptors (the ABI's terms).
        unsafe { e.send(&m, e.call_flags(false, flags)) }
    })
}

/// A message of `count` kvecs (fi_sendv, fi_recvv).
///
/// # Safety
///
/// `iov`, and `desc` unless null, hold `count` entries, valid for `'a`.
unsafe fn vec_msg<'a>(
    iov: *const abi::kvec,
    desc: *mut *mut c_void,
    count: usize,
    addr: u64,
    context: *mut c_void,
) -> Result<Msg<'a>> {
    Ok(Msg {
        // SAFETY: The caller's guarantee.
        local: unsafe { Local::from_raw(iov, ptr::null(), desc, count) }?,
        addr,
        context: Context::of(context),
        data: 0,
    })
}

/// A message of one buffer.
fn one_msg<'a>(
    kvec: &'a abi::kvec,
    desc: &'a *mut c_void,
    addr: u64,
    context: *mut c_void,
    data: u64,
) -> Msg<'a> {
    Msg {
        local: Local {
            iov: Iov::Kvec(from_ref(kvec)),
            desc: Some(from_ref(desc)),
        },
        addr,
        context: Context::of(context),
        data,
    }
}

/// A send of one buffer: fi_send, fi_inject, fi_senddata; `flags` for the
/// endpoint (a plain call's defaults) beside the call's own.
#[allow(clippy::too_many_arguments)]
fn send_one(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    dest_addr: u64,
    context: *mut c_void,
    data: u64,
    flags: impl FnOnce(&Endpoint) -> u64,
) -> isize {
    on_endpoint(ep, |e| {
        let kvec = one_kvec(buf, len)?;
        let m = one_msg(&kvec, &desc, dest_addr, context, data);
        // SAFETY: The consumer's buffer and descriptor (the ABI's terms).
        unsafe { e.send(&m, flags(e)) }
    })
}

/// `fi_send()`.
#[no_mangle]
pub(crate) extern "C" fn fi_send(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    dest_addr: u64,
    context: *mut c_void,
) -> isize {
    send_one(ep, buf, len, desc, dest_addr, context, 0, |e| {
        e.plain_flags(false)
    })
}

/// `fi_sendv()`.
#[no_mangle]
pub(crate) extern "C" fn fi_sendv(
    ep: *mut abi::fid_ep,
    iov: *const abi::kvec,
    desc: *mut *mut c_void,
    count: usize,
    dest_addr: u64,
    context: *mut c_void,
) -> isize {
    on_endpoint(ep, |e| {
        // SAFETY: The arrays hold `count` entries (ABI).
        let m = unsafe { vec_msg(iov, desc, count, dest_addr, context) }?;
        // SAFETY: The consumer's buffers and descriptors (the ABI's terms).
        unsafe { e.send(&m, e.plain_flags(false)) }
    })
}

/// `fi_inject()`: the buffer may be reused at once; no completion.
#[no_mangle]
pub(crate) extern "C" fn fi_inject(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    dest_addr: u64,
) -> isize {
    let (desc, ctx) = (ptr::null_mut(), ptr::null_mut());
    send_one(ep, buf, len, desc, dest_addr, ctx, 0, |_| FI_INJECT)
}

/// `fi_senddata()`: a send with remote CQ data.
#[no_mangle]
pub(crate) extern "C" fn fi_senddata(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    data: u64,
    dest_addr: u64,
    context: *mut c_void,
) -> isize {
    send_one(ep, buf, len, desc, dest_addr, context, data, |e| {
        e.plain_flags(false) | FI_REMOTE_CQ_DATA
    })
}

/// `fi_injectdata()`: fi_inject with remote CQ data.
#[no_mangle]
pub(crate) extern "C" fn fi_injectdata(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    data: u64,
    dest_addr: u64,
) -> isize {
    let (desc, ctx) = (ptr::null_mut(), ptr::null_mut());
    send_one(ep, buf, len, desc, dest_addr, ctx, data, |_| {
        FI_INJECT | FI_REMOTE_CQ_DATA
    })
}

/// `fi_recvmsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_recvmsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg,
    flags: u64,
) -> isize {
    on_endpoint(ep, |e| {
        // SAFETY: The consumer's message (ABI).
        let m = unsafe { msg_in(msg) }?;
        // SAFETY: The consumer's buffers and descriptors (the ABI's terms).
        unsafe { e.recv(&m, e.call_flags(true, flags)) }
    })
}

/// `fi_cancel()`: takes back a posted receive (fi_endpoint.h says how).
#[no_mangle]
pub(crate) extern "C" fn fi_cancel(fid: *mut abi::fid, context: *mut c_void) -> isize {
    on_endpoint(fid.cast(), |e| {
        if !e.is_enabled() {
            // No receive can have been posted.
            return Err(errno::enoent());
        }
        e.backend().cancel(e, Context::of(context))
    })
}

/// `fi_recv()`.
#[no_mangle]
pub(crate) extern "C" fn fi_recv(
    ep: *mut abi::fid_ep,
    buf: *mut c_void,
    len: usize,
    desc: *mut c_void,
    src_addr: u64,
    context: *mut c_void,
) -> isize {
    on_endpoint(ep, |e| {
        let kvec = one_kvec(buf, len)?;
        let m = one_msg(&kvec, &desc, src_addr, context, 0);
        // SAFETY: The consumer's buffer and descriptor (the ABI's terms).
        unsafe { e.recv(&m, e.plain_flags(true)) }
    })
}

/// `fi_recvv()`.
#[no_mangle]
pub(crate) extern "C" fn fi_recvv(
    ep: *mut abi::fid_ep,
    iov: *const abi::kvec,
    desc: *mut *mut c_void,
    count: usize,
    src_addr: u64,
    context: *mut c_void,
) -> isize {
    on_endpoint(ep, |e| {
        // SAFETY: The arrays hold `count` entries (ABI).
        let m = unsafe { vec_msg(iov, desc, count, src_addr, context) }?;
        // SAFETY: The consumer's buffers and descriptors (the ABI's terms).
        unsafe { e.recv(&m, e.plain_flags(true)) }
    })
}

/// fi_readmsg and fi_writemsg: the consumer's message and flags.
fn rma_msg(ep: *mut abi::fid_ep, msg: *const abi::fi_msg_rma, flags: u64, kind: Rma) -> isize {
    on_endpoint(ep, |e| {
        // SAFETY: `msg` is null or valid (ABI).
        let c = unsafe { msg.as_ref() }.ok_or(EINVAL)?;
        let m = RmaMsg {
            msg: Msg {
                // SAFETY: The arrays hold their counts (ABI).
                local: unsafe { local_of!(c) }?,
                addr: c.addr,
                context: Context::of(c.context),
                data: c.data,
            },
            // SAFETY: `rma_iov` is null or holds `rma_iov_count` entries.
            remote: unsafe { array_of(c.rma_iov, c.rma_iov_count) }?,
        };
        // SAFETY: The consumer's buffers and descriptors (the ABI's terms).
        unsafe { e.rma(kind, &m, e.call_flags(false, flags)) }
    })
}

/// An RMA of one local and one remote buffer: fi_read, fi_write,
/// fi_inject_write, fi_writedata; `flags` as for `send_one`.
#[allow(clippy::too_many_arguments)]
fn rma_one(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    peer: u64,
    addr: u64,
    key: u64,
    context: *mut c_void,
    data: u64,
    flags: impl FnOnce(&Endpoint) -> u64,
    kind: Rma,
) -> isize {
    on_endpoint(ep, |e| {
        let kvec = one_kvec(buf, len)?;
        let rma = abi::fi_rma_iov { addr, len, key };
        let m = RmaMsg {
            msg: one_msg(&kvec, &desc, peer, context, data),
            remote: from_ref(&rma),
        };
        // SAFETY: The consumer's buffer and descriptor (the ABI's terms).
        unsafe { e.rma(kind, &m, flags(e)) }
    })
}

/// An RMA of several local buffers and one remote one: fi_readv, fi_writev.
#[allow(clippy::too_many_arguments)]
fn rma_vec(
    ep: *mut abi::fid_ep,
    iov: *const abi::kvec,
    desc: *mut *mut c_void,
    count: usize,
    peer: u64,
    addr: u64,
    key: u64,
    context: *mut c_void,
    kind: Rma,
) -> isize {
    on_endpoint(ep, |e| {
        // SAFETY: The arrays hold `count` entries (ABI).
        let local = unsafe { Local::from_raw(iov, ptr::null(), desc, count) }?;
        // The single remote buffer is as long as the local ones, summed only
        // once their count is known to be within the limit.
        if local.iov.count() > e.limits.tx_iov_limit {
            return Err(EINVAL);
        }
        let rma = abi::fi_rma_iov {
            addr,
            len: local.iov.total()?,
            key,
        };
        let m = RmaMsg {
            msg: Msg {
                local,
                addr: peer,
                context: Context::of(context),
                data: 0,
            },
            remote: from_ref(&rma),
        };
        // SAFETY: The consumer's buffers and descriptors (the ABI's terms).
        unsafe { e.rma(kind, &m, e.plain_flags(false)) }
    })
}

/// `fi_readmsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_readmsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg_rma,
    flags: u64,
) -> isize {
    rma_msg(ep, msg, flags, Rma::Read)
}

/// `fi_writemsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_writemsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg_rma,
    flags: u64,
) -> isize {
    rma_msg(ep, msg, flags, Rma::Write)
}

/// `fi_read()`.
#[no_mangle]
pub(crate) extern "C" fn fi_read(
    ep: *mut abi::fid_ep,
    buf: *mut c_void,
    len: usize,
    desc: *mut c_void,
    src_addr: u64,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    let flags = |e: &Endpoint| e.plain_flags(false);
    rma_one(
        ep,
        buf,
        len,
        desc,
        src_addr,
        addr,
        key,
        context,
        0,
        flags,
        Rma::Read,
    )
}

/// `fi_readv()`.
#[no_mangle]
pub(crate) extern "C" fn fi_readv(
    ep: *mut abi::fid_ep,
    iov: *const abi::kvec,
    desc: *mut *mut c_void,
    count: usize,
    src_addr: u64,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    rma_vec(
        ep,
        iov,
        desc,
        count,
        src_addr,
        addr,
        key,
        context,
        Rma::Read,
    )
}

/// `fi_write()`.
#[no_mangle]
pub(crate) extern "C" fn fi_write(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    dest_addr: u64,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    let flags = |e: &Endpoint| e.plain_flags(false);
    rma_one(
        ep,
        buf,
        len,
        desc,
        dest_addr,
        addr,
        key,
        context,
        0,
        flags,
        Rma::Write,
    )
}

/// `fi_writev()`.
#[no_mangle]
pub(crate) extern "C" fn fi_writev(
    ep: *mut abi::fid_ep,
    iov: *const abi::kvec,
    desc: *mut *mut c_void,
    count: usize,
    dest_addr: u64,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    rma_vec(
        ep,
        iov,
        desc,
        count,
        dest_addr,
        addr,
        key,
        context,
        Rma::Write,
    )
}

/// An inject write (`flags`: FI_INJECT, with FI_REMOTE_CQ_DATA for `data`).
#[allow(clippy::too_many_arguments)]
fn inject_write(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    data: u64,
    dest_addr: u64,
    addr: u64,
    key: u64,
    flags: u64,
) -> isize {
    let (desc, ctx) = (ptr::null_mut(), ptr::null_mut());
    rma_one(
        ep,
        buf,
        len,
        desc,
        dest_addr,
        addr,
        key,
        ctx,
        data,
        move |_| flags,
        Rma::Write,
    )
}

/// `fi_inject_write()`: the buffer may be reused at once; no completion.
#[no_mangle]
pub(crate) extern "C" fn fi_inject_write(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    dest_addr: u64,
    addr: u64,
    key: u64,
) -> isize {
    inject_write(ep, buf, len, 0, dest_addr, addr, key, FI_INJECT)
}

/// `fi_writedata()`: a write with remote CQ data.
#[no_mangle]
pub(crate) extern "C" fn fi_writedata(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    data: u64,
    dest_addr: u64,
    addr: u64,
    key: u64,
    context: *mut c_void,
) -> isize {
    let flags = |e: &Endpoint| e.plain_flags(false) | FI_REMOTE_CQ_DATA;
    rma_one(
        ep,
        buf,
        len,
        desc,
        dest_addr,
        addr,
        key,
        context,
        data,
        flags,
        Rma::Write,
    )
}

/// `fi_inject_writedata()`: fi_inject_write with remote CQ data.
#[no_mangle]
pub(crate) extern "C" fn fi_inject_writedata(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    data: u64,
    dest_addr: u64,
    addr: u64,
    key: u64,
) -> isize {
    let flags = FI_INJECT | FI_REMOTE_CQ_DATA;
    inject_write(ep, buf, len, data, dest_addr, addr, key, flags)
}

/// `fi_sendto()`: fi_send to an address of an FI_EP_RDM endpoint's AV.
#[no_mangle]
pub(crate) extern "C" fn fi_sendto(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    desc: *mut c_void,
    dest_addr: u64,
    context: *mut c_void,
) -> isize {
    fi_send(ep, buf, len, desc, dest_addr, context)
}

/// `fi_recvfrom()`: fi_recv from an address of an FI_EP_RDM endpoint's AV
/// (FI_ADDR_UNSPEC: any peer).
#[no_mangle]
pub(crate) extern "C" fn fi_recvfrom(
    ep: *mut abi::fid_ep,
    buf: *mut c_void,
    len: usize,
    desc: *mut c_void,
    src_addr: u64,
    context: *mut c_void,
) -> isize {
    fi_recv(ep, buf, len, desc, src_addr, context)
}
