// SPDX-License-Identifier: GPL-2.0

//! Memory registration and the core's key table, which software providers
//! use to serve RMA: a peer's key is looked up, its range and rights checked,
//! and the region held while the provider copies (fi_close of the region
//! waits). Regions are addressed by offset: byte `i` of a region registered
//! at `offset` has RMA address `offset + i`.

use crate::abi;
use crate::errno;
use crate::flags;
use crate::iov::{Buffer, Iov, Iovs, Local};
use crate::lock::{new_bh_spinlock, BhSpinLock};
use crate::object::{self, class_of, fid_head, lookup, publish, Domain, Endpoint, Object};
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::rbtree::{RBTree, RBTreeNode};
use kernel::sync::{new_condvar, new_mutex, Arc, CondVar, Mutex};
use kernel::types::Opaque;

/// The most iovs in one registration when the provider does not say.
const MR_IOV_LIMIT_DEFAULT: usize = 256;

/// A registered memory region.
#[repr(C)]
#[pin_data]
pub(crate) struct Mr {
    pub(crate) public: Opaque<abi::fid_mr>,
    pub(crate) domain: Arc<Domain>,
    access: u64,
    offset: u64,
    len: u64,
    iov: Iovs,
    /// Lookups holding the region; changed under the table's lock.
    inflight: AtomicUsize,
    /// The provider's mr_reg succeeded: call its mr_close.
    prov_registered: AtomicBool,
    /// Peers may reach it: from registration on, or in an FI_MR_ENDPOINT
    /// domain from fi_mr_enable on.
    enabled: AtomicBool,
    /// FI_MR_ENDPOINT: the endpoint it is bound to (fi_mr_bind), which
    /// counts the region among its users.
    #[pin]
    bound: Mutex<Option<Arc<Endpoint>>>,
}

// SAFETY: `Mr` is `#[repr(C)]` with `fid_mr` first, of class MR.
unsafe impl Object for Mr {
    type Public = abi::fid_mr;
    const CLASS: u32 = abi::FI_CLASS_MR;
}
// SAFETY: The iovs point to the consumer's memory, which kofi only reaches
// through iov_iters for the provider; the head is written before publication.
unsafe impl Send for Mr {}
// SAFETY: As above.
unsafe impl Sync for Mr {}

impl Mr {
    fn key(&self) -> u64 {
        // SAFETY: The head is valid; the key is fixed once published.
        unsafe { (*self.public.get()).key }
    }

    /// Sets `iter` over bytes [`start`, `start` + `len`) of the region's
    /// memory.
    ///
    /// # Safety
    ///
    /// `iter` is valid for writes; the window lies inside the region; the
    /// region is not closed while the iterator is used (held, or its table
    /// locked).
    unsafe fn window(&self, iter: *mut abi::iov_iter, direction: u32, start: usize, len: usize) {
        let (bvec, ptr, nr) = match &self.iov {
            Iovs::Kvec(v) => (false, v.as_ptr().cast::<c_void>(), v.len()),
            Iovs::Bvec(v) => (true, v.as_ptr().cast::<c_void>(), v.len()),
        };
        let total = self.len as usize;
        // SAFETY: The array lives with the region (the caller's guarantee);
        // the window lies inside it.
        unsafe { abi::kofi_iov_iter_window(iter, direction, bvec, ptr, nr, total, start, len) };
    }
}

/// A domain's regions by key.
#[pin_data]
pub(crate) struct MrTable {
    #[pin]
    regions: BhSpinLock<RBTree<u64, Arc<Mr>>>,
    /// Woken when a region's last lookup is put.
    #[pin]
    idle: CondVar,
}

impl MrTable {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(MrTable {
            regions <- new_bh_spinlock!(RBTree::new(), "kofi_mr_table"),
            idle <- new_condvar!("kofi_mr_idle"),
        })
    }
}

/// The region's iovs, checked, and their total length.
fn copy_iovs(attr: &abi::fi_mr_attr, limit: usize) -> Result<(Iovs, u64)> {
    let count = attr.iov_count;
    if count == 0 || count > limit {
        return Err(EINVAL);
    }
    let (kvecs, bvecs) = match attr.iov_type {
        abi::kofi_iov_type_KOFI_IOV_KVEC => (attr.mr_iov, core::ptr::null()),
        abi::kofi_iov_type_KOFI_IOV_BVEC => (core::ptr::null(), attr.mr_bvec),
        _ => return Err(EINVAL),
    };
    // SAFETY: The array of the iov type, when given, holds `iov_count`
    // entries (ABI); the other is null, and a missing one is -EINVAL.
    let iov = unsafe { Iov::from_raw(kvecs, bvecs, count) }?;
    // A region's faults are all -EINVAL, an overflowing length too.
    let total = iov.total().map_err(|_| EINVAL)?;
    if total == 0 {
        return Err(EINVAL);
    }
    Ok((Iovs::copy_of(iov)?, total as u64))
}

fn regattr(domain: &Arc<Domain>, attr: &abi::fi_mr_attr, flags: u64) -> Result<*mut abi::fid_mr> {
    if flags != 0 {
        return Err(errno::ebadflags());
    }
    if attr.access == 0 || attr.access & !flags::MR_ACCESS != 0 {
        return Err(EINVAL);
    }
    let limit = match domain.mr_iov_limit {
        0 => MR_IOV_LIMIT_DEFAULT,
        n => n,
    };
    let (iov, len) = copy_iovs(attr, limit)?;
    attr.offset.checked_add(len).ok_or(EINVAL)?;
    let mr = Arc::pin_init(
        pin_init!(Mr {
            public: Opaque::new(abi::fid_mr {
                fid: fid_head(abi::FI_CLASS_MR, attr.context),
                mem_desc: core::ptr::null_mut(),
                key: if domain.prov_key {
                    0
                } else {
                    attr.requested_key
                },
            }),
            domain: domain.clone(),
            access: attr.access,
            offset: attr.offset,
            len,
            iov,
            inflight: AtomicUsize::new(0),
            prov_registered: AtomicBool::new(false),
            enabled: AtomicBool::new(!domain.mr_endpoint),
            bound <- new_mutex!(None, "kofi_mr_bound"),
        }),
        GFP_KERNEL,
    )?;
    // SAFETY: The checked attr `mr` was made from; `mr` is not yet
    // visible to anyone else.
    if unsafe { domain.provider_mr_reg(&mr, attr, flags) }? {
        mr.prov_registered.store(true, Ordering::Release);
    }
    // The descriptor is the region itself: the core checks what a consumer
    // passes (`check_descs`), and a provider finds its state through it.
    // SAFETY: The head is ours until publication.
    unsafe { (*mr.public.get()).mem_desc = mr.public.get().cast() };
    let result = insert(domain, &mr);
    if let Err(e) = result {
        close_with_provider(&mr);
        return Err(e);
    }
    domain.users.get();
    domain.fabric.provider().count(abi::FI_CLASS_MR, true);
    Ok(publish(mr))
}

/// Enters `mr` in its domain's table under its key, choosing one when kofi
/// picks keys and the provider did not.
fn insert(domain: &Domain, mr: &Arc<Mr>) -> Result {
    let public = mr.public.get();
    for _attempt in 0..16 {
        // SAFETY: The head is ours until publication.
        let mut key = unsafe { (*public).key };
        if domain.prov_key && key == 0 {
            // SAFETY: No preconditions.
            key = unsafe { abi::kofi_random_u64() } | 1;
        }
        let node = RBTreeNode::new(key, mr.clone(), GFP_KERNEL)?;
        let mut regions = domain.mrs.regions.lock();
        if regions.get(&key).is_some() {
            drop(regions);
            // A consumer's requested key in use is its error; a random
            // collision just draws again.
            if !domain.prov_key {
                return Err(errno::enokey());
            }
            continue;
        }
        // SAFETY: As above.
        unsafe { (*public).key = key };
        regions.insert(node);
        return Ok(());
    }
    Err(errno::enokey())
}

fn close_with_provider(mr: &Mr) {
    if mr.prov_registered.swap(false, Ordering::AcqRel) {
        mr.domain.provider_mr_close(mr);
    }
}

/// fi_close of a region: out of the table, then wait for lookups in flight
/// (which find the region through its fid, so the caller poisons it only after).
pub(crate) fn close(mr: &Mr) -> Result {
    let table = &mr.domain.mrs;
    let mut regions = table.regions.lock();
    let _ = regions.remove(&mr.key());
    while mr.inflight.load(Ordering::Acquire) != 0 {
        table.idle.wait(&mut regions);
    }
    drop(regions);
    close_with_provider(mr);
    if let Some(ep) = mr.bound.lock().take() {
        ep.users.put();
    }
    mr.domain.users.put();
    mr.domain.fabric.provider().count(abi::FI_CLASS_MR, false);
    Ok(())
}

fn domain_of(domain: *mut abi::fid_domain) -> Result<Arc<Domain>> {
    // SAFETY: `domain` is null or a kofi fid the caller keeps open.
    let d = unsafe { lookup::<Domain>(domain) }?;
    // SAFETY: Published domains live in an `Arc`.
    Ok(unsafe { object::arc_of(d) })
}

fn reg_out(mr: *mut *mut abi::fid_mr, result: Result<*mut abi::fid_mr>) -> c_int {
    match result {
        Ok(p) => {
            // SAFETY: `mr` was checked non-null by the caller.
            unsafe { *mr = p };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `fi_mr_regattr()`: registers the memory `attr` describes.
#[no_mangle]
pub(crate) extern "C" fn fi_mr_regattr(
    domain: *mut abi::fid_domain,
    attr: *const abi::fi_mr_attr,
    flags: u64,
    mr: *mut *mut abi::fid_mr,
) -> c_int {
    if mr.is_null() || attr.is_null() {
        return EINVAL.to_errno();
    }
    // SAFETY: `attr` is valid (ABI).
    let attr = unsafe { &*attr };
    reg_out(mr, domain_of(domain).and_then(|d| regattr(&d, attr, flags)))
}

/// `fi_mr_reg()`: registers one buffer.
#[no_mangle]
pub(crate) extern "C" fn fi_mr_reg(
    domain: *mut abi::fid_domain,
    buf: *const c_void,
    len: usize,
    access: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut abi::fid_mr,
    context: *mut c_void,
) -> c_int {
    let kvec = abi::kvec {
        iov_base: buf.cast_mut(),
        iov_len: len,
    };
    let attr = abi::fi_mr_attr {
        mr_iov: &kvec,
        iov_count: 1,
        iov_type: abi::kofi_iov_type_KOFI_IOV_KVEC,
        access,
        offset,
        requested_key,
        context,
        ..Default::default()
    };
    if buf.is_null() {
        return EINVAL.to_errno();
    }
    fi_mr_regattr(domain, &attr, flags, mr)
}

/// `fi_mr_regv()`: registers a kvec array.
#[no_mangle]
pub(crate) extern "C" fn fi_mr_regv(
    domain: *mut abi::fid_domain,
    iov: *const abi::kvec,
    count: usize,
    access: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut abi::fid_mr,
    context: *mut c_void,
) -> c_int {
    let attr = abi::fi_mr_attr {
        mr_iov: iov,
        iov_count: count,
        iov_type: abi::kofi_iov_type_KOFI_IOV_KVEC,
        access,
        offset,
        requested_key,
        context,
        ..Default::default()
    };
    fi_mr_regattr(domain, &attr, flags, mr)
}

/// `fi_mr_regbv()`: registers a bio_vec array (page-based storage I/O).
#[no_mangle]
pub(crate) extern "C" fn fi_mr_regbv(
    domain: *mut abi::fid_domain,
    bvec: *const abi::bio_vec,
    count: usize,
    access: u64,
    offset: u64,
    requested_key: u64,
    flags: u64,
    mr: *mut *mut abi::fid_mr,
    context: *mut c_void,
) -> c_int {
    let attr = abi::fi_mr_attr {
        mr_bvec: bvec,
        iov_count: count,
        iov_type: abi::kofi_iov_type_KOFI_IOV_BVEC,
        access,
        offset,
        requested_key,
        context,
        ..Default::default()
    };
    fi_mr_regattr(domain, &attr, flags, mr)
}

/// Checks the descriptors of `local` with [`check_desc`].
///
/// # Safety
///
/// Each of `local.desc` is null or a descriptor of a region the consumer
/// keeps open.
pub(crate) unsafe fn check_descs(domain: &Domain, local: &Local<'_>, access: u64) -> Result {
    let Some(descs) = local.desc else {
        return Ok(());
    };
    for (i, &desc) in descs.iter().enumerate() {
        let buffer = local.iov.buffer(i).ok_or(EINVAL)?;
        // SAFETY: The caller's guarantee.
        unsafe { check_desc(domain, desc, &buffer, access) }?;
    }
    Ok(())
}

/// Checks the descriptor of a local buffer: null, or a live region of
/// `domain` granting one of `access` (FI_SEND, FI_RECV, FI_READ, FI_WRITE:
/// what fi_mr(3) asks of the buffers of each operation) that holds the
/// buffer within one of its iovs. -EINVAL for a descriptor of no region,
/// of another domain's, or of a region that does not hold the buffer;
/// -FI_EACCES for a region without the access.
///
/// # Safety
///
/// `desc` is null or a descriptor of a region the consumer keeps open.
pub(crate) unsafe fn check_desc(
    domain: &Domain,
    desc: *mut c_void,
    buffer: &Buffer<'_>,
    access: u64,
) -> Result {
    if desc.is_null() {
        return Ok(());
    }
    // SAFETY: A descriptor is its region's head (`regattr`), open (the
    // caller's guarantee); anything else of kofi's fails the class check.
    let mr = unsafe { lookup::<Mr>(desc.cast()) }?;
    if !core::ptr::eq(&*mr.domain, domain) {
        return Err(EINVAL);
    }
    if mr.access & access == 0 {
        return Err(errno::eacces());
    }
    let inside = match buffer {
        Buffer::Bytes(k) => mr.holds_bytes(k),
        Buffer::Pages(b) => mr.holds_pages(b),
    };
    if !inside {
        return Err(EINVAL);
    }
    Ok(())
}

impl Mr {
    /// Whether `k` lies within one of the region's kvecs.
    fn holds_bytes(&self, k: &abi::kvec) -> bool {
        let Iovs::Kvec(v) = &self.iov else {
            return k.iov_len == 0;
        };
        let (start, len) = (k.iov_base as usize, k.iov_len);
        len == 0
            || v.iter().any(|r| {
                let base = r.iov_base as usize;
                start >= base && start - base <= r.iov_len && len <= r.iov_len - (start - base)
            })
    }

    /// Whether `b` lies within one of the region's bio_vecs (compared by
    /// physical address: the same pages may be described from another
    /// first page).
    fn holds_pages(&self, b: &abi::bio_vec) -> bool {
        let Iovs::Bvec(v) = &self.iov else {
            return b.bv_len == 0;
        };
        if b.bv_len == 0 {
            return true;
        }
        // SAFETY: A consumer's bio_vec with a page (the core's array check).
        let start = unsafe { abi::kofi_bvec_phys(b) };
        let len = u64::from(b.bv_len);
        v.iter().any(|r| {
            // SAFETY: The region's own bio_vec, checked at registration.
            let base = unsafe { abi::kofi_bvec_phys(r) };
            let rlen = u64::from(r.bv_len);
            r.bv_len != 0 && start >= base && start - base <= rlen && len <= rlen - (start - base)
        })
    }
}

/// `fi_mr_desc()`: the region's descriptor; NULL for a bad region.
#[no_mangle]
pub(crate) extern "C" fn fi_mr_desc(mr: *mut abi::fid_mr) -> *mut c_void {
    // SAFETY: `mr` is null or a kofi fid the caller keeps open.
    match unsafe { lookup::<Mr>(mr) } {
        // SAFETY: The head of a live region.
        Ok(m) => unsafe { (*m.public.get()).mem_desc },
        Err(_) => core::ptr::null_mut(),
    }
}

/// `fi_mr_key()`: the region's key; FI_KEY_NOTAVAIL (all ones) for a bad region.
#[no_mangle]
pub(crate) extern "C" fn fi_mr_key(mr: *mut abi::fid_mr) -> u64 {
    // SAFETY: `mr` is null or a kofi fid the caller keeps open.
    match unsafe { lookup::<Mr>(mr) } {
        Ok(m) => m.key(),
        Err(_) => u64::MAX,
    }
}

fn bind(mr: *mut abi::fid_mr, bfid: *mut abi::fid, flags: u64) -> Result {
    // SAFETY: `mr` is null or a kofi fid the caller keeps open.
    let m = unsafe { lookup::<Mr>(mr) }?;
    if flags != 0 {
        return Err(errno::ebadflags());
    }
    // SAFETY: `bfid` is null or a kofi fid the caller keeps open.
    if unsafe { class_of(bfid) }? != abi::FI_CLASS_EP {
        // Counters, the other thing libfabric binds regions to, kofi has not.
        return Err(EINVAL);
    }
    // SAFETY: The class says it is an endpoint.
    let ep = unsafe { lookup::<Endpoint>(bfid.cast()) }?;
    if !m.domain.mr_endpoint || !Arc::ptr_eq(&ep.domain, &m.domain) {
        return Err(EINVAL);
    }
    if ep.limits.ep_type != abi::fi_ep_type_FI_EP_MSG {
        // The RDM layer spreads a peer's traffic over connections of its own.
        return Err(errno::eopnotsupp());
    }
    let mut bound = m.bound.lock();
    if bound.is_some() {
        return Err(EINVAL);
    }
    ep.users.get();
    // SAFETY: Published endpoints live in an `Arc`.
    *bound = Some(unsafe { object::arc_of(ep) });
    Ok(())
}

/// `fi_mr_bind()`: binds a region of an FI_MR_ENDPOINT domain to an endpoint.
#[no_mangle]
pub(crate) extern "C" fn fi_mr_bind(
    mr: *mut abi::fid_mr,
    bfid: *mut abi::fid,
    flags: u64,
) -> c_int {
    errno::to_c(bind(mr, bfid, flags))
}

fn enable(mr: *mut abi::fid_mr) -> Result {
    // SAFETY: `mr` is null or a kofi fid the caller keeps open.
    let m = unsafe { lookup::<Mr>(mr) }?;
    let bound = m.bound.lock();
    if m.enabled.load(Ordering::Acquire) {
        // Enabled at registration (any other domain), or already.
        return Ok(());
    }
    let ep = bound.as_ref().ok_or(EINVAL)?;
    if m.prov_registered.load(Ordering::Acquire) {
        // The region is bound to `ep`, an open MSG endpoint of its domain;
        // the lock keeps a second enable out.
        m.domain.provider_mr_enable(m, ep)?;
    }
    m.enabled.store(true, Ordering::Release);
    Ok(())
}

/// `fi_mr_enable()`: makes a bound region usable (see fi_domain.h).
#[no_mangle]
pub(crate) extern "C" fn fi_mr_enable(mr: *mut abi::fid_mr) -> c_int {
    errno::to_c(enable(mr))
}

/// Where bytes [`addr`, `addr` + `len`) of RMA address space start in `mr`,
/// once it is enabled and grants `access`.
fn span(mr: &Mr, addr: u64, len: usize, access: u64) -> Result<usize> {
    // A disabled region (FI_MR_ENDPOINT, not yet enabled) has no key yet
    // as far as peers are concerned.
    if !mr.enabled.load(Ordering::Acquire) {
        return Err(errno::enokey());
    }
    if mr.access & access != access {
        return Err(errno::eacces());
    }
    let start = addr.checked_sub(mr.offset).ok_or(EINVAL)?;
    let end = start.checked_add(len as u64).ok_or(EINVAL)?;
    if end > mr.len {
        return Err(EINVAL);
    }
    Ok(start as usize)
}

fn mr_get(
    domain: *mut abi::fid_domain,
    key: u64,
    addr: u64,
    len: usize,
    access: u64,
) -> Result<*mut abi::fid_mr> {
    // SAFETY: `domain` is null or a kofi fid the provider keeps open.
    let domain = unsafe { lookup::<Domain>(domain) }?;
    if access == 0 || access & !(flags::FI_REMOTE_READ | flags::FI_REMOTE_WRITE) != 0 {
        return Err(EINVAL);
    }
    let regions = domain.mrs.regions.lock();
    let mr = regions.get(&key).ok_or_else(errno::enokey)?;
    span(mr, addr, len, access)?;
    mr.inflight.fetch_add(1, Ordering::AcqRel);
    Ok(mr.public())
}

/// Reads `buf.len()` bytes at RMA address `addr` of the region `key` names
/// into `buf`, lets `update` change them, and writes them back (unless
/// `access` is FI_REMOTE_READ alone), all under the domain's region lock:
/// the software atomic operations of RDM endpoints (rdm/atomic.rs) are
/// atomic with respect to each other.
pub(crate) fn update_span(
    domain: &Domain,
    key: u64,
    addr: u64,
    access: u64,
    buf: &mut [u8],
    update: impl FnOnce(&mut [u8]),
) -> Result {
    let regions = domain.mrs.regions.lock();
    let mr = regions.get(&key).ok_or_else(errno::enokey)?;
    let start = span(mr, addr, buf.len(), access)?;
    let memory = mr.iov.as_iov();
    // SAFETY: `span` checked the window lies inside the region, whose
    // memory stays registered while it is in the table, whose lock is held;
    // `buf` is ours.
    unsafe { memory.copy_out(start, buf) };
    update(buf);
    if access & flags::FI_REMOTE_WRITE != 0 {
        // SAFETY: As above, in the other direction (FI_REMOTE_WRITE).
        unsafe { memory.copy_in(start, buf) };
    }
    Ok(())
}

/// `kofi_mr_get()`: finds and holds the region for an incoming RMA.
#[no_mangle]
pub(crate) extern "C" fn kofi_mr_get(
    domain: *mut abi::fid_domain,
    key: u64,
    addr: u64,
    len: usize,
    access: u64,
    mr: *mut *mut abi::fid_mr,
) -> c_int {
    if mr.is_null() {
        return EINVAL.to_errno();
    }
    match mr_get(domain, key, addr, len, access) {
        Ok(p) => {
            // SAFETY: `mr` is non-null and valid for write (ABI).
            unsafe { *mr = p };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// `kofi_mr_iter()`: `iter` over `len` bytes at RMA address `addr` of a held
/// region (checked by kofi_mr_get).
#[no_mangle]
pub(crate) extern "C" fn kofi_mr_iter(
    mr: *mut abi::fid_mr,
    direction: u32,
    addr: u64,
    len: usize,
    iter: *mut abi::iov_iter,
) {
    // SAFETY: The provider holds the region (kofi_mr_get), so it is alive.
    let Ok(mr) = (unsafe { lookup::<Mr>(mr) }) else {
        return;
    };
    if iter.is_null() || addr < mr.offset {
        return;
    }
    let start = (addr - mr.offset) as usize;
    // SAFETY: `iter` is the provider's; kofi_mr_get checked the window lies
    // inside the region, which the provider holds while it uses the iterator.
    unsafe { mr.window(iter, direction, start, len) };
}

/// `kofi_mr_put()`: releases a region held by kofi_mr_get.
#[no_mangle]
pub(crate) extern "C" fn kofi_mr_put(mr: *mut abi::fid_mr) {
    // SAFETY: The provider holds the region, so it is alive.
    let Ok(mr) = (unsafe { lookup::<Mr>(mr) }) else {
        return;
    };
    let _regions = mr.domain.mrs.regions.lock();
    if mr.inflight.fetch_sub(1, Ordering::AcqRel) == 1 {
        mr.domain.mrs.idle.notify_all();
    }
}
