// SPDX-License-Identifier: GPL-2.0

//! The exported CQ and EQ calls. Reads never sleep; fi_cq_sread and
//! fi_eq_sread sleep (process context only) for at most `timeout` ms
//! (negative: forever).

use crate::abi;
use crate::compat::CStrBytes;
use crate::context::Context;
use crate::errno::{self, to_c, to_c_ssize};
use crate::flags::FI_PEEK;
use crate::object::{lookup, Object};
use crate::queue::{Cq, Eq, ErrData, EQ_ENTRY_MAX};
use kernel::c_str;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;

fn cq_args<'a>(cq: *mut abi::fid_cq, buf: *mut c_void, count: usize) -> Result<&'a Cq> {
    // SAFETY: `cq` is null or a kofi fid the consumer keeps open.
    let q = unsafe { lookup::<Cq>(cq) }?;
    if buf.is_null() || count == 0 {
        return Err(EINVAL);
    }
    Ok(q)
}

/// `fi_cq_read()`: up to `count` entries; -FI_EAGAIN when empty,
/// -FI_EAVAIL when an error entry is next (read it with fi_cq_readerr).
#[no_mangle]
pub(crate) extern "C" fn fi_cq_read(cq: *mut abi::fid_cq, buf: *mut c_void, count: usize) -> isize {
    to_c_ssize(cq_args(cq, buf, count).and_then(|q| {
        // SAFETY: `buf` holds `count` entries of the CQ's format (ABI).
        unsafe { q.read(buf, count) }
    }))
}

/// `fi_cq_sread()`: as fi_cq_read, sleeping until an entry, the timeout
/// (-FI_EAGAIN), fi_cq_signal (-FI_EAGAIN) or a signal (-EINTR).
#[no_mangle]
pub(crate) extern "C" fn fi_cq_sread(
    cq: *mut abi::fid_cq,
    buf: *mut c_void,
    count: usize,
    cond: *const c_void,
    timeout: c_int,
) -> isize {
    // SAFETY: No preconditions.
    if !unsafe { abi::kofi_in_task() } {
        return EINVAL.to_errno() as isize;
    }
    to_c_ssize(cq_args(cq, buf, count).and_then(|q| {
        // SAFETY: `buf` holds `count` entries of the CQ's format (ABI).
        unsafe { q.sread(buf, count, core::ptr::null_mut(), cond, timeout) }
    }))
}

/// `fi_cq_readfrom()`: as fi_cq_read, with each entry's source address.
#[no_mangle]
pub(crate) extern "C" fn fi_cq_readfrom(
    cq: *mut abi::fid_cq,
    buf: *mut c_void,
    count: usize,
    src_addr: *mut u64,
) -> isize {
    if src_addr.is_null() {
        return EINVAL.to_errno() as isize;
    }
    to_c_ssize(cq_args(cq, buf, count).and_then(|q| {
        // SAFETY: `buf` holds `count` entries of the CQ's format and
        // `src_addr` `count` addresses (ABI).
        unsafe { q.read_from(buf, count, src_addr) }
    }))
}

/// `fi_cq_sreadfrom()`: as fi_cq_sread, with each entry's source address.
#[no_mangle]
pub(crate) extern "C" fn fi_cq_sreadfrom(
    cq: *mut abi::fid_cq,
    buf: *mut c_void,
    count: usize,
    src_addr: *mut u64,
    cond: *const c_void,
    timeout: c_int,
) -> isize {
    // SAFETY: No preconditions.
    if src_addr.is_null() || !unsafe { abi::kofi_in_task() } {
        return EINVAL.to_errno() as isize;
    }
    to_c_ssize(cq_args(cq, buf, count).and_then(|q| {
        // SAFETY: As in `fi_cq_readfrom`.
        unsafe { q.sread(buf, count, src_addr, cond, timeout) }
    }))
}

/// `fi_cq_readerr()`: the error entry at the head; -FI_EAGAIN when none.
#[no_mangle]
pub(crate) extern "C" fn fi_cq_readerr(
    cq: *mut abi::fid_cq,
    buf: *mut abi::fi_cq_err_entry,
    flags: u64,
) -> isize {
    let result = (|| {
        // SAFETY: `cq` is null or a kofi fid the consumer keeps open.
        let q = unsafe { lookup::<Cq>(cq) }?;
        if flags != 0 {
            return Err(errno::ebadflags());
        }
        // SAFETY: `buf` is null or valid for writes (ABI).
        let out = unsafe { buf.as_mut() }.ok_or(EINVAL)?;
        q.read_error(out)
    })();
    to_c_ssize(result)
}

/// `fi_cq_signal()`: wakes a thread in fi_cq_sread.
#[no_mangle]
pub(crate) extern "C" fn fi_cq_signal(cq: *mut abi::fid_cq) -> c_int {
    // SAFETY: `cq` is null or a kofi fid the consumer keeps open.
    to_c(unsafe { lookup::<Cq>(cq) }.map(|q| q.signal()))
}

fn eq_args<'a>(
    eq: *mut abi::fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: usize,
    flags: u64,
) -> Result<(&'a Eq, &'a mut u32, bool)> {
    // SAFETY: `eq` is null or a kofi fid the consumer keeps open.
    let q = unsafe { lookup::<Eq>(eq) }?;
    if flags & !FI_PEEK != 0 {
        return Err(errno::ebadflags());
    }
    if buf.is_null() || len == 0 {
        return Err(EINVAL);
    }
    // SAFETY: `event` is null or valid for writes (ABI).
    let event = unsafe { event.as_mut() }.ok_or(EINVAL)?;
    Ok((q, event, flags & FI_PEEK != 0))
}

/// `fi_eq_read()`: the next event into `buf`; returns its size.
/// -FI_EAGAIN when empty, -FI_EAVAIL when an error is next, -FI_ETOOSMALL
/// (the event stays queued) when `len` is too small.
#[no_mangle]
pub(crate) extern "C" fn fi_eq_read(
    eq: *mut abi::fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: usize,
    flags: u64,
) -> isize {
    to_c_ssize(
        eq_args(eq, event, buf, len, flags).and_then(|(q, ev, peek)| {
            // SAFETY: `buf` is valid for `len` bytes (ABI).
            unsafe { q.read(ev, buf, len, peek) }
        }),
    )
}

/// `fi_eq_sread()`: as fi_eq_read, sleeping as fi_cq_sread does.
#[no_mangle]
pub(crate) extern "C" fn fi_eq_sread(
    eq: *mut abi::fid_eq,
    event: *mut u32,
    buf: *mut c_void,
    len: usize,
    timeout: c_int,
    flags: u64,
) -> isize {
    // SAFETY: No preconditions.
    if !unsafe { abi::kofi_in_task() } {
        return EINVAL.to_errno() as isize;
    }
    to_c_ssize(
        eq_args(eq, event, buf, len, flags).and_then(|(q, ev, peek)| {
            // SAFETY: `buf` is valid for `len` bytes (ABI).
            unsafe { q.sread(ev, buf, len, timeout, peek) }
        }),
    )
}

/// `fi_eq_readerr()`: the error event at the head; -FI_EAGAIN when none.
#[no_mangle]
pub(crate) extern "C" fn fi_eq_readerr(
    eq: *mut abi::fid_eq,
    buf: *mut abi::fi_eq_err_entry,
    flags: u64,
) -> isize {
    let result = (|| {
        // SAFETY: `eq` is null or a kofi fid the consumer keeps open.
        let q = unsafe { lookup::<Eq>(eq) }?;
        if flags != 0 {
            return Err(errno::ebadflags());
        }
        // SAFETY: `buf` is null or valid for writes (ABI).
        let out = unsafe { buf.as_mut() }.ok_or(EINVAL)?;
        let place = match (out.err_data, out.err_data_size) {
            (_, 0) => ErrData::Queue,
            (data, _) if data.is_null() => return Err(EINVAL),
            (data, size) => {
                // SAFETY: A consumer that gives err_data_size gives a buffer
                // of that many bytes, written only during this call (ABI).
                let buf = unsafe { core::slice::from_raw_parts_mut(data.cast::<u8>(), size) };
                ErrData::Into(buf)
            }
        };
        q.read_error(out, place)
    })();
    to_c_ssize(result)
}

/// `fi_eq_write()`: the consumer adds an event (`len` bytes of `buf`).
#[no_mangle]
pub(crate) extern "C" fn fi_eq_write(
    eq: *mut abi::fid_eq,
    event: u32,
    buf: *const c_void,
    len: usize,
    flags: u64,
) -> isize {
    let result = (|| {
        // SAFETY: `eq` is null or a kofi fid the consumer keeps open.
        let q = unsafe { lookup::<Eq>(eq) }?;
        if flags != 0 {
            return Err(errno::ebadflags());
        }
        if buf.is_null() || len == 0 || len > EQ_ENTRY_MAX || event > abi::FI_JOIN_COMPLETE {
            return Err(EINVAL);
        }
        // SAFETY: `buf` is valid for `len` bytes (ABI).
        let bytes = unsafe { core::slice::from_raw_parts(buf.cast::<u8>(), len) };
        let (fid, info) = (core::ptr::null(), core::ptr::null_mut());
        q.post_event(event, fid, Context::NONE, bytes, &[], info)?;
        Ok(len)
    })();
    to_c_ssize(result)
}

/// The text of an error entry's `prov_errno`, into `buf` when given (up to
/// `len` bytes with the NUL; `buf` is returned) or as a static string. A
/// negative number is a kernel errno, as kofi_sock reports; a positive one is
/// a device's own status, as kofi_verbs reports (`ib_wc_status`).
fn prov_strerror(prov_errno: c_int, buf: *mut c_char, len: usize) -> *const c_char {
    let text = if prov_errno < 0 {
        // SAFETY: `fi_strerror` returns a static NUL-terminated string.
        unsafe { CStr::from_char_ptr(errno::fi_strerror(prov_errno)) }
    } else if prov_errno == 0 {
        c_str!("Success")
    } else {
        c_str!("Provider-specific error (a device status)")
    };
    if buf.is_null() || len == 0 {
        return text.as_char_ptr();
    }
    let bytes = text.cstr_bytes();
    let n = bytes.len().min(len - 1);
    // SAFETY: The consumer's buffer holds `len` bytes (ABI), and `n < len`.
    unsafe {
        core::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.cast::<u8>(), n);
        *buf.add(n) = 0;
    }
    buf
}

/// The text of `prov_errno` when `queue` is a `T` (see [`prov_strerror`]);
/// NULL when it is not.
fn queue_strerror<T: Object>(
    queue: *const T::Public,
    prov_errno: c_int,
    buf: *mut c_char,
    len: usize,
) -> *const c_char {
    // SAFETY: `queue` is null or a kofi fid the consumer keeps open.
    match unsafe { lookup::<T>(queue) } {
        Ok(_) => prov_strerror(prov_errno, buf, len),
        Err(_) => core::ptr::null(),
    }
}

/// `fi_cq_strerror()`: a CQ error entry's `prov_errno` as text.
#[no_mangle]
pub(crate) extern "C" fn fi_cq_strerror(
    cq: *mut abi::fid_cq,
    prov_errno: c_int,
    _err_data: *const c_void,
    buf: *mut c_char,
    len: usize,
) -> *const c_char {
    queue_strerror::<Cq>(cq, prov_errno, buf, len)
}

/// `fi_eq_strerror()`: an EQ error entry's `prov_errno` as text.
#[no_mangle]
pub(crate) extern "C" fn fi_eq_strerror(
    eq: *mut abi::fid_eq,
    prov_errno: c_int,
    _err_data: *const c_void,
    buf: *mut c_char,
    len: usize,
) -> *const c_char {
    queue_strerror::<Eq>(eq, prov_errno, buf, len)
}
