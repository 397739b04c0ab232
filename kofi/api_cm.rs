// SPDX-License-Identifier: GPL-2.0

//! The exported connection-management calls: fi_listen, fi_connect,
//! fi_accept, fi_reject, fi_shutdown, fi_getname, fi_getpeer.

use crate::abi;
use crate::errno::{self, to_c};
use crate::object::{class_of, lookup, ConnReq, Endpoint, Object, PassiveEp};
use core::sync::atomic::Ordering;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

fn op_result(ret: c_int) -> Result {
    if ret == 0 {
        Ok(())
    } else {
        Err(Error::from_errno(ret))
    }
}

/// Private data: at most KOFI_CM_DATA_MAX bytes, present when a length is.
fn check_param(param: *const c_void, len: usize) -> Result {
    if len > abi::KOFI_CM_DATA_MAX as usize || (param.is_null() && len != 0) {
        return Err(EINVAL);
    }
    Ok(())
}

/// An enabled endpoint.
///
/// # Safety
///
/// `ep` is null or a kofi fid the caller keeps open.
unsafe fn enabled<'a>(ep: *mut abi::fid_ep) -> Result<&'a Endpoint> {
    // SAFETY: The caller's guarantee.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    if !e.is_enabled() {
        return Err(errno::eopbadstate());
    }
    Ok(e)
}

fn listen(pep: *mut abi::fid_pep) -> Result {
    // SAFETY: `pep` is null or a kofi fid the consumer keeps open.
    let p = unsafe { lookup::<PassiveEp>(pep) }?;
    if p.eq.lock().is_none() {
        return Err(errno::enoeq());
    }
    if p.listening.load(Ordering::Acquire) {
        return Err(errno::eopbadstate());
    }
    let op = p.ops().and_then(|o| o.listen).ok_or_else(errno::enosys)?;
    // SAFETY: The provider's passive endpoint, its module pinned.
    op_result(unsafe { op(pep) })?;
    p.listening.store(true, Ordering::Release);
    Ok(())
}

/// `fi_listen()`: starts listening; requests arrive as FI_CONNREQ on the EQ.
#[no_mangle]
pub(crate) extern "C" fn fi_listen(pep: *mut abi::fid_pep) -> c_int {
    to_c(listen(pep))
}

fn connect(ep: *mut abi::fid_ep, addr: *const c_void, param: *const c_void, len: usize) -> Result {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { enabled(ep) }?;
    check_param(param, len)?;
    if e.limits.ep_type != abi::fi_ep_type_FI_EP_MSG {
        return Err(errno::eopnotsupp());
    }
    let op = e.ops().connect.ok_or_else(errno::enosys)?;
    // SAFETY: The provider's endpoint; the buffers are the consumer's.
    op_result(unsafe { op(ep, addr, param, len) })
}

/// `fi_connect()`: connects to `addr` (or the info's dest_addr when NULL),
/// sending `param`; FI_CONNECTED (or an error entry) arrives on the EQ.
#[no_mangle]
pub(crate) extern "C" fn fi_connect(
    ep: *mut abi::fid_ep,
    addr: *const c_void,
    param: *const c_void,
    paramlen: usize,
) -> c_int {
    to_c(connect(ep, addr, param, paramlen))
}

fn accept(ep: *mut abi::fid_ep, param: *const c_void, len: usize) -> Result {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { enabled(ep) }?;
    check_param(param, len)?;
    let op = e.ops().accept.ok_or_else(errno::enosys)?;
    // SAFETY: The provider's endpoint; the buffer is the consumer's.
    op_result(unsafe { op(ep, param, len) })
}

/// `fi_accept()`: accepts the request the endpoint was opened for.
#[no_mangle]
pub(crate) extern "C" fn fi_accept(
    ep: *mut abi::fid_ep,
    param: *const c_void,
    paramlen: usize,
) -> c_int {
    to_c(accept(ep, param, paramlen))
}

fn reject(
    pep: *mut abi::fid_pep,
    handle: *mut abi::fid,
    param: *const c_void,
    len: usize,
) -> Result {
    // SAFETY: `pep` is null or a kofi fid the consumer keeps open.
    let p = unsafe { lookup::<PassiveEp>(pep) }?;
    // SAFETY: `handle` is null or a kofi fid held by the consumer's info.
    let req = unsafe { lookup::<ConnReq>(handle) }?;
    if req.pep.public() != p.public() {
        return Err(EINVAL);
    }
    check_param(param, len)?;
    let op = p.ops().and_then(|o| o.reject).ok_or_else(errno::enosys)?;
    // SAFETY: The provider's objects; the buffer is the consumer's.
    op_result(unsafe { op(pep, handle, param, len) })
}

/// `fi_reject()`: refuses a request; free its info after with fi_freeinfo.
#[no_mangle]
pub(crate) extern "C" fn fi_reject(
    pep: *mut abi::fid_pep,
    handle: *mut abi::fid,
    param: *const c_void,
    paramlen: usize,
) -> c_int {
    to_c(reject(pep, handle, param, paramlen))
}

fn shutdown(ep: *mut abi::fid_ep, flags: u64) -> Result {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { enabled(ep) }?;
    if flags != 0 {
        return Err(errno::ebadflags());
    }
    let op = e.ops().shutdown.ok_or_else(errno::enosys)?;
    // SAFETY: The provider's endpoint.
    op_result(unsafe { op(ep, flags) })
}

/// `fi_shutdown()`: closes the connection; FI_SHUTDOWN arrives on the EQ.
#[no_mangle]
pub(crate) extern "C" fn fi_shutdown(ep: *mut abi::fid_ep, flags: u64) -> c_int {
    to_c(shutdown(ep, flags))
}

fn getname(fid: *mut abi::fid, addr: *mut c_void, len: *mut usize) -> Result {
    if len.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: `len` is valid (ABI); `addr` may be NULL only to ask the size.
    if addr.is_null() && unsafe { *len } != 0 {
        return Err(EINVAL);
    }
    // SAFETY: `fid` is null or a kofi fid the consumer keeps open.
    match unsafe { class_of(fid) }? {
        abi::FI_CLASS_EP => {
            // SAFETY: The class says it is an endpoint.
            let e = unsafe { lookup::<Endpoint>(fid.cast()) }?;
            let op = e.ops().getname.ok_or_else(errno::enosys)?;
            // SAFETY: The provider's endpoint; the buffers are the consumer's.
            op_result(unsafe { op(fid.cast(), addr, len) })
        }
        abi::FI_CLASS_PEP => {
            // SAFETY: The class says it is a passive endpoint.
            let p = unsafe { lookup::<PassiveEp>(fid.cast()) }?;
            let op = p.ops().and_then(|o| o.getname).ok_or_else(errno::enosys)?;
            // SAFETY: As above.
            op_result(unsafe { op(fid.cast(), addr, len) })
        }
        _ => Err(EINVAL),
    }
}

/// `fi_getname()`: the local address of an endpoint or passive endpoint;
/// -FI_ETOOSMALL with `*addrlen` set when the buffer is too small.
#[no_mangle]
pub(crate) extern "C" fn fi_getname(
    fid: *mut abi::fid,
    addr: *mut c_void,
    addrlen: *mut usize,
) -> c_int {
    to_c(getname(fid, addr, addrlen))
}

fn getpeer(ep: *mut abi::fid_ep, addr: *mut c_void, len: *mut usize) -> Result {
    if len.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: `len` is valid (ABI).
    if addr.is_null() && unsafe { *len } != 0 {
        return Err(EINVAL);
    }
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    let op = e.ops().getpeer.ok_or_else(errno::enosys)?;
    // SAFETY: The provider's endpoint; the buffers are the consumer's.
    op_result(unsafe { op(ep, addr, len) })
}

/// `fi_getpeer()`: the connected peer's address.
#[no_mangle]
pub(crate) extern "C" fn fi_getpeer(
    ep: *mut abi::fid_ep,
    addr: *mut c_void,
    addrlen: *mut usize,
) -> c_int {
    to_c(getpeer(ep, addr, addrlen))
}
