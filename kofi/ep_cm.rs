// SPDX-License-Identifier: GPL-2.0

//! Connection management as typed calls on endpoints and passive
//! endpoints: listen, connect, accept, reject, shutdown, and their names.
//! The exports (api_cm.rs) and the RDM layer call these.

use crate::abi;
use crate::errno;
use crate::object::{ConnReq, Endpoint, Object, PassiveEp};
use core::ptr;
use core::sync::atomic::Ordering;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

fn op_result(ret: c_int) -> Result {
    if ret == 0 {
        Ok(())
    } else {
        Err(Error::from_errno(ret))
    }
}

/// Private data: at most KOFI_CM_DATA_MAX bytes; its C form.
fn param_of(param: &[u8]) -> Result<(*const c_void, usize)> {
    if param.len() > abi::KOFI_CM_DATA_MAX as usize {
        return Err(EINVAL);
    }
    let p = if param.is_empty() {
        ptr::null()
    } else {
        param.as_ptr().cast()
    };
    Ok((p, param.len()))
}

/// A name buffer's C form: null when empty (a query of the size).
fn name_buf(buf: &mut [u8]) -> *mut c_void {
    if buf.is_empty() {
        ptr::null_mut()
    } else {
        buf.as_mut_ptr().cast()
    }
}

impl PassiveEp {
    /// Starts listening; requests arrive as FI_CONNREQ on the bound EQ.
    pub(crate) fn listen(&self) -> Result {
        if self.eq.lock().is_none() {
            return Err(errno::enoeq());
        }
        if self.listening.load(Ordering::Acquire) {
            return Err(errno::eopbadstate());
        }
        let op = self
            .ops()
            .and_then(|o| o.listen)
            .ok_or_else(errno::enosys)?;
        // SAFETY: The provider's passive endpoint, its module pinned.
        op_result(unsafe { op(self.public()) })?;
        self.listening.store(true, Ordering::Release);
        Ok(())
    }

    /// Refuses request `req`, one of this endpoint's, sending `param`.
    pub(crate) fn reject(&self, req: &ConnReq, param: &[u8]) -> Result {
        if req.pep.public() != self.public() {
            return Err(EINVAL);
        }
        let (p, len) = param_of(param)?;
        let op = self
            .ops()
            .and_then(|o| o.reject)
            .ok_or_else(errno::enosys)?;
        // SAFETY: The provider's objects; `param` lives for the call.
        op_result(unsafe { op(self.public(), req.fid(), p, len) })
    }

    /// The local address into `buf`; its length goes to `len` (also when
    /// `buf` is too small: -FI_ETOOSMALL).
    pub(crate) fn getname(&self, buf: &mut [u8], len: &mut usize) -> Result {
        let op = self
            .ops()
            .and_then(|o| o.getname)
            .ok_or_else(errno::enosys)?;
        *len = buf.len();
        // SAFETY: The provider's endpoint; `buf` holds `*len` bytes.
        op_result(unsafe { op(self.public(), name_buf(buf), len) })
    }
}

impl Endpoint {
    /// -FI_EOPBADSTATE unless enabled.
    pub(crate) fn check_enabled(&self) -> Result {
        if !self.is_enabled() {
            return Err(errno::eopbadstate());
        }
        Ok(())
    }

    /// Connects to `addr` (the info's dest_addr when null), sending
    /// `param`; FI_CONNECTED (or an error entry) arrives on the EQ.
    ///
    /// # Safety
    ///
    /// `addr` is null or an address of the endpoint's format, valid for the
    /// call.
    pub(crate) unsafe fn connect(&self, addr: *const c_void, param: &[u8]) -> Result {
        self.check_enabled()?;
        let (p, len) = param_of(param)?;
        if self.limits.ep_type != abi::fi_ep_type_FI_EP_MSG {
            return Err(errno::eopnotsupp());
        }
        let op = self.ops().connect.ok_or_else(errno::enosys)?;
        // SAFETY: The provider's endpoint; `addr` is the caller's to vouch
        // for, `param` lives for the call.
        op_result(unsafe { op(self.public(), addr, p, len) })
    }

    /// Accepts the request the endpoint was opened for, sending `param`.
    pub(crate) fn accept(&self, param: &[u8]) -> Result {
        self.check_enabled()?;
        let (p, len) = param_of(param)?;
        let op = self.ops().accept.ok_or_else(errno::enosys)?;
        // SAFETY: The provider's endpoint; `param` lives for the call.
        op_result(unsafe { op(self.public(), p, len) })
    }

    /// Closes the connection; FI_SHUTDOWN arrives on the EQ.
    pub(crate) fn shutdown(&self, flags: u64) -> Result {
        self.check_enabled()?;
        if flags != 0 {
            return Err(errno::ebadflags());
        }
        let op = self.ops().shutdown.ok_or_else(errno::enosys)?;
        // SAFETY: The provider's endpoint.
        op_result(unsafe { op(self.public(), flags) })
    }

    /// The local address, as [`PassiveEp::getname`] gives it.
    pub(crate) fn getname(&self, buf: &mut [u8], len: &mut usize) -> Result {
        let op = self.ops().getname.ok_or_else(errno::enosys)?;
        *len = buf.len();
        // SAFETY: The provider's endpoint; `buf` holds `*len` bytes.
        op_result(unsafe { op(self.public(), name_buf(buf), len) })
    }

    /// The connected peer's address, as [`PassiveEp::getname`] gives a
    /// name.
    pub(crate) fn getpeer(&self, buf: &mut [u8], len: &mut usize) -> Result {
        let op = self.ops().getpeer.ok_or_else(errno::enosys)?;
        *len = buf.len();
        // SAFETY: The provider's endpoint; `buf` holds `*len` bytes.
        op_result(unsafe { op(self.public(), name_buf(buf), len) })
    }
}
