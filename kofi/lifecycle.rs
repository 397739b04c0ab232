// SPDX-License-Identifier: GPL-2.0

//! Opening, binding, enabling and closing endpoints and queues as typed
//! calls. The exports (api_objects.rs) convert their C arguments and call
//! these; the RDM layer opens its MSG endpoints, queues and listener with
//! them and holds each as an [`Owned`], which closes it.

use crate::abi;
use crate::backend::ProviderEp;
use crate::cntr::{self, Cntr};
use crate::compat::CStrBytes;
use crate::context::Context;
use crate::errno;
use crate::flags::*;
use crate::info_match;
use crate::mr::{self, Mr};
use crate::object::{
    arc_of, class_of, lookup, publish, reclaim, Bind, ConnReq, Domain, Endpoint, EpBackend,
    EpLimits, Fabric, Object, PassiveEp,
};
use crate::queue::{Cq, Eq, QueueOwner};
use core::ops::Deref;
use core::ptr::NonNull;
use core::sync::atomic::Ordering;
use kernel::prelude::*;
use kernel::sync::Arc;

/// An object its opener holds: published (its C pointer is the one the
/// core hands out) and closed when dropped.
///
/// # Invariants
///
/// `0` is a published `T` (from [`publish`]) that only this value closes.
pub(crate) struct Owned<T: Object>(NonNull<T>);

// SAFETY: kofi objects may be used and closed from any thread.
unsafe impl<T: Object> Send for Owned<T> {}

impl<T: Object> Owned<T> {
    fn publish(object: Arc<T>) -> Self {
        let raw = publish(object).cast::<T>();
        // SAFETY: `Arc::into_raw` never gives null.
        // INVARIANT: Just published; only this value has the pointer.
        Owned(unsafe { NonNull::new_unchecked(raw) })
    }

    /// Hands the object to a consumer: the pointer it closes with fi_close.
    pub(crate) fn into_raw(self) -> *mut T::Public {
        let p = self.as_ptr();
        core::mem::forget(self);
        p
    }

    pub(crate) fn as_ptr(&self) -> *mut T::Public {
        self.0.as_ptr().cast()
    }

    /// Another reference, for use without the owner (it keeps the memory,
    /// not the object open).
    pub(crate) fn arc(&self) -> Arc<T> {
        // SAFETY: Published, so it lives in an `Arc` (the type invariant).
        unsafe { arc_of(&**self) }
    }
}

impl<T: Object> Deref for Owned<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: Open until this value drops (the type invariant).
        unsafe { self.0.as_ref() }
    }
}

impl<T: Object> Drop for Owned<T> {
    fn drop(&mut self) {
        // SAFETY: Published and closed only here (the type invariant); not
        // used after.
        if let Err(e) = unsafe { close(self.fid()) } {
            // Only a queue still bound can refuse, and owners close their
            // endpoints first.
            pr_warn!("kofi: closing an object the core opened: {:?}\n", e);
        }
    }
}

/// Checks that `info` is complete and belongs to `fabric`'s provider.
///
/// # Safety
///
/// `info` is null or a valid info, for `'a`.
pub(crate) unsafe fn check_info<'a>(
    info: *const abi::fi_info,
    fabric: &Fabric,
) -> Result<&'a abi::fi_info> {
    // SAFETY: The caller's guarantee.
    let i = unsafe { info.as_ref() }.ok_or(EINVAL)?;
    if i.tx_attr.is_null()
        || i.rx_attr.is_null()
        || i.ep_attr.is_null()
        || i.domain_attr.is_null()
        || i.fabric_attr.is_null()
    {
        return Err(EINVAL);
    }
    // SAFETY: Checked non-null; valid by the caller's guarantee.
    let prov = unsafe { (*i.fabric_attr).prov_name };
    if !prov.is_null() {
        // SAFETY: A NUL-terminated string (the info is valid).
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

/// Opens an endpoint of `domain` for `info`: the provider's
/// ([`ProviderEp`]), or for an info of the core's FI_EP_RDM protocol one
/// `rdm` implements (the RDM layer's backend, which this layer does not
/// name: the RDM layer opens its own endpoints here).
///
/// # Safety
///
/// `info` is null or a valid info, for the call.
pub(crate) unsafe fn open_endpoint(
    domain: &Arc<Domain>,
    info: *mut abi::fi_info,
    context: Context,
    rdm: &'static dyn EpBackend,
) -> Result<Owned<Endpoint>> {
    let d = &**domain;
    // SAFETY: The caller's guarantee.
    let i = unsafe { check_info(info, &d.fabric) }?;
    if !i.handle.is_null() {
        // A connection request is accepted by its own provider, in any of
        // its fabrics (one opened anew from the request's info, say).
        // SAFETY: `handle` is a kofi fid (the info is valid).
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
    let backend = if limits.core_rdm { rdm } else { &ProviderEp };
    let ep = Arc::pin_init(
        Endpoint::new(domain.clone(), limits, context.as_ptr(), backend),
        GFP_KERNEL,
    )?;
    // SAFETY: A checked info, valid (the caller's guarantee).
    unsafe { ep.backend().open(&ep, info) }?;
    d.users.get();
    d.fabric.provider().count(abi::FI_CLASS_EP, true);
    Ok(Owned::publish(ep))
}

/// Opens a passive endpoint (to listen) of `fabric` for `info`.
///
/// # Safety
///
/// As for [`open_endpoint`].
pub(crate) unsafe fn open_passive(
    fabric: &Arc<Fabric>,
    info: *mut abi::fi_info,
    context: Context,
) -> Result<Owned<PassiveEp>> {
    // SAFETY: The caller's guarantee.
    let i = unsafe { check_info(info, fabric) }?;
    let pep = Arc::pin_init(
        PassiveEp::new(fabric.clone(), context.as_ptr(), i),
        GFP_KERNEL,
    )?;
    // SAFETY: A checked info, valid (the caller's guarantee).
    unsafe { pep.provider_open(info) }?;
    fabric.users.get();
    fabric.provider().count(abi::FI_CLASS_PEP, true);
    Ok(Owned::publish(pep))
}

/// Opens a completion queue of `domain`; `owner` is told of its entries
/// (see [`QueueOwner`]).
pub(crate) fn open_cq(
    domain: &Arc<Domain>,
    attr: &abi::fi_cq_attr,
    context: Context,
    owner: Option<Arc<dyn QueueOwner>>,
) -> Result<Owned<Cq>> {
    let cq = Cq::new(domain.clone(), attr, context.as_ptr(), owner)?;
    let cq = Arc::pin_init(cq, GFP_KERNEL)?;
    domain.users.get();
    domain.fabric.provider().count(abi::FI_CLASS_CQ, true);
    Ok(Owned::publish(cq))
}

/// Opens an event queue of `fabric`; `owner` is told of its events (see
/// [`QueueOwner`]).
pub(crate) fn open_eq(
    fabric: &Arc<Fabric>,
    attr: &abi::fi_eq_attr,
    context: Context,
    owner: Option<Arc<dyn QueueOwner>>,
) -> Result<Owned<Eq>> {
    let eq = Eq::new(fabric.clone(), attr, context.as_ptr(), owner)?;
    let eq = Arc::pin_init(eq, GFP_KERNEL)?;
    fabric.users.get();
    fabric.provider().count(abi::FI_CLASS_EQ, true);
    Ok(Owned::publish(eq))
}

/// Closes the object `fid` names; -EBUSY while it is in use (a domain with
/// endpoints, CQs or regions; a CQ or EQ bound to an endpoint; ...).
///
/// # Safety
///
/// `fid` is null or a kofi fid whose owner gives it up: on success it is
/// not used after.
pub(crate) unsafe fn close(fid: *mut abi::fid) -> Result {
    // SAFETY: The caller's guarantee.
    let class = unsafe { class_of(fid) }?;
    match class {
        abi::FI_CLASS_FABRIC => {
            // SAFETY: The class says it is a fabric.
            let f = unsafe { lookup::<Fabric>(fid.cast()) }?;
            f.users.check_idle()?;
            f.provider_close();
            f.provider().fabrics.fetch_sub(1, Ordering::AcqRel);
            f.provider().count(abi::FI_CLASS_FABRIC, false);
            // SAFETY: The owner's reference, not used after.
            drop(unsafe { reclaim::<Fabric>(fid.cast()) });
        }
        abi::FI_CLASS_DOMAIN => {
            // SAFETY: The class says it is a domain.
            let d = unsafe { lookup::<Domain>(fid.cast()) }?;
            d.users.check_idle()?;
            d.provider_close();
            d.fabric.users.put();
            d.fabric.provider().count(abi::FI_CLASS_DOMAIN, false);
            // SAFETY: The owner's reference, not used after.
            drop(unsafe { reclaim::<Domain>(fid.cast()) });
        }
        abi::FI_CLASS_EP => {
            // SAFETY: The class says it is an endpoint.
            let ep = unsafe { lookup::<Endpoint>(fid.cast()) }?;
            ep.users.check_idle()?;
            ep.stop_progress();
            ep.backend().close(ep);
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
            // SAFETY: The owner's reference, not used after.
            drop(unsafe { reclaim::<Endpoint>(fid.cast()) });
        }
        abi::FI_CLASS_PEP => {
            // SAFETY: The class says it is a passive endpoint.
            let pep = unsafe { lookup::<PassiveEp>(fid.cast()) }?;
            pep.provider_close();
            let eq = pep.eq.lock().take();
            if let Some(eq) = eq {
                // As for an endpoint: its unread errors go with it (a
                // request's FI_CONNREQ stays, its handle holding the pep).
                eq.purge(fid);
                eq.users.put();
            }
            pep.fabric.users.put();
            pep.fabric.provider().count(abi::FI_CLASS_PEP, false);
            // SAFETY: The owner's reference, not used after.
            drop(unsafe { reclaim::<PassiveEp>(fid.cast()) });
        }
        abi::FI_CLASS_CQ => {
            // SAFETY: The class says it is a CQ.
            let cq = unsafe { lookup::<Cq>(fid.cast()) }?;
            cq.users.check_idle()?;
            cq.domain.users.put();
            cq.domain.fabric.provider().count(abi::FI_CLASS_CQ, false);
            // SAFETY: The owner's reference, not used after.
            drop(unsafe { reclaim::<Cq>(fid.cast()) });
        }
        abi::FI_CLASS_EQ => {
            // SAFETY: The class says it is an EQ.
            let eq = unsafe { lookup::<Eq>(fid.cast()) }?;
            eq.users.check_idle()?;
            eq.fabric.users.put();
            eq.fabric.provider().count(abi::FI_CLASS_EQ, false);
            // SAFETY: The owner's reference, not used after.
            drop(unsafe { reclaim::<Eq>(fid.cast()) });
        }
        abi::FI_CLASS_MR => {
            // SAFETY: The class says it is a region.
            let m = unsafe { lookup::<Mr>(fid.cast()) }?;
            mr::close(m)?;
            // SAFETY: The owner's reference, not used after.
            drop(unsafe { reclaim::<Mr>(fid.cast()) });
        }
        abi::FI_CLASS_AV => {
            // SAFETY: The class says it is an AV, which the owner gives up.
            unsafe { crate::av::close(fid) }?;
        }
        abi::FI_CLASS_CNTR => {
            // SAFETY: The class says it is a counter, which the owner gives up.
            unsafe { cntr::close(fid) }?;
        }
        // Connection requests go with their info (fi_freeinfo), not fi_close.
        _ => return Err(EINVAL),
    }
    Ok(())
}

impl Endpoint {
    /// Binds a CQ (FI_SEND and/or FI_RECV, optionally
    /// FI_SELECTIVE_COMPLETION), an EQ, a counter (any of FI_SEND, FI_RECV,
    /// FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE) or, to an
    /// FI_EP_RDM endpoint, an AV, before [`Endpoint::enable`].
    pub(crate) fn bind(&self, target: Bind<'_>, flags: u64) -> Result {
        if self.is_enabled() {
            return Err(errno::eopbadstate());
        }
        match target {
            Bind::Cq(cq) => self.bind_cq(cq, flags)?,
            Bind::Eq(eq) => {
                if !Arc::ptr_eq(&eq.fabric, &self.domain.fabric) || flags != 0 {
                    return Err(EINVAL);
                }
                let mut b = self.bindings.lock();
                if b.eq.is_some() {
                    return Err(EINVAL);
                }
                // SAFETY: Every `Eq` lives in an `Arc` (`open_eq`).
                b.eq = Some(unsafe { arc_of(eq) });
                eq.users.get();
            }
            // The core counts what the provider reports: nothing to tell it.
            Bind::Cntr(c) => return self.bind_cntr(c, flags),
            Bind::Av(av) => {
                if !self.is_rdm() || !Arc::ptr_eq(&av.domain, &self.domain) || flags != 0 {
                    return Err(EINVAL);
                }
                let mut b = self.bindings.lock();
                if b.av.is_some() {
                    return Err(EINVAL);
                }
                // SAFETY: Every `Av` lives in an `Arc` (fi_av_open's).
                b.av = Some(unsafe { arc_of(av) });
                av.users.get();
                // The core's RDM endpoint reads the binding itself.
                return Ok(());
            }
        }
        let Err(e) = self.backend().bind(self, target, flags) else {
            return Ok(());
        };
        // The provider refused: undo what was recorded for this call.
        let mut guard = self.bindings.lock();
        let b = &mut *guard;
        match target {
            Bind::Cq(bound) => {
                for slot in [&mut b.tx_cq, &mut b.rx_cq] {
                    if slot.as_deref().is_some_and(|c| core::ptr::eq(c, bound)) {
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
        Err(e)
    }

    fn bind_cq(&self, cq: &Cq, flags: u64) -> Result {
        if flags & !CQ_BIND_FLAGS != 0 {
            return Err(errno::ebadflags());
        }
        if !Arc::ptr_eq(&cq.domain, &self.domain) {
            return Err(EINVAL);
        }
        if flags & (FI_SEND | FI_RECV) == 0 {
            return Err(EINVAL);
        }
        let selective = flags & FI_SELECTIVE_COMPLETION != 0;
        let mut b = self.bindings.lock();
        if (flags & FI_SEND != 0 && b.tx_cq.is_some())
            || (flags & FI_RECV != 0 && b.rx_cq.is_some())
        {
            return Err(EINVAL);
        }
        if flags & FI_SEND != 0 {
            // SAFETY: Every `Cq` lives in an `Arc` (`open_cq`).
            b.tx_cq = Some(unsafe { arc_of(cq) });
            b.tx_selective = selective;
            cq.users.get();
        }
        if flags & FI_RECV != 0 {
            // SAFETY: As above.
            b.rx_cq = Some(unsafe { arc_of(cq) });
            b.rx_selective = selective;
            cq.users.get();
        }
        Ok(())
    }

    /// Binds counter `c` for the kinds of operation in `flags`.
    fn bind_cntr(&self, c: &Cntr, flags: u64) -> Result {
        if flags & !cntr::BIND_EVENTS != 0 {
            return Err(errno::ebadflags());
        }
        if flags == 0 || !Arc::ptr_eq(&c.domain, &self.domain) {
            return Err(EINVAL);
        }
        // A peer's RMA is seen only where the info promises it (FI_RMA_EVENT).
        if flags & (FI_REMOTE_READ | FI_REMOTE_WRITE) != 0 && self.limits.caps & FI_RMA_EVENT == 0 {
            return Err(EINVAL);
        }
        let mut b = self.bindings.lock();
        let kinds = cntr::EVENTS
            .iter()
            .enumerate()
            .filter(|(_, &k)| flags & k != 0);
        if kinds.clone().any(|(i, _)| b.cntrs[i].is_some()) {
            return Err(EINVAL);
        }
        for (i, _) in kinds {
            // SAFETY: Every `Cntr` lives in an `Arc` (fi_cntr_open's).
            b.cntrs[i] = Some(unsafe { arc_of(c) });
            c.users.get();
        }
        self.counted.store(true, Ordering::Release);
        Ok(())
    }

    /// Makes the endpoint usable; its CQs and EQ must be bound.
    pub(crate) fn enable(&self) -> Result {
        if self.is_enabled() {
            return Err(errno::eopbadstate());
        }
        {
            let b = self.bindings.lock();
            let caps = self.limits.caps;
            if self.limits.ep_type == abi::fi_ep_type_FI_EP_MSG && b.eq.is_none() {
                return Err(errno::enoeq());
            }
            if self.is_rdm() && b.av.is_none() {
                return Err(errno::enoav());
            }
            // Every class needs its queues (FI_TAGGED alone, say), in the
            // directions its endpoint may use, as the data calls allow them.
            let messages = caps & (FI_MSG | FI_TAGGED) != 0;
            let rma = caps & (FI_RMA | FI_ATOMIC) != 0;
            let transmits = (messages && info_match::allows(caps, FI_SEND))
                || (rma
                    && (info_match::allows(caps, FI_READ) || info_match::allows(caps, FI_WRITE)));
            let receives = messages && info_match::allows(caps, FI_RECV);
            if (transmits && b.tx_cq.is_none()) || (receives && b.rx_cq.is_none()) {
                return Err(errno::enocq());
            }
        }
        self.backend().enable(self)?;
        self.enabled.store(true, Ordering::Release);
        Ok(())
    }
}

impl PassiveEp {
    /// Binds EQ `eq`, before listening.
    pub(crate) fn bind_eq(&self, eq: &Eq, flags: u64) -> Result {
        if flags != 0 {
            return Err(errno::ebadflags());
        }
        if !Arc::ptr_eq(&eq.fabric, &self.fabric) || self.listening.load(Ordering::Acquire) {
            return Err(EINVAL);
        }
        let mut slot = self.eq.lock();
        if slot.is_some() {
            return Err(EINVAL);
        }
        // SAFETY: Every `Eq` lives in an `Arc` (`open_eq`).
        *slot = Some(unsafe { arc_of(eq) });
        eq.users.get();
        Ok(())
    }
}
