// SPDX-License-Identifier: GPL-2.0

//! Info builders: the `fi_info`s a provider offers, made and filled in
//! safely ([`Info`], [`InfoList`]), and the ones it is handed ([`InfoRef`]).

use super::adapter::opt_cstr;
use super::handles::request_of;
use crate::abi;
// `pop` and `clear`: the compatibility trait's on 6.12, inherent on 7.3.
#[allow(unused_imports)]
use crate::compat::VecExt;
use core::ptr::{self, NonNull};
use kernel::ffi::{c_char, c_void};
use kernel::prelude::*;

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

    pub(super) fn into_raw(self) -> *mut abi::fi_info {
        let p = self.ptr.as_ptr();
        core::mem::forget(self);
        p
    }
}

/// An info the core passes to an open op, read-only.
pub(crate) struct InfoRef<'a> {
    pub(super) raw: &'a abi::fi_info,
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
    /// (the info of an FI_CONNREQ), made by [`PepRef::connreq`] with `R`;
    /// `EINVAL` when the request's state is of another type.
    pub(crate) fn request<R: Send + 'static>(&self) -> Result<Option<&'a R>> {
        let handle = self.raw.handle;
        if handle.is_null() {
            return Ok(None);
        }
        // SAFETY: The core checked a handle in an info given to fi_endpoint
        // is a live request of this fabric, made by `PepRef::connreq`.
        unsafe { request_of::<R>(handle) }.ok_or(EINVAL).map(Some)
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
    pub(super) fn into_raw(self) -> *mut abi::fi_info {
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
