// SPDX-License-Identifier: GPL-2.0

//! What stands behind an endpoint: a provider's ops table, reached through
//! one adapter ([`ProviderEp`]), or the core's own RDM layer
//! (`rdm::RdmEp`). The typed API (ep_data.rs, ep_cm.rs, lifecycle.rs)
//! checks a call, then hands it to the endpoint's backend; nothing else
//! calls a provider's endpoint ops (its progress op included:
//! [`ProviderEp::progress`]).

use crate::abi;
use crate::ep_data::{Msg, Rma, RmaMsg, TaggedMsg};
use crate::errno;
use crate::lifecycle::{op_result, Bind};
use crate::object::{Endpoint, Object};
use core::ptr;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

/// An endpoint's implementation. The core calls each method on an open
/// endpoint, after the checks the typed API makes; between `open` and
/// `close` only.
pub(crate) trait EpBackend: Sync {
    /// Opens the backend's side of `ep`, for `info`.
    ///
    /// # Safety
    ///
    /// `info` is a checked info, valid for the call.
    unsafe fn open(&self, ep: &Endpoint, info: *const abi::fi_info) -> Result;

    /// Closes it: nothing is reported on `ep` after this returns.
    fn close(&self, ep: &Endpoint);

    /// Learns of a binding the core recorded; an error undoes it.
    fn bind(&self, _ep: &Endpoint, _target: Bind<'_>, _flags: u64) -> Result {
        Ok(())
    }

    fn enable(&self, ep: &Endpoint) -> Result;

    /// # Safety
    ///
    /// As for [`Endpoint::send`].
    unsafe fn send(&self, ep: &Endpoint, m: &Msg<'_>, flags: u64) -> Result;

    /// # Safety
    ///
    /// As for [`Endpoint::recv`].
    unsafe fn recv(&self, ep: &Endpoint, m: &Msg<'_>, flags: u64) -> Result;

    /// # Safety
    ///
    /// As for [`Endpoint::rma`].
    unsafe fn rma(&self, ep: &Endpoint, kind: Rma, m: &RmaMsg<'_>, flags: u64) -> Result;

    /// # Safety
    ///
    /// As for [`Endpoint::send`].
    unsafe fn tsend(&self, ep: &Endpoint, m: &TaggedMsg<'_>, flags: u64) -> Result;

    /// # Safety
    ///
    /// As for [`Endpoint::recv`].
    unsafe fn trecv(&self, ep: &Endpoint, m: &TaggedMsg<'_>, flags: u64) -> Result;

    /// # Safety
    ///
    /// The operation's arrays hold their counts, its buffers live until
    /// its completion (the core checked both).
    unsafe fn atomic(&self, ep: &Endpoint, a: &abi::kofi_atomic, flags: u64) -> Result;

    /// Takes back the posted receive of `context`.
    fn cancel(&self, ep: &Endpoint, context: *mut c_void) -> Result;

    /// # Safety
    ///
    /// As for [`Endpoint::connect`].
    unsafe fn connect(&self, _ep: &Endpoint, _addr: *const c_void, _param: &[u8]) -> Result {
        Err(errno::enosys())
    }

    fn accept(&self, _ep: &Endpoint, _param: &[u8]) -> Result {
        Err(errno::enosys())
    }

    fn shutdown(&self, _ep: &Endpoint, _flags: u64) -> Result {
        Err(errno::enosys())
    }

    /// The local address into `buf`, its length into `len` (also for
    /// -FI_ETOOSMALL).
    fn getname(&self, ep: &Endpoint, buf: &mut [u8], len: &mut usize) -> Result;

    /// The peer's address, as [`EpBackend::getname`] gives a name.
    fn getpeer(&self, _ep: &Endpoint, _buf: &mut [u8], _len: &mut usize) -> Result {
        Err(errno::enosys())
    }

    /// FI_OPT_ENDPOINT option `name` into `buf`, its length into `len`;
    /// `None` when the backend has no options of its own (the core answers
    /// the common ones).
    fn getopt(&self, ep: &Endpoint, name: c_int, buf: &mut [u8], len: &mut usize)
        -> Option<Result>;

    /// Sets FI_OPT_ENDPOINT option `name` to `val`.
    fn setopt(&self, ep: &Endpoint, name: c_int, val: &[u8]) -> Result;
}

/// A provider's endpoint: its ops table, called with the C forms of the
/// typed arguments. Ops the provider's ABI version predates are -FI_ENOSYS
/// (cancel before 1.1, tagged and atomic operations before 1.3).
pub(crate) struct ProviderEp;

/// A name buffer's C form: null when empty (a query of the size).
pub(crate) fn name_buf(buf: &mut [u8]) -> *mut c_void {
    if buf.is_empty() {
        ptr::null_mut()
    } else {
        buf.as_mut_ptr().cast()
    }
}

/// Private data's C form.
pub(crate) fn param_c(param: &[u8]) -> *const c_void {
    if param.is_empty() {
        ptr::null()
    } else {
        param.as_ptr().cast()
    }
}

/// A provider op's `ssize_t` return as a result.
fn posted(ret: isize) -> Result {
    if ret < 0 {
        return Err(Error::from_errno(ret as i32));
    }
    Ok(())
}

impl ProviderEp {
    fn ops(ep: &Endpoint) -> &abi::kofi_ep_ops {
        ep.domain.ep_ops()
    }

    /// The provider's ABI minor version is at least `minor`.
    fn has(ep: &Endpoint, minor: u32) -> bool {
        ep.domain.fabric.provider().abi_minor >= minor
    }

    /// Calls the provider's progress op, when its ABI (1.4 on) has it at
    /// all, in a consumer's thread (see `Endpoint::make_progress`, whose
    /// progress gate the caller holds open: the endpoint's close op has not
    /// run).
    pub(crate) fn progress(ep: &Endpoint) {
        if let Some(progress) = Self::ops(ep).progress.filter(|_| Self::has(ep, 4)) {
            // SAFETY: The provider's open endpoint (the caller holds its
            // progress gate open).
            unsafe { progress(ep.public()) };
        }
    }
}

impl EpBackend for ProviderEp {
    unsafe fn open(&self, ep: &Endpoint, info: *const abi::fi_info) -> Result {
        let open = Self::ops(ep).open.ok_or_else(errno::enosys)?;
        // SAFETY: The module is pinned by the fabric; the objects are live,
        // the info valid (the caller's guarantee).
        op_result(unsafe { open(ep.domain.public(), info, ep.public()) })
    }

    fn close(&self, ep: &Endpoint) {
        if let Some(close) = Self::ops(ep).close {
            // SAFETY: The provider's open endpoint, closed once.
            unsafe { close(ep.public()) };
        }
    }

    fn bind(&self, ep: &Endpoint, target: Bind<'_>, flags: u64) -> Result {
        match Self::ops(ep).bind {
            // SAFETY: The provider's endpoint and a live object.
            Some(bind) => op_result(unsafe { bind(ep.public(), target.fid(), flags) }),
            None => Ok(()),
        }
    }

    fn enable(&self, ep: &Endpoint) -> Result {
        match Self::ops(ep).enable {
            // SAFETY: The provider's endpoint.
            Some(enable) => op_result(unsafe { enable(ep.public()) }),
            None => Ok(()),
        }
    }

    unsafe fn send(&self, ep: &Endpoint, m: &Msg<'_>, flags: u64) -> Result {
        let op = Self::ops(ep).sendmsg.ok_or_else(errno::enosys)?;
        let msg = m.to_c();
        // SAFETY: The provider's endpoint; the message and its arrays live
        // for the call, the buffers until the completion (the caller's
        // guarantee).
        posted(unsafe { op(ep.public(), &msg, flags) })
    }

    unsafe fn recv(&self, ep: &Endpoint, m: &Msg<'_>, flags: u64) -> Result {
        let op = Self::ops(ep).recvmsg.ok_or_else(errno::enosys)?;
        let msg = m.to_c();
        // SAFETY: As in `send`.
        posted(unsafe { op(ep.public(), &msg, flags) })
    }

    unsafe fn rma(&self, ep: &Endpoint, kind: Rma, m: &RmaMsg<'_>, flags: u64) -> Result {
        let op = match kind {
            Rma::Read => Self::ops(ep).readmsg,
            Rma::Write => Self::ops(ep).writemsg,
        }
        .ok_or_else(errno::enosys)?;
        let msg = m.to_c();
        // SAFETY: As in `send`; `remote` lives for the call too.
        posted(unsafe { op(ep.public(), &msg, flags) })
    }

    unsafe fn tsend(&self, ep: &Endpoint, m: &TaggedMsg<'_>, flags: u64) -> Result {
        let op = Self::ops(ep).tsendmsg.filter(|_| Self::has(ep, 3));
        let op = op.ok_or_else(errno::enosys)?;
        let msg = m.to_c();
        // SAFETY: As in `send`.
        posted(unsafe { op(ep.public(), &msg, flags) })
    }

    unsafe fn trecv(&self, ep: &Endpoint, m: &TaggedMsg<'_>, flags: u64) -> Result {
        let op = Self::ops(ep).trecvmsg.filter(|_| Self::has(ep, 3));
        let op = op.ok_or_else(errno::enosys)?;
        let msg = m.to_c();
        // SAFETY: As in `send`.
        posted(unsafe { op(ep.public(), &msg, flags) })
    }

    unsafe fn atomic(&self, ep: &Endpoint, a: &abi::kofi_atomic, flags: u64) -> Result {
        let op = Self::ops(ep).atomicmsg.filter(|_| Self::has(ep, 3));
        let op = op.ok_or_else(errno::eopnotsupp)?;
        // SAFETY: The provider's endpoint; the operation as the caller
        // guarantees.
        posted(unsafe { op(ep.public(), a, flags) })
    }

    fn cancel(&self, ep: &Endpoint, context: *mut c_void) -> Result {
        let op = Self::ops(ep).cancel.filter(|_| Self::has(ep, 1));
        let op = op.ok_or_else(errno::enosys)?;
        // SAFETY: The provider's open endpoint; the context is a cookie.
        posted(unsafe { op(ep.public(), context) })
    }

    unsafe fn connect(&self, ep: &Endpoint, addr: *const c_void, param: &[u8]) -> Result {
        let op = Self::ops(ep).connect.ok_or_else(errno::enosys)?;
        // SAFETY: The provider's endpoint; `addr` as the caller guarantees,
        // `param` lives for the call.
        op_result(unsafe { op(ep.public(), addr, param_c(param), param.len()) })
    }

    fn accept(&self, ep: &Endpoint, param: &[u8]) -> Result {
        let op = Self::ops(ep).accept.ok_or_else(errno::enosys)?;
        // SAFETY: The provider's endpoint; `param` lives for the call.
        op_result(unsafe { op(ep.public(), param_c(param), param.len()) })
    }

    fn shutdown(&self, ep: &Endpoint, flags: u64) -> Result {
        let op = Self::ops(ep).shutdown.ok_or_else(errno::enosys)?;
        // SAFETY: The provider's endpoint.
        op_result(unsafe { op(ep.public(), flags) })
    }

    fn getname(&self, ep: &Endpoint, buf: &mut [u8], len: &mut usize) -> Result {
        let op = Self::ops(ep).getname.ok_or_else(errno::enosys)?;
        *len = buf.len();
        // SAFETY: The provider's endpoint; `buf` holds `*len` bytes.
        op_result(unsafe { op(ep.public(), name_buf(buf), len) })
    }

    fn getpeer(&self, ep: &Endpoint, buf: &mut [u8], len: &mut usize) -> Result {
        let op = Self::ops(ep).getpeer.ok_or_else(errno::enosys)?;
        *len = buf.len();
        // SAFETY: The provider's endpoint; `buf` holds `*len` bytes.
        op_result(unsafe { op(ep.public(), name_buf(buf), len) })
    }

    fn getopt(
        &self,
        ep: &Endpoint,
        name: c_int,
        buf: &mut [u8],
        len: &mut usize,
    ) -> Option<Result> {
        let get = Self::ops(ep).getopt?;
        let level = abi::FI_OPT_ENDPOINT as c_int;
        *len = buf.len();
        // SAFETY: The provider's endpoint; `buf` holds `*len` bytes.
        Some(op_result(unsafe {
            get(ep.public(), level, name, name_buf(buf), len)
        }))
    }

    fn setopt(&self, ep: &Endpoint, name: c_int, val: &[u8]) -> Result {
        let set = Self::ops(ep).setopt.ok_or_else(errno::enoprotoopt)?;
        let level = abi::FI_OPT_ENDPOINT as c_int;
        // SAFETY: The provider's endpoint; `val` lives for the call.
        op_result(unsafe { set(ep.public(), level, name, param_c(val), val.len()) })
    }
}

/// Answers an option whose value is a `size_t`: `v` into `buf`, its size
/// into `len` (-FI_ETOOSMALL when `buf` is shorter).
pub(crate) fn usize_option(buf: &mut [u8], len: &mut usize, v: usize) -> Result {
    let bytes = v.to_ne_bytes();
    *len = bytes.len();
    buf.get_mut(..bytes.len())
        .ok_or_else(errno::etoosmall)?
        .copy_from_slice(&bytes);
    Ok(())
}

/// A `size_t` option's value: -EINVAL unless `val` is one.
pub(crate) fn usize_of(val: &[u8]) -> Result<usize> {
    Ok(usize::from_ne_bytes(val.try_into().map_err(|_| EINVAL)?))
}
