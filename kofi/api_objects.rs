// SPDX-License-Identifier: GPL-2.0

//! The exported calls that open, bind, enable and close objects. Fabrics
//! and domains open here; the rest convert their C arguments and call the
//! typed operations (lifecycle.rs). All are for process context.

use crate::abi;
use crate::backend::usize_option;
use crate::context::Context;
use crate::errno::{self, out, to_c};
use crate::lifecycle::{check_info, close, open_cq, open_endpoint, open_eq, open_passive, Owned};
use crate::mr;
use crate::object::{
    arc_of, class_of, fid_head, lookup, publish, Bind, Domain, Endpoint, Fabric, PassiveEp, Users,
};
use crate::queue::Eq;
use crate::rdm::RdmEp;
use crate::registry::Registry;
use core::sync::atomic::Ordering;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::Opaque;

fn fabric(attr: *mut abi::fi_fabric_attr, context: *mut c_void) -> Result<*mut abi::fid_fabric> {
    // SAFETY: `attr` is null or valid (ABI).
    let a = unsafe { attr.as_ref() }.ok_or(EINVAL)?;
    if a.prov_name.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: `prov_name` is a NUL-terminated string (ABI).
    let name = unsafe { CStr::from_char_ptr(a.prov_name) };
    let module = Registry::get()?.pin_or_load(name).ok_or(ENODEV)?;
    let provider = module.provider().clone();
    let fabric = Arc::new(
        Fabric {
            public: Opaque::new(abi::fid_fabric {
                fid: fid_head(abi::FI_CLASS_FABRIC, context),
                api_version: a.api_version,
            }),
            module,
            users: Users::default(),
        },
        GFP_KERNEL,
    )?;
    // SAFETY: The consumer's attr, of this provider.
    unsafe { fabric.provider_open(attr, context) }?;
    provider.fabrics.fetch_add(1, Ordering::AcqRel);
    provider.count(abi::FI_CLASS_FABRIC, true);
    Ok(publish(fabric))
}

/// `fi_fabric()`: opens a fabric of the provider `attr->prov_name` names
/// (loading module kofi-<name> when needed).
#[no_mangle]
pub(crate) extern "C" fn fi_fabric(
    attr: *mut abi::fi_fabric_attr,
    fabric_out: *mut *mut abi::fid_fabric,
    context: *mut c_void,
) -> c_int {
    if fabric_out.is_null() {
        return EINVAL.to_errno();
    }
    out(fabric_out, fabric(attr, context))
}

fn domain(
    fabric: *mut abi::fid_fabric,
    info: *mut abi::fi_info,
    context: *mut c_void,
) -> Result<*mut abi::fid_domain> {
    // SAFETY: `fabric` is null or a kofi fid the consumer keeps open.
    let f = unsafe { lookup::<Fabric>(fabric) }?;
    // SAFETY: `info` is null or valid (ABI).
    let i = unsafe { check_info(info, f) }?;
    // SAFETY: `check_info` checked the attrs are set.
    let dattr = unsafe { &*i.domain_attr };
    let domain = Arc::pin_init(
        try_pin_init!(Domain {
            public: Opaque::new(abi::fid_domain {
                fid: fid_head(abi::FI_CLASS_DOMAIN, context),
            }),
            // SAFETY: `f` was published.
            fabric: unsafe { arc_of(f) },
            users: Users::default(),
            prov_key: dattr.mr_mode & abi::FI_MR_PROV_KEY as c_int != 0,
            mr_endpoint: dattr.mr_mode & abi::FI_MR_ENDPOINT as c_int != 0,
            mr_iov_limit: dattr.mr_iov_limit,
            cq_data_size: dattr.cq_data_size,
            mrs <- mr::MrTable::new(),
        }? Error),
        GFP_KERNEL,
    )?;
    // SAFETY: A checked info, valid (ABI).
    unsafe { domain.provider_open(info) }?;
    f.users.get();
    f.provider().count(abi::FI_CLASS_DOMAIN, true);
    Ok(publish(domain))
}

/// `fi_domain()`: opens a domain of `fabric` for `info`.
#[no_mangle]
pub(crate) extern "C" fn fi_domain(
    fabric: *mut abi::fid_fabric,
    info: *mut abi::fi_info,
    domain_out: *mut *mut abi::fid_domain,
    context: *mut c_void,
) -> c_int {
    if domain_out.is_null() {
        return EINVAL.to_errno();
    }
    out(domain_out, domain(fabric, info, context))
}

/// `fi_endpoint()`: opens an endpoint of `domain` for `info`.
#[no_mangle]
pub(crate) extern "C" fn fi_endpoint(
    domain: *mut abi::fid_domain,
    info: *mut abi::fi_info,
    ep_out: *mut *mut abi::fid_ep,
    context: *mut c_void,
) -> c_int {
    if ep_out.is_null() {
        return EINVAL.to_errno();
    }
    let open = || {
        // SAFETY: `domain` is null or a kofi fid the consumer keeps open.
        let d = unsafe { lookup::<Domain>(domain) }?;
        // SAFETY: `d` was published; `info` is null or valid (ABI).
        unsafe { open_endpoint(&arc_of(d), info, Context::of(context), &RdmEp) }
            .map(Owned::into_raw)
    };
    out(ep_out, open())
}

/// `fi_passive_ep()`: opens a passive endpoint (to listen) of `fabric`.
#[no_mangle]
pub(crate) extern "C" fn fi_passive_ep(
    fabric: *mut abi::fid_fabric,
    info: *mut abi::fi_info,
    pep_out: *mut *mut abi::fid_pep,
    context: *mut c_void,
) -> c_int {
    if pep_out.is_null() {
        return EINVAL.to_errno();
    }
    let open = || {
        // SAFETY: `fabric` is null or a kofi fid the consumer keeps open.
        let f = unsafe { lookup::<Fabric>(fabric) }?;
        // SAFETY: `f` was published; `info` is null or valid (ABI).
        unsafe { open_passive(&arc_of(f), info, Context::of(context)) }.map(Owned::into_raw)
    };
    out(pep_out, open())
}

/// `fi_cq_open()`: opens a completion queue of `domain`.
#[no_mangle]
pub(crate) extern "C" fn fi_cq_open(
    domain: *mut abi::fid_domain,
    attr: *mut abi::fi_cq_attr,
    cq_out: *mut *mut abi::fid_cq,
    context: *mut c_void,
) -> c_int {
    if cq_out.is_null() {
        return EINVAL.to_errno();
    }
    let open = || {
        // SAFETY: `domain` is null or a kofi fid the consumer keeps open.
        let d = unsafe { lookup::<Domain>(domain) }?;
        // SAFETY: `attr` is null or valid (ABI).
        let a = unsafe { attr.as_ref() }.ok_or(EINVAL)?;
        // SAFETY: `d` was published.
        open_cq(&unsafe { arc_of(d) }, a, Context::of(context), None).map(Owned::into_raw)
    };
    out(cq_out, open())
}

/// `fi_eq_open()`: opens an event queue of `fabric`.
#[no_mangle]
pub(crate) extern "C" fn fi_eq_open(
    fabric: *mut abi::fid_fabric,
    attr: *mut abi::fi_eq_attr,
    eq_out: *mut *mut abi::fid_eq,
    context: *mut c_void,
) -> c_int {
    if eq_out.is_null() {
        return EINVAL.to_errno();
    }
    let open = || {
        // SAFETY: `fabric` is null or a kofi fid the consumer keeps open.
        let f = unsafe { lookup::<Fabric>(fabric) }?;
        // SAFETY: `attr` is null or valid (ABI).
        let a = unsafe { attr.as_ref() }.ok_or(EINVAL)?;
        // SAFETY: `f` was published.
        open_eq(&unsafe { arc_of(f) }, a, Context::of(context), None).map(Owned::into_raw)
    };
    out(eq_out, open())
}

/// `fi_close()`: closes any kofi object; -EBUSY while it is in use (a domain
/// with endpoints, CQs or regions; a CQ or EQ bound to an endpoint; ...).
#[no_mangle]
pub(crate) extern "C" fn fi_close(fid: *mut abi::fid) -> c_int {
    // SAFETY: `fid` is null or a kofi fid the consumer gives up (ABI).
    to_c(unsafe { close(fid) })
}

/// `fi_control()`: FI_ENABLE on an endpoint; other commands are not supported.
#[no_mangle]
pub(crate) extern "C" fn fi_control(
    fid: *mut abi::fid,
    command: c_int,
    _arg: *mut c_void,
) -> c_int {
    // SAFETY: `fid` is null or a kofi fid the consumer keeps open.
    let class = match unsafe { class_of(fid) } {
        Ok(c) => c,
        Err(e) => return e.to_errno(),
    };
    match (class, command as u32) {
        (abi::FI_CLASS_EP, abi::FI_ENABLE) => fi_enable(fid.cast()),
        (abi::FI_CLASS_UNSPEC, _) => EINVAL.to_errno(),
        _ => errno::enosys().to_errno(),
    }
}

/// `fi_ep_bind()`: binds a CQ (FI_SEND and/or FI_RECV, optionally
/// FI_SELECTIVE_COMPLETION), an EQ, a counter (any of FI_SEND, FI_RECV,
/// FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE) or, to an FI_EP_RDM
/// endpoint, an AV to an endpoint, before fi_enable.
#[no_mangle]
pub(crate) extern "C" fn fi_ep_bind(
    ep: *mut abi::fid_ep,
    bfid: *mut abi::fid,
    flags: u64,
) -> c_int {
    let bind = || {
        // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
        let e = unsafe { lookup::<Endpoint>(ep) }?;
        // SAFETY: `bfid` is null or a kofi fid the consumer keeps open.
        e.bind(unsafe { Bind::of(bfid) }?, flags)
    };
    to_c(bind())
}

/// `fi_pep_bind()`: binds an EQ to a passive endpoint.
#[no_mangle]
pub(crate) extern "C" fn fi_pep_bind(
    pep: *mut abi::fid_pep,
    bfid: *mut abi::fid,
    flags: u64,
) -> c_int {
    let bind = || {
        // SAFETY: `pep` is null or a kofi fid the consumer keeps open.
        let p = unsafe { lookup::<PassiveEp>(pep) }?;
        // SAFETY: `bfid` is null or a kofi fid the consumer keeps open.
        p.bind_eq(unsafe { lookup::<Eq>(bfid.cast()) }?, flags)
    };
    to_c(bind())
}

/// `fi_enable()`: makes an endpoint usable; its CQs and EQ must be bound.
#[no_mangle]
pub(crate) extern "C" fn fi_enable(ep: *mut abi::fid_ep) -> c_int {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    to_c(unsafe { lookup::<Endpoint>(ep) }.and_then(|e| e.enable()))
}

fn getopt(
    fid: *mut abi::fid,
    level: c_int,
    name: c_int,
    val: *mut c_void,
    len: *mut usize,
) -> Result {
    // SAFETY: `fid` is null or a kofi fid the consumer keeps open.
    let e = unsafe { lookup::<Endpoint>(fid.cast()) }?;
    if val.is_null() || len.is_null() {
        return Err(EINVAL);
    }
    if level as u32 != abi::FI_OPT_ENDPOINT {
        return Err(errno::enoprotoopt());
    }
    // SAFETY: `len` is valid (checked non-null, ABI).
    let len = unsafe { &mut *len };
    if *len > isize::MAX as usize {
        return Err(EINVAL);
    }
    // SAFETY: `val` holds `*len` bytes (ABI), a length a slice can have.
    let buf = unsafe { core::slice::from_raw_parts_mut(val.cast::<u8>(), *len) };
    if let Some(result) = e.backend().getopt(e, name, buf, len) {
        return result;
    }
    if name as u32 == abi::FI_OPT_CM_DATA_SIZE {
        return usize_option(buf, len, abi::KOFI_CM_DATA_MAX as usize);
    }
    Err(errno::enoprotoopt())
}

/// `fi_getopt()`: an endpoint option (FI_OPT_ENDPOINT level).
#[no_mangle]
pub(crate) extern "C" fn fi_getopt(
    fid: *mut abi::fid,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: *mut usize,
) -> c_int {
    to_c(getopt(fid, level, optname, optval, optlen))
}

fn setopt(fid: *mut abi::fid, level: c_int, name: c_int, val: *const c_void, len: usize) -> Result {
    // SAFETY: `fid` is null or a kofi fid the consumer keeps open.
    let e = unsafe { lookup::<Endpoint>(fid.cast()) }?;
    if val.is_null() {
        return Err(EINVAL);
    }
    if level as u32 != abi::FI_OPT_ENDPOINT {
        return Err(errno::enoprotoopt());
    }
    if len > isize::MAX as usize {
        return Err(EINVAL);
    }
    // SAFETY: `val` holds `len` bytes (ABI), a length a slice can have.
    let val = unsafe { core::slice::from_raw_parts(val.cast::<u8>(), len) };
    e.backend().setopt(e, name, val)
}

/// `fi_setopt()`: sets an endpoint option the provider knows.
#[no_mangle]
pub(crate) extern "C" fn fi_setopt(
    fid: *mut abi::fid,
    level: c_int,
    optname: c_int,
    optval: *const c_void,
    optlen: usize,
) -> c_int {
    to_c(setopt(fid, level, optname, optval, optlen))
}
