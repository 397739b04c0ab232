// SPDX-License-Identifier: GPL-2.0

//! The exported connection-management calls: fi_listen, fi_connect,
//! fi_accept, fi_reject, fi_shutdown, fi_getname, fi_getpeer. Each converts
//! its C arguments and calls the typed operation (ep_cm.rs).

use crate::abi;
use crate::errno::to_c;
use crate::object::{class_of, lookup, ConnReq, Endpoint, PassiveEp};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

/// Private data as bytes: at most KOFI_CM_DATA_MAX, present when a length
/// is.
///
/// # Safety
///
/// `param` is null or holds `len` bytes, valid for `'a`.
unsafe fn param_in<'a>(param: *const c_void, len: usize) -> Result<&'a [u8]> {
    if len > abi::KOFI_CM_DATA_MAX as usize || (param.is_null() && len != 0) {
        return Err(EINVAL);
    }
    if len == 0 {
        return Ok(&[]);
    }
    // SAFETY: The caller's guarantee; `len` is small (checked above).
    Ok(unsafe { core::slice::from_raw_parts(param.cast(), len) })
}

/// `fi_listen()`: starts listening; requests arrive as FI_CONNREQ on the EQ.
#[no_mangle]
pub(crate) extern "C" fn fi_listen(pep: *mut abi::fid_pep) -> c_int {
    // SAFETY: `pep` is null or a kofi fid the consumer keeps open.
    to_c(unsafe { lookup::<PassiveEp>(pep) }.and_then(|p| p.listen()))
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
    to_c((|| {
        // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
        let e = unsafe { lookup::<Endpoint>(ep) }?;
        e.check_enabled()?;
        // SAFETY: The consumer's private data (ABI).
        let param = unsafe { param_in(param, paramlen) }?;
        // SAFETY: `addr` is null or the consumer's address (ABI).
        unsafe { e.connect(addr, param) }
    })())
}

/// `fi_accept()`: accepts the request the endpoint was opened for.
#[no_mangle]
pub(crate) extern "C" fn fi_accept(
    ep: *mut abi::fid_ep,
    param: *const c_void,
    paramlen: usize,
) -> c_int {
    to_c((|| {
        // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
        let e = unsafe { lookup::<Endpoint>(ep) }?;
        e.check_enabled()?;
        // SAFETY: The consumer's private data (ABI).
        e.accept(unsafe { param_in(param, paramlen) }?)
    })())
}

/// `fi_reject()`: refuses a request; free its info after with fi_freeinfo.
#[no_mangle]
pub(crate) extern "C" fn fi_reject(
    pep: *mut abi::fid_pep,
    handle: *mut abi::fid,
    param: *const c_void,
    paramlen: usize,
) -> c_int {
    to_c((|| {
        // SAFETY: `pep` is null or a kofi fid the consumer keeps open.
        let p = unsafe { lookup::<PassiveEp>(pep) }?;
        // SAFETY: `handle` is null or a kofi fid held by the consumer's info.
        let req = unsafe { lookup::<ConnReq>(handle) }?;
        // SAFETY: The consumer's private data (ABI).
        p.reject(req, unsafe { param_in(param, paramlen) }?)
    })())
}

/// `fi_shutdown()`: closes the connection; FI_SHUTDOWN arrives on the EQ.
#[no_mangle]
pub(crate) extern "C" fn fi_shutdown(ep: *mut abi::fid_ep, flags: u64) -> c_int {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    to_c(unsafe { lookup::<Endpoint>(ep) }.and_then(|e| e.shutdown(flags)))
}

/// An address query's buffer, `*len` bytes at `addr` (NULL only to ask the
/// size), and the length the typed call gives back, stored in `*len`.
///
/// # Safety
///
/// `len` is null or valid; `addr` is null or holds `*len` bytes.
unsafe fn with_name_buf(
    addr: *mut c_void,
    len: *mut usize,
    query: impl FnOnce(&mut [u8], &mut usize) -> Result,
) -> Result {
    if len.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: The caller's guarantee.
    let size = unsafe { *len };
    if addr.is_null() && size != 0 || size > isize::MAX as usize {
        return Err(EINVAL);
    }
    let buf: &mut [u8] = if addr.is_null() {
        &mut []
    } else {
        // SAFETY: The caller's guarantee; `size` fits a slice (checked).
        unsafe { core::slice::from_raw_parts_mut(addr.cast(), size) }
    };
    let mut out = size;
    let result = query(buf, &mut out);
    // SAFETY: The caller's guarantee.
    unsafe { *len = out };
    result
}

/// `fi_getname()`: the local address of an endpoint or passive endpoint;
/// -FI_ETOOSMALL with `*addrlen` set when the buffer is too small.
#[no_mangle]
pub(crate) extern "C" fn fi_getname(
    fid: *mut abi::fid,
    addr: *mut c_void,
    addrlen: *mut usize,
) -> c_int {
    let query = |buf: &mut [u8], len: &mut usize| {
        // SAFETY: `fid` is null or a kofi fid the consumer keeps open.
        match unsafe { class_of(fid) }? {
            abi::FI_CLASS_EP => {
                // SAFETY: The class says it is an endpoint, open (as above).
                unsafe { lookup::<Endpoint>(fid.cast()) }?.getname(buf, len)
            }
            abi::FI_CLASS_PEP => {
                // SAFETY: The class says it is a passive endpoint, open.
                unsafe { lookup::<PassiveEp>(fid.cast()) }?.provider_getname(buf, len)
            }
            _ => Err(EINVAL),
        }
    };
    // SAFETY: The consumer's buffer and length (ABI).
    to_c(unsafe { with_name_buf(addr, addrlen, query) })
}

/// `fi_getpeer()`: the connected peer's address.
#[no_mangle]
pub(crate) extern "C" fn fi_getpeer(
    ep: *mut abi::fid_ep,
    addr: *mut c_void,
    addrlen: *mut usize,
) -> c_int {
    let query = |buf: &mut [u8], len: &mut usize| {
        // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
        unsafe { lookup::<Endpoint>(ep) }?.getpeer(buf, len)
    };
    // SAFETY: The consumer's buffer and length (ABI).
    to_c(unsafe { with_name_buf(addr, addrlen, query) })
}
