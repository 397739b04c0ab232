// SPDX-License-Identifier: GPL-2.0

//! The consumer's memory as a provider holds it: buffers lent for an
//! operation's life ([`Lent`], [`Pages`], [`Kvecs`]), with what the
//! provider keeps of the regions their descriptors name ([`Premapped`]),
//! and regions held by the peers' RMA that use them ([`MrHold`]).

use crate::abi;
use crate::compat::VecExt;
use crate::iovec::{Descs, Iov, Iovs};
use core::any::Any;
use core::ptr::NonNull;
use kernel::alloc::{Allocator, Vec};
use kernel::prelude::*;
use kernel::sync::Arc;

/// What a provider keeps of a registered region for the local buffers in
/// it (kofi_verbs: its DMA mapping), from `Domain::premapped`; an operation
/// whose buffer's descriptor names the region holds it for its life.
pub(crate) type Premapped = Arc<dyn Any + Send + Sync>;

/// Per buffer, what the provider keeps of the region its descriptor names
/// (empty when no buffer has one).
pub(crate) type PremappedList = KVec<Option<Premapped>>;

/// Where a lent buffer's bytes are: a kvec's kernel virtual address, or a
/// bio_vec's page and offset.
#[derive(Clone, Copy)]
pub(crate) enum LocalAt {
    Bytes(usize),
    Page(*mut abi::page, u32),
}

/// A registered region held for an RMA: `len` bytes at RMA address `addr`.
///
/// # Invariants
///
/// `mr` was returned by a successful `kofi_mr_get` for exactly this window
/// and is put on drop; until then the region and its memory stay.
pub(crate) struct MrHold {
    pub(super) mr: NonNull<abi::fid_mr>,
    pub(super) addr: u64,
    pub(super) len: usize,
}

// SAFETY: A hold is a count on the core's region, which any thread may put
// (kofi_mr_put drops it under the domain's lock of regions and wakes a
// closer); the window's memory is the consumer's, lent to the region, not
// to a thread.
unsafe impl Send for MrHold {}

impl MrHold {
    /// The window's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// An iov_iter over `len` bytes at `offset` of the window, to read from
    /// (`ITER_SOURCE`) or write to (`ITER_DEST`) while the region is held.
    pub(crate) fn iter(&self, direction: u32, offset: usize, len: usize) -> Result<abi::iov_iter> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => {}
            _ => return Err(EINVAL),
        }
        let mut iter = abi::iov_iter::default();
        // SAFETY: The region is held and the sub-window lies inside the
        // window kofi_mr_get checked (type invariants).
        unsafe {
            abi::kofi_mr_iter(
                self.mr.as_ptr(),
                direction,
                self.addr + offset as u64,
                len,
                &mut iter,
            )
        };
        Ok(iter)
    }

    /// Copies `src` into the region at `offset` of the window.
    pub(crate) fn write(&self, offset: usize, src: &[u8]) -> Result {
        let mut iter = self.iter(abi::ITER_DEST, offset, src.len())?;
        // SAFETY: `src` is readable for its length; `iter` covers as many bytes.
        let n = unsafe { abi::_copy_to_iter(src.as_ptr().cast(), src.len(), &mut iter) };
        if n == src.len() {
            Ok(())
        } else {
            Err(EFAULT)
        }
    }

    /// A copy of the whole window (filled by the copy alone, not zeroed
    /// first).
    pub(crate) fn copy_out(&self) -> Result<KVVec<u8>> {
        let mut v = KVVec::with_capacity(self.len, GFP_KERNEL)?;
        let mut iter = self.iter(abi::ITER_SOURCE, 0, self.len)?;
        let spare = v.spare_capacity_mut();
        // SAFETY: `spare` is writable for `self.len` bytes (the capacity
        // asked for); `iter` covers as many.
        let n = unsafe { abi::_copy_from_iter(spare.as_mut_ptr().cast(), self.len, &mut iter) };
        if n != self.len {
            return Err(EFAULT);
        }
        // SAFETY: The copy wrote the `n` bytes past the (empty) length,
        // within the capacity.
        unsafe { v.grow_len(n) };
        Ok(v)
    }

    /// Copies from the region at `offset` of the window into `dst`.
    pub(crate) fn read(&self, offset: usize, dst: &mut [u8]) -> Result {
        let mut iter = self.iter(abi::ITER_SOURCE, offset, dst.len())?;
        // SAFETY: `dst` is writable for its length; `iter` covers as many bytes.
        let n = unsafe { abi::_copy_from_iter(dst.as_mut_ptr().cast(), dst.len(), &mut iter) };
        if n == dst.len() {
            Ok(())
        } else {
            Err(EFAULT)
        }
    }
}

impl Drop for MrHold {
    fn drop(&mut self) {
        // SAFETY: Held since `mr_get` (type invariants), put once.
        unsafe { abi::kofi_mr_put(self.mr.as_ptr()) };
    }
}

/// The consumer's buffers of an operation, kvecs or bio_vecs (pages), valid
/// until its completion is reported (the consumer's promise under the ABI):
/// a copy of their descriptors.
pub(super) type Buffers = Iovs;

impl Buffers {
    /// A copy of the arrays (not the data) the core checked.
    pub(super) fn of(
        iov: *const abi::kvec,
        bvec: *const abi::bio_vec,
        count: usize,
    ) -> Result<Buffers> {
        if count == 0 {
            return Ok(Iovs::none());
        }
        // SAFETY: The view is copied before this call returns.
        Iovs::copy_of(unsafe { Buffers::view(iov, bvec, count) })
    }

    /// The arrays the core checked, as they are.
    ///
    /// # Safety
    ///
    /// The caller uses the view only while the operation's call lasts (the
    /// arrays are its caller's, for that call).
    pub(super) unsafe fn view<'a>(
        iov: *const abi::kvec,
        bvec: *const abi::bio_vec,
        count: usize,
    ) -> Iov<'a> {
        if count == 0 {
            return Iov::Kvec(&[]);
        }
        if !iov.is_null() {
            // SAFETY: The core checked `iov` holds `count` kvecs, valid for
            // the call (the caller's promise).
            return Iov::Kvec(unsafe { core::slice::from_raw_parts(iov, count) });
        }
        // SAFETY: The core checked exactly one array is given: `bvec` holds
        // `count` bio_vecs, valid for the call.
        Iov::Bvec(unsafe { core::slice::from_raw_parts(bvec, count) })
    }

    /// The buffers as lent ones, for an operation that uses them in place,
    /// with what the provider keeps of their regions.
    pub(super) fn into_lent(self, premapped: PremappedList) -> Lent {
        match self {
            Iovs::Kvec(iov) => Lent::Kvecs(Kvecs { iov, premapped }),
            Iovs::Bvec(bvecs) => Lent::Pages(Pages { bvecs, premapped }),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.as_iov().len()
    }

    /// Appends the bytes of the buffers to `out`.
    pub(super) fn gather<A: Allocator>(&self, out: &mut Vec<u8, A>) -> Result {
        append_from(self.as_iov(), 0, self.len(), out)
    }

    /// Copies `src` into the buffers from byte `offset` on, as far as it
    /// fits; the bytes copied.
    pub(super) fn scatter_at(&self, offset: usize, src: &[u8]) -> usize {
        // SAFETY: The consumer's buffers of a receive, writable until its
        // completion, apart from `src`.
        unsafe { self.as_iov().copy_in(offset, src) }
    }
}

/// Copies the bytes of `iov`, the consumer's buffers of an operation in
/// progress, into `dst`, which is as long as they are.
pub(super) fn copy_all(iov: Iov<'_>, dst: &mut [u8]) -> Result {
    if dst.len() != iov.len() {
        return Err(EINVAL);
    }
    copy_at(iov, 0, dst)
}

/// Copies bytes `at ..` of `iov`, the consumer's buffers of an operation in
/// progress, into all of `dst`; -EINVAL past their end.
fn copy_at(iov: Iov<'_>, at: usize, dst: &mut [u8]) -> Result {
    if !matches!(at.checked_add(dst.len()), Some(end) if end <= iov.len()) {
        return Err(EINVAL);
    }
    // SAFETY: The consumer's buffers, readable while the operation is in
    // progress; `dst` is ours.
    let n = unsafe { iov.copy_out(at, dst) };
    if n == dst.len() {
        Ok(())
    } else {
        Err(EFAULT)
    }
}

/// Appends bytes `at .. at + len` of `iov`, the consumer's buffers of an
/// operation in progress, to `out`; -EINVAL past their end.
pub(super) fn append_from<A: Allocator>(
    iov: Iov<'_>,
    at: usize,
    len: usize,
    out: &mut Vec<u8, A>,
) -> Result {
    // SAFETY: The consumer's buffers, readable while the operation is in
    // progress; `out` is ours.
    unsafe { iov.append_to(at, len, out) }
}

/// A send's buffers, lent by the consumer until the send completes.
pub(crate) enum Lent {
    Kvecs(Kvecs),
    Pages(Pages),
}

impl Lent {
    /// The buffers, borrowed.
    pub(crate) fn as_iov(&self) -> Iov<'_> {
        match self {
            Lent::Kvecs(k) => Iov::Kvec(&k.iov),
            Lent::Pages(p) => Iov::Bvec(&p.bvecs),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.as_iov().len()
    }

    /// Buffer `i`: where its bytes are and how many; `None` past the last.
    pub(crate) fn piece(&self, i: usize) -> Option<(LocalAt, usize)> {
        match self {
            Lent::Kvecs(k) => k
                .iov
                .get(i)
                .map(|kv| (LocalAt::Bytes(kv.iov_base as usize), kv.iov_len)),
            Lent::Pages(p) => p
                .bvecs
                .get(i)
                .map(|bv| (LocalAt::Page(bv.bv_page, bv.bv_offset), bv.bv_len as usize)),
        }
    }

    /// What the provider keeps of the region buffer `i`'s descriptor
    /// names, if it had one.
    pub(crate) fn premapped(&self, i: usize) -> Option<&Premapped> {
        let list = match self {
            Lent::Kvecs(k) => &k.premapped,
            Lent::Pages(p) => &p.premapped,
        };
        list.get(i).and_then(Option::as_ref)
    }

    /// An iterator over the buffers from byte `offset` on, for sending
    /// from them.
    pub(crate) fn iter_at(&self, offset: usize) -> abi::iov_iter {
        self.as_iov().iter_at(abi::ITER_SOURCE, offset)
    }

    /// Bytes `offset .. offset + len` of the buffers as buffers of their
    /// own: new descriptors of the same memory, lent as these are (without
    /// their regions: a provider that sends pieces copies them).
    pub(crate) fn range(&self, offset: usize, len: usize) -> Result<Lent> {
        Ok(self.as_iov().window(offset, len)?.into_lent(KVec::new()))
    }

    /// Appends bytes `offset .. offset + len` of the buffers to `out` (for
    /// a provider that sends small pieces inline).
    pub(crate) fn gather_range<A: Allocator>(
        &self,
        offset: usize,
        len: usize,
        out: &mut Vec<u8, A>,
    ) -> Result {
        append_from(self.as_iov(), offset, len, out)
    }
}

/// The pages of a message, lent by the consumer until its send completes.
pub(crate) struct Pages {
    pub(super) bvecs: Descs<abi::bio_vec>,
    pub(super) premapped: PremappedList,
}

// SAFETY: Descriptors of pages the consumer lends until the send completes.
unsafe impl Send for Pages {}

impl Pages {
    pub(crate) fn bvecs(&self) -> &[abi::bio_vec] {
        &self.bvecs
    }

    pub(crate) fn len(&self) -> usize {
        Iov::Bvec(&self.bvecs).len()
    }
}

/// The kvecs of a message, lent by the consumer until its send completes.
pub(crate) struct Kvecs {
    pub(super) iov: Descs<abi::kvec>,
    pub(super) premapped: PremappedList,
}

// SAFETY: Descriptors of buffers the consumer lends until the send completes.
unsafe impl Send for Kvecs {}

impl Kvecs {
    pub(crate) fn kvecs(&self) -> &[abi::kvec] {
        &self.iov
    }

    pub(crate) fn len(&self) -> usize {
        Iov::Kvec(&self.iov).len()
    }
}
