// SPDX-License-Identifier: GPL-2.0

//! The provider's C ops for fabrics, domains, regions and passive endpoints
//! (an endpoint's are behind its backend, backend.rs): each called here
//! only, as a typed method of the object it serves. An op the provider does
//! not have is -FI_ENOSYS where the call needs it, and nothing to do where
//! it is optional (the closes, a region's registration).

use crate::abi;
use crate::backend::{name_buf, param_c};
use crate::errno::{self, from_c as op_result};
use crate::mr::Mr;
use crate::object::{ConnReq, Domain, Endpoint, Fabric, Object, PassiveEp};
use kernel::ffi::c_void;
use kernel::prelude::*;

impl Fabric {
    /// The provider's fabric op, on the new fabric.
    ///
    /// # Safety
    ///
    /// `attr` is the consumer's valid attr of the fabric's provider.
    pub(crate) unsafe fn provider_open(
        &self,
        attr: *mut abi::fi_fabric_attr,
        context: *mut c_void,
    ) -> Result {
        let open = self.table().fabric.ok_or_else(errno::enosys)?;
        // SAFETY: The provider's module is pinned by the fabric, which is
        // new; `attr` is valid (the caller's guarantee).
        op_result(unsafe { open(attr, self.public(), context) })
    }

    /// The provider's fabric close, on a fabric nothing uses any more.
    pub(crate) fn provider_close(&self) {
        if let Some(close) = self.table().fabric_close {
            // SAFETY: The provider's fabric, its module pinned.
            unsafe { close(self.public()) };
        }
    }
}

impl Domain {
    fn ops(&self) -> &abi::kofi_domain_ops {
        // SAFETY: Registration checked `domain_ops` is non-null; the module is
        // pinned by the fabric.
        unsafe { &*self.fabric.table().domain_ops }
    }

    /// The provider's domain open, on the new domain.
    ///
    /// # Safety
    ///
    /// `info` is a checked info, valid for the call.
    pub(crate) unsafe fn provider_open(&self, info: *mut abi::fi_info) -> Result {
        let open = self.ops().open.ok_or_else(errno::enosys)?;
        // SAFETY: The module is pinned by the fabric; the objects are valid,
        // `info` by the caller's guarantee.
        op_result(unsafe { open(self.fabric.public(), info, self.public()) })
    }

    /// The provider's domain close, on a domain nothing uses any more.
    pub(crate) fn provider_close(&self) {
        if let Some(close) = self.ops().close {
            // SAFETY: The provider's domain, its module pinned.
            unsafe { close(self.public()) };
        }
    }

    /// Registers `mr` with the provider, when it registers regions: whether
    /// it did.
    ///
    /// # Safety
    ///
    /// `attr` is the checked attr `mr` was made from, valid for the call;
    /// `mr` is not yet visible to anyone else.
    pub(crate) unsafe fn provider_mr_reg(
        &self,
        mr: &Mr,
        attr: *const abi::fi_mr_attr,
        flags: u64,
    ) -> Result<bool> {
        let Some(reg) = self.ops().mr_reg else {
            return Ok(false);
        };
        // SAFETY: The provider's module is pinned by the domain's fabric;
        // the caller's guarantees.
        op_result(unsafe { reg(self.public(), mr.public(), attr, flags) })?;
        Ok(true)
    }

    /// Enables `mr`, which the provider registered, through `ep` (an
    /// FI_MR_ENDPOINT domain's region), when its ABI (1.2 on) has the op.
    ///
    /// The caller keeps a second enable of `mr` out.
    pub(crate) fn provider_mr_enable(&self, mr: &Mr, ep: &Endpoint) -> Result {
        if self.fabric.provider().abi_minor < 2 {
            return Ok(());
        }
        let Some(enable) = self.ops().mr_enable else {
            return Ok(());
        };
        // SAFETY: The provider's module is pinned by the domain's fabric;
        // the region is this domain's, registered, and `ep` is an open
        // endpoint of the domain.
        op_result(unsafe { enable(self.public(), mr.public(), ep.public()) })
    }

    /// The provider's close of `mr`, which it registered.
    pub(crate) fn provider_mr_close(&self, mr: &Mr) {
        if let Some(close) = self.ops().mr_close {
            // SAFETY: The provider registered the region and its module is
            // pinned by the domain's fabric.
            unsafe { close(mr.public()) };
        }
    }
}

impl PassiveEp {
    fn ops(&self) -> Option<&abi::kofi_pep_ops> {
        // SAFETY: `pep_ops` is null or valid while the fabric pins the module.
        unsafe { self.fabric.table().pep_ops.as_ref() }
    }

    /// The provider's passive endpoint open, on the new endpoint.
    ///
    /// # Safety
    ///
    /// `info` is a checked info, valid for the call.
    pub(crate) unsafe fn provider_open(&self, info: *mut abi::fi_info) -> Result {
        let open = self.ops().and_then(|o| o.open).ok_or_else(errno::enosys)?;
        // SAFETY: The module is pinned by the fabric; the objects are valid,
        // `info` by the caller's guarantee.
        op_result(unsafe { open(self.fabric.public(), info, self.public()) })
    }

    pub(crate) fn provider_listen(&self) -> Result {
        let listen = self
            .ops()
            .and_then(|o| o.listen)
            .ok_or_else(errno::enosys)?;
        // SAFETY: The provider's passive endpoint, its module pinned.
        op_result(unsafe { listen(self.public()) })
    }

    /// Refuses `req`, one of this endpoint's requests, sending `param`.
    pub(crate) fn provider_reject(&self, req: &ConnReq, param: &[u8]) -> Result {
        let reject = self
            .ops()
            .and_then(|o| o.reject)
            .ok_or_else(errno::enosys)?;
        // SAFETY: The provider's objects; `param` lives for the call.
        op_result(unsafe { reject(self.public(), req.fid(), param_c(param), param.len()) })
    }

    /// The local address into `buf`; its length goes to `len` (also when
    /// `buf` is too small: -FI_ETOOSMALL).
    pub(crate) fn provider_getname(&self, buf: &mut [u8], len: &mut usize) -> Result {
        let getname = self
            .ops()
            .and_then(|o| o.getname)
            .ok_or_else(errno::enosys)?;
        *len = buf.len();
        // SAFETY: The provider's endpoint; `buf` holds `*len` bytes.
        op_result(unsafe { getname(self.public(), name_buf(buf), len) })
    }

    /// The provider's close: it reports nothing about the endpoint after.
    pub(crate) fn provider_close(&self) {
        if let Some(close) = self.ops().and_then(|o| o.close) {
            // SAFETY: The provider's endpoint, its module pinned.
            unsafe { close(self.public()) };
        }
    }
}

impl ConnReq {
    /// Tells the provider the request's last reference is gone.
    pub(crate) fn provider_release(&self) {
        if let Some(release) = self.pep.ops().and_then(|o| o.connreq_release) {
            // SAFETY: The provider's module is pinned through `pep`; the
            // caller drops the request's last reference, once.
            unsafe { release(self.fid()) };
        }
    }
}
