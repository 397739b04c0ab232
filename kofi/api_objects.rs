// SPDX-License-Identifier: GPL-2.0

//! The exported calls that open, bind, enable and close objects.
//! Each checks its arguments and the objects' states, then dispatches to
//! the provider. All are for process context.

use crate::abi;
use crate::cntr::{self, Cntr};
use crate::compat::CStrBytes;
use crate::errno::{self, to_c};
use crate::flags::*;
use crate::info_match;
use crate::mr::{self, Mr};
use crate::object::{
    arc_of, class_of, fid_head, lookup, publish, reclaim, ConnReq, Domain, Endpoint, EpLimits,
    Fabric, Object, PassiveEp, Users,
};
use crate::queue::{Cq, Eq};
use crate::registry::Registry;
use core::sync::atomic::Ordering;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::Opaque;

/// Stores a new object's pointer for the consumer.
pub(crate) fn out<T>(dst: *mut *mut T, result: Result<*mut T>) -> c_int {
    match result {
        Ok(p) => {
            // SAFETY: The callers check `dst` is non-null before any work.
            unsafe { *dst = p };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// The return of a provider op as a `Result`.
fn op_result(ret: c_int) -> Result {
    if ret == 0 {
        Ok(())
    } else {
        Err(Error::from_errno(ret))
    }
}

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
    let open = module.table().fabric.ok_or_else(errno::enosys)?;
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
    // SAFETY: The provider's module is pinned by the fabric; `fabric` is new.
    op_result(unsafe { open(attr, fabric.public(), context) })?;
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

/// Checks that `info` is complete and belongs to `fabric`'s provider.
fn check_info<'a>(info: *const abi::fi_info, fabric: &Fabric) -> Result<&'a abi::fi_info> {
    // SAFETY: `info` is null or valid (ABI).
    let i = unsafe { info.as_ref() }.ok_or(EINVAL)?;
    if i.tx_attr.is_null()
        || i.rx_attr.is_null()
        || i.ep_attr.is_null()
        || i.domain_attr.is_null()
        || i.fabric_attr.is_null()
    {
        return Err(EINVAL);
    }
    // SAFETY: Checked non-null; valid by the ABI.
    let prov = unsafe { (*i.fabric_attr).prov_name };
    if !prov.is_null() {
        // SAFETY: A NUL-terminated string (ABI).
        let name = unsafe { CStr::from_char_ptr(prov) };
        if !name
            .cstr_bytes()
            .eq_ignore_ascii_case(fabric.provider().name.cstr_bytes())
        {
            return Err(EINVAL);
        }
    }
    Ok(i)
}

fn domain(
    fabric: *mut abi::fid_fabric,
    info: *mut abi::fi_info,
    context: *mut c_void,
) -> Result<*mut abi::fid_domain> {
    // SAFETY: `fabric` is null or a kofi fid the consumer keeps open.
    let f = unsafe { lookup::<Fabric>(fabric) }?;
    let i = check_info(info, f)?;
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
    let open = domain.ops().open.ok_or_else(errno::enosys)?;
    // SAFETY: The module is pinned by the fabric; the objects are valid.
    op_result(unsafe { open(fabric, info, domain.public()) })?;
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

fn limits(i: &abi::fi_info) -> EpLimits {
    // SAFETY: `check_info` checked the attrs are set.
    let (tx, rx, ep) = unsafe { (&*i.tx_attr, &*i.rx_attr, &*i.ep_attr) };
    EpLimits {
        caps: i.caps,
        ep_type: ep.type_,
        max_msg_size: ep.max_msg_size,
        inject_size: tx.inject_size,
        tx_iov_limit: tx.iov_limit.max(1),
        rx_iov_limit: rx.iov_limit.max(1),
        rma_iov_limit: tx.rma_iov_limit.max(1),
        tx_op_flags: tx.op_flags,
        rx_op_flags: rx.op_flags,
        core_rdm: ep.type_ == abi::fi_ep_type_FI_EP_RDM && ep.protocol == abi::FI_PROTO_KOFI_RDM,
    }
}

fn endpoint(
    domain: *mut abi::fid_domain,
    info: *mut abi::fi_info,
    context: *mut c_void,
) -> Result<*mut abi::fid_ep> {
    // SAFETY: `domain` is null or a kofi fid the consumer keeps open.
    let d = unsafe { lookup::<Domain>(domain) }?;
    let i = check_info(info, &d.fabric)?;
    if !i.handle.is_null() {
        // A connection request is accepted by its own provider, in any of
        // its fabrics (one opened anew from the request's info, say).
        // SAFETY: `handle` is a kofi fid (ABI).
        let req = unsafe { lookup::<ConnReq>(i.handle) }?;
        if !Arc::ptr_eq(req.pep.fabric.provider(), d.fabric.provider()) {
            return Err(EINVAL);
        }
    }
    // SAFETY: `check_info` checked the attrs are set.
    let ep_attr = unsafe { &*i.ep_attr };
    // One transmit and one receive context (0 asks for the default one):
    // kofi has no scalable endpoints, nor shared contexts (usize::MAX).
    if ep_attr.tx_ctx_cnt > 1 || ep_attr.rx_ctx_cnt > 1 {
        return Err(EINVAL);
    }
    let limits = limits(i);
    // The default op_flags apply to every plain call: only what a call takes.
    if limits.tx_op_flags & !TX_OP_FLAGS != 0 || limits.rx_op_flags & !RX_OP_FLAGS != 0 {
        return Err(errno::ebadflags());
    }
    // SAFETY: `d` was published.
    let ep = Arc::pin_init(
        Endpoint::new(unsafe { arc_of(d) }, limits, context),
        GFP_KERNEL,
    )?;
    let open = ep.ops().open.ok_or_else(errno::enosys)?;
    // SAFETY: The module is pinned by the fabric; the objects are valid.
    op_result(unsafe { open(domain, info, ep.public()) })?;
    d.users.get();
    d.fabric.provider().count(abi::FI_CLASS_EP, true);
    Ok(publish(ep))
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
    out(ep_out, endpoint(domain, info, context))
}

fn passive_ep(
    fabric: *mut abi::fid_fabric,
    info: *mut abi::fi_info,
    context: *mut c_void,
) -> Result<*mut abi::fid_pep> {
    // SAFETY: `fabric` is null or a kofi fid the consumer keeps open.
    let f = unsafe { lookup::<Fabric>(fabric) }?;
    let i = check_info(info, f)?;
    // SAFETY: `f` was published.
    let pep = Arc::pin_init(PassiveEp::new(unsafe { arc_of(f) }, context, i), GFP_KERNEL)?;
    let open = pep.ops().and_then(|o| o.open).ok_or_else(errno::enosys)?;
    // SAFETY: The module is pinned by the fabric; the objects are valid.
    op_result(unsafe { open(fabric, info, pep.public()) })?;
    f.users.get();
    f.provider().count(abi::FI_CLASS_PEP, true);
    Ok(publish(pep))
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
    out(pep_out, passive_ep(fabric, info, context))
}

fn cq_open(
    domain: *mut abi::fid_domain,
    attr: *mut abi::fi_cq_attr,
    context: *mut c_void,
) -> Result<*mut abi::fid_cq> {
    // SAFETY: `domain` is null or a kofi fid the consumer keeps open.
    let d = unsafe { lookup::<Domain>(domain) }?;
    // SAFETY: `attr` is null or valid (ABI).
    let a = unsafe { attr.as_ref() }.ok_or(EINVAL)?;
    // SAFETY: `d` was published.
    let cq = Arc::pin_init(Cq::new(unsafe { arc_of(d) }, a, context)?, GFP_KERNEL)?;
    d.users.get();
    d.fabric.provider().count(abi::FI_CLASS_CQ, true);
    Ok(publish(cq))
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
    out(cq_out, cq_open(domain, attr, context))
}

fn eq_open(
    fabric: *mut abi::fid_fabric,
    attr: *mut abi::fi_eq_attr,
    context: *mut c_void,
) -> Result<*mut abi::fid_eq> {
    // SAFETY: `fabric` is null or a kofi fid the consumer keeps open.
    let f = unsafe { lookup::<Fabric>(fabric) }?;
    // SAFETY: `attr` is null or valid (ABI).
    let a = unsafe { attr.as_ref() }.ok_or(EINVAL)?;
    // SAFETY: `f` was published.
    let eq = Arc::pin_init(Eq::new(unsafe { arc_of(f) }, a, context)?, GFP_KERNEL)?;
    f.users.get();
    f.provider().count(abi::FI_CLASS_EQ, true);
    Ok(publish(eq))
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
    out(eq_out, eq_open(fabric, attr, context))
}

fn close(fid: *mut abi::fid) -> Result {
    // SAFETY: `fid` is null or a kofi fid the consumer owns.
    let class = unsafe { class_of(fid) }?;
    match class {
        abi::FI_CLASS_FABRIC => {
            // SAFETY: The class says it is a fabric.
            let f = unsafe { lookup::<Fabric>(fid.cast()) }?;
            f.users.check_idle()?;
            if let Some(close) = f.table().fabric_close {
                // SAFETY: The provider's fabric, its module pinned.
                unsafe { close(f.public()) };
            }
            f.provider().fabrics.fetch_sub(1, Ordering::AcqRel);
            f.provider().count(abi::FI_CLASS_FABRIC, false);
            // SAFETY: The consumer's reference, not used after.
            drop(unsafe { reclaim::<Fabric>(fid.cast()) });
        }
        abi::FI_CLASS_DOMAIN => {
            // SAFETY: The class says it is a domain.
            let d = unsafe { lookup::<Domain>(fid.cast()) }?;
            d.users.check_idle()?;
            if let Some(close) = d.ops().close {
                // SAFETY: The provider's domain, its module pinned.
                unsafe { close(d.public()) };
            }
            d.fabric.users.put();
            d.fabric.provider().count(abi::FI_CLASS_DOMAIN, false);
            // SAFETY: The consumer's reference, not used after.
            drop(unsafe { reclaim::<Domain>(fid.cast()) });
        }
        abi::FI_CLASS_EP => {
            // SAFETY: The class says it is an endpoint.
            let ep = unsafe { lookup::<Endpoint>(fid.cast()) }?;
            ep.users.check_idle()?;
            ep.stop_progress();
            if let Some(close) = ep.ops().close {
                // SAFETY: The provider's endpoint; it reports nothing after.
                unsafe { close(ep.public()) };
            }
            let b = core::mem::take(&mut *ep.bindings.lock());
            // Progress it asked for and no sleeper made yet: none is made now.
            if let Some(cq) = &b.rx_cq {
                cq.forget_progress(ep);
            }
            for cq in [&b.tx_cq, &b.rx_cq].into_iter().flatten() {
                cq.users.put();
            }
            if let Some(eq) = &b.eq {
                // The provider reports nothing more: what it reported and
                // nobody read goes with the endpoint.
                eq.purge(fid);
                eq.users.put();
            }
            if let Some(av) = &b.av {
                av.users.put();
            }
            for c in b.cntrs.iter().flatten() {
                c.users.put();
            }
            drop(b);
            ep.domain.users.put();
            ep.domain.fabric.provider().count(abi::FI_CLASS_EP, false);
            // SAFETY: The consumer's reference, not used after.
            drop(unsafe { reclaim::<Endpoint>(fid.cast()) });
        }
        abi::FI_CLASS_PEP => {
            // SAFETY: The class says it is a passive endpoint.
            let pep = unsafe { lookup::<PassiveEp>(fid.cast()) }?;
            if let Some(close) = pep.ops().and_then(|o| o.close) {
                // SAFETY: The provider's endpoint; it reports nothing after.
                unsafe { close(pep.public()) };
            }
            let eq = pep.eq.lock().take();
            if let Some(eq) = eq {
                // As for an endpoint: its unread errors go with it (a
                // request's FI_CONNREQ stays, its handle holding the pep).
                eq.purge(fid);
                eq.users.put();
            }
            pep.fabric.users.put();
            pep.fabric.provider().count(abi::FI_CLASS_PEP, false);
            // SAFETY: The consumer's reference, not used after.
            drop(unsafe { reclaim::<PassiveEp>(fid.cast()) });
        }
        abi::FI_CLASS_CQ => {
            // SAFETY: The class says it is a CQ.
            let cq = unsafe { lookup::<Cq>(fid.cast()) }?;
            cq.users.check_idle()?;
            cq.domain.users.put();
            cq.domain.fabric.provider().count(abi::FI_CLASS_CQ, false);
            // SAFETY: The consumer's reference, not used after.
            drop(unsafe { reclaim::<Cq>(fid.cast()) });
        }
        abi::FI_CLASS_EQ => {
            // SAFETY: The class says it is an EQ.
            let eq = unsafe { lookup::<Eq>(fid.cast()) }?;
            eq.users.check_idle()?;
            eq.fabric.users.put();
            eq.fabric.provider().count(abi::FI_CLASS_EQ, false);
            // SAFETY: The consumer's reference, not used after.
            drop(unsafe { reclaim::<Eq>(fid.cast()) });
        }
        abi::FI_CLASS_MR => {
            // SAFETY: The class says it is a region.
            let m = unsafe { lookup::<Mr>(fid.cast()) }?;
            mr::close(m)?;
            // SAFETY: The consumer's reference, not used after.
            drop(unsafe { reclaim::<Mr>(fid.cast()) });
        }
        abi::FI_CLASS_AV => {
            // SAFETY: The class says it is an AV, which the consumer gives up.
            unsafe { crate::av::close(fid) }?;
        }
        abi::FI_CLASS_CNTR => {
            // SAFETY: The class says it is a counter, which the consumer gives up.
            unsafe { cntr::close(fid) }?;
        }
        // Connection requests go with their info (fi_freeinfo), not fi_close.
        _ => return Err(EINVAL),
    }
    Ok(())
}

/// `fi_close()`: closes any kofi object; -EBUSY while it is in use (a domain
/// with endpoints, CQs or regions; a CQ or EQ bound to an endpoint; ...).
#[no_mangle]
pub(crate) extern "C" fn fi_close(fid: *mut abi::fid) -> c_int {
    to_c(close(fid))
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

fn ep_bind(ep: *mut abi::fid_ep, bfid: *mut abi::fid, flags: u64) -> Result {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    if e.is_enabled() {
        return Err(errno::eopbadstate());
    }
    // SAFETY: `bfid` is null or a kofi fid the consumer keeps open.
    match unsafe { class_of(bfid) }? {
        abi::FI_CLASS_CQ => {
            if flags & !CQ_BIND_FLAGS != 0 {
                return Err(errno::ebadflags());
            }
            // SAFETY: The class says it is a CQ.
            let cq = unsafe { lookup::<Cq>(bfid.cast()) }?;
            if !Arc::ptr_eq(&cq.domain, &e.domain) {
                return Err(EINVAL);
            }
            if flags & (FI_SEND | FI_RECV) == 0 {
                return Err(EINVAL);
            }
            let selective = flags & FI_SELECTIVE_COMPLETION != 0;
            let mut b = e.bindings.lock();
            if (flags & FI_SEND != 0 && b.tx_cq.is_some())
                || (flags & FI_RECV != 0 && b.rx_cq.is_some())
            {
                return Err(EINVAL);
            }
            if flags & FI_SEND != 0 {
                // SAFETY: `cq` was published.
                b.tx_cq = Some(unsafe { arc_of(cq) });
                b.tx_selective = selective;
                cq.users.get();
            }
            if flags & FI_RECV != 0 {
                // SAFETY: `cq` was published.
                b.rx_cq = Some(unsafe { arc_of(cq) });
                b.rx_selective = selective;
                cq.users.get();
            }
        }
        abi::FI_CLASS_EQ => {
            // SAFETY: The class says it is an EQ.
            let eq = unsafe { lookup::<Eq>(bfid.cast()) }?;
            if !Arc::ptr_eq(&eq.fabric, &e.domain.fabric) || flags != 0 {
                return Err(EINVAL);
            }
            let mut b = e.bindings.lock();
            if b.eq.is_some() {
                return Err(EINVAL);
            }
            // SAFETY: `eq` was published.
            b.eq = Some(unsafe { arc_of(eq) });
            eq.users.get();
        }
        abi::FI_CLASS_CNTR => {
            // The core counts what the provider reports: nothing to tell it.
            return bind_cntr(e, bfid, flags);
        }
        abi::FI_CLASS_AV => {
            // SAFETY: The class says it is an AV.
            let av = unsafe { lookup::<crate::av::Av>(bfid.cast()) }?;
            if !e.is_rdm() || !Arc::ptr_eq(&av.domain, &e.domain) || flags != 0 {
                return Err(EINVAL);
            }
            let mut b = e.bindings.lock();
            if b.av.is_some() {
                return Err(EINVAL);
            }
            // SAFETY: `av` was published.
            b.av = Some(unsafe { arc_of(av) });
            av.users.get();
            // The core's RDM endpoint reads the binding itself.
            return Ok(());
        }
        _ => return Err(EINVAL),
    }
    if let Some(bind) = e.ops().bind {
        // SAFETY: The provider's endpoint and a valid fid.
        let ret = unsafe { bind(ep, bfid, flags) };
        if ret != 0 {
            // The provider refused: undo what was recorded for this call.
            let mut guard = e.bindings.lock();
            let b = &mut *guard;
            // SAFETY: `bfid`'s class was checked above.
            match unsafe { class_of(bfid) }? {
                abi::FI_CLASS_CQ => {
                    for slot in [&mut b.tx_cq, &mut b.rx_cq] {
                        if slot.as_ref().is_some_and(|c| c.fid() == bfid) {
                            if let Some(cq) = slot.take() {
                                cq.users.put();
                            }
                        }
                    }
                }
                _ => {
                    if let Some(eq) = b.eq.take() {
                        eq.users.put();
                    }
                }
            }
            return Err(Error::from_errno(ret));
        }
    }
    Ok(())
}

/// Binds counter `bfid` to `e` for the kinds of operation in `flags`.
fn bind_cntr(e: &Endpoint, bfid: *mut abi::fid, flags: u64) -> Result {
    if flags & !cntr::BIND_EVENTS != 0 {
        return Err(errno::ebadflags());
    }
    // SAFETY: The caller checked the class: a counter the consumer keeps open.
    let c = unsafe { lookup::<Cntr>(bfid.cast()) }?;
    if flags == 0 || !Arc::ptr_eq(&c.domain, &e.domain) {
        return Err(EINVAL);
    }
    // A peer's RMA is seen only where the info promises it (FI_RMA_EVENT).
    if flags & (FI_REMOTE_READ | FI_REMOTE_WRITE) != 0 && e.limits.caps & FI_RMA_EVENT == 0 {
        return Err(EINVAL);
    }
    let mut b = e.bindings.lock();
    let kinds = cntr::EVENTS
        .iter()
        .enumerate()
        .filter(|(_, &k)| flags & k != 0);
    if kinds.clone().any(|(i, _)| b.cntrs[i].is_some()) {
        return Err(EINVAL);
    }
    for (i, _) in kinds {
        // SAFETY: `c` was published.
        b.cntrs[i] = Some(unsafe { arc_of(c) });
        c.users.get();
    }
    e.counted.store(true, Ordering::Release);
    Ok(())
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
    to_c(ep_bind(ep, bfid, flags))
}

fn pep_bind(pep: *mut abi::fid_pep, bfid: *mut abi::fid, flags: u64) -> Result {
    // SAFETY: `pep` is null or a kofi fid the consumer keeps open.
    let p = unsafe { lookup::<PassiveEp>(pep) }?;
    if flags != 0 {
        return Err(errno::ebadflags());
    }
    // SAFETY: `bfid` is null or a kofi fid the consumer keeps open.
    let eq = unsafe { lookup::<Eq>(bfid.cast()) }?;
    if !Arc::ptr_eq(&eq.fabric, &p.fabric) || p.listening.load(Ordering::Acquire) {
        return Err(EINVAL);
    }
    let mut slot = p.eq.lock();
    if slot.is_some() {
        return Err(EINVAL);
    }
    // SAFETY: `eq` was published.
    *slot = Some(unsafe { arc_of(eq) });
    eq.users.get();
    Ok(())
}

/// `fi_pep_bind()`: binds an EQ to a passive endpoint.
#[no_mangle]
pub(crate) extern "C" fn fi_pep_bind(
    pep: *mut abi::fid_pep,
    bfid: *mut abi::fid,
    flags: u64,
) -> c_int {
    to_c(pep_bind(pep, bfid, flags))
}

fn enable(ep: *mut abi::fid_ep) -> Result {
    // SAFETY: `ep` is null or a kofi fid the consumer keeps open.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    if e.is_enabled() {
        return Err(errno::eopbadstate());
    }
    {
        let b = e.bindings.lock();
        let caps = e.limits.caps;
        if e.limits.ep_type == abi::fi_ep_type_FI_EP_MSG && b.eq.is_none() {
            return Err(errno::enoeq());
        }
        if e.is_rdm() && b.av.is_none() {
            return Err(errno::enoav());
        }
        // Every class needs its queues (FI_TAGGED alone, say), in the
        // directions its endpoint may use, as the data calls allow them.
        let messages = caps & (FI_MSG | FI_TAGGED) != 0;
        let rma = caps & (FI_RMA | FI_ATOMIC) != 0;
        let transmits = (messages && info_match::allows(caps, FI_SEND))
            || (rma && (info_match::allows(caps, FI_READ) || info_match::allows(caps, FI_WRITE)));
        let receives = messages && info_match::allows(caps, FI_RECV);
        if (transmits && b.tx_cq.is_none()) || (receives && b.rx_cq.is_none()) {
            return Err(errno::enocq());
        }
    }
    if let Some(en) = e.ops().enable {
        // SAFETY: The provider's endpoint.
        op_result(unsafe { en(ep) })?;
    }
    e.enabled.store(true, Ordering::Release);
    Ok(())
}

/// `fi_enable()`: makes an endpoint usable; its CQs and EQ must be bound.
#[no_mangle]
pub(crate) extern "C" fn fi_enable(ep: *mut abi::fid_ep) -> c_int {
    to_c(enable(ep))
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
    if let Some(get) = e.ops().getopt {
        // SAFETY: The provider's endpoint; the buffers are the consumer's.
        return op_result(unsafe { get(fid.cast(), level, name, val, len) });
    }
    if name as u32 == abi::FI_OPT_CM_DATA_SIZE {
        // SAFETY: `len` is valid (checked non-null, ABI).
        if unsafe { *len } < core::mem::size_of::<usize>() {
            return Err(errno::etoosmall());
        }
        // SAFETY: `val` holds a size_t (checked length).
        unsafe {
            val.cast::<usize>()
                .write_unaligned(abi::KOFI_CM_DATA_MAX as usize);
            *len = core::mem::size_of::<usize>();
        }
        return Ok(());
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
    match e.ops().setopt {
        // SAFETY: The provider's endpoint; the buffer is the consumer's.
        Some(set) => op_result(unsafe { set(fid.cast(), level, name, val, len) }),
        None => Err(errno::enoprotoopt()),
    }
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
