// SPDX-License-Identifier: GPL-2.0

//! `struct fi_info` lists: fi_allocinfo, fi_dupinfo, fi_freeinfo, the
//! infos the core holds ([`InfoBox`]), and what an info says (its
//! consumer's choices, its completion and stamp). fi_getinfo is in
//! getinfo.rs.
//!
//! An info owns everything it points to (attrs, names, addresses) except
//! `fabric_attr->fabric` and `domain_attr->domain`, which name open objects,
//! and a connection request `handle`, of which it holds a reference.

use crate::abi;
use crate::compat::CStrBytes;
use crate::flags;
use crate::info_match::{self, InfoView};
use crate::object;
use crate::registry::Provider;
use core::ptr;
use core::ptr::NonNull;
use kernel::ffi::{c_char, c_void};
use kernel::prelude::*;

/// Allocates zeroed memory for a `T` (a plain C struct), or null.
fn zalloc<T>() -> *mut T {
    // SAFETY: `kofi_zalloc` returns zeroed memory of the size asked, or null.
    unsafe { abi::kofi_zalloc(core::mem::size_of::<T>(), false) }.cast()
}

fn free<T>(p: *mut T) {
    // SAFETY: `p` is null or came from `kofi_zalloc`/`kofi_memdup`/`kofi_strdup`.
    unsafe { abi::kofi_free(p.cast::<c_void>().cast_const()) };
}

/// A fresh info with all its attrs, zeroed; null when memory is short.
pub(crate) fn alloc_info() -> *mut abi::fi_info {
    let info = zalloc::<abi::fi_info>();
    if info.is_null() {
        return info;
    }
    // SAFETY: `info` is a valid, exclusively owned allocation.
    let i = unsafe { &mut *info };
    i.tx_attr = zalloc();
    i.rx_attr = zalloc();
    i.ep_attr = zalloc();
    i.domain_attr = zalloc();
    i.fabric_attr = zalloc();
    if i.tx_attr.is_null()
        || i.rx_attr.is_null()
        || i.ep_attr.is_null()
        || i.domain_attr.is_null()
        || i.fabric_attr.is_null()
    {
        // SAFETY: `info` is ours and holds only nulls or fresh allocations.
        unsafe { free_one(info) };
        return ptr::null_mut();
    }
    info
}

/// Frees one info and what it owns.
///
/// # Safety
///
/// `info` is a valid info built by this module, not used after.
pub(crate) unsafe fn free_one(info: *mut abi::fi_info) {
    // SAFETY: The caller guarantees `info` is valid and ours.
    let i = unsafe { &mut *info };
    if !i.domain_attr.is_null() {
        // SAFETY: Non-null attrs of our infos are valid.
        free(unsafe { (*i.domain_attr).name });
    }
    if !i.fabric_attr.is_null() {
        // SAFETY: As above.
        let f = unsafe { &*i.fabric_attr };
        free(f.name);
        free(f.prov_name);
    }
    free(i.src_addr);
    free(i.dest_addr);
    free(i.tx_attr);
    free(i.rx_attr);
    free(i.ep_attr);
    free(i.domain_attr);
    free(i.fabric_attr);
    // SAFETY: A CONNREQ handle in an info is a counted reference.
    unsafe { object::connreq_put(i.handle) };
    free(info);
}

pub(crate) fn dup_bytes(src: *const c_void, len: usize) -> Result<*mut c_void> {
    if src.is_null() || len == 0 {
        return Ok(ptr::null_mut());
    }
    // SAFETY: `src` is valid for `len` bytes (the info says so).
    let p = unsafe { abi::kofi_memdup(src, len, false) };
    if p.is_null() {
        Err(ENOMEM)
    } else {
        Ok(p)
    }
}

fn dup_str(s: *const c_char) -> Result<*mut c_char> {
    if s.is_null() {
        return Ok(ptr::null_mut());
    }
    // SAFETY: `s` is a NUL-terminated string (the info says so).
    let p = unsafe { abi::kofi_strdup(s) };
    if p.is_null() {
        Err(ENOMEM)
    } else {
        Ok(p)
    }
}

/// Copies the attrs `src` has into `dst`'s (allocated) ones.
fn copy_attr<T: Copy>(dst: *mut T, src: *const T) {
    if !src.is_null() {
        // SAFETY: Both are valid attrs: `dst` from `alloc_info`, `src` the caller's.
        unsafe { *dst = *src };
    }
}

/// A deep copy of one info (its `next` is null).
///
/// # Safety
///
/// `src` is a valid info.
pub(crate) unsafe fn dup_one(src: *const abi::fi_info) -> Result<*mut abi::fi_info> {
    let dst = alloc_info();
    if dst.is_null() {
        return Err(ENOMEM);
    }
    // SAFETY: The caller guarantees `src` is valid; `dst` is ours.
    let (s, d) = unsafe { (&*src, &mut *dst) };
    d.caps = s.caps;
    d.mode = s.mode;
    d.addr_format = s.addr_format;
    copy_attr(d.tx_attr, s.tx_attr);
    copy_attr(d.rx_attr, s.rx_attr);
    copy_attr(d.ep_attr, s.ep_attr);
    copy_attr(d.domain_attr, s.domain_attr);
    copy_attr(d.fabric_attr, s.fabric_attr);
    // The attr copies still point at `src`'s strings: clear them before
    // anything can fail, so that freeing `dst` frees only its own.
    // SAFETY: `dst`'s attrs are valid.
    unsafe {
        (*d.domain_attr).name = ptr::null_mut();
        (*d.fabric_attr).name = ptr::null_mut();
        (*d.fabric_attr).prov_name = ptr::null_mut();
    }
    let result = (|| -> Result {
        d.src_addr = dup_bytes(s.src_addr, s.src_addrlen)?;
        d.src_addrlen = if d.src_addr.is_null() {
            0
        } else {
            s.src_addrlen
        };
        d.dest_addr = dup_bytes(s.dest_addr, s.dest_addrlen)?;
        d.dest_addrlen = if d.dest_addr.is_null() {
            0
        } else {
            s.dest_addrlen
        };
        if !s.domain_attr.is_null() {
            // SAFETY: Both attrs are valid.
            unsafe { (*d.domain_attr).name = dup_str((*s.domain_attr).name)? };
        }
        if !s.fabric_attr.is_null() {
            // SAFETY: Both attrs are valid.
            unsafe {
                (*d.fabric_attr).name = dup_str((*s.fabric_attr).name)?;
                (*d.fabric_attr).prov_name = dup_str((*s.fabric_attr).prov_name)?;
            }
        }
        // SAFETY: `s.handle` is null or a fid from kofi.
        d.handle = unsafe { object::connreq_get(s.handle) };
        Ok(())
    })();
    if let Err(e) = result {
        // SAFETY: `dst` is ours and consistent.
        unsafe { free_one(dst) };
        return Err(e);
    }
    Ok(dst)
}

/// `fi_allocinfo()`: an empty info with all attrs allocated; NULL without memory.
#[no_mangle]
pub(crate) extern "C" fn fi_allocinfo() -> *mut abi::fi_info {
    alloc_info()
}

/// `fi_dupinfo()`: a deep copy of one info; NULL for NULL or without memory.
#[no_mangle]
pub(crate) extern "C" fn fi_dupinfo(info: *const abi::fi_info) -> *mut abi::fi_info {
    if info.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: `info` is a valid info, by the ABI.
    unsafe { dup_one(info) }.unwrap_or(ptr::null_mut())
}

/// Frees a list of infos.
///
/// # Safety
///
/// `info` is null or a list of infos built by this module that the caller
/// gives up.
unsafe fn free_list(info: *mut abi::fi_info) {
    let mut cur = info;
    while !cur.is_null() {
        // SAFETY: `cur` is a valid info of the list the caller gives up.
        let next = unsafe { (*cur).next };
        // SAFETY: As above; it is not used after.
        unsafe { free_one(cur) };
        cur = next;
    }
}

/// `fi_freeinfo()`: frees a list of infos. NULL is a no-op.
#[no_mangle]
pub(crate) extern "C" fn fi_freeinfo(info: *mut abi::fi_info) {
    // SAFETY: The consumer gives up a list fi_getinfo or fi_dupinfo gave.
    unsafe { free_list(info) }
}

/// An info (or a list of them) the core holds, freed when dropped.
///
/// # Invariants
///
/// `0` is an info list built by this module, freed only here.
pub(crate) struct InfoBox(NonNull<abi::fi_info>);

// SAFETY: An info is plain memory; its request handle is counted.
unsafe impl Send for InfoBox {}

impl InfoBox {
    /// Takes ownership of an info list.
    ///
    /// # Safety
    ///
    /// `p` is null or an info list built by this module that the caller
    /// gives up.
    pub(crate) unsafe fn from_raw(p: *mut abi::fi_info) -> Option<InfoBox> {
        // INVARIANT: The caller's guarantee.
        NonNull::new(p).map(InfoBox)
    }

    /// A deep copy of one info.
    ///
    /// # Safety
    ///
    /// `info` is a valid info.
    pub(crate) unsafe fn copy_of(info: *const abi::fi_info) -> Result<InfoBox> {
        // SAFETY: The caller's guarantee.
        let p = unsafe { dup_one(info) }?;
        // SAFETY: Just built, ours.
        unsafe { InfoBox::from_raw(p) }.ok_or(ENOMEM)
    }

    /// A deep copy of the first info.
    pub(crate) fn dup(&self) -> Result<InfoBox> {
        // SAFETY: The info is valid (the type invariant).
        unsafe { InfoBox::copy_of(self.as_ptr()) }
    }

    /// The info, for the calls that take one (a provider may write it).
    pub(crate) fn as_ptr(&self) -> *mut abi::fi_info {
        self.0.as_ptr()
    }

    fn get(&self) -> &abi::fi_info {
        // SAFETY: Valid until dropped (the type invariant).
        unsafe { self.0.as_ref() }
    }

    /// The connection request the info carries (an FI_CONNREQ event's).
    pub(crate) fn conn_req(&self) -> Result<&object::ConnReq> {
        // SAFETY: The handle is null or a request of kofi's, which the info
        // holds a reference of until it is freed.
        unsafe { object::lookup::<object::ConnReq>(self.get().handle) }
    }

    /// The destination address: a request's is the requester's.
    pub(crate) fn dest_addr(&self) -> Option<&[u8]> {
        let i = self.get();
        // SAFETY: A valid info's dest_addr holds dest_addrlen bytes.
        (!i.dest_addr.is_null())
            .then(|| unsafe { core::slice::from_raw_parts(i.dest_addr.cast(), i.dest_addrlen) })
    }

    /// Makes it the MSG info an RDM info was made from (see [`rdm_twin`]).
    ///
    /// # Safety
    ///
    /// The info is a checked one (its attrs set).
    pub(crate) unsafe fn make_msg_twin(&mut self, tagged: bool) {
        // SAFETY: Ours (the type invariant), checked (the caller's
        // guarantee).
        unsafe { msg_twin(self.as_ptr(), tagged) };
    }
}

impl Drop for InfoBox {
    fn drop(&mut self) {
        // SAFETY: Ours, freed only here (the type invariant).
        unsafe { free_list(self.as_ptr()) };
    }
}

/// A NUL-terminated string's bytes, or `None` for null.
///
/// # Safety
///
/// `s` is null or a valid NUL-terminated string that outlives `'a`.
unsafe fn bytes<'a>(s: *const c_char) -> Option<&'a [u8]> {
    if s.is_null() {
        None
    } else {
        // SAFETY: The caller guarantees `s` is a valid string.
        Some(unsafe { CStr::from_char_ptr(s) }.cstr_bytes())
    }
}

/// The constrained fields of an info.
///
/// # Safety
///
/// `info` is a valid info whose strings outlive `'a`.
pub(crate) unsafe fn view<'a>(info: &'a abi::fi_info) -> InfoView<'a> {
    let mut v = InfoView {
        caps: info.caps,
        mode: info.mode,
        addr_format: info.addr_format,
        ..InfoView::default()
    };
    // SAFETY: The caller guarantees the attrs, when set, are valid.
    unsafe {
        if let Some(ep) = info.ep_attr.as_ref() {
            v.ep_type = ep.type_;
        }
        if let Some(f) = info.fabric_attr.as_ref() {
            v.prov_name = bytes(f.prov_name);
            v.fabric_name = bytes(f.name);
        }
        if let Some(d) = info.domain_attr.as_ref() {
            v.domain_name = bytes(d.name);
        }
        let a = &mut v.attrs;
        if let Some(ep) = info.ep_attr.as_ref() {
            a.protocol = ep.protocol;
            a.protocol_version = ep.protocol_version;
            a.max_msg_size = ep.max_msg_size;
            a.tx_ctx_cnt = ep.tx_ctx_cnt;
            a.rx_ctx_cnt = ep.rx_ctx_cnt;
        }
        if let Some(tx) = info.tx_attr.as_ref() {
            a.tx_caps = tx.caps;
            a.tx_msg_order = tx.msg_order;
            a.tx_comp_order = tx.comp_order;
            a.tx_op_flags = tx.op_flags;
            a.inject_size = tx.inject_size;
            a.tx_size = tx.size;
            a.tx_iov_limit = tx.iov_limit;
            a.rma_iov_limit = tx.rma_iov_limit;
        }
        if let Some(rx) = info.rx_attr.as_ref() {
            a.rx_caps = rx.caps;
            a.rx_msg_order = rx.msg_order;
            a.rx_comp_order = rx.comp_order;
            a.rx_op_flags = rx.op_flags;
            a.total_buffered_recv = rx.total_buffered_recv;
            a.rx_size = rx.size;
            a.rx_iov_limit = rx.iov_limit;
        }
        if let Some(d) = info.domain_attr.as_ref() {
            a.threading = d.threading;
            a.control_progress = d.control_progress;
            a.data_progress = d.data_progress;
            a.resource_mgmt = d.resource_mgmt;
            a.mr_mode = d.mr_mode;
            a.cq_data_size = d.cq_data_size;
            a.mr_iov_limit = d.mr_iov_limit;
            a.ep_cnt = d.ep_cnt;
            a.cq_cnt = d.cq_cnt;
            a.mr_cnt = d.mr_cnt;
            a.max_ep_tx_ctx = d.max_ep_tx_ctx;
            a.domain_tx_ctx_cnt = d.tx_ctx_cnt;
            a.domain_rx_ctx_cnt = d.rx_ctx_cnt;
            a.max_ep_rx_ctx = d.max_ep_rx_ctx;
        }
    }
    v
}

// `info_match` is built on the host too, with these values of its own.
const _: () = {
    use info_match::abi_values as v;
    assert!(v::FI_THREAD_SAFE == abi::fi_threading_FI_THREAD_SAFE);
    assert!(v::FI_THREAD_FID == abi::fi_threading_FI_THREAD_FID);
    assert!(v::FI_THREAD_DOMAIN == abi::fi_threading_FI_THREAD_DOMAIN);
    assert!(v::FI_THREAD_COMPLETION == abi::fi_threading_FI_THREAD_COMPLETION);
    assert!(v::FI_THREAD_ENDPOINT == abi::fi_threading_FI_THREAD_ENDPOINT);
    assert!(v::FI_PROGRESS_AUTO == abi::fi_progress_FI_PROGRESS_AUTO);
    assert!(v::FI_PROGRESS_MANUAL == abi::fi_progress_FI_PROGRESS_MANUAL);
    assert!(v::FI_RM_DISABLED == abi::fi_resource_mgmt_FI_RM_DISABLED);
    assert!(v::FI_RM_ENABLED == abi::fi_resource_mgmt_FI_RM_ENABLED);
    assert!(v::FI_MR_LOCAL == abi::FI_MR_LOCAL as i32);
    assert!(v::FI_MR_RAW == abi::FI_MR_RAW as i32);
    assert!(v::FI_MR_VIRT_ADDR == abi::FI_MR_VIRT_ADDR as i32);
    assert!(v::FI_MR_PROV_KEY == abi::FI_MR_PROV_KEY as i32);
    assert!(v::FI_MR_RMA_EVENT == abi::FI_MR_RMA_EVENT as i32);
    assert!(v::FI_MR_ENDPOINT == abi::FI_MR_ENDPOINT as i32);
    assert!(v::FI_MSG == flags::FI_MSG);
    assert!(v::FI_RMA == flags::FI_RMA);
    assert!(v::FI_TAGGED == flags::FI_TAGGED);
    assert!(v::FI_ATOMIC == flags::FI_ATOMIC);
    assert!(v::FI_READ == flags::FI_READ);
    assert!(v::FI_WRITE == flags::FI_WRITE);
    assert!(v::FI_RECV == flags::FI_RECV);
    assert!(v::FI_SEND == flags::FI_SEND);
    assert!(v::FI_REMOTE_READ == flags::FI_REMOTE_READ);
    assert!(v::FI_REMOTE_WRITE == flags::FI_REMOTE_WRITE);
    assert!(v::FI_MULTI_RECV == flags::FI_MULTI_RECV);
    assert!(v::FI_TRIGGER == flags::FI_TRIGGER);
    assert!(v::FI_FENCE == flags::FI_FENCE);
    assert!(v::FI_LOCAL_COMM == flags::FI_LOCAL_COMM);
    assert!(v::FI_REMOTE_COMM == flags::FI_REMOTE_COMM);
    assert!(v::FI_RMA_EVENT == flags::FI_RMA_EVENT);
    assert!(v::FI_SOURCE == flags::FI_SOURCE);
    assert!(v::FI_NAMED_RX_CTX == flags::FI_NAMED_RX_CTX);
    assert!(v::FI_DIRECTED_RECV == flags::FI_DIRECTED_RECV);
    assert!(v::FI_RX_CQ_DATA == abi::FI_RX_CQ_DATA);
};

/// Stamps `provider`'s identity into a well-formed `info` it made, as the
/// consumer will see it: its name (what fi_fabric opens), its version and
/// the API version the consumer asked for.
pub(crate) fn stamp(info: &mut abi::fi_info, provider: &Provider, api_version: u32) -> Result {
    // SAFETY: `fabric_attr` is valid (the caller's info is well formed).
    let fattr = unsafe { &mut *info.fabric_attr };
    free(fattr.prov_name);
    fattr.prov_name = ptr::null_mut();
    fattr.prov_name = dup_str(provider.name.as_char_ptr())?;
    fattr.prov_version = provider.version;
    fattr.api_version = api_version;
    Ok(())
}

/// Whether an info from a provider has what the core relies on.
pub(crate) fn well_formed(info: &abi::fi_info) -> bool {
    !info.tx_attr.is_null()
        && !info.rx_attr.is_null()
        && !info.ep_attr.is_null()
        && !info.domain_attr.is_null()
        && !info.fabric_attr.is_null()
}

/// What a consumer chose for the endpoints of an info, beyond matching:
/// the primary capabilities it asked for (the rest are dropped, see
/// `info_match::offered_caps`), the optional modes they work in
/// (`info_match::MODE_OPTIONAL`), their default op_flags and the limits
/// they keep to. A provider's info lists the capabilities, optional modes
/// and op_flags it can honour and its own limits; the info the consumer
/// gets carries the chosen ones, from its hints (fi_getinfo) or from its
/// listener's info (an FI_CONNREQ).
#[derive(Clone, Copy, Default)]
pub(crate) struct Choices {
    /// The caps of the info, its tx, rx and domain attrs; `None` without
    /// hints, which leave an offer's capabilities whole.
    caps: Option<[u64; 4]>,
    mode: u64,
    tx_op_flags: u64,
    rx_op_flags: u64,
    limits: Limits,
}

/// The sizes, limits and models a consumer named (0, or UNSPEC: the
/// offer's stay), which the info it gets then carries, as libfabric's
/// `ofi_alter_info` copies them: matching has checked that the offer
/// reaches each, and the endpoints opened from the info hold the consumer
/// to its own limits (a send with more iovs than it asked for is -EINVAL).
#[derive(Clone, Copy, Default)]
struct Limits {
    tx_size: usize,
    tx_iov_limit: usize,
    rma_iov_limit: usize,
    inject_size: usize,
    rx_size: usize,
    rx_iov_limit: usize,
    total_buffered_recv: usize,
    threading: u32,
    control_progress: u32,
    data_progress: u32,
}

impl Limits {
    fn of(
        tx: Option<&abi::fi_tx_attr>,
        rx: Option<&abi::fi_rx_attr>,
        d: Option<&abi::fi_domain_attr>,
    ) -> Limits {
        let mut l = Limits::default();
        if let Some(tx) = tx {
            l.tx_size = tx.size;
            l.tx_iov_limit = tx.iov_limit;
            l.rma_iov_limit = tx.rma_iov_limit;
            l.inject_size = tx.inject_size;
        }
        if let Some(rx) = rx {
            l.rx_size = rx.size;
            l.rx_iov_limit = rx.iov_limit;
            l.total_buffered_recv = rx.total_buffered_recv;
        }
        if let Some(d) = d {
            l.threading = d.threading;
            l.control_progress = d.control_progress;
            l.data_progress = d.data_progress;
        }
        l
    }

    fn apply(
        self,
        tx: &mut abi::fi_tx_attr,
        rx: &mut abi::fi_rx_attr,
        d: &mut abi::fi_domain_attr,
    ) {
        fn take<T: Copy + Default + PartialEq>(field: &mut T, chosen: T) {
            if chosen != T::default() {
                *field = chosen;
            }
        }
        take(&mut tx.size, self.tx_size);
        take(&mut tx.iov_limit, self.tx_iov_limit);
        take(&mut tx.rma_iov_limit, self.rma_iov_limit);
        take(&mut tx.inject_size, self.inject_size);
        take(&mut rx.size, self.rx_size);
        take(&mut rx.iov_limit, self.rx_iov_limit);
        take(&mut rx.total_buffered_recv, self.total_buffered_recv);
        take(&mut d.threading, self.threading);
        take(&mut d.control_progress, self.control_progress);
        take(&mut d.data_progress, self.data_progress);
    }
}

impl Choices {
    /// The choices `info` states (none without one).
    ///
    /// # Safety
    ///
    /// `info`'s attrs are null or valid.
    pub(crate) unsafe fn of(info: Option<&abi::fi_info>) -> Choices {
        let Some(i) = info else {
            return Choices::default();
        };
        // SAFETY: The caller's guarantee.
        let (tx, rx, d) = unsafe {
            (
                i.tx_attr.as_ref(),
                i.rx_attr.as_ref(),
                i.domain_attr.as_ref(),
            )
        };
        Choices {
            caps: Some([
                i.caps,
                tx.map_or(0, |a| a.caps),
                rx.map_or(0, |a| a.caps),
                d.map_or(0, |a| a.caps),
            ]),
            mode: i.mode & info_match::MODE_OPTIONAL,
            tx_op_flags: tx.map_or(0, |a| a.op_flags),
            rx_op_flags: rx.map_or(0, |a| a.op_flags),
            limits: Limits::of(tx, rx, d),
        }
    }

    /// Gives a provider's well-formed `info` these choices.
    pub(crate) fn apply(self, info: &mut abi::fi_info) {
        info.mode = info_match::offered_mode(self.mode, info.mode);
        // SAFETY: A well-formed info's attrs are set.
        let (tx, rx, d) = unsafe {
            (
                &mut *info.tx_attr,
                &mut *info.rx_attr,
                &mut *info.domain_attr,
            )
        };
        if let Some([caps, tx_caps, rx_caps, domain_caps]) = self.caps {
            info.caps = info_match::offered_caps(info.caps, caps, info.caps);
            tx.caps = info_match::offered_caps(info.caps, tx_caps, tx.caps);
            rx.caps = info_match::offered_caps(info.caps, rx_caps, rx.caps);
            d.caps = info_match::offered_caps(info.caps, domain_caps, d.caps);
        }
        tx.op_flags = self.tx_op_flags;
        rx.op_flags = self.rx_op_flags;
        self.limits.apply(tx, rx, d);
    }
}

/// The capabilities that apply to transmits (`tx_attr->caps`) and to
/// receives (`rx_attr->caps`), as fi_getinfo(3) lists them.
pub(crate) const TX_CAPS: u64 = flags::FI_MSG
    | flags::FI_RMA
    | flags::FI_TAGGED
    | flags::FI_ATOMIC
    | flags::FI_READ
    | flags::FI_WRITE
    | flags::FI_SEND
    | flags::FI_FENCE;
pub(crate) const RX_CAPS: u64 = flags::FI_MSG
    | flags::FI_RMA
    | flags::FI_TAGGED
    | flags::FI_ATOMIC
    | flags::FI_RECV
    | flags::FI_REMOTE_READ
    | flags::FI_REMOTE_WRITE
    | flags::FI_RMA_EVENT
    | flags::FI_SOURCE
    | flags::FI_MULTI_RECV
    | flags::FI_DIRECTED_RECV;

/// Fills in what a provider's well-formed `info` may leave to the core, as
/// libfabric's providers state it: the capabilities of its transmits and
/// receives (those of its own that apply to each), and one transmit and
/// one receive context per endpoint (kofi has no scalable endpoints), so as
/// many of each in the domain as it has endpoints.
pub(crate) fn complete(info: &mut abi::fi_info) {
    // SAFETY: A well-formed info's attrs are set.
    let (tx, rx, ep, d) = unsafe {
        (
            &mut *info.tx_attr,
            &mut *info.rx_attr,
            &mut *info.ep_attr,
            &mut *info.domain_attr,
        )
    };
    if tx.caps == 0 {
        tx.caps = info.caps & TX_CAPS;
    }
    if rx.caps == 0 {
        rx.caps = info.caps & RX_CAPS;
    }
    for count in [
        &mut ep.tx_ctx_cnt,
        &mut ep.rx_ctx_cnt,
        &mut d.max_ep_tx_ctx,
        &mut d.max_ep_rx_ctx,
    ] {
        if *count == 0 {
            *count = 1;
        }
    }
    for count in [&mut d.tx_ctx_cnt, &mut d.rx_ctx_cnt] {
        if *count == 0 {
            *count = d.ep_cnt.max(1);
        }
    }
}

/// Turns an RDM info made by `rdm_twin` back into the MSG info it came from,
/// for the RDM endpoint's own listener and connections; with `tagged`, they
/// offer tagged messages (the rendezvous' bytes travel as one).
///
/// # Safety
///
/// `info` is a checked info (its attrs set) of this module's, the caller's.
unsafe fn msg_twin(info: *mut abi::fi_info, tagged: bool) {
    // SAFETY: The caller's guarantee.
    unsafe {
        let t = &mut *info;
        // Tagged matching, multi-receive buffers and atomic operations are
        // the RDM layer's own.
        let own =
            flags::FI_DIRECTED_RECV | flags::FI_TAGGED | flags::FI_MULTI_RECV | flags::FI_ATOMIC;
        t.caps &= !own;
        (*t.tx_attr).caps &= !own;
        (*t.rx_attr).caps &= !own;
        // Its own headers are messages, whatever the consumer asked for
        // (every provider's MSG info offers them), and a rendezvous' bytes
        // a tagged one when the provider has them.
        let kinds = if tagged {
            flags::FI_MSG | flags::FI_TAGGED
        } else {
            flags::FI_MSG
        };
        t.caps |= kinds | flags::FI_SEND | flags::FI_RECV;
        (*t.tx_attr).caps |= kinds | flags::FI_SEND;
        (*t.rx_attr).caps |= kinds | flags::FI_RECV;
        let ep = &mut *t.ep_attr;
        ep.type_ = abi::fi_ep_type_FI_EP_MSG;
        ep.protocol = ep.protocol_version;
        ep.protocol_version = 0;
        (*t.tx_attr).iov_limit += 1;
        // The RDM layer says what each of its operations wants; the
        // consumer's defaults are the RDM endpoint's alone.
        (*t.tx_attr).op_flags = 0;
        (*t.rx_attr).op_flags = 0;
        t.handle = ptr::null_mut();
        free(t.dest_addr);
        t.dest_addr = ptr::null_mut();
        t.dest_addrlen = 0;
    }
}
