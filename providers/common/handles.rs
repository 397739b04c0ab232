// SPDX-License-Identifier: GPL-2.0

//! Handles a provider reports through: the kofi endpoint ([`EpRef`]), its
//! progress waker, domain ([`DomainRef`]) and passive endpoint ([`PepRef`]),
//! and a connection request's peer address.

use super::buffers::MrHold;
use super::info::Info;
use super::messages::PostedRecv;
use super::Context;
use crate::abi;
use crate::flags::{FI_COMPLETION, FI_RECV, FI_REMOTE_CQ_DATA};
use core::any::TypeId;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::error::to_result;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::types::ForeignOwnable;

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
    pub(super) ptr: NonNull<abi::fid_ep>,
}

// SAFETY: The core's reporting calls are safe from any context but hardirq.
unsafe impl Send for EpRef {}
// SAFETY: As above.
unsafe impl Sync for EpRef {}

impl EpRef {
    /// Reports a completed operation (see `kofi_ep_complete`): `flags` are
    /// the operation's own (with its FI_COMPLETION) plus what happened.
    pub(crate) fn complete(&self, flags: u64, ctx: Context, len: usize, data: u64) -> Result {
        // What kofi_ep_complete is: a tagged completion without a tag.
        self.complete_tagged(flags, ctx, len, data, 0)
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
                ctx.as_ptr(),
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
            op_context: ctx.as_ptr(),
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
            op_context: recv.context.as_ptr(),
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
    pub(super) ptr: NonNull<abi::fid_domain>,
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

/// The address a consumer passed to fi_connect (or NULL).
pub(crate) struct PeerAddr(pub(super) *const c_void);

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

/// A kofi passive endpoint, for connection requests.
///
/// # Invariants
///
/// `ptr` is a live kofi passive endpoint while the provider's passive
/// endpoint exists.
#[derive(Clone)]
pub(crate) struct PepRef {
    pub(super) ptr: NonNull<abi::fid_pep>,
}

// SAFETY: The core's calls it makes are safe from process context anywhere.
unsafe impl Send for PepRef {}
// SAFETY: As above.
unsafe impl Sync for PepRef {}

impl PepRef {
    /// Reports a connection request: FI_CONNREQ with `info` (whose handle
    /// carries `request`, given back to the provider's endpoint and release
    /// ops) and the peer's private data.
    pub(crate) fn connreq<R: Send + 'static>(&self, info: Info, request: R, data: &[u8]) -> Result {
        let tagged = KBox::new(
            Tagged {
                tag: TypeId::of::<R>(),
                request,
            },
            GFP_KERNEL,
        )?;
        let handle_data = crate::compat::into_foreign(tagged);
        // SAFETY: `ptr` is live (type invariants).
        let handle = unsafe { abi::kofi_connreq_alloc(self.ptr.as_ptr(), handle_data) };
        if handle.is_null() {
            // SAFETY: Not given to the core: take it back.
            drop(unsafe { KBox::<Tagged<R>>::from_foreign(handle_data) });
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

/// A connection request's provider state behind its handle, tagged with
/// its type, so that it is read back as that type only.
///
/// # Invariants
///
/// `tag` is `TypeId::of::<R>()`; it comes first (`repr(C)`), so it is read
/// the same whatever `R` is.
#[repr(C)]
struct Tagged<R> {
    tag: TypeId,
    request: R,
}

/// Whether the request state behind `handle` is an `R`.
///
/// # Safety
///
/// `handle` is a live connection request made by [`PepRef::connreq`].
unsafe fn request_is<R: 'static>(handle: *mut abi::fid) -> bool {
    // SAFETY: The caller's guarantee: `prov_data` points at a `Tagged<_>`,
    // whose tag is its first field whatever its type (type invariants).
    unsafe { *(*handle).prov_data.cast::<TypeId>() == TypeId::of::<R>() }
}

/// The provider's request state behind a connection request handle, if it
/// is an `R`.
///
/// # Safety
///
/// `handle` is a live connection request made by [`PepRef::connreq`].
pub(crate) unsafe fn request_of<'a, R: Send + 'static>(handle: *mut abi::fid) -> Option<&'a R> {
    // SAFETY: The caller's guarantee; the tag says the state is a
    // `Tagged<R>` (type invariants), which lives as long as the handle.
    unsafe {
        request_is::<R>(handle)
            .then(|| &<KBox<Tagged<R>> as ForeignOwnable>::borrow((*handle).prov_data).request)
    }
}

/// Takes back and drops the provider's request state of `handle` if it is
/// an `R` (the state of another type is left alone: a provider's mistake).
///
/// # Safety
///
/// `handle` is a connection request made by [`PepRef::connreq`], being
/// released (its state not used after).
pub(crate) unsafe fn drop_request<R: Send + 'static>(handle: *mut abi::fid) {
    // SAFETY: The caller's guarantee.
    if !unsafe { request_is::<R>(handle) } {
        pr_warn!("kofi: a connection request's state is not the provider's type\n");
        return;
    }
    // SAFETY: The tag says the state is a `Tagged<R>`; the caller's
    // guarantee that nothing uses it after.
    unsafe {
        drop(<KBox<Tagged<R>> as ForeignOwnable>::from_foreign(
            (*handle).prov_data,
        ));
        (*handle).prov_data = ptr::null_mut();
    }
}
