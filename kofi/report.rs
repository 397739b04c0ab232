// SPDX-License-Identifier: GPL-2.0

//! The calls providers use to report completions and events (see
//! `kofi_provider.h`). They may run in softirq context.

use crate::abi;
use crate::context::Context;
use crate::errno::{self, to_c};
use crate::flags::*;
use crate::object::{arc_of, fid_head, lookup, publish, ConnReq, Endpoint, Object, PassiveEp};
use crate::queue::{Completion, CqError};
use crate::ring::Slot;
use core::ptr;
use core::sync::atomic::Ordering;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::{Arc, UniqueArc};
use kernel::types::Opaque;

/// The flags a CQ entry shows the consumer.
const CQ_FLAGS: u64 = FI_MSG
    | FI_RMA
    | FI_TAGGED
    | FI_ATOMIC
    | FI_SEND
    | FI_RECV
    | FI_READ
    | FI_WRITE
    | FI_REMOTE_READ
    | FI_REMOTE_WRITE
    | FI_REMOTE_CQ_DATA
    | FI_MULTI_RECV;

/// Whether a successful completion with `flags` goes to the consumer: when
/// the operation asked for one, and always when it carries remote CQ data.
fn wanted(flags: u64) -> bool {
    flags & FI_COMPLETION != 0
        || (flags & FI_REMOTE_CQ_DATA != 0 && flags & (FI_RECV | FI_REMOTE_WRITE) != 0)
}

fn complete(ep: *mut abi::fid_ep, slot: Slot<Completion, CqError>, flags: u64) -> Result {
    // SAFETY: The provider passes its live endpoint.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    post(e, slot, flags)
}

/// Reports an operation with `flags`: its CQ entry (an error always, a
/// success when [`wanted`]), then the count on the counter bound for its
/// kind, after the entry so that a thread woken by the count finds it.
fn post(e: &Endpoint, slot: Slot<Completion, CqError>, flags: u64) -> Result {
    let failed = matches!(slot, Slot::Failed(_));
    // The common case on the data path: nothing to post, nothing to count.
    if !failed && !wanted(flags) && !e.counted.load(Ordering::Acquire) {
        return Ok(());
    }
    let (cq, cntr) = e.report_targets(flags);
    let posted = if failed || wanted(flags) {
        cq.ok_or_else(errno::enocq).and_then(|cq| cq.post(slot))
    } else {
        Ok(())
    };
    if let Some(cntr) = cntr {
        cntr.count(failed);
    }
    posted
}

/// A completion of an endpoint built in the core (FI_EP_RDM), with the
/// source address of a receive.
pub(crate) fn complete_from(e: &Endpoint, c: Completion) -> Result {
    let flags = c.flags;
    post(
        e,
        Slot::Done(Completion {
            flags: flags & CQ_FLAGS,
            ..c
        }),
        flags,
    )
}

/// A failed operation of an endpoint built in the core.
pub(crate) fn complete_error_of(e: &Endpoint, mut entry: abi::fi_cq_err_entry) -> Result {
    let flags = entry.flags;
    entry.flags &= CQ_FLAGS;
    post(e, Slot::Failed(CqError(entry)), flags)
}

/// `kofi_ep_complete()`.
#[no_mangle]
pub(crate) extern "C" fn kofi_ep_complete(
    ep: *mut abi::fid_ep,
    flags: u64,
    op_context: *mut c_void,
    len: usize,
    buf: *mut c_void,
    data: u64,
) -> c_int {
    kofi_ep_complete_tagged(ep, flags, op_context, len, buf, data, 0)
}

/// `kofi_ep_complete_tagged()`.
#[no_mangle]
pub(crate) extern "C" fn kofi_ep_complete_tagged(
    ep: *mut abi::fid_ep,
    flags: u64,
    op_context: *mut c_void,
    len: usize,
    buf: *mut c_void,
    data: u64,
    tag: u64,
) -> c_int {
    let c = Completion {
        op_context: Context::of(op_context),
        flags: flags & CQ_FLAGS,
        len,
        buf,
        data,
        tag,
        src: FI_ADDR_NOTAVAIL,
    };
    to_c(complete(ep, Slot::Done(c), flags))
}

/// `kofi_ep_complete_error()`.
#[no_mangle]
pub(crate) extern "C" fn kofi_ep_complete_error(
    ep: *mut abi::fid_ep,
    err: *const abi::fi_cq_err_entry,
) -> c_int {
    // SAFETY: `err` is null or valid (ABI).
    let Some(e) = (unsafe { err.as_ref() }) else {
        return EINVAL.to_errno();
    };
    if e.err <= 0 {
        return EINVAL.to_errno();
    }
    let mut entry = *e;
    entry.flags &= CQ_FLAGS;
    entry.err_data = ptr::null_mut();
    entry.err_data_size = 0;
    to_c(complete(ep, Slot::Failed(CqError(entry)), e.flags))
}

/// `kofi_ep_progress_request()`.
#[no_mangle]
pub(crate) extern "C" fn kofi_ep_progress_request(ep: *mut abi::fid_ep) -> bool {
    // SAFETY: The provider passes its live endpoint.
    unsafe { lookup::<Endpoint>(ep) }.is_ok_and(|e| e.request_progress())
}

/// The bytes of a CM entry's head.
fn cm_head(
    fid: *mut abi::fid,
    info: *mut abi::fi_info,
) -> [u8; core::mem::size_of::<abi::fi_eq_cm_entry>()] {
    let head = abi::fi_eq_cm_entry {
        fid,
        info,
        data: abi::__IncompleteArrayField::new(),
    };
    // SAFETY: `fi_eq_cm_entry` is plain old data (two pointers, no padding
    // before its flexible array); reading its bytes is sound.
    unsafe { core::mem::transmute(head) }
}

fn check_data(data: *const c_void, len: usize) -> Result<&'static [u8]> {
    if len > abi::KOFI_CM_DATA_MAX as usize || (data.is_null() && len != 0) {
        return Err(EINVAL);
    }
    if len == 0 {
        return Ok(&[]);
    }
    // SAFETY: `data` holds `len` bytes for the duration of the call (ABI);
    // the slice is copied before the call returns.
    Ok(unsafe { core::slice::from_raw_parts(data.cast::<u8>(), len) })
}

fn ep_event(ep: *mut abi::fid_ep, event: u32, data: *const c_void, len: usize) -> Result {
    // SAFETY: The provider passes its live endpoint.
    let e = unsafe { lookup::<Endpoint>(ep) }?;
    if event != abi::FI_CONNECTED && event != abi::FI_SHUTDOWN {
        return Err(EINVAL);
    }
    let bytes = check_data(data, len)?;
    let eq = e.eq().ok_or_else(errno::enoeq)?;
    eq.post_event(
        event,
        e.fid(),
        e.context(),
        &cm_head(e.fid(), ptr::null_mut()),
        bytes,
        ptr::null_mut(),
    )
}

/// An EQ error entry about `object`, with its context.
fn error_entry<O: Object>(object: &O, err: c_int, prov_errno: c_int) -> abi::fi_eq_err_entry {
    abi::fi_eq_err_entry {
        fid: object.fid(),
        context: object.context().as_ptr(),
        err,
        prov_errno,
        ..Default::default()
    }
}

/// `kofi_ep_event()`.
#[no_mangle]
pub(crate) extern "C" fn kofi_ep_event(
    ep: *mut abi::fid_ep,
    event: u32,
    data: *const c_void,
    datalen: usize,
) -> c_int {
    to_c(ep_event(ep, event, data, datalen))
}

/// `kofi_ep_event_error()`: `data` (a rejection's private data) reaches
/// the consumer as the entry's err_data.
#[no_mangle]
pub(crate) extern "C" fn kofi_ep_event_error(
    ep: *mut abi::fid_ep,
    err: c_int,
    prov_errno: c_int,
    data: *const c_void,
    datalen: usize,
) -> c_int {
    let result = (|| {
        // SAFETY: The provider passes its live endpoint.
        let e = unsafe { lookup::<Endpoint>(ep) }?;
        if err <= 0 {
            return Err(EINVAL);
        }
        let bytes = check_data(data, datalen)?;
        let eq = e.eq().ok_or_else(errno::enoeq)?;
        eq.post_error(error_entry(e, err, prov_errno), bytes)
    })();
    to_c(result)
}

/// `kofi_pep_event_error()`: the passive endpoint stopped listening (its
/// device went, say); an error entry for it on its EQ.
#[no_mangle]
pub(crate) extern "C" fn kofi_pep_event_error(
    pep: *mut abi::fid_pep,
    err: c_int,
    prov_errno: c_int,
) -> c_int {
    let result = (|| {
        // SAFETY: The provider passes its live passive endpoint.
        let p = unsafe { lookup::<PassiveEp>(pep) }?;
        if err <= 0 {
            return Err(EINVAL);
        }
        let eq = p.eq.lock().clone().ok_or_else(errno::enoeq)?;
        eq.post_error(error_entry(p, err, prov_errno), &[])
    })();
    to_c(result)
}

/// `kofi_connreq_alloc()`: a handle for a new connection request.
#[no_mangle]
pub(crate) extern "C" fn kofi_connreq_alloc(
    pep: *mut abi::fid_pep,
    prov_data: *mut c_void,
) -> *mut abi::fid {
    let result = (|| -> Result<*mut abi::fid> {
        // SAFETY: The provider passes its live passive endpoint.
        let p = unsafe { lookup::<PassiveEp>(pep) }?;
        // The memory first: a `ConnReq` that exists releases `prov_data`
        // when dropped, and on failure the provider still owns it.
        let slot = UniqueArc::<ConnReq>::new_uninit(GFP_KERNEL)?;
        let mut head = fid_head(abi::FI_CLASS_CONNREQ, ptr::null_mut());
        head.prov_data = prov_data;
        let req: Arc<ConnReq> = slot
            .write(ConnReq {
                public: Opaque::new(head),
                // SAFETY: `p` was published.
                pep: unsafe { arc_of(p) },
            })
            .into();
        p.fabric.provider().count(abi::FI_CLASS_CONNREQ, true);
        Ok(publish(req))
    })();
    result.unwrap_or(ptr::null_mut())
}

/// `kofi_pep_connreq()`: FI_CONNREQ on the passive endpoint's EQ. Takes
/// `info` in every case (freed on error).
#[no_mangle]
pub(crate) extern "C" fn kofi_pep_connreq(
    pep: *mut abi::fid_pep,
    info: *mut abi::fi_info,
    data: *const c_void,
    datalen: usize,
) -> c_int {
    let result = (|| {
        // SAFETY: The provider passes its live passive endpoint.
        let p = unsafe { lookup::<PassiveEp>(pep) }?;
        if info.is_null() {
            return Err(EINVAL);
        }
        let bytes = check_data(data, datalen)?;
        let eq = p.eq.lock().clone().ok_or_else(errno::enoeq)?;
        // SAFETY: The provider passes a valid info, now ours.
        let i = unsafe { &mut *info };
        if !crate::info::well_formed(i) {
            return Err(EINVAL);
        }
        // Stated in full, as fi_getinfo's infos are (its transmit and
        // receive capabilities, say).
        crate::info::complete(i);
        // Like fi_getinfo's, this info opens a fabric of its provider.
        // SAFETY: The fabric's head was written at its creation.
        let api_version = unsafe { (*p.fabric.public()).api_version };
        crate::info::stamp(i, p.fabric.provider(), api_version)?;
        // Its endpoint takes what the listener's info chose.
        p.choices.apply(i);
        // From here the event owns `info`, on success or failure.
        let head = cm_head(p.fid(), info);
        let r = eq.post_event(abi::FI_CONNREQ, p.fid(), p.context(), &head, bytes, info);
        Ok::<_, Error>(r)
    })();
    match result {
        Ok(r) => to_c(r),
        Err(e) => {
            crate::info::fi_freeinfo(info);
            e.to_errno()
        }
    }
}
