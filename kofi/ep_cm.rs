// SPDX-License-Identifier: GPL-2.0

//! Connection management as typed calls on endpoints and passive
//! endpoints: listen, connect, accept, reject, shutdown, and their names.
//! The exports (api_cm.rs) and the RDM layer call these.

use crate::abi;
use crate::errno;
use crate::object::{on_backend, ConnReq, Endpoint, Object, PassiveEp};
use core::sync::atomic::Ordering;
use kernel::ffi::c_void;
use kernel::prelude::*;

/// Private data: at most KOFI_CM_DATA_MAX bytes.
fn check_param(param: &[u8]) -> Result {
    if param.len() > abi::KOFI_CM_DATA_MAX as usize {
        return Err(EINVAL);
    }
    Ok(())
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
        self.provider_listen()?;
        self.listening.store(true, Ordering::Release);
        Ok(())
    }

    /// Refuses request `req`, one of this endpoint's, sending `param`.
    pub(crate) fn reject(&self, req: &ConnReq, param: &[u8]) -> Result {
        if req.pep.public() != self.public() {
            return Err(EINVAL);
        }
        check_param(param)?;
        self.provider_reject(req, param)
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
        check_param(param)?;
        if self.limits.ep_type != abi::fi_ep_type_FI_EP_MSG {
            return Err(errno::eopnotsupp());
        }
        // SAFETY: The caller's guarantee.
        unsafe { self.backend().connect(self, addr, param) }
    }

    /// Accepts the request the endpoint was opened for, sending `param`.
    pub(crate) fn accept(&self, param: &[u8]) -> Result {
        self.check_enabled()?;
        check_param(param)?;
        self.backend().accept(self, param)
    }

    /// Closes the connection; FI_SHUTDOWN arrives on the EQ.
    pub(crate) fn shutdown(&self, flags: u64) -> Result {
        self.check_enabled()?;
        if flags != 0 {
            return Err(errno::ebadflags());
        }
        self.backend().shutdown(self, flags)
    }

    /// The local address, as [`PassiveEp::provider_getname`] gives it.
    pub(crate) fn getname(&self, buf: &mut [u8], len: &mut usize) -> Result {
        on_backend!(self, |b| b.getname(self, buf, len))
    }

    /// The connected peer's address, as [`PassiveEp::provider_getname`] gives a
    /// name.
    pub(crate) fn getpeer(&self, buf: &mut [u8], len: &mut usize) -> Result {
        self.backend().getpeer(self, buf, len)
    }
}
