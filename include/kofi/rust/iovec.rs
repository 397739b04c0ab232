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
use crate::compat::VecExt;
use kernel::alloc::{Allocator, Vec};
use kernel::prelude::*;

/// Buffers, borrowed: kernel virtual ranges or pages.
#[derive(Clone, Copy)]
pub(crate) enum Iov<'a> {
    Kvec(&'a [abi::kvec]),
    Bvec(&'a [abi::bio_vec]),
}

/// Buffers' descriptors, owned (not their bytes).
pub(crate) enum Iovs {
    Kvec(Descs<abi::kvec>),
    Bvec(Descs<abi::bio_vec>),
}

/// Descriptors an operation holds in place, before it spills to the heap.
const INLINE_DESCS: usize = 4;

/// Descriptors, kept in place up to [`INLINE_DESCS`] of them and in a
/// vector beyond: an operation on a buffer or a few (nearly all of them)
/// allocates nothing for its descriptors, whose copy the profile of a
/// round trip showed in `krealloc` on every send and receive.
pub(crate) struct Descs<T: Copy + Default>(Store<T>);

/// Where [`Descs`] keep theirs.
///
/// # Invariants
///
/// `Inline`'s count is at most [`INLINE_DESCS`].
enum Store<T: Copy + Default> {
    Inline([T; INLINE_DESCS], usize),
    Heap(KVec<T>),
}

impl<T: Copy + Default> Descs<T> {
    pub(crate) fn new() -> Self {
        // INVARIANT: None in place.
        Descs(Store::Inline([T::default(); INLINE_DESCS], 0))
    }

    /// Room for `n` descriptors.
    pub(crate) fn with_capacity(n: usize, flags: kernel::alloc::Flags) -> Result<Self> {
        if n <= INLINE_DESCS {
            Ok(Descs::new())
        } else {
            Ok(Descs(Store::Heap(KVec::with_capacity(n, flags)?)))
        }
    }

    /// A copy of `v`.
    pub(crate) fn copy_of(v: &[T], flags: kernel::alloc::Flags) -> Result<Self> {
        let mut d = Descs::with_capacity(v.len(), flags)?;
        d.extend_from_slice(v, flags)?;
        Ok(d)
    }

    /// One descriptor (nothing to allocate).
    pub(crate) fn one(d: T) -> Self {
        let mut a = [T::default(); INLINE_DESCS];
        a[0] = d;
        // INVARIANT: One in place.
        Descs(Store::Inline(a, 1))
    }

    pub(crate) fn push(&mut self, d: T, flags: kernel::alloc::Flags) -> Result {
        self.extend_from_slice(core::slice::from_ref(&d), flags)
    }

    pub(crate) fn extend_from_slice(&mut self, v: &[T], flags: kernel::alloc::Flags) -> Result {
        match &mut self.0 {
            Store::Inline(a, n) if *n + v.len() <= INLINE_DESCS => {
                a[*n..*n + v.len()].copy_from_slice(v);
                // INVARIANT: Checked just above.
                *n += v.len();
            }
            Store::Inline(a, n) => {
                let mut heap = KVec::with_capacity(*n + v.len(), flags)?;
                heap.extend_from_slice(&a[..*n], flags)?;
                heap.extend_from_slice(v, flags)?;
                self.0 = Store::Heap(heap);
            }
            Store::Heap(heap) => heap.extend_from_slice(v, flags)?,
        }
        Ok(())
    }
}

impl<T: Copy + Default> core::ops::Deref for Descs<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        match &self.0 {
            Store::Inline(a, n) => &a[..*n],
            Store::Heap(v) => v,
        }
    }
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

    /// Appends bytes `at .. at + len` of the buffers to `out`, copied into
    /// its spare room (not zeroed first); -EINVAL past their end, -EFAULT
    /// when the copy falls short.
    ///
    /// # Safety
    ///
    /// The buffers are memory the caller may read, all of it, apart from
    /// `out`.
    pub(crate) unsafe fn append_to<A: Allocator>(
        &self,
        at: usize,
        len: usize,
        out: &mut Vec<u8, A>,
    ) -> Result {
        if !matches!(at.checked_add(len), Some(end) if end <= self.len()) {
            return Err(EINVAL);
        }
        out.reserve(len, GFP_KERNEL)?;
        let mut iter = self.iter_at(abi::ITER_SOURCE, at);
        let spare = out.spare_capacity_mut();
        // SAFETY: `spare` is writable for `len` bytes (reserved above); the
        // iterator covers readable memory (the caller's guarantee), `len`
        // bytes of it past `at` (checked).
        let n = unsafe { abi::_copy_from_iter(spare.as_mut_ptr().cast(), len, &mut iter) };
        if n != len {
            return Err(EFAULT);
        }
        // SAFETY: The copy wrote the `len` bytes past the length, within the
        // capacity.
        unsafe { out.grow_len(len) };
        Ok(())
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
            Iov::Kvec(_) => Iovs::Kvec(Descs::new()),
            Iov::Bvec(_) => Iovs::Bvec(Descs::new()),
        };
        self.window_into(at, len, &mut out)?;
        Ok(out)
    }
}

/// Appends to `out` the descriptors covering bytes `at .. at + len` of
/// those in `v` (whose lengths `len_of` gives), each made by
/// `part(d, skip, n)`: `n` bytes of `d` from its byte `skip` on.
fn cut<T: Copy + Default>(
    v: &[T],
    mut at: usize,
    mut len: usize,
    out: &mut Descs<T>,
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
            Iov::Kvec(v) => Iovs::Kvec(Descs::copy_of(v, GFP_KERNEL)?),
            Iov::Bvec(v) => Iovs::Bvec(Descs::copy_of(v, GFP_KERNEL)?),
        })
    }

    /// No buffer.
    pub(crate) fn none() -> Iovs {
        Iovs::Kvec(Descs::new())
    }

    /// One buffer of `len` bytes at kernel virtual address `base`.
    pub(crate) fn one(base: *mut u8, len: usize) -> Iovs {
        Iovs::Kvec(Descs::one(abi::kvec {
            iov_base: base.cast(),
            iov_len: len,
        }))
    }

    /// The buffers, borrowed.
    pub(crate) fn as_iov(&self) -> Iov<'_> {
        match self {
            Iovs::Kvec(v) => Iov::Kvec(v),
            Iovs::Bvec(v) => Iov::Bvec(v),
        }
    }
}
