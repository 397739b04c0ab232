// SPDX-License-Identifier: GPL-2.0

//! The consumer's memory as a provider holds it: buffers lent for an
//! operation's life ([`Lent`], [`Pages`], [`Kvecs`]), with what the
//! provider keeps of the regions their descriptors name ([`Premapped`]),
//! and regions held by the peers' RMA that use them ([`MrHold`]).

use crate::abi;
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

impl MrHold {
    /// An iov_iter over `len` bytes at `offset` of the window.
    fn iter(&self, direction: u32, offset: usize, len: usize) -> Result<abi::iov_iter> {
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
/// until its completion is reported (the consumer's promise under the ABI).
pub(super) enum Buffers {
    Kvec(KVec<abi::kvec>),
    Bvec(KVec<abi::bio_vec>),
}

// SAFETY: Descriptors of buffers the consumer lends to the provider until the
// operation completes, from whichever thread completes it.
unsafe impl Send for Buffers {}

impl Buffers {
    /// A copy of the arrays (not the data) the core checked.
    pub(super) fn of(
        iov: *const abi::kvec,
        bvec: *const abi::bio_vec,
        count: usize,
    ) -> Result<Buffers> {
        if count == 0 || !iov.is_null() {
            let mut v = KVec::with_capacity(count, GFP_KERNEL)?;
            if count != 0 {
                // SAFETY: The core checked `iov` holds `count` kvecs.
                let src = unsafe { core::slice::from_raw_parts(iov, count) };
                v.extend_from_slice(src, GFP_KERNEL)?;
            }
            return Ok(Buffers::Kvec(v));
        }
        let mut v = KVec::with_capacity(count, GFP_KERNEL)?;
        // SAFETY: The core checked exactly one array is given: `bvec` holds
        // `count` bio_vecs.
        let src = unsafe { core::slice::from_raw_parts(bvec, count) };
        v.extend_from_slice(src, GFP_KERNEL)?;
        Ok(Buffers::Bvec(v))
    }

    /// The buffers as lent ones, for an operation that uses them in place,
    /// with what the provider keeps of their regions.
    pub(super) fn into_lent(self, premapped: PremappedList) -> Lent {
        match self {
            Buffers::Kvec(iov) => Lent::Kvecs(Kvecs { iov, premapped }),
            Buffers::Bvec(bvecs) => Lent::Pages(Pages { bvecs, premapped }),
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Buffers::Kvec(v) => v.iter().map(|k| k.iov_len).sum(),
            Buffers::Bvec(v) => v.iter().map(|b| b.bv_len as usize).sum(),
        }
    }

    /// An iov_iter over the buffers.
    pub(super) fn iter(&self, direction: u32) -> abi::iov_iter {
        let mut iter = abi::iov_iter::default();
        let len = self.len();
        // SAFETY: The arrays describe the consumer's buffers, which stay
        // valid while the operation is in progress.
        unsafe {
            match self {
                Buffers::Kvec(v) => {
                    abi::iov_iter_kvec(&mut iter, direction, v.as_ptr(), v.len(), len)
                }
                Buffers::Bvec(v) => {
                    abi::iov_iter_bvec(&mut iter, direction, v.as_ptr(), v.len(), len)
                }
            }
        }
        iter
    }

    /// Appends the bytes of the buffers to `out`.
    pub(super) fn gather<A: Allocator>(&self, out: &mut Vec<u8, A>) -> Result {
        let len = self.len();
        let at = out.len();
        out.extend_with(len, 0, GFP_KERNEL)?;
        let mut iter = self.iter(abi::ITER_SOURCE);
        // SAFETY: `out` has `len` writable bytes from `at`; `iter` covers `len`.
        let n = unsafe { abi::_copy_from_iter(out.as_mut_ptr().add(at).cast(), len, &mut iter) };
        if n == len {
            Ok(())
        } else {
            Err(EFAULT)
        }
    }

    /// Copies `src` into the buffers as far as it fits; the bytes copied.
    pub(super) fn scatter(&self, src: &[u8]) -> usize {
        self.scatter_at(0, src)
    }

    /// As [`Buffers::scatter`], from byte `offset` of the buffers on.
    pub(super) fn scatter_at(&self, offset: usize, src: &[u8]) -> usize {
        let len = self.len();
        if offset >= len {
            return 0;
        }
        let n = src.len().min(len - offset);
        let mut iter = self.iter(abi::ITER_DEST);
        // SAFETY: `iter` covers `len > offset` bytes; advancing within them
        // is valid; `src` has `n` readable bytes and `n <= len - offset`.
        unsafe {
            abi::iov_iter_advance(&mut iter, offset);
            abi::_copy_to_iter(src.as_ptr().cast(), n, &mut iter)
        }
    }
}

/// A send's buffers, lent by the consumer until the send completes.
pub(crate) enum Lent {
    Kvecs(Kvecs),
    Pages(Pages),
}

impl Lent {
    pub(crate) fn len(&self) -> usize {
        match self {
            Lent::Kvecs(k) => k.len(),
            Lent::Pages(p) => p.len(),
        }
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
        let mut iter = abi::iov_iter::default();
        // SAFETY: The arrays describe the consumer's buffers, lent until the
        // operation completes; advancing by at most their length stays
        // within them (iov_iter_advance also clamps).
        unsafe {
            match self {
                Lent::Kvecs(k) => abi::iov_iter_kvec(
                    &mut iter,
                    abi::ITER_SOURCE,
                    k.iov.as_ptr(),
                    k.iov.len(),
                    k.len(),
                ),
                Lent::Pages(p) => abi::iov_iter_bvec(
                    &mut iter,
                    abi::ITER_SOURCE,
                    p.bvecs.as_ptr(),
                    p.bvecs.len(),
                    p.len(),
                ),
            }
            abi::iov_iter_advance(&mut iter, offset.min(self.len()));
        }
        iter
    }

    /// Bytes `offset .. offset + len` of the buffers as buffers of their
    /// own: new descriptors of the same memory, lent as these are (without
    /// their regions: a provider that sends pieces copies them).
    pub(crate) fn range(&self, offset: usize, len: usize) -> Result<Lent> {
        if !matches!(offset.checked_add(len), Some(end) if end <= self.len()) {
            return Err(EINVAL);
        }
        Ok(match self {
            Lent::Kvecs(k) => Lent::Kvecs(Kvecs {
                iov: cut(
                    &k.iov,
                    offset,
                    len,
                    |kv| kv.iov_len,
                    |kv, skip, n| abi::kvec {
                        iov_base: kv.iov_base.wrapping_byte_add(skip),
                        iov_len: n,
                    },
                )?,
                premapped: KVec::new(),
            }),
            // An offset past the first page of a multi-page bio_vec is
            // valid: iov_iter finds the page from it.
            Lent::Pages(p) => Lent::Pages(Pages {
                bvecs: cut(
                    &p.bvecs,
                    offset,
                    len,
                    |bv| bv.bv_len as usize,
                    |bv, skip, n| abi::bio_vec {
                        bv_page: bv.bv_page,
                        bv_len: n as u32,
                        bv_offset: bv.bv_offset + skip as u32,
                    },
                )?,
                premapped: KVec::new(),
            }),
        })
    }

    /// Appends bytes `offset .. offset + len` of the buffers to `out` (for
    /// a provider that sends small pieces inline).
    pub(crate) fn gather_range<A: Allocator>(
        &self,
        offset: usize,
        len: usize,
        out: &mut Vec<u8, A>,
    ) -> Result {
        if !matches!(offset.checked_add(len), Some(end) if end <= self.len()) {
            return Err(EINVAL);
        }
        let at = out.len();
        out.extend_with(len, 0, GFP_KERNEL)?;
        let mut iter = self.iter_at(offset);
        // SAFETY: `out` has `len` writable bytes from `at`; the iterator
        // covers at least `len` more (checked above).
        let n = unsafe { abi::_copy_from_iter(out.as_mut_ptr().add(at).cast(), len, &mut iter) };
        if n == len {
            Ok(())
        } else {
            Err(EFAULT)
        }
    }
}

/// The descriptors covering bytes `offset .. offset + len` of those in `v`
/// (whose lengths `len_of` gives), each made by `part(d, skip, n)`: `n`
/// bytes of `d` from its byte `skip` on.
fn cut<T>(
    v: &[T],
    mut offset: usize,
    mut len: usize,
    len_of: impl Fn(&T) -> usize,
    part: impl Fn(&T, usize, usize) -> T,
) -> Result<KVec<T>> {
    let mut out = KVec::new();
    for d in v {
        if len == 0 {
            break;
        }
        let l = len_of(d);
        if offset >= l {
            offset -= l;
            continue;
        }
        let n = (l - offset).min(len);
        out.push(part(d, offset, n), GFP_KERNEL)?;
        len -= n;
        offset = 0;
    }
    Ok(out)
}

/// The pages of a message, lent by the consumer until its send completes.
pub(crate) struct Pages {
    pub(super) bvecs: KVec<abi::bio_vec>,
    pub(super) premapped: PremappedList,
}

// SAFETY: Descriptors of pages the consumer lends until the send completes.
unsafe impl Send for Pages {}

impl Pages {
    pub(crate) fn bvecs(&self) -> &[abi::bio_vec] {
        &self.bvecs
    }

    pub(crate) fn len(&self) -> usize {
        self.bvecs.iter().map(|b| b.bv_len as usize).sum()
    }
}

/// The kvecs of a message, lent by the consumer until its send completes.
pub(crate) struct Kvecs {
    pub(super) iov: KVec<abi::kvec>,
    pub(super) premapped: PremappedList,
}

// SAFETY: Descriptors of buffers the consumer lends until the send completes.
unsafe impl Send for Kvecs {}

impl Kvecs {
    pub(crate) fn kvecs(&self) -> &[abi::kvec] {
        &self.iov
    }

    pub(crate) fn len(&self) -> usize {
        self.iov.iter().map(|k| k.iov_len).sum()
    }
}
