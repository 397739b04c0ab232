// SPDX-License-Identifier: GPL-2.0

//! A provider's endpoint as an endpoint backend (`object::EpBackend`):
//! [`ProviderEp`], the one adapter over a provider's C ops table. The
//! typed API (ep_data.rs, ep_cm.rs, lifecycle.rs) checks a call, then
//! hands it to the endpoint's backend; nothing else calls a provider's
//! endpoint ops. (The core's RDM layer is the other backend, `rdm::RdmEp`.)

use crate::abi;
use crate::context::Context;
use crate::errno::{self, from_c as op_result};
use crate::msg::{Msg, Rma, RmaMsg, TaggedMsg};
use crate::object::{Bind, Endpoint, EpBackend, Object};
use core::ptr;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

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
        // SAFETY: Registration checked `ep_ops` is non-null; the module is
        // pinned by the endpoint's fabric.
        unsafe { &*ep.domain.fabric.table().ep_ops }
    }

    /// Whether the provider of `ep`'s fabric serves tagged messages.
    pub(crate) fn offers_tagged(ep: &Endpoint) -> bool {
        let ops = Self::ops(ep);
        ops.tsendmsg.is_some() && ops.trecvmsg.is_some() && Self::has(ep, 3)
    }

    /// The provider's ABI minor version is at least `minor`.
    fn has(ep: &Endpoint, minor: u32) -> bool {
        ep.domain.fabric.provider().abi_minor >= minor
    }
}

impl EpBackend for ProviderEp {
    unsafe fn open(&self, ep: &Endpoint, info: *const abi::fi_info) -> Result {
        let open = Self::ops(ep).open.ok_or_else(errno::enosys)?;
        // SAFETY: The module is pinned by the fabric; the objects are live,
        // the info valid (the caller's guarantee).
        op_result(unsafe { open(ep.domain.public(), info, ep.public()) })
    }

    fn make_progress(&self, ep: &Endpoint) {
        // The provider's progress op, when its ABI (1.4 on) has it at all.
        let Some(progress) = Self::ops(ep).progress.filter(|_| Self::has(ep, 4)) else {
            return;
        };
        let open = ep.progress_gate.lock();
        if *open {
            // SAFETY: The provider's open endpoint: fi_close clears the
            // gate, under this lock, before the provider's close op runs.
            unsafe { progress(ep.public()) };
        }
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

    fn cancel(&self, ep: &Endpoint, context: Context) -> Result {
        let op = Self::ops(ep).cancel.filter(|_| Self::has(ep, 1));
        let op = op.ok_or_else(errno::enosys)?;
        // SAFETY: The provider's open endpoint; the context is a cookie.
        posted(unsafe { op(ep.public(), context.as_ptr()) })
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
