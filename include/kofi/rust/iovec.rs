// SPDX-License-Identifier: GPL-2.0

//! Buffers as the C ABI carries them, kvecs or bio_vecs: their length,
//! byte windows of them (as descriptors, or as an `iov_iter`), and copies
//! in and out. The core (its iov type, the RDM layer's segments) and the
//! providers (their lent buffers) share this one implementation.
//!
//! The crate that compiles it in provides `crate::abi` with `kvec`,
//! `bio_vec`, an `iov_iter` (opaque is enough), `ITER_SOURCE`/`ITER_DEST`,
//! and the kernel's `iov_iter_kvec`, `iov_iter_bvec`, `iov_iter_advance`,
//! `_copy_to_iter` and `_copy_from_iter`.

use crate::abi;
use kernel::prelude::*;

/// Buffers, borrowed: kernel virtual ranges or pages.
#[derive(Clone, Copy)]
pub(crate) enum Iov<'a> {
    Kvec(&'a [abi::kvec]),
    Bvec(&'a [abi::bio_vec]),
}

/// Buffers' descriptors, owned (not their bytes).
pub(crate) enum Iovs {
    Kvec(KVec<abi::kvec>),
    Bvec(KVec<abi::bio_vec>),
}

// SAFETY: Descriptors only: whoever holds them uses the memory they name
// under its own terms (the consumer lends it until a completion, say).
unsafe impl Send for Iovs {}

impl<'a> Iov<'a> {
    /// How many buffers.
    pub(crate) fn count(&self) -> usize {
        match self {
            Iov::Kvec(v) => v.len(),
            Iov::Bvec(v) => v.len(),
        }
    }

    /// The arrays as a C message carries them: `(msg_iov, msg_bvec)`, both
    /// null when there is no buffer.
    pub(crate) fn as_raw(&self) -> (*const abi::kvec, *const abi::bio_vec) {
        match self {
            _ if self.count() == 0 => (core::ptr::null(), core::ptr::null()),
            Iov::Kvec(v) => (v.as_ptr(), core::ptr::null()),
            Iov::Bvec(v) => (core::ptr::null(), v.as_ptr()),
        }
    }

    /// Their bytes in all (the caller checked the sum fits where it came
    /// from the consumer).
    pub(crate) fn len(&self) -> usize {
        match self {
            Iov::Kvec(v) => v.iter().map(|k| k.iov_len).sum(),
            Iov::Bvec(v) => v.iter().map(|b| b.bv_len as usize).sum(),
        }
    }

    /// An `iov_iter` over the buffers from byte `at` on, to the end. It
    /// points into the arrays: the caller uses it while they are borrowed.
    pub(crate) fn iter_at(&self, direction: u32, at: usize) -> abi::iov_iter {
        // SAFETY: An iov_iter is plain data; the kernel initialises it.
        let mut iter: abi::iov_iter = unsafe { core::mem::zeroed() };
        let len = self.len();
        // SAFETY: The arrays hold their counts, `len` bytes in all; the
        // iterator only describes them (nothing is read or written here),
        // and advancing by at most `len` stays within them.
        unsafe {
            match self {
                Iov::Kvec(v) => abi::iov_iter_kvec(&mut iter, direction, v.as_ptr(), v.len(), len),
                Iov::Bvec(v) => abi::iov_iter_bvec(&mut iter, direction, v.as_ptr(), v.len(), len),
            }
            abi::iov_iter_advance(&mut iter, at.min(len));
        }
        iter
    }

    /// Copies `src` into the buffers from byte `at` on; the bytes copied
    /// (fewer when the buffers end first).
    ///
    /// # Safety
    ///
    /// The buffers are memory the caller may write, all of it, apart from
    /// `src`.
    pub(crate) unsafe fn copy_in(&self, at: usize, src: &[u8]) -> usize {
        let mut iter = self.iter_at(abi::ITER_DEST, at);
        // SAFETY: `src` is readable for its length; the iterator covers
        // writable memory (the caller's guarantee) and copies at most what
        // it covers.
        unsafe { abi::_copy_to_iter(src.as_ptr().cast(), src.len(), &mut iter) }
    }

    /// Copies from the buffers, from byte `at` on, into `dst`; the bytes
    /// copied (fewer when the buffers end first).
    ///
    /// # Safety
    ///
    /// The buffers are memory the caller may read, all of it, apart from
    /// `dst`.
    pub(crate) unsafe fn copy_out(&self, at: usize, dst: &mut [u8]) -> usize {
        let mut iter = self.iter_at(abi::ITER_SOURCE, at);
        // SAFETY: `dst` is writable for its length; the iterator covers
        // readable memory (the caller's guarantee) and copies at most what
        // it covers.
        unsafe { abi::_copy_from_iter(dst.as_mut_ptr().cast(), dst.len(), &mut iter) }
    }

    /// Appends the descriptors of bytes `at .. at + len` of the buffers to
    /// `out`, which holds descriptors of the same kind: new descriptors of
    /// the same memory. -EINVAL past the end, or for the other kind.
    pub(crate) fn window_into(&self, at: usize, len: usize, out: &mut Iovs) -> Result {
        if !matches!(at.checked_add(len), Some(end) if end <= self.len()) {
            return Err(EINVAL);
        }
        match (self, out) {
            (Iov::Kvec(v), Iovs::Kvec(out)) => cut(
                v,
                at,
                len,
                out,
                |kv| kv.iov_len,
                |kv, skip, n| abi::kvec {
                    iov_base: kv.iov_base.wrapping_byte_add(skip),
                    iov_len: n,
                },
            ),
            // An offset past the first page of a multi-page bio_vec is
            // valid: iov_iter finds the page from it.
            (Iov::Bvec(v), Iovs::Bvec(out)) => cut(
                v,
                at,
                len,
                out,
                |bv| bv.bv_len as usize,
                |bv, skip, n| abi::bio_vec {
                    bv_page: bv.bv_page,
                    bv_len: n as u32,
                    bv_offset: bv.bv_offset + skip as u32,
                },
            ),
            _ => Err(EINVAL),
        }
    }

    /// The descriptors of bytes `at .. at + len`, as [`Iov::window_into`].
    pub(crate) fn window(&self, at: usize, len: usize) -> Result<Iovs> {
        let mut out = match self {
            Iov::Kvec(_) => Iovs::Kvec(KVec::new()),
            Iov::Bvec(_) => Iovs::Bvec(KVec::new()),
        };
        self.window_into(at, len, &mut out)?;
        Ok(out)
    }
}

/// Appends to `out` the descriptors covering bytes `at .. at + len` of
/// those in `v` (whose lengths `len_of` gives), each made by
/// `part(d, skip, n)`: `n` bytes of `d` from its byte `skip` on.
fn cut<T>(
    v: &[T],
    mut at: usize,
    mut len: usize,
    out: &mut KVec<T>,
    len_of: impl Fn(&T) -> usize,
    part: impl Fn(&T, usize, usize) -> T,
) -> Result {
    for d in v {
        if len == 0 {
            break;
        }
        let l = len_of(d);
        if at >= l {
            at -= l;
            continue;
        }
        let n = (l - at).min(len);
        out.push(part(d, at, n), GFP_KERNEL)?;
        len -= n;
        at = 0;
    }
    Ok(())
}

impl Iovs {
    /// A copy of the descriptors of `iov`.
    pub(crate) fn copy_of(iov: Iov<'_>) -> Result<Iovs> {
        Ok(match iov {
            Iov::Kvec(v) => {
                let mut c = KVec::with_capacity(v.len(), GFP_KERNEL)?;
                c.extend_from_slice(v, GFP_KERNEL)?;
                Iovs::Kvec(c)
            }
            Iov::Bvec(v) => {
                let mut c = KVec::with_capacity(v.len(), GFP_KERNEL)?;
                c.extend_from_slice(v, GFP_KERNEL)?;
                Iovs::Bvec(c)
            }
        })
    }

    /// The buffers, borrowed.
    pub(crate) fn as_iov(&self) -> Iov<'_> {
        match self {
            Iovs::Kvec(v) => Iov::Kvec(v),
            Iovs::Bvec(v) => Iov::Bvec(v),
        }
    }
}
