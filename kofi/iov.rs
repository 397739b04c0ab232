// SPDX-License-Identifier: GPL-2.0

//! The core's one iov type: an operation's local buffers as the C ABI
//! carries them (kvecs or bio_vecs, [`Iov`], shared with the providers in
//! `include/kofi/rust/iovec.rs`) and their descriptors, borrowed from the
//! caller, with the checks every user of them shares.

use crate::abi;
use crate::errno;
use core::ptr;
use kernel::ffi::c_void;
use kernel::prelude::*;

pub(crate) use crate::iovec::{Iov, Iovs};

/// One buffer of an [`Iov`].
pub(crate) enum Buffer<'a> {
    Bytes(abi::kvec),
    Pages(&'a abi::bio_vec),
}

/// Whether a kvec can describe memory: a buffer unless empty, and none that
/// wraps the address space.
fn kvec_valid(k: &abi::kvec) -> bool {
    (!k.iov_base.is_null() || k.iov_len == 0)
        && (k.iov_base as usize).checked_add(k.iov_len).is_some()
}

/// `count` entries of `T` at `p` as a slice; -EINVAL when no slice can be
/// that long.
///
/// # Safety
///
/// `p` is non-null and holds `count` entries, valid for `'a`.
unsafe fn slice_of<'a, T>(p: *const T, count: usize) -> Result<&'a [T]> {
    if count > isize::MAX as usize / core::mem::size_of::<T>() {
        return Err(EINVAL);
    }
    // SAFETY: The caller's guarantee; the length fits (checked above).
    Ok(unsafe { core::slice::from_raw_parts(p, count) })
}

/// An array of the C ABI as a slice: none for null or `count` 0.
///
/// # Safety
///
/// `p` is null or holds `count` entries, valid for `'a`.
pub(crate) unsafe fn array_of<'a, T>(p: *const T, count: usize) -> Result<&'a [T]> {
    if p.is_null() || count == 0 {
        return Ok(&[]);
    }
    // SAFETY: The caller's guarantee.
    unsafe { slice_of(p, count) }
}

impl<'a> Iov<'a> {
    /// No buffer.
    pub(crate) const EMPTY: Iov<'static> = Iov::Kvec(&[]);

    /// The buffers of a C message: exactly one of `iov` and `bvec` holds
    /// `count` entries (none is needed when `count` is 0); -EINVAL when
    /// neither or both are given.
    ///
    /// # Safety
    ///
    /// The non-null array holds `count` entries, valid for `'a`.
    pub(crate) unsafe fn from_raw(
        iov: *const abi::kvec,
        bvec: *const abi::bio_vec,
        count: usize,
    ) -> Result<Iov<'a>> {
        if count == 0 {
            return Ok(Iov::EMPTY);
        }
        match (iov.is_null(), bvec.is_null()) {
            // SAFETY: The caller's guarantee.
            (false, true) => Ok(Iov::Kvec(unsafe { slice_of(iov, count) }?)),
            // SAFETY: The caller's guarantee.
            (true, false) => Ok(Iov::Bvec(unsafe { slice_of(bvec, count) }?)),
            _ => Err(EINVAL),
        }
    }

    /// Buffer `i`.
    pub(crate) fn buffer(&self, i: usize) -> Option<Buffer<'a>> {
        match *self {
            Iov::Kvec(v) => v.get(i).map(|k| Buffer::Bytes(*k)),
            Iov::Bvec(v) => v.get(i).map(Buffer::Pages),
        }
    }

    /// The total length, checked: every kvec describes memory, every
    /// bio_vec with bytes has a page, and the sum fits.
    pub(crate) fn total(&self) -> Result<usize> {
        let mut total: usize = 0;
        match self {
            Iov::Kvec(v) => {
                for k in v.iter() {
                    if !kvec_valid(k) {
                        return Err(EINVAL);
                    }
                    total = total.checked_add(k.iov_len).ok_or_else(errno::emsgsize)?;
                }
            }
            Iov::Bvec(v) => {
                for b in v.iter() {
                    if b.bv_page.is_null() && b.bv_len != 0 {
                        return Err(EINVAL);
                    }
                    total = total
                        .checked_add(b.bv_len as usize)
                        .ok_or_else(errno::emsgsize)?;
                }
            }
        }
        Ok(total)
    }
}

/// An operation's local buffers and their descriptors (`desc`, one per
/// buffer, each null or a region's `fi_mr_desc`; or no array).
#[derive(Clone, Copy)]
pub(crate) struct Local<'a> {
    pub(crate) iov: Iov<'a>,
    pub(crate) desc: Option<&'a [*mut c_void]>,
}

impl<'a> Local<'a> {
    /// Buffers without descriptors.
    pub(crate) fn new(iov: Iov<'a>) -> Self {
        Local { iov, desc: None }
    }

    /// The local buffers of a C message.
    ///
    /// # Safety
    ///
    /// As for [`Iov::from_raw`]; `desc` is null or holds `count` entries,
    /// valid for `'a`.
    pub(crate) unsafe fn from_raw(
        iov: *const abi::kvec,
        bvec: *const abi::bio_vec,
        desc: *const *mut c_void,
        count: usize,
    ) -> Result<Local<'a>> {
        // SAFETY: The caller's guarantee.
        let iov = unsafe { Iov::from_raw(iov, bvec, count) }?;
        let desc = if desc.is_null() || count == 0 {
            None
        } else {
            // SAFETY: The caller's guarantee.
            Some(unsafe { slice_of(desc, count) }?)
        };
        Ok(Local { iov, desc })
    }

    /// The descriptor array as a C message carries it.
    pub(crate) fn desc_raw(&self) -> *mut *mut c_void {
        // The ABI's array is not const, but no provider writes it.
        self.desc.map_or(ptr::null_mut(), |d| d.as_ptr().cast_mut())
    }
}

/// The local buffers of a C message (fi_msg, fi_msg_tagged, fi_msg_rma).
///
/// # Safety
///
/// As for [`Local::from_raw`], for the message's arrays.
macro_rules! local_of {
    ($m:expr) => {
        $crate::iov::Local::from_raw($m.msg_iov, $m.msg_bvec, $m.desc.cast_const(), $m.iov_count)
    };
}
pub(crate) use local_of;
