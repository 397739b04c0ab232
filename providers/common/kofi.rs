// SPDX-License-Identifier: GPL-2.0

//! The safe Rust layer for kofi providers.
//!
//! Every Rust provider compiles this one source in (out-of-tree modules
//! cannot share a crate): its crate root declares
//!
//! ```ignore
//! #[path = ".../providers/common/abi.rs"] mod abi;
//! #[path = ".../kofi/flags.rs"] mod flags;
//! #[path = ".../providers/common/kofi.rs"] mod kofi;
//! ```
//!
//! A provider implements [`Provider`], [`Endpoint`] and [`PassiveEndpoint`]
//! and keeps a [`Registration`] in its module. The layer builds the C
//! dispatch tables from `extern "C"` trampolines generic over the provider
//! (as the kernel's `#[vtable]` adapters do: an op the provider does not
//! implement is NULL, and the core answers -FI_ENOSYS), stores the
//! provider's objects in `fid.prov_data` as boxed foreign pointers, and gives
//! the provider safe handles ([`EpRef`], [`DomainRef`], [`PepRef`]) to report
//! through. The provider's own code needs no FFI.

use crate::abi;
use crate::flags::{FI_COMPLETION, FI_MSG, FI_RECV, FI_REMOTE_CQ_DATA, FI_TAGGED};
use crate::vec::VecExt;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::alloc::{Allocator, Vec};
use kernel::error::{to_result, VTABLE_DEFAULT_ERROR};
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;
use kernel::types::ForeignOwnable;

/// `MODULE_IMPORT_NS(KOFI)`, which the 6.12 `module!` macro cannot say: the
/// same `.modinfo` entry the C macro emits for a loadable module.
#[cfg(MODULE)]
#[link_section = ".modinfo"]
#[used(compiler)]
static KOFI_IMPORT_NS: [u8; 15] = *b"import_ns=KOFI\0";

/// A positive kofi error number (`FI_E*`) as a kernel [`Error`].
pub(crate) fn fi_error(errnum: u32) -> Error {
    Error::from_errno(-(errnum as c_int))
}

/// The consumer's context of an operation, returned in its completion.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Context(*mut c_void);

// SAFETY: An opaque cookie of the consumer's, never dereferenced.
unsafe impl Send for Context {}
// SAFETY: As above.
unsafe impl Sync for Context {}

impl Context {
    pub(crate) const NONE: Context = Context(ptr::null_mut());
}

/// A kofi endpoint, the handle a provider reports its completions and
/// connection events through.
///
/// # Invariants
///
/// `ptr` is a live kofi endpoint until the provider's endpoint (which owns
/// the handle) is dropped by the close trampoline; a provider must not keep
/// a clone of it beyond that (the close op must not return while work that
/// holds one is still pending).
#[derive(Clone)]
pub(crate) struct EpRef {
    ptr: NonNull<abi::fid_ep>,
}

// SAFETY: The core's reporting calls are safe from any context but hardirq.
unsafe impl Send for EpRef {}
// SAFETY: As above.
unsafe impl Sync for EpRef {}

impl EpRef {
    /// Reports a completed operation (see `kofi_ep_complete`): `flags` are
    /// the operation's own (with its FI_COMPLETION) plus what happened.
    pub(crate) fn complete(&self, flags: u64, ctx: Context, len: usize, data: u64) -> Result {
        // SAFETY: `ptr` is live (type invariants).
        to_result(unsafe {
            abi::kofi_ep_complete(self.ptr.as_ptr(), flags, ctx.0, len, ptr::null_mut(), data)
        })
    }

    /// Reports a completed tagged operation (`flags` with FI_TAGGED) of a
    /// message tagged `tag` (see `kofi_ep_complete_tagged`).
    pub(crate) fn complete_tagged(
        &self,
        flags: u64,
        ctx: Context,
        len: usize,
        data: u64,
        tag: u64,
    ) -> Result {
        // SAFETY: `ptr` is live (type invariants).
        to_result(unsafe {
            abi::kofi_ep_complete_tagged(
                self.ptr.as_ptr(),
                flags,
                ctx.0,
                len,
                ptr::null_mut(),
                data,
                tag,
            )
        })
    }

    /// Reports a failed operation with positive error `err` (`FI_E*`);
    /// `olen` is what did not fit (FI_ETRUNC).
    pub(crate) fn complete_error(
        &self,
        flags: u64,
        ctx: Context,
        err: u32,
        len: usize,
        olen: usize,
        prov_errno: i32,
    ) -> Result {
        self.fail_entry(abi::fi_cq_err_entry {
            op_context: ctx.0,
            flags,
            len,
            olen,
            err: err as c_int,
            prov_errno,
            ..Default::default()
        })
    }

    fn fail_entry(&self, entry: abi::fi_cq_err_entry) -> Result {
        // SAFETY: `ptr` is live (type invariants); `entry` is read during the call.
        to_result(unsafe { abi::kofi_ep_complete_error(self.ptr.as_ptr(), &entry) })
    }

    /// Reports receive `recv` filled by a message of `len` bytes, with remote
    /// CQ data `data`; `tag` is the message's (a tagged receive's).
    pub(crate) fn recv_done(
        &self,
        recv: &PostedRecv,
        len: usize,
        data: Option<u64>,
        tag: u64,
    ) -> Result {
        let mut flags = FI_RECV | recv.kind() | (recv.flags & FI_COMPLETION);
        if data.is_some() {
            flags |= FI_REMOTE_CQ_DATA;
        }
        let data = data.unwrap_or(0);
        if recv.tag.is_some() {
            self.complete_tagged(flags, recv.context, len, data, tag)
        } else {
            self.complete(flags, recv.context, len, data)
        }
    }

    /// Reports receive `recv` failed with positive error `err`: `len` bytes
    /// reached it, `olen` more did not fit (FI_ETRUNC); `tag` is the
    /// message's, or the receive's own when no message reached it.
    pub(crate) fn recv_failed(
        &self,
        recv: &PostedRecv,
        err: u32,
        len: usize,
        olen: usize,
        tag: u64,
    ) -> Result {
        self.fail_entry(abi::fi_cq_err_entry {
            op_context: recv.context.0,
            flags: FI_RECV | recv.kind(),
            len,
            olen,
            tag,
            err: err as c_int,
            ..Default::default()
        })
    }

    /// FI_CONNECTED or FI_SHUTDOWN, with the peer's private data.
    pub(crate) fn event(&self, event: u32, data: &[u8]) -> Result {
        // SAFETY: `ptr` is live; `data` is read during the call.
        to_result(unsafe {
            abi::kofi_ep_event(self.ptr.as_ptr(), event, data.as_ptr().cast(), data.len())
        })
    }

    /// A connection error (`err`: positive FI_E*), with the peer's private
    /// data when it rejected the connection.
    pub(crate) fn event_error(&self, err: u32, prov_errno: i32, data: &[u8]) -> Result {
        // SAFETY: `ptr` is live (type invariants); `data` is read during the call.
        to_result(unsafe {
            abi::kofi_ep_event_error(
                self.ptr.as_ptr(),
                err as c_int,
                prov_errno,
                data.as_ptr().cast(),
                data.len(),
            )
        })
    }
}

/// The endpoint a transport's callbacks (softirq) ask a consumer's thread
/// to make progress for (see `kofi_ep_progress_request`), read without a lock:
/// armed once, when the connection gets its endpoint, and asked only by
/// callbacks that stop before the endpoint's close op returns (as any use
/// of an [`EpRef`]).
///
/// # Invariants
///
/// `ep` is null or the pointer of an [`EpRef`].
pub(crate) struct ProgressWaker {
    ep: AtomicPtr<abi::fid_ep>,
}

impl ProgressWaker {
    pub(crate) const fn new() -> Self {
        // INVARIANT: Null.
        ProgressWaker {
            ep: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Arms the waker with `ep` (a connection gets one endpoint, once).
    pub(crate) fn arm(&self, ep: &EpRef) {
        // INVARIANT: An `EpRef`'s pointer.
        self.ep.store(ep.ptr.as_ptr(), Ordering::Release);
    }

    /// Disarms the waker: the endpoint is closing (its close op began), and
    /// its callbacks make the progress themselves from here on.
    pub(crate) fn disarm(&self) {
        self.ep.store(ptr::null_mut(), Ordering::Release);
    }

    /// Asks a consumer sleeping on the endpoint's receive CQ to make its
    /// progress: false when none will (or the waker is not armed yet), and
    /// the caller makes the progress itself.
    pub(crate) fn request(&self) -> bool {
        let ep = self.ep.load(Ordering::Acquire);
        if ep.is_null() {
            return false;
        }
        // SAFETY: An `EpRef`'s pointer (type invariants), live while its
        // provider's callbacks run, which is when this is called.
        unsafe { abi::kofi_ep_progress_request(ep) }
    }
}

/// A kofi domain, for the core's memory registration table.
///
/// # Invariants
///
/// `ptr` is a live kofi domain while the provider's domain (and so every
/// endpoint of it) exists.
#[derive(Clone)]
pub(crate) struct DomainRef {
    ptr: NonNull<abi::fid_domain>,
}

// SAFETY: The MR table is safe from any context but hardirq.
unsafe impl Send for DomainRef {}
// SAFETY: As above.
unsafe impl Sync for DomainRef {}

impl DomainRef {
    /// Finds the region `key` names and holds it for `len` bytes at RMA
    /// address `addr`, if it grants `access` (FI_REMOTE_READ or
    /// FI_REMOTE_WRITE); errors: -FI_ENOKEY, -EINVAL (range), -FI_EACCES.
    pub(crate) fn mr_get(&self, key: u64, addr: u64, len: usize, access: u64) -> Result<MrHold> {
        let mut mr = ptr::null_mut();
        // SAFETY: `ptr` is live (type invariants); `mr` is written on success.
        to_result(unsafe { abi::kofi_mr_get(self.ptr.as_ptr(), key, addr, len, access, &mut mr) })?;
        Ok(MrHold {
            mr: NonNull::new(mr).ok_or(EINVAL)?,
            addr,
            len,
        })
    }
}

/// A registered region held for an RMA: `len` bytes at RMA address `addr`.
///
/// # Invariants
///
/// `mr` was returned by a successful `kofi_mr_get` for exactly this window
/// and is put on drop; until then the region and its memory stay.
pub(crate) struct MrHold {
    mr: NonNull<abi::fid_mr>,
    addr: u64,
    len: usize,
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
enum Buffers {
    Kvec(KVec<abi::kvec>),
    Bvec(KVec<abi::bio_vec>),
}

// SAFETY: Descriptors of buffers the consumer lends to the provider until the
// operation completes, from whichever thread completes it.
unsafe impl Send for Buffers {}

impl Buffers {
    /// A copy of the arrays (not the data) the core checked.
    fn of(iov: *const abi::kvec, bvec: *const abi::bio_vec, count: usize) -> Result<Buffers> {
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

    /// The buffers as lent ones, for an operation that uses them in place.
    fn into_lent(self) -> Lent {
        match self {
            Buffers::Kvec(iov) => Lent::Kvecs(Kvecs { iov }),
            Buffers::Bvec(bvecs) => Lent::Pages(Pages { bvecs }),
        }
    }

    fn len(&self) -> usize {
        match self {
            Buffers::Kvec(v) => v.iter().map(|k| k.iov_len).sum(),
            Buffers::Bvec(v) => v.iter().map(|b| b.bv_len as usize).sum(),
        }
    }

    /// An iov_iter over the buffers.
    fn iter(&self, direction: u32) -> abi::iov_iter {
        let mut iter = abi::iov_iter::default();
        let len = self.len();
        // SAFETY: The arrays describe the consumer's buffers, which stay
        // valid while the operation is in progress.
        unsafe {
            match self {
                Buffers::Kvec(v) => {
                    abi::iov_iter_kvec(&mut iter, direction, v.as_ptr(), v.len() as _, len)
                }
                Buffers::Bvec(v) => {
                    abi::iov_iter_bvec(&mut iter, direction, v.as_ptr(), v.len() as _, len)
                }
            }
        }
        iter
    }

    /// Appends the bytes of the buffers to `out`.
    fn gather<A: Allocator>(&self, out: &mut Vec<u8, A>) -> Result {
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
    fn scatter(&self, src: &[u8]) -> usize {
        self.scatter_at(0, src)
    }

    /// As [`Buffers::scatter`], from byte `offset` of the buffers on.
    fn scatter_at(&self, offset: usize, src: &[u8]) -> usize {
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

/// A message operation's arguments, borrowed for the op call.
pub(crate) struct Msg<'a> {
    raw: &'a abi::fi_msg,
}

impl Msg<'_> {
    pub(crate) fn context(&self) -> Context {
        Context(self.raw.context)
    }

    /// Remote CQ data (with FI_REMOTE_CQ_DATA).
    pub(crate) fn data(&self) -> u64 {
        self.raw.data
    }

    fn buffers(&self) -> Result<Buffers> {
        Buffers::of(self.raw.msg_iov, self.raw.msg_bvec, self.raw.iov_count)
    }

    /// Appends the message's bytes (from kvecs or pages) to `out`.
    pub(crate) fn gather<A: Allocator>(&self, out: &mut Vec<u8, A>) -> Result {
        self.buffers()?.gather(out)
    }

    /// The message's buffers, lent by the consumer until the send completes
    /// (OFI's rule for every send but an inject), to send from in place.
    pub(crate) fn lend(&self) -> Result<Lent> {
        Ok(self.buffers()?.into_lent())
    }

    /// An owned description of the receive buffers, to fill later.
    pub(crate) fn to_posted(&self, flags: u64) -> Result<PostedRecv> {
        Ok(PostedRecv {
            buffers: self.buffers()?,
            context: Context(self.raw.context),
            flags,
            tag: None,
        })
    }
}

/// A tagged message operation's arguments, borrowed for the op call.
pub(crate) struct TaggedMsg<'a> {
    raw: &'a abi::fi_msg_tagged,
}

impl TaggedMsg<'_> {
    pub(crate) fn context(&self) -> Context {
        Context(self.raw.context)
    }

    /// Remote CQ data (with FI_REMOTE_CQ_DATA).
    pub(crate) fn data(&self) -> u64 {
        self.raw.data
    }

    /// A send's tag.
    pub(crate) fn tag(&self) -> u64 {
        self.raw.tag
    }

    /// What a receive takes.
    pub(crate) fn tag_match(&self) -> TagMatch {
        TagMatch {
            tag: self.raw.tag,
            ignore: self.raw.ignore,
        }
    }

    fn buffers(&self) -> Result<Buffers> {
        Buffers::of(self.raw.msg_iov, self.raw.msg_bvec, self.raw.iov_count)
    }

    /// Appends the message's bytes (from kvecs or pages) to `out`.
    pub(crate) fn gather<A: Allocator>(&self, out: &mut Vec<u8, A>) -> Result {
        self.buffers()?.gather(out)
    }

    /// The message's buffers, lent until the send completes (see [`Msg::lend`]).
    pub(crate) fn lend(&self) -> Result<Lent> {
        Ok(self.buffers()?.into_lent())
    }

    /// The tagged receive this describes, to fill later; `buffers`: false
    /// for one that uses none (FI_DISCARD).
    pub(crate) fn to_posted(&self, flags: u64, buffers: bool) -> Result<PostedRecv> {
        Ok(PostedRecv {
            buffers: if buffers {
                self.buffers()?
            } else {
                Buffers::Kvec(KVec::new())
            },
            context: Context(self.raw.context),
            flags,
            tag: Some(self.tag_match()),
        })
    }
}

/// FI_TAGGED for a tagged send (its flags, as a provider keeps them, say
/// so), else FI_MSG: what its completion says.
pub(crate) fn send_kind(flags: u64) -> u64 {
    if flags & FI_TAGGED != 0 {
        FI_TAGGED
    } else {
        FI_MSG
    }
}

/// The tags a tagged receive takes: those equal to `tag` in every bit
/// `ignore` does not set (fi_tagged(3)).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct TagMatch {
    pub(crate) tag: u64,
    pub(crate) ignore: u64,
}

impl TagMatch {
    pub(crate) fn takes(&self, tag: u64) -> bool {
        (tag | self.ignore) == (self.tag | self.ignore)
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
                    k.iov.len() as _,
                    k.len(),
                ),
                Lent::Pages(p) => abi::iov_iter_bvec(
                    &mut iter,
                    abi::ITER_SOURCE,
                    p.bvecs.as_ptr(),
                    p.bvecs.len() as _,
                    p.len(),
                ),
            }
            abi::iov_iter_advance(&mut iter, offset.min(self.len()));
        }
        iter
    }

    /// Bytes `offset .. offset + len` of the buffers as buffers of their
    /// own: new descriptors of the same memory, lent as these are.
    pub(crate) fn range(&self, offset: usize, len: usize) -> Result<Lent> {
        if offset.checked_add(len).map_or(true, |end| end > self.len()) {
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
        if offset.checked_add(len).map_or(true, |end| end > self.len()) {
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
    bvecs: KVec<abi::bio_vec>,
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
    iov: KVec<abi::kvec>,
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

/// A posted receive (or a read's local buffers): the consumer's buffers,
/// its context and flags, and for a tagged receive the tags it takes.
pub(crate) struct PostedRecv {
    buffers: Buffers,
    pub(crate) context: Context,
    pub(crate) flags: u64,
    pub(crate) tag: Option<TagMatch>,
}

impl PostedRecv {
    /// FI_TAGGED for a tagged receive, else FI_MSG: what its completion says.
    pub(crate) fn kind(&self) -> u64 {
        if self.tag.is_some() {
            FI_TAGGED
        } else {
            FI_MSG
        }
    }

    /// The tag its error entry shows when no message reached it.
    pub(crate) fn own_tag(&self) -> u64 {
        self.tag.map_or(0, |t| t.tag)
    }

    /// The receive's buffers as a lent view (a copy of their descriptors),
    /// for a provider whose device writes into them.
    pub(crate) fn lend(&self) -> Result<Lent> {
        Ok(match &self.buffers {
            Buffers::Kvec(v) => {
                let mut iov = KVec::with_capacity(v.len(), GFP_KERNEL)?;
                iov.extend_from_slice(v, GFP_KERNEL)?;
                Lent::Kvecs(Kvecs { iov })
            }
            Buffers::Bvec(v) => {
                let mut bvecs = KVec::with_capacity(v.len(), GFP_KERNEL)?;
                bvecs.extend_from_slice(v, GFP_KERNEL)?;
                Lent::Pages(Pages { bvecs })
            }
        })
    }

    /// The buffers' total size.
    pub(crate) fn capacity(&self) -> usize {
        self.buffers.len()
    }

    /// Copies a message into the buffers; returns the bytes that fit.
    pub(crate) fn fill(&self, src: &[u8]) -> usize {
        self.buffers.scatter(src)
    }

    /// An iov_iter over the buffers from byte `offset` on (`offset` at most
    /// the capacity), for a provider that receives straight into them.
    pub(crate) fn iter_at(&self, offset: usize) -> abi::iov_iter {
        let mut iter = self.buffers.iter(abi::ITER_DEST);
        // SAFETY: `iter` covers the buffers; advancing by at most their
        // length stays within them (iov_iter_advance also clamps).
        unsafe { abi::iov_iter_advance(&mut iter, offset.min(self.buffers.len())) };
        iter
    }

    /// Copies `src` into the buffers from byte `offset` on (a part of a read
    /// of several remote buffers); returns the bytes that fit.
    pub(crate) fn fill_at(&self, offset: usize, src: &[u8]) -> usize {
        self.buffers.scatter_at(offset, src)
    }
}

/// An RMA operation's arguments, borrowed for the op call.
pub(crate) struct RmaMsg<'a> {
    raw: &'a abi::fi_msg_rma,
}

impl RmaMsg<'_> {
    pub(crate) fn context(&self) -> Context {
        Context(self.raw.context)
    }

    pub(crate) fn data(&self) -> u64 {
        self.raw.data
    }

    /// The remote buffers (the core checked their total is the local one's).
    pub(crate) fn remote(&self) -> &[abi::fi_rma_iov] {
        // SAFETY: The core checked `rma_iov` holds `rma_iov_count` entries.
        unsafe { core::slice::from_raw_parts(self.raw.rma_iov, self.raw.rma_iov_count) }
    }

    fn buffers(&self) -> Result<Buffers> {
        Buffers::of(self.raw.msg_iov, self.raw.msg_bvec, self.raw.iov_count)
    }

    /// Appends the local bytes (of a write) to `out`.
    pub(crate) fn gather<A: Allocator>(&self, out: &mut Vec<u8, A>) -> Result {
        self.buffers()?.gather(out)
    }

    /// The local buffers, lent by the consumer until the operation
    /// completes, for a provider whose device moves the bytes itself.
    pub(crate) fn lend(&self) -> Result<Lent> {
        Ok(self.buffers()?.into_lent())
    }

    /// An owned description of the local buffers, to fill when a read's
    /// data arrives later.
    pub(crate) fn to_posted(&self, flags: u64) -> Result<PostedRecv> {
        Ok(PostedRecv {
            buffers: self.buffers()?,
            context: Context(self.raw.context),
            flags,
            tag: None,
        })
    }

    /// Copies `src` into the local buffers (of a read); returns bytes copied.
    pub(crate) fn scatter(&self, src: &[u8]) -> Result<usize> {
        Ok(self.buffers()?.scatter(src))
    }
}

/// The address a consumer passed to fi_connect (or NULL).
pub(crate) struct PeerAddr(*const c_void);

impl PeerAddr {
    /// The address as `len` bytes, the size of the endpoint's address
    /// format, or `None` when the consumer passed none.
    pub(crate) fn bytes(&self, len: usize) -> Option<&[u8]> {
        // SAFETY: Under the ABI the consumer's address is one of the
        // endpoint's format, `len` bytes, valid during the call, which
        // outlives `self`.
        (!self.0.is_null()).then(|| unsafe { core::slice::from_raw_parts(self.0.cast(), len) })
    }
}

/// An `fi_info` the provider builds for fi_getinfo.
///
/// # Invariants
///
/// `ptr` is an info from `fi_allocinfo` (all attrs allocated) owned by this
/// value.
pub(crate) struct Info {
    ptr: NonNull<abi::fi_info>,
}

impl Info {
    pub(crate) fn new() -> Result<Info> {
        // SAFETY: No preconditions.
        let ptr = NonNull::new(unsafe { abi::fi_allocinfo() }).ok_or(ENOMEM)?;
        Ok(Info { ptr })
    }

    /// The info's fields, attrs included, to fill in.
    pub(crate) fn fields(&mut self) -> InfoFields<'_> {
        // SAFETY: We own the info and `fi_allocinfo` allocated every attr.
        unsafe {
            let i = &mut *self.ptr.as_ptr();
            InfoFields {
                tx: &mut *i.tx_attr,
                rx: &mut *i.rx_attr,
                ep: &mut *i.ep_attr,
                domain: &mut *i.domain_attr,
                fabric: &mut *i.fabric_attr,
                info: i,
            }
        }
    }

    fn strdup(s: &CStr) -> Result<*mut c_char> {
        // SAFETY: `s` is a valid string.
        let p = unsafe { abi::kstrdup(s.as_char_ptr(), kernel::bindings::GFP_KERNEL) };
        if p.is_null() {
            Err(ENOMEM)
        } else {
            Ok(p)
        }
    }

    pub(crate) fn set_domain_name(&mut self, name: &CStr) -> Result {
        let p = Self::strdup(name)?;
        let f = self.fields();
        // SAFETY: The old name, if any, was allocated for this info.
        unsafe { abi::kfree(f.domain.name.cast()) };
        f.domain.name = p;
        Ok(())
    }

    pub(crate) fn set_fabric_name(&mut self, name: &CStr) -> Result {
        let p = Self::strdup(name)?;
        let f = self.fields();
        // SAFETY: As above.
        unsafe { abi::kfree(f.fabric.name.cast()) };
        f.fabric.name = p;
        Ok(())
    }

    pub(crate) fn set_src_addr(&mut self, addr: &[u8]) -> Result {
        let p = Self::bytes(addr)?;
        let i = self.fields().info;
        // SAFETY: The old address, if any, was allocated for this info.
        unsafe { abi::kfree(i.src_addr) };
        i.src_addr = p;
        i.src_addrlen = addr.len();
        Ok(())
    }

    pub(crate) fn set_dest_addr(&mut self, addr: &[u8]) -> Result {
        let p = Self::bytes(addr)?;
        let i = self.fields().info;
        // SAFETY: As above.
        unsafe { abi::kfree(i.dest_addr) };
        i.dest_addr = p;
        i.dest_addrlen = addr.len();
        Ok(())
    }

    /// A kmalloc'ed copy of `b`, which the core's fi_freeinfo kfree()s.
    fn bytes(b: &[u8]) -> Result<*mut c_void> {
        let mut v = KVec::with_capacity(b.len(), GFP_KERNEL)?;
        v.extend_from_slice(b, GFP_KERNEL)?;
        let (p, _, _) = v.into_raw_parts();
        Ok(p.cast())
    }

    fn into_raw(self) -> *mut abi::fi_info {
        let p = self.ptr.as_ptr();
        core::mem::forget(self);
        p
    }
}

/// An info the core passes to an open op, read-only.
pub(crate) struct InfoRef<'a> {
    raw: &'a abi::fi_info,
}

impl<'a> InfoRef<'a> {
    pub(crate) fn caps(&self) -> u64 {
        self.raw.caps
    }

    pub(crate) fn addr_format(&self) -> u32 {
        self.raw.addr_format
    }

    /// Whether the endpoint runs in FI_RX_CQ_DATA mode: remote CQ data
    /// takes a posted receive and reports it.
    pub(crate) fn rx_cq_data(&self) -> bool {
        self.raw.mode & abi::FI_RX_CQ_DATA != 0
    }

    /// The domain's memory registration modes (`domain_attr->mr_mode`).
    pub(crate) fn mr_mode(&self) -> i32 {
        // SAFETY: An info's attrs are null or valid for as long as the info.
        unsafe { self.raw.domain_attr.as_ref() }.map_or(0, |a| a.mr_mode)
    }

    /// The domain's name (`domain_attr->name`), if set.
    pub(crate) fn domain_name(&self) -> Option<&'a CStr> {
        let attr = self.raw.domain_attr;
        // SAFETY: An info's attrs are null or valid, their name null or a
        // string, for as long as the info.
        unsafe { attr.as_ref().and_then(|a| opt_cstr(a.name)) }
    }

    /// # Safety
    ///
    /// `p` is null or holds `len` bytes that live as long as the info.
    unsafe fn addr(p: *const c_void, len: usize) -> Option<&'a [u8]> {
        // SAFETY: The caller's guarantee.
        (!p.is_null() && len != 0).then(|| unsafe { core::slice::from_raw_parts(p.cast(), len) })
    }

    pub(crate) fn src_addr(&self) -> Option<&'a [u8]> {
        // SAFETY: An info's address holds its length in bytes (ABI).
        unsafe { Self::addr(self.raw.src_addr, self.raw.src_addrlen) }
    }

    pub(crate) fn dest_addr(&self) -> Option<&'a [u8]> {
        // SAFETY: As above.
        unsafe { Self::addr(self.raw.dest_addr, self.raw.dest_addrlen) }
    }

    /// The provider's state of the connection request this info names
    /// (the info of an FI_CONNREQ), made by [`PepRef::connreq`] with `R`.
    ///
    /// # Safety
    ///
    /// The provider's requests are all of type `R`.
    pub(crate) unsafe fn request<R: Send + 'static>(&self) -> Option<&'a R> {
        let handle = self.raw.handle;
        // SAFETY: The core checked a handle in an info given to fi_endpoint
        // is a live request of this fabric; the caller vouches for `R`.
        (!handle.is_null()).then(|| unsafe { request_of::<R>(handle) })
    }
}

impl Drop for Info {
    fn drop(&mut self) {
        // SAFETY: We own the info.
        unsafe { abi::fi_freeinfo(self.ptr.as_ptr()) };
    }
}

/// The fields of an [`Info`].
pub(crate) struct InfoFields<'a> {
    pub(crate) info: &'a mut abi::fi_info,
    pub(crate) tx: &'a mut abi::fi_tx_attr,
    pub(crate) rx: &'a mut abi::fi_rx_attr,
    pub(crate) ep: &'a mut abi::fi_ep_attr,
    pub(crate) domain: &'a mut abi::fi_domain_attr,
    pub(crate) fabric: &'a mut abi::fi_fabric_attr,
}

/// The list fi_getinfo returns from a provider, in order.
#[derive(Default)]
pub(crate) struct InfoList {
    items: KVec<Info>,
}

impl InfoList {
    pub(crate) fn push(&mut self, info: Info) -> Result {
        self.items.push(info, GFP_KERNEL)?;
        Ok(())
    }

    /// Links the infos and hands them to the core.
    fn into_raw(self) -> *mut abi::fi_info {
        let mut head: *mut abi::fi_info = ptr::null_mut();
        // Link back to front, so each info's `next` is the one after it.
        let (items, len, cap) = self.items.into_raw_parts();
        // SAFETY: Rebuilt from the parts just taken.
        let mut items = unsafe { KVec::from_raw_parts(items, len, cap) };
        while let Some(info) = items.pop() {
            let p = info.into_raw();
            // SAFETY: `p` is an info we own.
            unsafe { (*p).next = head };
            head = p;
        }
        head
    }
}

/// Removes element `i` of `v`, the last one taking its place (the kernel's
/// KVec of 6.12 has no `swap_remove`).
///
/// # Panics
///
/// If `i` is out of bounds.
pub(crate) fn swap_remove<T>(v: &mut KVec<T>, i: usize) -> T {
    let last = v.len() - 1;
    v.as_mut_slice().swap(i, last);
    // Element `last` (the one removed) is initialised: `pop` hands it over.
    match v.pop() {
        Some(x) => x,
        None => unreachable!(),
    }
}

/// Reports a receive taken back by fi_cancel, or that no message can reach
/// any more.
pub(crate) fn report_cancelled(ep: &EpRef, recv: &PostedRecv) {
    let _ = ep.recv_failed(recv, abi::FI_ECANCELED, 0, 0, recv.own_tag());
}

/// fi_cancel on a connection's posted receives: the oldest in `ring` with
/// `context` is taken back and reported to `ep`; else -FI_EBUSY when the
/// receive being filled has that context (`filling`), -FI_ENOENT.
pub(crate) fn cancel_posted<S: core::ops::DerefMut<Target = [Option<PostedRecv>]>>(
    ring: &mut crate::ring::Ring<PostedRecv, S>,
    context: Context,
    ep: Option<&EpRef>,
    filling: bool,
) -> Result {
    let mut found = false;
    ring.retain(|r| {
        let hit = !found && r.context == context;
        if let (true, Some(ep)) = (hit, ep) {
            report_cancelled(ep, r);
        }
        found |= hit;
        !hit
    });
    match found {
        true => Ok(()),
        false if filling => Err(fi_error(abi::FI_EBUSY)),
        false => Err(fi_error(abi::FI_ENOENT)),
    }
}

/// A kofi passive endpoint, for connection requests.
///
/// # Invariants
///
/// `ptr` is a live kofi passive endpoint while the provider's passive
/// endpoint exists.
#[derive(Clone)]
pub(crate) struct PepRef {
    ptr: NonNull<abi::fid_pep>,
}

// SAFETY: The core's calls it makes are safe from process context anywhere.
unsafe impl Send for PepRef {}
// SAFETY: As above.
unsafe impl Sync for PepRef {}

impl PepRef {
    /// Reports a connection request: FI_CONNREQ with `info` (whose handle
    /// carries `request`, given back to the provider's endpoint and release
    /// ops) and the peer's private data.
    pub(crate) fn connreq<R: Send + 'static>(
        &self,
        info: Info,
        request: KBox<R>,
        data: &[u8],
    ) -> Result {
        let handle_data = request.into_foreign().cast_mut();
        // SAFETY: `ptr` is live (type invariants).
        let handle = unsafe { abi::kofi_connreq_alloc(self.ptr.as_ptr(), handle_data) };
        if handle.is_null() {
            // SAFETY: Not given to the core: take it back.
            drop(unsafe { KBox::<R>::from_foreign(handle_data) });
            return Err(ENOMEM);
        }
        let raw = info.into_raw();
        // SAFETY: `raw` is ours; the handle's reference passes to the info.
        unsafe { (*raw).handle = handle };
        // SAFETY: The core takes the info in every case.
        to_result(unsafe {
            abi::kofi_pep_connreq(self.ptr.as_ptr(), raw, data.as_ptr().cast(), data.len())
        })
    }

    /// Reports that the passive endpoint no longer listens: an error entry
    /// (`err`, a positive FI_E*) for it on its EQ.
    pub(crate) fn error(&self, err: u32) -> Result {
        // SAFETY: `ptr` is live (type invariants).
        to_result(unsafe { abi::kofi_pep_event_error(self.ptr.as_ptr(), err as i32, 0) })
    }
}

/// The provider's request state behind a connection request handle.
///
/// # Safety
///
/// `handle` is a live connection request made by [`PepRef::connreq`] with a
/// `KBox<R>`.
pub(crate) unsafe fn request_of<'a, R: Send + 'static>(handle: *mut abi::fid) -> &'a R {
    // SAFETY: The caller's guarantee: `prov_data` is a `KBox<R>`'s pointer.
    unsafe { <KBox<R> as ForeignOwnable>::borrow((*handle).prov_data) }
}

/// The memory of a registration.
pub(crate) enum MrMemory<'a> {
    Kvecs(&'a [abi::kvec]),
    Pages(&'a [abi::bio_vec]),
}

/// A registration's arguments, checked by the core, borrowed for the op.
pub(crate) struct MrAttr<'a> {
    raw: &'a abi::fi_mr_attr,
}

impl MrAttr<'_> {
    /// FI_REMOTE_READ, FI_REMOTE_WRITE and the local access flags.
    pub(crate) fn access(&self) -> u64 {
        self.raw.access
    }

    /// The RMA address of the region's first byte.
    pub(crate) fn offset(&self) -> u64 {
        self.raw.offset
    }

    pub(crate) fn memory(&self) -> MrMemory<'_> {
        let n = self.raw.iov_count;
        // SAFETY: The core checked the array of the iov type holds `n`
        // entries; it lives as long as the registration call.
        unsafe {
            if self.raw.iov_type == abi::kofi_iov_type_KOFI_IOV_BVEC {
                MrMemory::Pages(core::slice::from_raw_parts(self.raw.mr_bvec, n))
            } else {
                MrMemory::Kvecs(core::slice::from_raw_parts(self.raw.mr_iov, n))
            }
        }
    }
}

/// A domain's operations: memory registration with the provider, for
/// providers whose hardware serves RMA (the others leave it to the core's
/// key table).
#[vtable]
pub(crate) trait Domain: Send + Sync + Sized + 'static {
    /// What the provider keeps per registered region.
    type Region: Send + Sync + 'static;

    /// Registers memory; returns the region's key (the domain has
    /// FI_MR_PROV_KEY) and the provider's state of it, dropped at fi_close.
    fn mr_reg(&self, _attr: &MrAttr<'_>) -> Result<(u64, Self::Region)> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
}

#[vtable]
impl Domain for DomainRef {
    type Region = ();
}

/// A provider: its identity, getinfo, and how to open its objects.
#[vtable]
pub(crate) trait Provider: Sync + Sized + 'static {
    const NAME: &'static CStr;
    /// `FI_VERSION(major, minor)` of the provider.
    const VERSION: u32;
    const PRIORITY: i32;

    type Fabric: Send + Sync;
    type Domain: Domain;
    type Endpoint: Endpoint;
    type PassiveEp: PassiveEndpoint;

    /// The infos this provider offers (the core filters them by the hints).
    fn getinfo(
        version: u32,
        node: Option<&CStr>,
        service: Option<&CStr>,
        flags: u64,
    ) -> Result<InfoList>;

    fn fabric(attr: &abi::fi_fabric_attr) -> Result<Self::Fabric>;

    fn domain(fabric: &Self::Fabric, domain: DomainRef, info: &InfoRef<'_>)
        -> Result<Self::Domain>;

    /// An FI_MR_ENDPOINT domain's fi_mr_enable: makes `region`, bound to
    /// `ep`, usable for operations posted on `ep` from now on, without
    /// waiting (see `mr_enable` in kofi_provider.h).
    fn mr_enable(
        _domain: &Self::Domain,
        _region: &<Self::Domain as Domain>::Region,
        _ep: &Self::Endpoint,
    ) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    fn endpoint(domain: &Self::Domain, ep: EpRef, info: &InfoRef<'_>) -> Result<Self::Endpoint>;

    fn passive_ep(
        _fabric: &Self::Fabric,
        _pep: PepRef,
        _info: &InfoRef<'_>,
    ) -> Result<Self::PassiveEp> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// An active endpoint's operations. Those not implemented are NULL in the
/// table and the core answers -FI_ENOSYS.
#[vtable]
pub(crate) trait Endpoint: Send + Sync + Sized + 'static {
    fn enable(&self) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// `addr`: the consumer's address argument, read with [`PeerAddr::bytes`].
    fn connect(&self, _addr: PeerAddr, _param: &[u8]) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn accept(&self, _param: &[u8]) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn shutdown(&self) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Appends the local address to `out`.
    fn getname(&self, _out: &mut KVec<u8>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Appends the peer's address to `out`.
    fn getpeer(&self, _out: &mut KVec<u8>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn sendmsg(&self, _msg: &Msg<'_>, _flags: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn recvmsg(&self, _msg: &Msg<'_>, _flags: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn readmsg(&self, _msg: &RmaMsg<'_>, _flags: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn writemsg(&self, _msg: &RmaMsg<'_>, _flags: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// A tagged send (an endpoint whose info offers FI_TAGGED).
    fn tsendmsg(&self, _msg: &TaggedMsg<'_>, _flags: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// A tagged receive, with FI_PEEK, FI_CLAIM and FI_DISCARD as the
    /// consumer gave them (a combination the core checked).
    fn trecvmsg(&self, _msg: &TaggedMsg<'_>, _flags: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// fi_cancel: takes back the oldest receive posted with `context` that
    /// no data reached yet, reporting it FI_ECANCELED; -FI_EBUSY while it is
    /// being filled, -FI_ENOENT when none waits.
    fn cancel(&self, _context: Context) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Makes the progress the endpoint can without waiting for its peer, in
    /// a consumer's thread that a [`ProgressWaker`] woke.
    fn progress(&self) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// A passive endpoint's operations.
#[vtable]
pub(crate) trait PassiveEndpoint: Send + Sync + Sized + 'static {
    /// What the provider keeps per connection request ([`PepRef::connreq`]).
    type Request: Send + 'static;

    fn listen(&self) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn reject(&self, _request: &Self::Request, _param: &[u8]) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn getname(&self, _out: &mut KVec<u8>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// A provider that offers no passive endpoints.
pub(crate) struct NoPassiveEp;

#[vtable]
impl PassiveEndpoint for NoPassiveEp {
    type Request = ();
}

/// The C return value of a `Result`.
fn ret(r: Result) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// The provider state behind a fid.
///
/// # Safety
///
/// `fid` is a live kofi object whose `prov_data` is a `KBox<T>`'s pointer.
unsafe fn state<'a, T: 'static>(fid: *mut abi::fid) -> &'a T {
    // SAFETY: The caller's guarantee.
    unsafe { <KBox<T> as ForeignOwnable>::borrow((*fid).prov_data) }
}

/// Stores `value` as the provider state of `fid`.
///
/// # Safety
///
/// `fid` is a live kofi object being opened (its `prov_data` unset).
unsafe fn set_state<T: 'static>(fid: *mut abi::fid, value: T) -> Result {
    let boxed = KBox::new(value, GFP_KERNEL)?;
    // SAFETY: The caller's guarantee.
    unsafe { (*fid).prov_data = boxed.into_foreign().cast_mut() };
    Ok(())
}

/// Takes back and drops the provider state of `fid`.
///
/// # Safety
///
/// As [`state`]; the state is not used after.
unsafe fn drop_state<T: 'static>(fid: *mut abi::fid) {
    // SAFETY: The caller's guarantee.
    drop(unsafe { <KBox<T> as ForeignOwnable>::from_foreign((*fid).prov_data) });
    // SAFETY: `fid` is live.
    unsafe { (*fid).prov_data = ptr::null_mut() };
}

/// An optional string argument.
///
/// # Safety
///
/// `s` is null or a NUL-terminated string valid for `'a`.
unsafe fn opt_cstr<'a>(s: *const c_char) -> Option<&'a CStr> {
    // SAFETY: The caller's guarantee.
    (!s.is_null()).then(|| unsafe { CStr::from_char_ptr(s) })
}

/// Private data of a CM call.
///
/// # Safety
///
/// `p` holds `len` bytes when non-null (the core checked the pair).
unsafe fn param<'a>(p: *const c_void, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: The caller's guarantee.
        unsafe { core::slice::from_raw_parts(p.cast(), len) }
    }
}

/// Copies an address the provider produced into the consumer's buffer,
/// with fi_getname's semantics (-FI_ETOOSMALL and the size needed).
///
/// # Safety
///
/// `addrlen` is valid; `addr` holds `*addrlen` bytes when non-null.
unsafe fn give_name(name: &[u8], addr: *mut c_void, addrlen: *mut usize) -> c_int {
    // SAFETY: The caller's guarantee.
    let room = unsafe { *addrlen };
    // SAFETY: As above.
    unsafe { *addrlen = name.len() };
    if room < name.len() || addr.is_null() {
        return fi_error(abi::FI_ETOOSMALL).to_errno();
    }
    // SAFETY: `addr` has room for `name`.
    unsafe { ptr::copy_nonoverlapping(name.as_ptr(), addr.cast(), name.len()) };
    0
}

/// The trampolines of provider `P`: `extern "C"` functions the C tables
/// point to, each calling into the provider's traits.
struct Adapter<P: Provider>(PhantomData<P>);

impl<P: Provider> Adapter<P> {
    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn getinfo(
        version: u32,
        node: *const c_char,
        service: *const c_char,
        flags: u64,
        _hints: *const abi::fi_info,
        info: *mut *mut abi::fi_info,
    ) -> c_int {
        // SAFETY: The core passes valid (or null) strings and a valid `info`.
        let (node, service) = unsafe { (opt_cstr(node), opt_cstr(service)) };
        match P::getinfo(version, node, service, flags) {
            Ok(list) => {
                // SAFETY: The core's out pointer.
                unsafe { *info = list.into_raw() };
                0
            }
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn fabric(
        attr: *mut abi::fi_fabric_attr,
        fabric: *mut abi::fid_fabric,
        _context: *mut c_void,
    ) -> c_int {
        // SAFETY: The core checked `attr` and allocated `fabric`.
        ret(P::fabric(unsafe { &*attr }).and_then(|f| unsafe { set_state(fabric.cast(), f) }))
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn fabric_close(fabric: *mut abi::fid_fabric) {
        // SAFETY: Set by `fabric`; the core closes once.
        unsafe { drop_state::<P::Fabric>(fabric.cast()) };
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn domain_open(
        fabric: *mut abi::fid_fabric,
        info: *const abi::fi_info,
        domain: *mut abi::fid_domain,
    ) -> c_int {
        // SAFETY: The fabric was opened by `fabric`; the core checked `info`
        // and allocated `domain`.
        let r = unsafe {
            let f = state::<P::Fabric>(fabric.cast());
            let d = DomainRef {
                ptr: NonNull::new_unchecked(domain),
            };
            P::domain(f, d, &InfoRef { raw: &*info }).and_then(|v| set_state(domain.cast(), v))
        };
        ret(r)
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn domain_close(domain: *mut abi::fid_domain) {
        // SAFETY: Set by `domain_open`; the core closes once.
        unsafe { drop_state::<P::Domain>(domain.cast()) };
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_open(
        domain: *mut abi::fid_domain,
        info: *const abi::fi_info,
        ep: *mut abi::fid_ep,
    ) -> c_int {
        // SAFETY: As in `domain_open`, one level down.
        let r = unsafe {
            let d = state::<P::Domain>(domain.cast());
            let e = EpRef {
                ptr: NonNull::new_unchecked(ep),
            };
            P::endpoint(d, e, &InfoRef { raw: &*info }).and_then(|v| set_state(ep.cast(), v))
        };
        ret(r)
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_close(ep: *mut abi::fid_ep) {
        // SAFETY: Set by `ep_open`; the core closes once.
        unsafe { drop_state::<P::Endpoint>(ep.cast()) };
    }

    /// The provider's endpoint behind `ep`.
    ///
    /// # Safety
    ///
    /// `ep` is live and was opened by `ep_open`.
    unsafe fn ep<'a>(ep: *mut abi::fid_ep) -> &'a P::Endpoint {
        // SAFETY: The caller's guarantee.
        unsafe { state::<P::Endpoint>(ep.cast()) }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_enable(ep: *mut abi::fid_ep) -> c_int {
        // SAFETY: The core calls ops on live endpoints of this provider.
        ret(unsafe { Self::ep(ep) }.enable())
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_connect(
        ep: *mut abi::fid_ep,
        addr: *const c_void,
        p: *const c_void,
        len: usize,
    ) -> c_int {
        // SAFETY: As above; the core checked the private data.
        ret(unsafe { Self::ep(ep).connect(PeerAddr(addr), param(p, len)) })
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_accept(ep: *mut abi::fid_ep, p: *const c_void, len: usize) -> c_int {
        // SAFETY: As above.
        ret(unsafe { Self::ep(ep).accept(param(p, len)) })
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_shutdown(ep: *mut abi::fid_ep, _flags: u64) -> c_int {
        // SAFETY: As above.
        ret(unsafe { Self::ep(ep) }.shutdown())
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_getname(
        ep: *mut abi::fid_ep,
        addr: *mut c_void,
        len: *mut usize,
    ) -> c_int {
        let mut name = KVec::new();
        // SAFETY: As above.
        match unsafe { Self::ep(ep) }.getname(&mut name) {
            // SAFETY: The core checked `len` (and `addr` against it).
            Ok(()) => unsafe { give_name(&name, addr, len) },
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_getpeer(
        ep: *mut abi::fid_ep,
        addr: *mut c_void,
        len: *mut usize,
    ) -> c_int {
        let mut name = KVec::new();
        // SAFETY: As above.
        match unsafe { Self::ep(ep) }.getpeer(&mut name) {
            // SAFETY: As above.
            Ok(()) => unsafe { give_name(&name, addr, len) },
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_sendmsg(
        ep: *mut abi::fid_ep,
        msg: *const abi::fi_msg,
        flags: u64,
    ) -> isize {
        // SAFETY: As above; the core checked `msg`.
        ret(unsafe { Self::ep(ep).sendmsg(&Msg { raw: &*msg }, flags) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_recvmsg(
        ep: *mut abi::fid_ep,
        msg: *const abi::fi_msg,
        flags: u64,
    ) -> isize {
        // SAFETY: As above.
        ret(unsafe { Self::ep(ep).recvmsg(&Msg { raw: &*msg }, flags) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_tsendmsg(
        ep: *mut abi::fid_ep,
        msg: *const abi::fi_msg_tagged,
        flags: u64,
    ) -> isize {
        // SAFETY: The core calls this only on an open, enabled endpoint of
        // this provider, set up by `ep_open`, with a `msg` it checked.
        ret(unsafe { Self::ep(ep).tsendmsg(&TaggedMsg { raw: &*msg }, flags) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_trecvmsg(
        ep: *mut abi::fid_ep,
        msg: *const abi::fi_msg_tagged,
        flags: u64,
    ) -> isize {
        // SAFETY: The core calls this only on an open, enabled endpoint of
        // this provider, set up by `ep_open`, with a `msg` it checked.
        ret(unsafe { Self::ep(ep).trecvmsg(&TaggedMsg { raw: &*msg }, flags) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_cancel(ep: *mut abi::fid_ep, context: *mut c_void) -> isize {
        // SAFETY: The core calls this only on an open, enabled endpoint of
        // this provider, set up by `ep_open`; `context` is a cookie.
        ret(unsafe { Self::ep(ep).cancel(Context(context)) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_progress(ep: *mut abi::fid_ep) {
        // SAFETY: The core calls this only on an open endpoint of this
        // provider, set up by `ep_open`, before its close op.
        unsafe { Self::ep(ep).progress() }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_readmsg(
        ep: *mut abi::fid_ep,
        msg: *const abi::fi_msg_rma,
        flags: u64,
    ) -> isize {
        // SAFETY: As above.
        ret(unsafe { Self::ep(ep).readmsg(&RmaMsg { raw: &*msg }, flags) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn ep_writemsg(
        ep: *mut abi::fid_ep,
        msg: *const abi::fi_msg_rma,
        flags: u64,
    ) -> isize {
        // SAFETY: As above.
        ret(unsafe { Self::ep(ep).writemsg(&RmaMsg { raw: &*msg }, flags) }) as isize
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn pep_open(
        fabric: *mut abi::fid_fabric,
        info: *const abi::fi_info,
        pep: *mut abi::fid_pep,
    ) -> c_int {
        // SAFETY: As in `domain_open`.
        let r = unsafe {
            let f = state::<P::Fabric>(fabric.cast());
            let p = PepRef {
                ptr: NonNull::new_unchecked(pep),
            };
            P::passive_ep(f, p, &InfoRef { raw: &*info }).and_then(|v| set_state(pep.cast(), v))
        };
        ret(r)
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn pep_close(pep: *mut abi::fid_pep) {
        // SAFETY: Set by `pep_open`; the core closes once.
        unsafe { drop_state::<P::PassiveEp>(pep.cast()) };
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn pep_listen(pep: *mut abi::fid_pep) -> c_int {
        // SAFETY: A live passive endpoint of this provider.
        ret(unsafe { state::<P::PassiveEp>(pep.cast()) }.listen())
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn pep_reject(
        pep: *mut abi::fid_pep,
        handle: *mut abi::fid,
        p: *const c_void,
        len: usize,
    ) -> c_int {
        // SAFETY: A live passive endpoint; the core checked `handle` is one
        // of its requests, made by `PepRef::connreq`.
        ret(unsafe {
            let request = request_of::<<P::PassiveEp as PassiveEndpoint>::Request>(handle);
            state::<P::PassiveEp>(pep.cast()).reject(request, param(p, len))
        })
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn pep_getname(
        pep: *mut abi::fid_pep,
        addr: *mut c_void,
        len: *mut usize,
    ) -> c_int {
        let mut name = KVec::new();
        // SAFETY: A live passive endpoint of this provider.
        match unsafe { state::<P::PassiveEp>(pep.cast()) }.getname(&mut name) {
            // SAFETY: The core checked `len` (and `addr` against it).
            Ok(()) => unsafe { give_name(&name, addr, len) },
            Err(e) => e.to_errno(),
        }
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn connreq_release(handle: *mut abi::fid) {
        // SAFETY: The last reference of a request made by `PepRef::connreq`.
        unsafe { drop_state::<<P::PassiveEp as PassiveEndpoint>::Request>(handle) };
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn mr_reg(
        domain: *mut abi::fid_domain,
        mr: *mut abi::fid_mr,
        attr: *const abi::fi_mr_attr,
        _flags: u64,
    ) -> c_int {
        // SAFETY: A live domain of this provider; the core checked `attr`
        // and allocated `mr`, not yet visible to anyone else.
        ret(unsafe {
            state::<P::Domain>(domain.cast())
                .mr_reg(&MrAttr { raw: &*attr })
                .and_then(|(key, region)| {
                    (*mr).key = key;
                    set_state(mr.cast(), region)
                })
        })
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn mr_close(mr: *mut abi::fid_mr) {
        // SAFETY: Set by `mr_reg`; the core closes once.
        unsafe { drop_state::<<P::Domain as Domain>::Region>(mr.cast()) };
    }

    /// # Safety
    ///
    /// Called by the core only, on its objects, as `kofi_provider.h` specifies.
    unsafe extern "C" fn mr_enable(
        domain: *mut abi::fid_domain,
        mr: *mut abi::fid_mr,
        ep: *mut abi::fid_ep,
    ) -> c_int {
        // SAFETY: A live domain, a region `mr_reg` gave state to, and an
        // open endpoint, all of this provider (the core checked the binding).
        ret(unsafe {
            P::mr_enable(
                state::<P::Domain>(domain.cast()),
                state::<<P::Domain as Domain>::Region>(mr.cast()),
                state::<P::Endpoint>(ep.cast()),
            )
        })
    }

    const DOMAIN_OPS: abi::kofi_domain_ops = abi::kofi_domain_ops {
        open: Some(Self::domain_open),
        close: Some(Self::domain_close),
        mr_reg: if <P::Domain as Domain>::HAS_MR_REG {
            Some(Self::mr_reg)
        } else {
            None
        },
        mr_close: if <P::Domain as Domain>::HAS_MR_REG {
            Some(Self::mr_close)
        } else {
            None
        },
        mr_enable: if <P::Domain as Domain>::HAS_MR_REG && P::HAS_MR_ENABLE {
            Some(Self::mr_enable)
        } else {
            None
        },
    };

    const EP_OPS: abi::kofi_ep_ops = abi::kofi_ep_ops {
        open: Some(Self::ep_open),
        close: Some(Self::ep_close),
        bind: None,
        enable: if <P::Endpoint as Endpoint>::HAS_ENABLE {
            Some(Self::ep_enable)
        } else {
            None
        },
        connect: if <P::Endpoint as Endpoint>::HAS_CONNECT {
            Some(Self::ep_connect)
        } else {
            None
        },
        accept: if <P::Endpoint as Endpoint>::HAS_ACCEPT {
            Some(Self::ep_accept)
        } else {
            None
        },
        shutdown: if <P::Endpoint as Endpoint>::HAS_SHUTDOWN {
            Some(Self::ep_shutdown)
        } else {
            None
        },
        getname: if <P::Endpoint as Endpoint>::HAS_GETNAME {
            Some(Self::ep_getname)
        } else {
            None
        },
        getpeer: if <P::Endpoint as Endpoint>::HAS_GETPEER {
            Some(Self::ep_getpeer)
        } else {
            None
        },
        getopt: None,
        setopt: None,
        sendmsg: if <P::Endpoint as Endpoint>::HAS_SENDMSG {
            Some(Self::ep_sendmsg)
        } else {
            None
        },
        recvmsg: if <P::Endpoint as Endpoint>::HAS_RECVMSG {
            Some(Self::ep_recvmsg)
        } else {
            None
        },
        readmsg: if <P::Endpoint as Endpoint>::HAS_READMSG {
            Some(Self::ep_readmsg)
        } else {
            None
        },
        writemsg: if <P::Endpoint as Endpoint>::HAS_WRITEMSG {
            Some(Self::ep_writemsg)
        } else {
            None
        },
        cancel: if <P::Endpoint as Endpoint>::HAS_CANCEL {
            Some(Self::ep_cancel)
        } else {
            None
        },
        tsendmsg: if <P::Endpoint as Endpoint>::HAS_TSENDMSG {
            Some(Self::ep_tsendmsg)
        } else {
            None
        },
        trecvmsg: if <P::Endpoint as Endpoint>::HAS_TRECVMSG {
            Some(Self::ep_trecvmsg)
        } else {
            None
        },
        // Atomic operations are the core's RDM layer's (rdm.rst).
        atomicmsg: None,
        progress: if <P::Endpoint as Endpoint>::HAS_PROGRESS {
            Some(Self::ep_progress)
        } else {
            None
        },
    };

    const PEP_OPS: abi::kofi_pep_ops = abi::kofi_pep_ops {
        open: Some(Self::pep_open),
        close: Some(Self::pep_close),
        listen: if <P::PassiveEp as PassiveEndpoint>::HAS_LISTEN {
            Some(Self::pep_listen)
        } else {
            None
        },
        reject: if <P::PassiveEp as PassiveEndpoint>::HAS_REJECT {
            Some(Self::pep_reject)
        } else {
            None
        },
        getname: if <P::PassiveEp as PassiveEndpoint>::HAS_GETNAME {
            Some(Self::pep_getname)
        } else {
            None
        },
        connreq_release: Some(Self::connreq_release),
    };
}

/// A provider's registration with the core; deregisters on drop.
///
/// # Invariants
///
/// `table` was registered with the core and stays put (boxed) until drop.
pub(crate) struct Registration<P: Provider> {
    table: KBox<abi::kofi_provider>,
    _provider: PhantomData<P>,
}

// SAFETY: The table is only read by the core after registration.
unsafe impl<P: Provider> Send for Registration<P> {}
// SAFETY: As above.
unsafe impl<P: Provider> Sync for Registration<P> {}

impl<P: Provider> Registration<P> {
    /// Registers provider `P` of `module` with the core.
    pub(crate) fn register(module: &'static ThisModule) -> Result<Self> {
        let mut table = KBox::new(
            abi::kofi_provider {
                name: P::NAME.as_char_ptr(),
                version: P::VERSION,
                owner: module.as_ptr().cast(),
                priority: P::PRIORITY,
                getinfo: Some(Adapter::<P>::getinfo),
                freeinfo: None,
                fabric: Some(Adapter::<P>::fabric),
                fabric_close: Some(Adapter::<P>::fabric_close),
                cleanup: None,
                domain_ops: &Adapter::<P>::DOMAIN_OPS,
                ep_ops: &Adapter::<P>::EP_OPS,
                pep_ops: if P::HAS_PASSIVE_EP {
                    &Adapter::<P>::PEP_OPS
                } else {
                    ptr::null()
                },
                core_private: ptr::null_mut(),
            },
            GFP_KERNEL,
        )?;
        // SAFETY: The table is complete and stays boxed until `drop`
        // deregisters it.
        to_result(unsafe { abi::kofi_provider_register(abi::KOFI_ABI_VERSION, &mut *table) })?;
        Ok(Registration {
            table,
            _provider: PhantomData,
        })
    }
}

impl<P: Provider> Drop for Registration<P> {
    fn drop(&mut self) {
        // SAFETY: Registered in `register` (type invariants).
        unsafe { abi::kofi_provider_deregister(&mut *self.table) };
    }
}
