// SPDX-License-Identifier: GPL-2.0

//! The exported data calls. Every form reaches the provider as one op
//! (sendmsg, recvmsg, readmsg, writemsg) after the checks: an enabled
//! endpoint with the capability, iovs that are all there and within the
//! limits, lengths within the endpoint's maximum (and the inject size), known
//! flags. `FI_COMPLETION` in the flags the provider gets says whether the
//! consumer wants a completion (see `kofi_ep_complete`).

use crate::abi;
use crate::errno::{self, to_c_ssize};
use crate::flags::*;
use crate::info_match;
use crate::mr::{check_descs, LocalBuffers};
use crate::object::{lookup, Endpoint};
use core::ptr;
use kernel::ffi::c_void;
use kernel::prelude::*;

/// An enabled endpoint with capability `cap` in direction `dir` (FI_SEND,
/// FI_RECV, FI_READ or FI_WRITE).
///
/// # Safety
///
/// `ep` is null or a kofi fid the caller keeps open.
pub(crate) unsafe fn ready<'a>(ep: *mut abi::fid_ep, cap: u64, dir: u64) -> Result<&'a Endpoint> {
    // SAFETY: The caller's guarantee.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    if !e.is_enabled() {
        return Err(errno::eopbadstate());
    }
    if e.limits.caps & cap == 0 || !info_match::allows(e.limits.caps, dir) {
        return Err(errno::eopnotsupp());
    }
    Ok(e)
}

/// Whether a consumer's kvec can describe memory: a buffer unless empty,
/// and none that wraps the address space.
pub(crate) fn kvec_valid(k: &abi::kvec) -> bool {
    (!k.iov_base.is_null() || k.iov_len == 0)
        && (k.iov_base as usize).checked_add(k.iov_len).is_some()
}

/// The total length of a message's buffers, checked.
fn iov_total(
    iov: *const abi::kvec,
    bvec: *const abi::bio_vec,
    count: usize,
    limit: usize,
) -> Result<usize> {
    if count == 0 {
        return Ok(0);
    }
    if count > limit || iov.is_null() == bvec.is_null() {
        return Err(EINVAL);
    }
    let mut total: usize = 0;
    if !iov.is_null() {
        // SAFETY: `iov` holds `count` kvecs (ABI).
        for k in unsafe { core::slice::from_raw_parts(iov, count) } {
            if !kvec_valid(k) {
                return Err(EINVAL);
            }
            total = total.checked_add(k.iov_len).ok_or_else(errno::emsgsize)?;
        }
    } else {
        // SAFETY: `bvec` holds `count` bio_vecs (ABI).
        for b in unsafe { core::slice::from_raw_parts(bvec, count) } {
            if b.bv_page.is_null() && b.bv_len != 0 {
                return Err(EINVAL);
            }
            total = total
                .checked_add(b.bv_len as usize)
                .ok_or_else(errno::emsgsize)?;
        }
    }
    Ok(total)
}

/// The completion flag for a call: wanted unless the CQ is selective and the
/// consumer did not ask (by flags, or the endpoint's default op_flags).
pub(crate) fn completion(e: &Endpoint, rx: bool, asked: u64) -> u64 {
    let b = e.bindings.lock();
    let selective = if rx { b.rx_selective } else { b.tx_selective };
    if !selective || asked & FI_COMPLETION != 0 {
        FI_COMPLETION
    } else {
        0
    }
}

/// Checks an operation's local buffers against the iov limit `limit` and
/// their descriptors against the endpoint's domain (the regions must grant
/// `access`); their total length.
pub(crate) fn check_local(
    e: &Endpoint,
    local: &LocalBuffers,
    limit: usize,
    access: u64,
) -> Result<usize> {
    let total = iov_total(local.iov, local.bvec, local.count, limit)?;
    // SAFETY: The arrays hold `count` entries (checked above, and the ABI
    // for `desc`), whose descriptors name regions the consumer keeps open.
    unsafe { check_descs(&e.domain, local, access) }?;
    Ok(total)
}

/// Checks a send's buffers and flags against endpoint `e`'s limits.
pub(crate) fn check_send(e: &Endpoint, local: &LocalBuffers, flags: u64) -> Result {
    if flags & !TX_OP_FLAGS != 0 {
        return Err(errno::ebadflags());
    }
    let total = check_local(e, local, e.limits.tx_iov_limit, FI_SEND)?;
    if total > e.limits.max_msg_size {
        return Err(errno::emsgsize());
    }
    if flags & FI_INJECT != 0 && total > e.limits.inject_size {
        return Err(errno::emsgsize());
    }
    if flags & FI_REMOTE_CQ_DATA != 0 && e.domain.cq_data_size == 0 {
        return Err(errno::ebadflags());
    }
    Ok(())
}

/// Checks a receive's buffers against endpoint `e`'s limits.
pub(crate) fn check_recv(e: &Endpoint, local: &LocalBuffers) -> Result {
    check_local(e, local, e.limits.rx_iov_limit, FI_RECV).map(|_| ())
}

/// The local buffers of a message (fi_msg, fi_msg_tagged, fi_msg_rma).
macro_rules! local_of {
    ($m:expr) => {
        $crate::mr::LocalBuffers {
            iov: $m.msg_iov,
            bvec: $m.msg_bvec,
            desc: $m.desc.cast_const(),
            count: $m.iov_count,
        }
    };
}
pub(crate) use local_of;

/// A provider op's return as a result.
pub(crate) fn op_posted(ret: isize) -> Result<usize> {
    if ret < 0 {
        return Err(Error::from_errno(ret as i32));
    }
    Ok(0)
}

fn sendmsg(ep: *mut abi::fid_ep, msg: *const abi::fi_msg, flags: u64) -> Result<usize> {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { ready(ep, FI_MSG, FI_SEND) }?;
    // SAFETY: `msg` is null or valid (ABI).
    let m = unsafe { msg.as_ref() }.ok_or(EINVAL)?;
    check_send(e, &local_of!(m), flags)?;
    let op = e.ops().sendmsg.ok_or_else(errno::enosys)?;
    // SAFETY: The provider's endpoint; the message is the consumer's.
    op_posted(unsafe { op(ep, msg, flags) })
}

/// The flags of a plain call (fi_send, ...): the endpoint's default
/// op_flags (checked at fi_endpoint), with a completion when wanted.
pub(crate) fn plain(e: *mut abi::fid_ep, rx: bool) -> u64 {
    // SAFETY: `e` is null or a kofi fid the consumer keeps open.
    match unsafe { lookup::<Endpoint>(e) } {
        Ok(ep) => {
            let defaults = if rx {
                ep.limits.rx_op_flags
            } else {
                ep.limits.tx_op_flags
            };
            (defaults & !FI_COMPLETION) | completion(ep, rx, defaults)
        }
        Err(_) => 0,
    }
}

/// `fi_sendmsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_sendmsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg,
    flags: u64,
) -> isize {
    // SAFETY: As in `plain`.
    let wanted = match unsafe { lookup::<Endpoint>(ep) } {
        Ok(e) => completion(e, false, flags),
        Err(e) => return e.to_errno() as isize,
    };
    to_c_ssize(sendmsg(ep, msg, (flags & !FI_COMPLETION) | wanted))
}

pub(crate) fn one_kvec(buf: *const c_void, len: usize) -> Result<abi::kvec> {
    if buf.is_null() && len != 0 {
        return Err(EINVAL);
    }
    Ok(abi::kvec {
        iov_base: buf.cast_mut(),
        iov_len: len,
    })
}

fn msg_of(
    iov: *const abi::kvec,
    desc: *mut *mut c_void,
    count: usize,
    addr: u64,
    ctx: *mut c_void,
    data: u64,
) -> abi::fi_msg {
    abi::fi_msg {
        msg_iov: iov,
        msg_bvec: ptr::null(),
        desc,
        iov_count: count,
        addr,
        context: ctx,
        data,
    }
}

/// A send of one buffer: fi_send, fi_inject, fi_senddata.
#[allow(clippy::too_many_arguments)]
fn send_one(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    mut desc: *mut c_void,
    dest_addr: u64,
    context: *mut c_void,
    data: u64,
    flags: u64,
) -> isize {
    let kvec = match one_kvec(buf, len) {
        Ok(k) => k,
        Err(e) => return e.to_errno() as isize,
    };
    let msg = msg_of(&kvec, &mut desc, 1, dest_addr, context, data);
    to_c_ssize(sendmsg(ep, &msg, flags))
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
    send_one(ep, buf, len, desc, dest_addr, context, 0, plain(ep, false))
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
    let msg = msg_of(iov, desc, count, dest_addr, context, 0);
    to_c_ssize(sendmsg(ep, &msg, plain(ep, false)))
}

/// `fi_inject()`: the buffer may be reused at once; no completion.
#[no_mangle]
pub(crate) extern "C" fn fi_inject(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    dest_addr: u64,
) -> isize {
    send_one(
        ep,
        buf,
        len,
        ptr::null_mut(),
        dest_addr,
        ptr::null_mut(),
        0,
        FI_INJECT,
    )
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
    let flags = plain(ep, false) | FI_REMOTE_CQ_DATA;
    send_one(ep, buf, len, desc, dest_addr, context, data, flags)
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
    send_one(
        ep,
        buf,
        len,
        desc,
        dest_addr,
        ctx,
        data,
        FI_INJECT | FI_REMOTE_CQ_DATA,
    )
}

fn recvmsg(ep: *mut abi::fid_ep, msg: *const abi::fi_msg, flags: u64) -> Result<usize> {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { ready(ep, FI_MSG, FI_RECV) }?;
    // SAFETY: `msg` is null or valid (ABI).
    let m = unsafe { msg.as_ref() }.ok_or(EINVAL)?;
    let multi = if e.limits.caps & FI_MULTI_RECV != 0 {
        FI_MULTI_RECV
    } else {
        0
    };
    if flags & !(RX_OP_FLAGS | multi) != 0 {
        return Err(errno::ebadflags());
    }
    check_recv(e, &local_of!(m))?;
    let op = e.ops().recvmsg.ok_or_else(errno::enosys)?;
    // SAFETY: The provider's endpoint; the message is the consumer's.
    op_posted(unsafe { op(ep, msg, flags) })
}

/// `fi_recvmsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_recvmsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg,
    flags: u64,
) -> isize {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let wanted = match unsafe { lookup::<Endpoint>(ep) } {
        Ok(e) => completion(e, true, flags),
        Err(e) => return e.to_errno() as isize,
    };
    to_c_ssize(recvmsg(ep, msg, (flags & !FI_COMPLETION) | wanted))
}

/// `fi_cancel()`: takes back a posted receive (fi_endpoint.h says how).
#[no_mangle]
pub(crate) extern "C" fn fi_cancel(fid: *mut abi::fid, context: *mut c_void) -> isize {
    let result = (|| {
        // SAFETY: `fid` is null or a kofi fid the consumer keeps open.
        let e = unsafe { lookup::<Endpoint>(fid.cast()) }?;
        if !e.is_enabled() {
            // No receive can have been posted.
            return Err(errno::enoent());
        }
        let op = e.cancel_op().ok_or_else(errno::enosys)?;
        // SAFETY: The provider's (or the RDM layer's) endpoint, open.
        let ret = unsafe { op(fid.cast(), context) };
        if ret < 0 {
            return Err(Error::from_errno(ret as i32));
        }
        Ok(0)
    })();
    to_c_ssize(result)
}

/// `fi_recv()`.
#[no_mangle]
pub(crate) extern "C" fn fi_recv(
    ep: *mut abi::fid_ep,
    buf: *mut c_void,
    len: usize,
    mut desc: *mut c_void,
    src_addr: u64,
    context: *mut c_void,
) -> isize {
    let kvec = match one_kvec(buf, len) {
        Ok(k) => k,
        Err(e) => return e.to_errno() as isize,
    };
    let msg = msg_of(&kvec, &mut desc, 1, src_addr, context, 0);
    to_c_ssize(recvmsg(ep, &msg, plain(ep, true)))
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
    let msg = msg_of(iov, desc, count, src_addr, context, 0);
    to_c_ssize(recvmsg(ep, &msg, plain(ep, true)))
}

/// Which RMA: the capability bit and the provider's op.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Rma {
    Read,
    Write,
}

fn rmamsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg_rma,
    flags: u64,
    kind: Rma,
) -> Result<usize> {
    let dir = if kind == Rma::Read { FI_READ } else { FI_WRITE };
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { ready(ep, FI_RMA, dir) }?;
    // SAFETY: `msg` is null or valid (ABI).
    let m = unsafe { msg.as_ref() }.ok_or(EINVAL)?;
    if flags & !TX_OP_FLAGS != 0 {
        return Err(errno::ebadflags());
    }
    if kind == Rma::Read && flags & (FI_INJECT | FI_REMOTE_CQ_DATA) != 0 {
        return Err(errno::ebadflags());
    }
    let total = check_local(e, &local_of!(m), e.limits.tx_iov_limit, dir)?;
    if total > e.limits.max_msg_size {
        return Err(errno::emsgsize());
    }
    if flags & FI_INJECT != 0 && total > e.limits.inject_size {
        return Err(errno::emsgsize());
    }
    if flags & FI_REMOTE_CQ_DATA != 0 && e.domain.cq_data_size == 0 {
        return Err(errno::ebadflags());
    }
    let count = m.rma_iov_count;
    if count == 0 || count > e.limits.rma_iov_limit || m.rma_iov.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: `rma_iov` holds `rma_iov_count` entries (ABI).
    let remote = unsafe { core::slice::from_raw_parts(m.rma_iov, count) };
    let mut remote_total: usize = 0;
    for r in remote {
        r.addr.checked_add(r.len as u64).ok_or(EINVAL)?;
        remote_total = remote_total.checked_add(r.len).ok_or(EINVAL)?;
    }
    if remote_total != total {
        return Err(EINVAL);
    }
    let op = match kind {
        Rma::Read => e.ops().readmsg,
        Rma::Write => e.ops().writemsg,
    }
    .ok_or_else(errno::enosys)?;
    // SAFETY: The provider's endpoint; the message is the consumer's.
    let ret = unsafe { op(ep, msg, flags) };
    if ret < 0 {
        return Err(Error::from_errno(ret as i32));
    }
    Ok(0)
}

#[allow(clippy::too_many_arguments)]
fn rma_of(
    iov: *const abi::kvec,
    desc: *mut *mut c_void,
    count: usize,
    addr: u64,
    rma: &abi::fi_rma_iov,
    ctx: *mut c_void,
    data: u64,
) -> abi::fi_msg_rma {
    abi::fi_msg_rma {
        msg_iov: iov,
        msg_bvec: ptr::null(),
        desc,
        iov_count: count,
        addr,
        rma_iov: rma,
        rma_iov_count: 1,
        context: ctx,
        data,
    }
}

/// fi_readmsg and fi_writemsg: the consumer's flags, with the completion
/// decided as for every call.
fn rma_with_flags(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg_rma,
    flags: u64,
    kind: Rma,
) -> isize {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let wanted = match unsafe { lookup::<Endpoint>(ep) } {
        Ok(e) => completion(e, false, flags),
        Err(e) => return e.to_errno() as isize,
    };
    to_c_ssize(rmamsg(ep, msg, (flags & !FI_COMPLETION) | wanted, kind))
}

/// An RMA of one local and one remote buffer: fi_read, fi_write,
/// fi_inject_write, fi_writedata.
#[allow(clippy::too_many_arguments)]
fn rma_one(
    ep: *mut abi::fid_ep,
    buf: *const c_void,
    len: usize,
    mut desc: *mut c_void,
    peer: u64,
    addr: u64,
    key: u64,
    context: *mut c_void,
    data: u64,
    flags: u64,
    kind: Rma,
) -> isize {
    let kvec = match one_kvec(buf, len) {
        Ok(k) => k,
        Err(e) => return e.to_errno() as isize,
    };
    let rma = abi::fi_rma_iov { addr, len, key };
    let msg = rma_of(&kvec, &mut desc, 1, peer, &rma, context, data);
    to_c_ssize(rmamsg(ep, &msg, flags, kind))
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
    // The single remote buffer is as long as the local ones; the count is
    // checked before the array is read.
    let len = (|| {
        // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
        let e = unsafe { lookup::<Endpoint>(ep) }?;
        iov_total(iov, ptr::null(), count, e.limits.tx_iov_limit)
    })();
    let rma = abi::fi_rma_iov {
        addr,
        len: match len {
            Ok(n) => n,
            Err(e) => return e.to_errno() as isize,
        },
        key,
    };
    let msg = rma_of(iov, desc, count, peer, &rma, context, 0);
    to_c_ssize(rmamsg(ep, &msg, plain(ep, false), kind))
}

/// `fi_readmsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_readmsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg_rma,
    flags: u64,
) -> isize {
    rma_with_flags(ep, msg, flags, Rma::Read)
}

/// `fi_writemsg()`.
#[no_mangle]
pub(crate) extern "C" fn fi_writemsg(
    ep: *mut abi::fid_ep,
    msg: *const abi::fi_msg_rma,
    flags: u64,
) -> isize {
    rma_with_flags(ep, msg, flags, Rma::Write)
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
    let flags = plain(ep, false);
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
    let flags = plain(ep, false);
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
        flags,
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
    let flags = plain(ep, false) | FI_REMOTE_CQ_DATA;
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
