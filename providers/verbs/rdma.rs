// SPDX-License-Identifier: GPL-2.0

//! The one unsafe layer over rdma_cm and ib_verbs (reached through
//! `kofi_verbs_glue.c` where the RDMA core offers macros and inlines):
//! owning wrappers that release their object on drop, the CM event and CQ
//! completion trampolines, and DMA mappings. The provider's own code is safe.

use crate::abi;
use crate::compat::VecExt;
use crate::iovec::Iov;
use crate::kofi::{Lent, LocalAt, MrAttr, Premapped};
use crate::sockaddr::SockAddr;
use core::ops::Range;
use core::ptr::{self, NonNull};
use core::sync::atomic::Ordering;
use kernel::error::to_result;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, ArcBorrow, Mutex, UniqueArc};
use kernel::types::Opaque;

/// An RDMA device, between the ib_client's add and remove callbacks.
///
/// # Invariants
///
/// `ptr` is a registered device. The provider's remove callback tears down
/// every object made on the device before it returns, so a `Device` held by
/// a live object is valid.
#[derive(Clone, Copy)]
pub(crate) struct Device {
    ptr: NonNull<abi::ib_device>,
}

// SAFETY: Device calls used here are thread-safe.
unsafe impl Send for Device {}
// SAFETY: As above.
unsafe impl Sync for Device {}

impl Device {
    /// # Safety
    ///
    /// `ptr` is a device passed to the ib_client's add callback whose remove
    /// callback has not run.
    unsafe fn from_raw(ptr: *mut abi::ib_device) -> Option<Device> {
        NonNull::new(ptr).map(|ptr| Device { ptr })
    }

    pub(crate) fn same(&self, other: &Device) -> bool {
        self.ptr == other.ptr
    }

    pub(crate) fn name(&self) -> &CStr {
        // SAFETY: The device is registered (type invariants); its name is a
        // NUL-terminated string that lives as long as the device.
        unsafe { CStr::from_char_ptr(abi::kverbs_dev_name(self.ptr.as_ptr())) }
    }

    pub(crate) fn limits(&self) -> abi::kverbs_limits {
        let mut l = abi::kverbs_limits::default();
        // SAFETY: The device is registered; `l` is ours.
        unsafe { abi::kverbs_dev_limits(self.ptr.as_ptr(), &mut l) };
        l
    }
}

/// The provider's ib_client (in `kofi_verbs_glue.c`), registered while
/// this lives: the RDMA core calls `kofi_verbs_device_add` for each device
/// present and to come, and `kofi_verbs_device_remove` as each goes
/// (for all of them when the client unregisters), which hand the device to
/// `device::added` and `device::removed`.
pub(crate) struct ClientRegistration(());

/// The ib_client's add callback.
///
/// # Safety
///
/// Called by the RDMA core with a device being added.
#[no_mangle]
unsafe extern "C" fn kofi_verbs_device_add(raw: *mut abi::ib_device) {
    // SAFETY: The core's device, registered until its remove callback.
    if let Some(dev) = unsafe { Device::from_raw(raw) } {
        crate::device::added(dev);
    }
}

/// The ib_client's remove callback: nothing of kofi's is left on the
/// device when it returns.
///
/// # Safety
///
/// Called by the RDMA core with a device being removed.
#[no_mangle]
unsafe extern "C" fn kofi_verbs_device_remove(raw: *mut abi::ib_device) {
    // SAFETY: The core's device, registered until this callback returns.
    if let Some(dev) = unsafe { Device::from_raw(raw) } {
        crate::device::removed(dev);
    }
}

impl ClientRegistration {
    pub(crate) fn register() -> Result<ClientRegistration> {
        // SAFETY: No preconditions; the callbacks are the provider's.
        to_result(unsafe { abi::kverbs_client_register() })?;
        Ok(ClientRegistration(()))
    }
}

impl Drop for ClientRegistration {
    fn drop(&mut self) {
        // SAFETY: Registered in `register`.
        unsafe { abi::kverbs_client_unregister() };
    }
}

/// A protection domain, shared by what is made in it.
///
/// # Invariants
///
/// `ptr` is a PD of `dev`, owned, deallocated on drop. Its regions and QPs
/// hold a reference to it ([`Region`], [`Qp`]), so it outlives them.
pub(crate) struct Pd {
    ptr: NonNull<abi::ib_pd>,
    dev: Device,
}

// SAFETY: PDs are used from any thread.
unsafe impl Send for Pd {}
// SAFETY: As above.
unsafe impl Sync for Pd {}

impl Pd {
    pub(crate) fn new(dev: Device) -> Result<Arc<Pd>> {
        // SAFETY: The device is registered.
        let ptr = NonNull::new(unsafe { abi::kverbs_alloc_pd(dev.ptr.as_ptr()) }).ok_or(ENOMEM)?;
        // INVARIANT: Owned; nothing is made in it yet.
        Ok(Arc::new(Pd { ptr, dev }, GFP_KERNEL)?)
    }

    /// The key of local memory, for SGEs of DMA-mapped buffers.
    pub(crate) fn lkey(&self) -> u32 {
        // SAFETY: `ptr` is live (type invariants).
        unsafe { abi::kverbs_pd_lkey(self.ptr.as_ptr()) }
    }

    pub(crate) fn device(&self) -> Device {
        self.dev
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: Owned; its regions and QPs, which hold references to it,
        // are gone (type invariants).
        unsafe { abi::kverbs_dealloc_pd(self.ptr.as_ptr()) };
    }
}

/// What owns a CQ: woken when completions arrive, told of each.
pub(crate) trait CqOwner: Send + Sync + 'static {
    /// The first completion since the CQ was armed ([`Cq::arm`]) arrived.
    /// Runs in the driver's context and must not sleep; `can_wake` says
    /// whether it may wake a task (rxe calls it with interrupts off).
    fn cq_event(this: ArcBorrow<'_, Self>, can_wake: bool);

    /// A work request posted with one of the CQ's slots completed (from
    /// [`Cq::poll`] or [`Qp::drain`], in the caller's thread).
    fn completed(&self, wc: &WorkCompletion);
}

/// The `ib_cqe` of one work request at a time, and who to tell.
///
/// # Invariants
///
/// `owner` is the owner reference its CQ holds.
#[repr(C)]
struct Slot<H> {
    cqe: Opaque<abi::ib_cqe>,
    index: usize,
    owner: *const H,
}

/// A completion queue its owner polls ([`Cq::poll`]) in process context,
/// when it hears of a completion ([`CqOwner::cq_event`]), with the slots
/// its work requests complete at (each posted work request names one).
///
/// # Invariants
///
/// `ptr` is owned and destroyed on drop; its event context is `owner`, an
/// `Arc<H>` reference released after the CQ is destroyed. `slots` is never
/// resized (the cqes' addresses are stable), outlives the CQ, and each
/// cqe's `done` is [`Cq::done`] for `H`. Work requests are posted with the
/// slots only on QPs completing to this CQ ([`Qp`]).
pub(crate) struct Cq<H: CqOwner> {
    ptr: NonNull<abi::ib_cq>,
    owner: *const H,
    slots: KVec<Slot<H>>,
}

// SAFETY: CQs are used from any thread; `owner` is an `Arc` of a `Send +
// Sync` type, which is all the slots point at.
unsafe impl<H: CqOwner> Send for Cq<H> {}
// SAFETY: As above: polling and arming are thread-safe in every driver.
unsafe impl<H: CqOwner> Sync for Cq<H> {}

impl<H: CqOwner> Cq<H> {
    /// A CQ of `entries` on `dev`, armed, whose events and completions go
    /// to `owner`, with `slots` slots for work requests.
    pub(crate) fn new(dev: Device, entries: u32, owner: Arc<H>, slots: usize) -> Result<Arc<Self>> {
        let mut list = KVec::with_capacity(slots, GFP_KERNEL)?;
        for index in 0..slots {
            let cqe = Opaque::new(abi::ib_cqe {
                done: Some(Self::done),
            });
            let owner = ptr::from_ref::<H>(&owner);
            list.push(Slot { cqe, index, owner }, GFP_KERNEL)?;
        }
        let owner = Arc::into_raw(owner);
        // SAFETY: The device is registered; the context is the reference
        // taken above, which the CQ holds until it is destroyed.
        let ptr = unsafe {
            abi::kverbs_create_cq(
                dev.ptr.as_ptr(),
                entries as c_int,
                Some(cq_trampoline::<H>),
                owner.cast_mut().cast(),
            )
        };
        let Some(ptr) = NonNull::new(ptr) else {
            // SAFETY: Taken above; the CQ that would have held it failed.
            drop(unsafe { Arc::from_raw(owner) });
            return Err(ENOMEM);
        };
        // INVARIANT: Owned; its context is `owner`, which every slot names
        // (the pointer `into_raw` gave is the one borrowed above); the
        // slots are not resized from here on.
        Ok(Arc::new(
            Cq {
                ptr,
                owner,
                slots: list,
            },
            GFP_KERNEL,
        )?)
    }

    /// Hands every completion the CQ holds to its owner
    /// ([`CqOwner::completed`], here in the caller's thread). The caller
    /// serializes polls, so completions are reported in order. Returns how
    /// many it handed over.
    pub(crate) fn poll(&self) -> usize {
        // SAFETY: A live CQ (type invariants); its completions name its
        // slots or the RDMA core's drain, whose done callbacks take process
        // context, which a poller is.
        let n = unsafe { abi::kverbs_poll_cq(self.ptr.as_ptr()) };
        n.unsigned_abs() as usize
    }

    /// Asks for an event at the next completion: true when completions may
    /// have arrived unreported meanwhile (poll again).
    pub(crate) fn arm(&self) -> bool {
        // SAFETY: A live CQ (type invariants).
        unsafe { abi::kverbs_arm_cq(self.ptr.as_ptr()) }
    }

    /// Slot `i`'s cqe, for a work request posted on a QP of this CQ.
    fn cqe(&self, i: usize) -> Result<*mut abi::ib_cqe> {
        Ok(self.slots.get(i).ok_or(EINVAL)?.cqe.get())
    }

    /// A completion's callback, from [`Cq::poll`] or the RDMA core's drain
    /// (process context).
    ///
    /// # Safety
    ///
    /// Called by the RDMA core with a completion of a work request posted
    /// with one of a `Cq<H>`'s slots, on a QP of that CQ.
    unsafe extern "C" fn done(_cq: *mut abi::ib_cq, wc: *mut abi::ib_wc) {
        // SAFETY: A valid completion; its cqe heads a `Slot<H>` (repr(C)) of
        // the CQ being polled, live with the owner it holds (invariants).
        unsafe {
            let wc = &*wc;
            let slot = &*wc.__bindgen_anon_1.wr_cqe.cast::<Slot<H>>();
            let done = WorkCompletion {
                slot: slot.index,
                byte_len: wc.byte_len,
                raw_status: wc.status,
            };
            (*slot.owner).completed(&done);
        }
    }
}

impl<H: CqOwner> Drop for Cq<H> {
    fn drop(&mut self) {
        // SAFETY: Owned (type invariants); the QP of each `Qp` holds a
        // reference to it and is destroyed first, so no completion, and no
        // event, comes any more.
        unsafe { abi::kverbs_destroy_cq(self.ptr.as_ptr()) };
        // SAFETY: The reference `new` took for the CQ's context.
        drop(unsafe { Arc::from_raw(self.owner) });
    }
}

/// A CQ's event callback, for CQs whose owner is `H`.
///
/// # Safety
///
/// Called by the driver for a CQ made by [`Cq::new`], whose context is an
/// `Arc<H>` reference held until the CQ is destroyed.
unsafe extern "C" fn cq_trampoline<H: CqOwner>(_cq: *mut abi::ib_cq, context: *mut c_void) {
    // SAFETY: The CQ's context reference (see above) outlives its events.
    let this = unsafe { ArcBorrow::<H>::from_raw(context.cast()) };
    // SAFETY: No preconditions.
    let can_wake = unsafe { abi::kverbs_can_wake() };
    H::cq_event(this, can_wake);
}

/// A work completion, copied out of the CQ.
pub(crate) struct WorkCompletion {
    /// The slot the work request was posted with.
    pub(crate) slot: usize,
    pub(crate) byte_len: u32,
    /// The device's status code.
    raw_status: u32,
}

impl WorkCompletion {
    pub(crate) fn status(&self) -> WcStatus {
        WcStatus::from_raw(self.raw_status)
    }

    pub(crate) fn ok(&self) -> bool {
        self.raw_status == abi::ib_wc_status_IB_WC_SUCCESS
    }

    /// The device's own code of the status, for an error entry's
    /// `prov_errno`.
    pub(crate) fn prov_errno(&self) -> i32 {
        self.raw_status as i32
    }
}

/// How a work request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WcStatus {
    Success,
    /// Never ran: the QP went to the error state first.
    Flushed,
    /// The peer refused the access, or the local protection check failed.
    AccessDenied,
    /// The peer did not answer (retries exhausted, receiver never ready).
    PeerGone,
    /// Any other error.
    Failed,
}

impl WcStatus {
    fn from_raw(status: u32) -> WcStatus {
        match status {
            abi::ib_wc_status_IB_WC_SUCCESS => WcStatus::Success,
            abi::ib_wc_status_IB_WC_WR_FLUSH_ERR => WcStatus::Flushed,
            abi::ib_wc_status_IB_WC_REM_ACCESS_ERR | abi::ib_wc_status_IB_WC_LOC_PROT_ERR => {
                WcStatus::AccessDenied
            }
            abi::ib_wc_status_IB_WC_RETRY_EXC_ERR | abi::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR => {
                WcStatus::PeerGone
            }
            _ => WcStatus::Failed,
        }
    }
}

/// What a send-queue work request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WrOp {
    Send,
    RdmaWrite,
    RdmaRead,
}

impl WrOp {
    fn raw(self) -> u32 {
        match self {
            WrOp::Send => abi::ib_wr_opcode_IB_WR_SEND,
            WrOp::RdmaWrite => abi::ib_wr_opcode_IB_WR_RDMA_WRITE,
            WrOp::RdmaRead => abi::ib_wr_opcode_IB_WR_RDMA_READ,
        }
    }
}

/// SGEs of DMA-mapped memory, or of a region's; unmapped on drop.
///
/// # Invariants
///
/// Without `region`, the SGEs in a range of `held` lie in that entry's
/// premapped region, which it keeps mapped; every other SGE was mapped on
/// `dev` in direction `to_device` and is unmapped once, on drop. The ranges
/// are in order and do not overlap. With `region`, every SGE lies in the
/// region, which the mapping keeps registered while a work request may use
/// them.
pub(crate) struct Mapping {
    dev: Device,
    sges: KVec<abi::ib_sge>,
    to_device: bool,
    region: Option<Arc<Region>>,
    held: KVec<(Premapped, Range<usize>)>,
}

// SAFETY: DMA addresses are plain numbers.
unsafe impl Send for Mapping {}
// SAFETY: As above.
unsafe impl Sync for Mapping {}

impl Mapping {
    pub(crate) fn empty(dev: Device, to_device: bool) -> Mapping {
        Mapping {
            dev,
            sges: KVec::new(),
            to_device,
            region: None,
            held: KVec::new(),
        }
    }

    /// Appends `sges` (the caller keeps the invariants: see `push_raw`,
    /// `push_premapped` and `in_region`).
    fn push_sges(&mut self, sges: &[abi::ib_sge]) -> Result {
        self.sges.extend_from_slice(sges, GFP_KERNEL)?;
        Ok(())
    }

    /// Appends the SGEs of `len` bytes at `at` in the region `premapped`
    /// holds (a [`LocalMap`]'s), in at most `max` in all; false when it
    /// cannot give them (the bytes are not its, too many SGEs, the device
    /// going): the caller maps the bytes itself.
    fn push_premapped(
        &mut self,
        premapped: Option<&Premapped>,
        at: LocalAt,
        len: usize,
        lkey: u32,
        max: usize,
    ) -> Result<bool> {
        let Some(p) = premapped else {
            return Ok(false);
        };
        let Some(map) = p.downcast_ref::<LocalMap>() else {
            return Ok(false);
        };
        let room = max.saturating_sub(self.sges.len());
        let Some(sges) = map.sges(at, len, self.to_device, lkey, room)? else {
            return Ok(false);
        };
        let start = self.sges.len();
        self.held.reserve(1, GFP_KERNEL)?;
        self.push_sges(&sges)?;
        // INVARIANT: The new SGEs lie in `p`'s region, held with them.
        self.held
            .push((p.clone(), start..self.sges.len()), GFP_KERNEL)?;
        Ok(true)
    }

    /// Bytes `offset .. offset + len` of `region` (made by
    /// [`Region::of_lent`] and registered), as one SGE the device places a
    /// READ's data through.
    pub(crate) fn in_region(
        dev: Device,
        region: &Arc<Region>,
        offset: usize,
        len: usize,
    ) -> Result<Mapping> {
        let mut m = Mapping::empty(dev, false);
        m.push_sges(&[region.sge(offset, len)?])?;
        // INVARIANT: The SGE lies in the region, held with it.
        m.region = Some(region.clone());
        Ok(m)
    }

    /// Maps `len` bytes at `base` (a provider buffer or the consumer's,
    /// which stays valid until the mapping is dropped).
    fn push_raw(&mut self, base: *mut c_void, len: usize, lkey: u32, max: usize) -> Result {
        let room = max.checked_sub(self.sges.len()).ok_or(EINVAL)?;
        self.sges.reserve(room, GFP_KERNEL)?;
        // SAFETY: `sges` has room for `room` more SGEs past its length; the
        // memory is valid (the caller's guarantee, by the types below).
        let n = unsafe {
            abi::kverbs_map_kvec(
                self.dev.ptr.as_ptr(),
                base,
                len,
                self.to_device,
                lkey,
                self.sges.as_mut_ptr().add(self.sges.len()),
                room as u32,
            )
        };
        if n < 0 {
            return Err(if n == E2BIG.to_errno() {
                EINVAL
            } else {
                Error::from_errno(n)
            });
        }
        // SAFETY: The helper initialised `n <= room` SGEs past the length.
        // INVARIANT: Mapped here, in no range of `held`.
        unsafe { self.sges.grow_len(n as usize) };
        Ok(())
    }

    /// Maps a provider buffer (which outlives the mapping: the caller keeps
    /// both together).
    pub(crate) fn of_buffer(
        dev: Device,
        buf: &mut [u8],
        to_device: bool,
        lkey: u32,
    ) -> Result<Mapping> {
        let mut m = Mapping::empty(dev, to_device);
        m.push_raw(buf.as_mut_ptr().cast(), buf.len(), lkey, 1)?;
        Ok(m)
    }

    /// Maps provider buffers, one SGE each, in order (as
    /// [`Mapping::of_buffer`]): a receive that scatters a SEND into them.
    pub(crate) fn of_buffers(
        dev: Device,
        bufs: &mut [&mut [u8]],
        to_device: bool,
        lkey: u32,
    ) -> Result<Mapping> {
        let mut m = Mapping::empty(dev, to_device);
        let max = bufs.len();
        for buf in bufs.iter_mut() {
            m.push_raw(buf.as_mut_ptr().cast(), buf.len(), lkey, max)?;
        }
        Ok(m)
    }

    /// Maps bytes `range.0 .. range.0 + range.1` of the consumer's lent
    /// buffers (valid until the operation completes, after this mapping is
    /// dropped), in at most `max` SGEs. A buffer in a registered region
    /// whose descriptor came with it takes the region's mapping.
    pub(crate) fn of_lent(
        dev: Device,
        lent: &Lent,
        range: (usize, usize),
        to_device: bool,
        lkey: u32,
        max: usize,
    ) -> Result<Mapping> {
        let mut m = Mapping::empty(dev, to_device);
        m.push_lent(lent, range, lkey, max)?;
        Ok(m)
    }

    /// Maps a provider buffer, as [`Mapping::of_buffer`], and after it
    /// bytes of the consumer's lent buffers, as [`Mapping::of_lent`]: in at
    /// most `max` SGEs in all, one work request's (a header and its
    /// payload).
    pub(crate) fn of_buffer_and_lent(
        dev: Device,
        buf: &mut [u8],
        lent: &Lent,
        range: (usize, usize),
        lkey: u32,
        max: usize,
    ) -> Result<Mapping> {
        let mut m = Mapping::empty(dev, true);
        m.push_raw(buf.as_mut_ptr().cast(), buf.len(), lkey, max)?;
        m.push_lent(lent, range, lkey, max)?;
        Ok(m)
    }

    /// Appends the SGEs of [`Mapping::of_lent`], up to `max` SGEs in the
    /// mapping in all. Room for them is taken at once: one allocation.
    fn push_lent(&mut self, lent: &Lent, range: (usize, usize), lkey: u32, max: usize) -> Result {
        let pieces = match lent {
            Lent::Kvecs(k) => k.kvecs().len(),
            Lent::Pages(p) => p.bvecs().len(),
        };
        let room = max.saturating_sub(self.sges.len());
        self.sges.reserve(pieces.min(room), GFP_KERNEL)?;
        let (mut skip, mut left) = range;
        match lent {
            Lent::Kvecs(k) => {
                for (i, kv) in k.kvecs().iter().enumerate() {
                    if left == 0 {
                        break;
                    }
                    if skip >= kv.iov_len {
                        skip -= kv.iov_len;
                        continue;
                    }
                    let n = (kv.iov_len - skip).min(left);
                    // SAFETY: Within the consumer's kvec (`skip + n <= iov_len`).
                    let base = unsafe { kv.iov_base.cast::<u8>().add(skip) };
                    let at = LocalAt::Bytes(base as usize);
                    if !self.push_premapped(lent.premapped(i), at, n, lkey, max)? {
                        self.push_raw(base.cast(), n, lkey, max)?;
                    }
                    skip = 0;
                    left -= n;
                }
            }
            Lent::Pages(p) => {
                for (i, bv) in p.bvecs().iter().enumerate() {
                    let len = bv.bv_len as usize;
                    if left == 0 {
                        break;
                    }
                    if skip >= len {
                        skip -= len;
                        continue;
                    }
                    let n = (len - skip).min(left);
                    let at = LocalAt::Page(bv.bv_page, bv.bv_offset + skip as u32);
                    if self.push_premapped(lent.premapped(i), at, n, lkey, max)? {
                        skip = 0;
                        left -= n;
                        continue;
                    }
                    if self.sges.len() == max {
                        return Err(EINVAL);
                    }
                    let mut sge = abi::ib_sge::default();
                    to_result(
                        // SAFETY: The consumer's page, lent until
                        // completion; the piece lies inside the bio_vec.
                        unsafe {
                            abi::kverbs_map_page(
                                self.dev.ptr.as_ptr(),
                                bv.bv_page,
                                bv.bv_offset + skip as u32,
                                n as u32,
                                self.to_device,
                                lkey,
                                &mut sge,
                            )
                        }
                        .min(0),
                    )?;
                    // INVARIANT: Mapped here, in no range of `held`.
                    self.push_sges(&[sge])?;
                    skip = 0;
                    left -= n;
                }
            }
        }
        if left != 0 {
            return Err(EINVAL);
        }
        Ok(())
    }

    pub(crate) fn sges(&self) -> &[abi::ib_sge] {
        &self.sges
    }

    /// Makes the device's writes to the first `len` bytes visible to the
    /// CPU.
    pub(crate) fn sync_for_cpu(&self, len: usize) {
        let mut left = len;
        for s in self.sges.iter() {
            if left == 0 {
                break;
            }
            let n = left.min(s.length as usize);
            // SAFETY: A mapping of ours on a registered device; `n` bytes
            // from its start are within it.
            unsafe { abi::kverbs_sync_for_cpu(self.dev.ptr.as_ptr(), s.addr, n, self.to_device) };
            left -= n;
        }
    }

    /// Hands the memory (back) to the device.
    pub(crate) fn sync_for_device(&self) {
        for s in self.sges.iter() {
            // SAFETY: A mapping of ours on a registered device, whole.
            unsafe {
                abi::kverbs_sync_for_device(
                    self.dev.ptr.as_ptr(),
                    s.addr,
                    s.length as usize,
                    self.to_device,
                )
            };
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.region.is_some() {
            // The region's SGEs are the region's to unmap.
            return;
        }
        let mut held = self.held.iter().map(|(_, r)| r).peekable();
        for (i, sge) in self.sges.iter().enumerate() {
            while held.next_if(|r| r.end <= i).is_some() {}
            if !held.peek().is_some_and(|r| r.contains(&i)) {
                // SAFETY: Mapped by us (type invariants), unmapped once.
                unsafe { abi::kverbs_unmap(self.dev.ptr.as_ptr(), sge, 1, self.to_device) };
            } else if !self.to_device {
                // What the device wrote into a premapped region is the
                // CPU's again (the region stays mapped: `held`).
                // SAFETY: The SGE lies in a region mapped on the device.
                unsafe {
                    abi::kverbs_sync_for_cpu(
                        self.dev.ptr.as_ptr(),
                        sge.addr,
                        sge.length as usize,
                        false,
                    )
                };
            }
        }
    }
}

/// The C object of a [`LocalMap`], owned.
///
/// # Invariants
///
/// The pointer came from `kverbs_local_alloc` and is freed once, on drop.
struct OwnedLocal(NonNull<abi::kverbs_local>);

// SAFETY: The object is used under its map's mutex only, from any thread.
unsafe impl Send for OwnedLocal {}

impl Drop for OwnedLocal {
    fn drop(&mut self) {
        // SAFETY: Owned (type invariants); its device is still registered
        // (a map is released at the device's removal).
        unsafe { abi::kverbs_local_free(self.0.as_ptr()) };
    }
}

/// A registered region's memory DMA-mapped once, at registration, for the
/// operations whose buffers carry its descriptor (they hold it as a
/// [`Premapped`] while their work requests may use it).
///
/// # Invariants
///
/// `local` is a mapping of memory that stays valid while the map holds it
/// (the consumer's promise under fi_mr_reg, until the region's close; the
/// operations naming it after that broke the promise themselves), on a
/// device that outlives it: [`LocalMap::release`] runs at the device's
/// removal.
#[pin_data]
pub(crate) struct LocalMap {
    #[pin]
    local: Mutex<Option<OwnedLocal>>,
}

impl LocalMap {
    /// Maps the memory of registration `attr` on `dev`. The owner drops
    /// the map at the region's close, or releases it ([`LocalMap::release`])
    /// at the device's removal.
    pub(crate) fn new(dev: Device, attr: &MrAttr<'_>) -> Result<Arc<LocalMap>> {
        let memory = attr.memory();
        let (kv, bv) = memory.as_raw();
        let n = u32::try_from(memory.count()).map_err(|_| EINVAL)?;
        let mut err = 0;
        // SAFETY: The arrays hold `n` entries, of memory the consumer keeps
        // registered until the region's close (`MrAttr` invariants); the
        // device is registered.
        let l = unsafe { abi::kverbs_local_alloc(dev.ptr.as_ptr(), kv, bv, n, &mut err) };
        let owned = OwnedLocal(NonNull::new(l).ok_or_else(|| Error::from_errno(err))?);
        // INVARIANT: Registered memory, held until the region's close; the
        // device outlives the map (`Device` invariants: its removal
        // releases every map).
        Arc::pin_init(
            pin_init!(LocalMap {
                local <- new_mutex!(Some(owned), "kofi_verbs_local"),
            }),
            GFP_KERNEL,
        )
    }

    /// The SGEs with `lkey` of `len` bytes at `at`, handed to the device
    /// (`to_device`: for it to read), at most `max`; `None` when the map
    /// does not hold them all, needs more SGEs, or was released.
    fn sges(
        &self,
        at: LocalAt,
        len: usize,
        to_device: bool,
        lkey: u32,
        max: usize,
    ) -> Result<Option<KVec<abi::ib_sge>>> {
        let g = self.local.lock();
        let Some(local) = g.as_ref() else {
            return Ok(None);
        };
        let mut sges = KVec::with_capacity(max, GFP_KERNEL)?;
        let (addr, page, offset) = match at {
            LocalAt::Bytes(a) => (a as *const c_void, ptr::null_mut(), 0),
            LocalAt::Page(p, o) => (ptr::null(), p, o),
        };
        // SAFETY: Owned and mapped (type invariants, under the lock); `sges`
        // has room for `max`; the helper checks the bytes are the map's.
        let n = unsafe {
            abi::kverbs_local_sges(
                local.0.as_ptr(),
                addr,
                page,
                offset,
                len,
                to_device,
                lkey,
                sges.as_mut_ptr(),
                u32::try_from(max).unwrap_or(u32::MAX),
            )
        };
        if n < 0 {
            return Ok(None);
        }
        // SAFETY: The helper initialised `n <= max` SGEs.
        unsafe { sges.grow_len(n as usize) };
        Ok(Some(sges))
    }

    /// Unmaps the memory now (the device is going); operations that still
    /// hold the map find nothing in it.
    pub(crate) fn release(&self) {
        drop(self.local.lock().take());
    }
}

/// An SGE for an inline send of `buf`: the device copies the bytes from this
/// kernel virtual address while the work request is posted.
pub(crate) fn inline_sge(buf: &[u8]) -> abi::ib_sge {
    abi::ib_sge {
        addr: buf.as_ptr() as u64,
        length: buf.len() as u32,
        lkey: 0,
    }
}

/// A fast-registered memory region for remote access.
///
/// # Invariants
///
/// `ptr` is owned, freed on drop; it was made on `_pd`.
pub(crate) struct Region {
    ptr: NonNull<abi::kverbs_region>,
    _pd: Arc<Pd>,
}

// SAFETY: The region is used from any thread.
unsafe impl Send for Region {}
// SAFETY: As above.
unsafe impl Sync for Region {}

impl Region {
    /// The region of registration `attr`: its memory mapped and an MR
    /// allocated; valid for peers once posted with [`Qp::post_reg`] and
    /// completed. The owner drops it by the region's close.
    pub(crate) fn registered(
        pd: &Arc<Pd>,
        attr: &MrAttr<'_>,
        remote_read: bool,
        remote_write: bool,
    ) -> Result<Region> {
        // SAFETY: The consumer keeps the memory registered until the
        // region's close (`MrAttr` invariants), by which the owner drops
        // the region.
        unsafe { Region::new(pd, attr.memory(), attr.offset(), remote_read, remote_write) }
    }

    /// Maps the memory and allocates the MR.
    ///
    /// # Safety
    ///
    /// The memory stays valid while the region exists.
    unsafe fn new(
        pd: &Arc<Pd>,
        memory: Iov<'_>,
        offset: u64,
        remote_read: bool,
        remote_write: bool,
    ) -> Result<Region> {
        let (kv, bv) = memory.as_raw();
        let n = u32::try_from(memory.count()).map_err(|_| EINVAL)?;
        let mut err = 0;
        // SAFETY: The arrays hold `n` entries of memory valid while the
        // region exists (the caller's guarantee); the PD is live.
        let r = unsafe {
            abi::kverbs_region_alloc(
                pd.ptr.as_ptr(),
                kv,
                bv,
                n,
                offset,
                remote_read,
                remote_write,
                &mut err,
            )
        };
        match NonNull::new(r) {
            // INVARIANT: Owned, made on `pd`.
            Some(ptr) => Ok(Region {
                ptr,
                _pd: pd.clone(),
            }),
            None => Err(Error::from_errno(err)),
        }
    }

    /// A region of one MR over the consumer's lent buffers, for the
    /// operation they are lent to: a rendezvous send's source (read by the
    /// peer) or a READ's sink. As with [`Mapping::of_lent`], the operation
    /// holds it (its work requests, its rendezvous state) and drops it by
    /// its completion, within the loan. `None` when the
    /// buffers need more than one MR (or do not meet at page boundaries).
    /// Buffers in regions mapped once already are not mapped again
    /// ([`Region::of_premapped`]).
    pub(crate) fn of_lent(
        pd: &Arc<Pd>,
        lent: &Lent,
        remote_read: bool,
        remote_write: bool,
    ) -> Result<Option<Region>> {
        if let Some(r) = Region::of_premapped(pd, lent, remote_read, remote_write)? {
            return Ok(Some(r));
        }
        // SAFETY: Lent buffers stay valid until their operation completes,
        // and the region does not outlive the operation (see above).
        match unsafe { Region::new(pd, lent.as_iov(), 0, remote_read, remote_write) } {
            Ok(r) if r.wrs() == 1 => Ok(Some(r)),
            Ok(_) | Err(EINVAL) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`Region::of_lent`] over lent buffers that all lie in regions mapped
    /// once ([`LocalMap`]: their descriptors came with them): the MR is made
    /// from those mappings, with no mapping of its own. `None` as there,
    /// and when a buffer has no such region (or its bytes cannot be had
    /// from it).
    fn of_premapped(
        pd: &Arc<Pd>,
        lent: &Lent,
        remote_read: bool,
        remote_write: bool,
    ) -> Result<Option<Region>> {
        // The SGEs of a region of one MR: at most a page list's worth.
        const MAX_SGES: usize = 256;
        let mut m = Mapping::empty(pd.dev, true);
        let (mut at, len) = (0, lent.len());
        let mut i = 0;
        while at < len {
            let Some((piece, n)) = lent.piece(i) else {
                return Ok(None);
            };
            if n != 0 && !m.push_premapped(lent.premapped(i), piece, n, 0, MAX_SGES)? {
                return Ok(None);
            }
            at += n;
            i += 1;
        }
        let mut err = 0;
        // SAFETY: The SGEs are mapped on `pd`'s device by maps the lent
        // buffers hold while their operation holds the region; the PD is
        // live.
        let r = unsafe {
            abi::kverbs_region_of_sges(
                pd.ptr.as_ptr(),
                m.sges.as_ptr(),
                m.sges.len() as u32,
                remote_read,
                remote_write,
                &mut err,
            )
        };
        let region = match NonNull::new(r) {
            // INVARIANT: Owned, made on `pd`.
            Some(ptr) => Region {
                ptr,
                _pd: pd.clone(),
            },
            None if err == EINVAL.to_errno() => return Ok(None),
            None => return Err(Error::from_errno(err)),
        };
        Ok((region.wrs() == 1).then_some(region))
    }

    /// The SGE of `len` bytes at byte `offset` of a region made by
    /// [`Region::of_lent`], for the device to place a READ's data there.
    fn sge(&self, offset: usize, len: usize) -> Result<abi::ib_sge> {
        let len = u32::try_from(len).map_err(|_| EINVAL)?;
        let mut sge = abi::ib_sge::default();
        // SAFETY: Owned (type invariants); the helper checks the range.
        to_result(unsafe {
            abi::kverbs_region_sge(self.ptr.as_ptr(), offset as u64, len, &mut sge)
        })?;
        Ok(sge)
    }

    /// The key peers name the region with (see `kofi_verbs_glue.h`).
    pub(crate) fn key(&self) -> u64 {
        // SAFETY: Owned (type invariants).
        unsafe { abi::kverbs_region_key(self.ptr.as_ptr()) }
    }

    /// The registration work requests the region needs (one per MR: a
    /// region in pieces has one per piece and one for its key table).
    pub(crate) fn wrs(&self) -> usize {
        // SAFETY: Owned (type invariants).
        unsafe { abi::kverbs_region_wrs(self.ptr.as_ptr()) as usize }
    }
}

// The key table's layout is the C glue's and wire.rs's alike.
// (bindgen reads the 1ULL << 63 of KVERBS_KEY_TABLE as an i64.)
const _: () = assert!(crate::wire::KEY_TABLE == abi::KVERBS_KEY_TABLE as u64);
const _: () = assert!(crate::wire::TABLE_MAGIC == abi::KVERBS_TABLE_MAGIC);
const _: () = assert!(crate::wire::KEY_NONCE_SHIFT == abi::KVERBS_KEY_NONCE_SHIFT);
const _: () = assert!(crate::wire::KEY_NONCE_MASK == abi::KVERBS_KEY_NONCE_MASK as u64);
const _: () = assert!(crate::wire::PIECES_MAX == abi::KVERBS_PIECES_MAX as usize);
const _: () = assert!(crate::wire::TABLE_LEN == core::mem::size_of::<abi::kverbs_key_table>());

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: Owned; no registration work request is in flight (the
        // domain waits for it before dropping).
        unsafe { abi::kverbs_region_free(self.ptr.as_ptr()) };
    }
}

/// A connection manager event, as the provider sees it.
pub(crate) enum CmEvent<'a> {
    AddrResolved,
    RouteResolved,
    /// A connection request on a listener: adopt the new id to keep it.
    ConnectRequest(NewId, &'a [u8]),
    Established(&'a [u8]),
    /// Rejected by the peer (or by nobody listening), with its private data.
    Rejected(&'a [u8]),
    Unreachable,
    Disconnected,
    DeviceRemoval,
    /// An address, route or connection error (positive FI_E*).
    Error(u32),
    Other,
}

/// What handles the events of a CM id.
pub(crate) trait CmHandler: Send + Sync + 'static {
    /// Handles `event`; the reply says whether rdma_cm destroys the id the
    /// event is for.
    fn cm_event(this: ArcBorrow<'_, Self>, event: CmEvent<'_>) -> CmReply;
}

/// A handler's answer to rdma_cm about the id its event is for.
pub(crate) enum CmReply {
    /// Handled; every id stays with its owner (a connection request's new
    /// id that was not adopted goes back to rdma_cm all the same).
    Done,
    /// Gives the event's id (or a request's new id, adopted) back to
    /// rdma_cm, which destroys it once the callback returns: the only way
    /// an id may be destroyed from its own callback.
    GiveBack(CmId),
}

/// A connection request's new id, until adopted.
pub(crate) struct NewId {
    ptr: NonNull<abi::rdma_cm_id>,
    adopted: *mut bool,
    reads: ReadDepths,
}

/// The RDMA READ depths a connection request offers the side that accepts
/// it: the READs that side may have in flight, and those it must serve.
#[derive(Clone, Copy)]
pub(crate) struct ReadDepths(abi::kverbs_read_depths);

impl NewId {
    /// Takes the new id, its events going to `handler`. On failure the id
    /// stays rdma_cm's (the callback destroys it).
    pub(crate) fn adopt<H: CmHandler>(self, handler: Arc<H>) -> Result<CmId> {
        let mut core = UniqueArc::new(
            IdCore {
                ptr: self.ptr,
                handler: None,
            },
            GFP_KERNEL,
        )?;
        let handler = HandlerRef::of(handler);
        // SAFETY: A new id in its CONNECT_REQUEST callback, which is ours
        // to set up; `adopted` points into the running trampoline.
        unsafe {
            abi::kverbs_id_set_handler(
                self.ptr.as_ptr(),
                Some(cm_trampoline::<H>),
                handler.context,
            );
            *self.adopted = true;
        }
        // INVARIANT: Adopted: ours to destroy, its context the reference
        // taken above.
        core.handler = Some(handler);
        Ok(CmId(core.into()))
    }

    pub(crate) fn device(&self) -> Option<Device> {
        // SAFETY: A live id bound to a registered device.
        unsafe { Device::from_raw(abi::kverbs_id_device(self.ptr.as_ptr())) }
    }

    pub(crate) fn addr(&self, peer: bool) -> SockAddr {
        id_addr(self.ptr, peer)
    }

    /// What the request offers in RDMA READ depths, for the accept.
    pub(crate) fn read_depths(&self) -> ReadDepths {
        self.reads
    }
}

fn id_addr(id: NonNull<abi::rdma_cm_id>, peer: bool) -> SockAddr {
    let mut ss = abi::__kernel_sockaddr_storage::default();
    // SAFETY: A live id; `ss` is ours.
    unsafe { abi::kverbs_id_addr(id.as_ptr(), peer, &mut ss) };
    SockAddr(ss)
}

fn release<H: CmHandler>(context: *mut c_void) {
    // SAFETY: The reference `CmId::new`/`NewId::adopt` gave the id.
    drop(unsafe { Arc::<H>::from_raw(context.cast()) });
}

/// The CM's event callback, for ids whose handler is `H`.
///
/// # Safety
///
/// Called by rdma_cm for an id whose context is an `Arc<H>` reference.
unsafe extern "C" fn cm_trampoline<H: CmHandler>(
    id: *mut abi::rdma_cm_id,
    ev: *mut abi::rdma_cm_event,
) -> c_int {
    // SAFETY: rdma_cm passes live ids and events; the context reference is
    // held until the id is destroyed, which waits for this callback.
    unsafe {
        let this = ArcBorrow::<H>::from_raw(abi::kverbs_id_context(id).cast());
        let ev = &*ev;
        let mut data: *const c_void = ptr::null();
        let len = abi::kverbs_event_private(ev, &mut data);
        let private: &[u8] = if data.is_null() || len == 0 {
            &[]
        } else {
            core::slice::from_raw_parts(data.cast(), len as usize)
        };
        let event = match ev.event {
            abi::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_RESOLVED => CmEvent::AddrResolved,
            abi::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_RESOLVED => CmEvent::RouteResolved,
            abi::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_REQUEST => {
                let mut adopted = false;
                let mut reads = abi::kverbs_read_depths::default();
                abi::kverbs_event_read_depths(ev, &mut reads);
                let new = NewId {
                    ptr: NonNull::new_unchecked(id),
                    adopted: &mut adopted,
                    reads: ReadDepths(reads),
                };
                let reply = H::cm_event(this, CmEvent::ConnectRequest(new, private));
                // Not adopted (or given back): rdma_cm destroys the new id.
                return match give_back(reply, id) {
                    true => -1,
                    false if adopted => 0,
                    false => -1,
                };
            }
            abi::rdma_cm_event_type_RDMA_CM_EVENT_ESTABLISHED => CmEvent::Established(private),
            abi::rdma_cm_event_type_RDMA_CM_EVENT_REJECTED => CmEvent::Rejected(private),
            abi::rdma_cm_event_type_RDMA_CM_EVENT_UNREACHABLE => CmEvent::Unreachable,
            abi::rdma_cm_event_type_RDMA_CM_EVENT_DISCONNECTED => CmEvent::Disconnected,
            abi::rdma_cm_event_type_RDMA_CM_EVENT_DEVICE_REMOVAL => CmEvent::DeviceRemoval,
            abi::rdma_cm_event_type_RDMA_CM_EVENT_ADDR_ERROR
            | abi::rdma_cm_event_type_RDMA_CM_EVENT_ROUTE_ERROR => {
                CmEvent::Error(abi::FI_EHOSTUNREACH)
            }
            abi::rdma_cm_event_type_RDMA_CM_EVENT_CONNECT_ERROR => {
                CmEvent::Error(abi::FI_ECONNREFUSED)
            }
            _ => CmEvent::Other,
        };
        if give_back(H::cm_event(this, event), id) {
            return -1;
        }
    }
    0
}

/// Whether a handler's `reply` gives `id`, the id of the event it handled,
/// back to rdma_cm (the callback then returns non-zero and rdma_cm destroys
/// it). Another id given back is a handler's mistake: it is dropped (and
/// destroyed) as usual.
fn give_back(reply: CmReply, id: *mut abi::rdma_cm_id) -> bool {
    match reply {
        CmReply::Done => false,
        CmReply::GiveBack(given) if given.0.ptr.as_ptr() == id => {
            let Some(mut core) = Arc::into_unique_or_drop(given.0) else {
                // A handle still names it: it goes with the last of them.
                pr_warn!("kofi_verbs: a CM handler gave back an id still in use\n");
                return false;
            };
            // INVARIANT: rdma_cm destroys the id once this callback
            // returns; its handler reference goes now, as drop would.
            if let Some(handler) = core.handler.take() {
                handler.release();
            }
            drop(core);
            true
        }
        CmReply::GiveBack(other) => {
            pr_warn!("kofi_verbs: a CM handler gave back another id than its event's\n");
            drop(other);
            false
        }
    }
}

/// An rdma_cm id, shared by its owner ([`CmId`]) and its handles
/// ([`IdHandle`], and a [`Qp`]'s): destroyed when the last of them goes.
///
/// # Invariants
///
/// `ptr` is a live id. With `handler` it is ours, destroyed on drop, after
/// which the context reference (an `Arc` of the handler) is released with
/// the function beside it; without, rdma_cm destroys it.
struct IdCore {
    ptr: NonNull<abi::rdma_cm_id>,
    handler: Option<HandlerRef>,
}

/// An id's event context: an `Arc` reference of its handler, and the
/// function that releases it.
struct HandlerRef {
    context: *mut c_void,
    release: fn(*mut c_void),
}

impl HandlerRef {
    fn of<H: CmHandler>(handler: Arc<H>) -> HandlerRef {
        HandlerRef {
            context: Arc::into_raw(handler).cast_mut().cast(),
            release: release::<H>,
        }
    }

    fn release(self) {
        (self.release)(self.context);
    }
}

impl Drop for IdCore {
    fn drop(&mut self) {
        if let Some(handler) = self.handler.take() {
            // Destroying the id waits for its event callbacks, after which
            // the context is ours to release.
            // SAFETY: Ours (type invariants); its QP went first, with the
            // `Qp` that holds a reference to this.
            unsafe { abi::rdma_destroy_id(self.ptr.as_ptr()) };
            handler.release();
        }
    }
}

/// An rdma_cm id, owned: the one its events and lifecycle go through
/// (dropping it inside its own event callback would deadlock: give it back
/// instead, [`CmReply::GiveBack`]).
pub(crate) struct CmId(Arc<IdCore>);

// SAFETY: rdma_cm calls are thread-safe; the context is an `Arc` of a
// `Send + Sync` handler.
unsafe impl Send for IdCore {}
// SAFETY: As above.
unsafe impl Sync for IdCore {}

/// How long address and route resolution may take.
const RESOLVE_MS: usize = 5000;

impl CmId {
    /// A new id whose events go to `handler`.
    pub(crate) fn new<H: CmHandler>(handler: Arc<H>) -> Result<CmId> {
        let handler = HandlerRef::of(handler);
        // SAFETY: The trampoline matches the context's type.
        let ptr = unsafe { abi::kverbs_create_id(Some(cm_trampoline::<H>), handler.context) };
        let Some(ptr) = NonNull::new(ptr) else {
            handler.release();
            return Err(ENOMEM);
        };
        // INVARIANT: Ours, its context the reference taken above (on
        // failure the core's drop destroys the id and releases it).
        let core = IdCore {
            ptr,
            handler: Some(handler),
        };
        Ok(CmId(Arc::new(core, GFP_KERNEL)?))
    }

    pub(crate) fn addr(&self, peer: bool) -> SockAddr {
        id_addr(self.0.ptr, peer)
    }

    pub(crate) fn bind(&self, addr: &SockAddr) -> Result {
        let mut a = addr.0;
        // SAFETY: A live id; `a` is a valid address for the call.
        to_result(unsafe { abi::rdma_bind_addr(self.0.ptr.as_ptr(), ptr::from_mut(&mut a).cast()) })
    }

    pub(crate) fn listen(&self, backlog: i32) -> Result {
        // SAFETY: A live, bound id.
        to_result(unsafe { abi::rdma_listen(self.0.ptr.as_ptr(), backlog) })
    }

    pub(crate) fn resolve_addr(&self, dest: &SockAddr) -> Result {
        let mut a = dest.0;
        // SAFETY: A live id; `a` is valid for the call.
        to_result(unsafe {
            abi::rdma_resolve_addr(
                self.0.ptr.as_ptr(),
                ptr::null_mut(),
                ptr::from_mut(&mut a).cast(),
                RESOLVE_MS,
            )
        })
    }

    /// A handle for the operations made under the owner's connection
    /// lock, which do not take rdma_cm's handler lock. The id lives as long
    /// as its owner or a handle does.
    pub(crate) fn handle(&self) -> IdHandle {
        IdHandle(self.0.clone())
    }

    /// rdma_accept with `data`, asking for no more READ depth than the
    /// request offered (`peer`).
    pub(crate) fn accept(&self, data: &[u8], peer: ReadDepths) -> Result {
        // SAFETY: A live id with a QP; `data` and `peer` are read during the
        // call.
        to_result(unsafe {
            abi::kverbs_accept(
                self.0.ptr.as_ptr(),
                data.as_ptr().cast(),
                data.len() as u8,
                &peer.0,
            )
        })
    }
}

/// A place for one id, filled once and taken at most once, without a lock:
/// taken in rdma_cm's callbacks (which hold the id's handler lock) and by
/// owners that destroy the id (which takes that lock), so a mutex here would
/// order the two against each other.
///
/// # Invariants
///
/// `id` is written only by the `put` that moves `state` from EMPTY to FULL,
/// and read only by the `take` that moves it from FULL to TAKEN.
pub(crate) struct CmIdSlot {
    id: core::cell::UnsafeCell<Option<CmId>>,
    state: core::sync::atomic::AtomicU8,
}

const SLOT_EMPTY: u8 = 0;
const SLOT_FILLING: u8 = 1;
const SLOT_FULL: u8 = 2;
const SLOT_TAKEN: u8 = 3;

// SAFETY: The id is `Send`; one thread at a time reaches it (invariants).
unsafe impl Sync for CmIdSlot {}

impl CmIdSlot {
    pub(crate) fn empty() -> CmIdSlot {
        CmIdSlot {
            id: core::cell::UnsafeCell::new(None),
            state: core::sync::atomic::AtomicU8::new(SLOT_EMPTY),
        }
    }

    /// Fills the slot; gives the id back if it was filled or taken before.
    pub(crate) fn put(&self, id: CmId) -> core::result::Result<(), CmId> {
        if self
            .state
            .compare_exchange(
                SLOT_EMPTY,
                SLOT_FILLING,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            return Err(id);
        }
        // SAFETY: We moved the state off EMPTY: no one else touches the cell.
        unsafe { *self.id.get() = Some(id) };
        self.state.store(SLOT_FULL, Ordering::Release);
        Ok(())
    }

    /// Whether the id is in the slot (filled, not yet taken).
    pub(crate) fn is_full(&self) -> bool {
        self.state.load(Ordering::Acquire) == SLOT_FULL
    }

    pub(crate) fn take(&self) -> Option<CmId> {
        self.state
            .compare_exchange(SLOT_FULL, SLOT_TAKEN, Ordering::AcqRel, Ordering::Acquire)
            .ok()?;
        // SAFETY: We moved the state from FULL: the cell is ours.
        unsafe { (*self.id.get()).take() }
    }
}

impl Drop for CmIdSlot {
    fn drop(&mut self) {
        drop(self.take());
    }
}

/// An rdma_cm id used through its owner's [`CmId::handle`]: it keeps the
/// id alive (the owner's drop destroys it only once no handle is left).
#[derive(Clone)]
pub(crate) struct IdHandle(Arc<IdCore>);

impl IdHandle {
    pub(crate) fn device(&self) -> Option<Device> {
        // SAFETY: A live id; its device, once bound, is registered.
        unsafe { Device::from_raw(abi::kverbs_id_device(self.0.ptr.as_ptr())) }
    }

    pub(crate) fn addr(&self, peer: bool) -> SockAddr {
        id_addr(self.0.ptr, peer)
    }

    pub(crate) fn resolve_route(&self) -> Result {
        // SAFETY: A live id with a resolved address.
        to_result(unsafe { abi::rdma_resolve_route(self.0.ptr.as_ptr(), RESOLVE_MS) })
    }

    /// An RC QP on `pd`, completing to `cq`; up to `inline` bytes sent
    /// inline if the device takes them. Returns it and how many it takes.
    pub(crate) fn create_qp<H: CqOwner>(
        &self,
        pd: &Arc<Pd>,
        cq: &Arc<Cq<H>>,
        sq: u32,
        rq: u32,
        sge: u32,
        inline: u32,
    ) -> Result<(Qp<H>, u32)> {
        if self.qp().is_some() {
            return Err(EBUSY);
        }
        let mut max_inline = inline;
        // SAFETY: A live id bound to `pd`'s device; `pd` and `cq` outlive
        // the QP (the `Qp` made below holds them and destroys it first).
        to_result(unsafe {
            abi::kverbs_create_qp(
                self.0.ptr.as_ptr(),
                pd.ptr.as_ptr(),
                cq.ptr.as_ptr(),
                sq,
                rq,
                sge,
                &mut max_inline,
            )
        })?;
        let qp = self.qp().ok_or(EINVAL)?;
        // INVARIANT: The id's QP, made on `pd` with `cq` for both queues.
        let qp = Qp {
            qp,
            id: self.clone(),
            cq: cq.clone(),
            _pd: pd.clone(),
        };
        Ok((qp, max_inline))
    }

    pub(crate) fn connect(&self, data: &[u8]) -> Result {
        // SAFETY: A live id with a QP; `data` is read during the call.
        to_result(unsafe {
            abi::kverbs_connect(self.0.ptr.as_ptr(), data.as_ptr().cast(), data.len() as u8)
        })
    }

    pub(crate) fn reject(&self, data: &[u8]) -> Result {
        // SAFETY: A live id in its request state; `data` is read during the
        // call.
        to_result(unsafe {
            abi::kverbs_reject(self.0.ptr.as_ptr(), data.as_ptr().cast(), data.len() as u8)
        })
    }

    pub(crate) fn disconnect(&self) {
        // SAFETY: A live id. Disconnecting twice is harmless.
        let _ = unsafe { abi::rdma_disconnect(self.0.ptr.as_ptr()) };
    }

    fn qp(&self) -> Option<NonNull<abi::ib_qp>> {
        // SAFETY: A live id.
        NonNull::new(unsafe { abi::kverbs_id_qp(self.0.ptr.as_ptr()) })
    }
}

/// An id's RC QP, completing to one CQ, whose slots its work requests name.
///
/// # Invariants
///
/// `qp` is `id`'s QP, made on `_pd` with `cq` for both its queues, owned
/// and destroyed on drop (before the id, the CQ and the PD it holds go).
pub(crate) struct Qp<H: CqOwner> {
    qp: NonNull<abi::ib_qp>,
    id: IdHandle,
    cq: Arc<Cq<H>>,
    _pd: Arc<Pd>,
}

// SAFETY: QPs are posted to from any thread; the rest is `Send + Sync`.
unsafe impl<H: CqOwner> Send for Qp<H> {}
// SAFETY: As above: posting is thread-safe in every driver.
unsafe impl<H: CqOwner> Sync for Qp<H> {}

impl<H: CqOwner> Qp<H> {
    /// Posts a send work request (`IB_WR_*` `opcode`) completing at `slot`
    /// of the CQ.
    ///
    /// The memory the SGEs describe stays mapped until that completion;
    /// with `inline`, the SGEs are [`inline_sge`]s and the device copies
    /// their bytes at once.
    pub(crate) fn post_send(
        &self,
        slot: usize,
        op: WrOp,
        sges: &[abi::ib_sge],
        remote: (u64, u32),
        inline: bool,
    ) -> Result {
        let cqe = self.cq.cqe(slot)?;
        // SAFETY: A live QP completing to `cq`, whose slot's cqe is stable
        // (type invariants); the SGEs are read during the call.
        to_result(unsafe {
            abi::kverbs_post_send(
                self.qp.as_ptr(),
                cqe,
                op.raw(),
                sges.as_ptr(),
                sges.len() as u32,
                remote.0,
                remote.1,
                inline,
            )
        })
    }

    /// Posts a receive into `sges`, completing at `slot` of the CQ.
    pub(crate) fn post_recv(&self, slot: usize, sges: &[abi::ib_sge]) -> Result {
        let cqe = self.cq.cqe(slot)?;
        // SAFETY: A live QP completing to `cq`, whose slot's cqe is stable;
        // the SGEs are read during the call.
        to_result(unsafe {
            abi::kverbs_post_recv(self.qp.as_ptr(), cqe, sges.as_ptr(), sges.len() as u32)
        })
    }

    /// Posts registration work request `index` (below [`Region::wrs`]) of
    /// `region`, completing at `slot` of the CQ; the region is not dropped
    /// before that completion.
    pub(crate) fn post_reg(&self, slot: usize, region: &Region, index: usize) -> Result {
        let cqe = self.cq.cqe(slot)?;
        let index = u32::try_from(index).map_err(|_| EINVAL)?;
        // SAFETY: As in `post_send`; the region is live, and the C side
        // refuses an index past its work requests.
        to_result(unsafe {
            abi::kverbs_post_reg(self.qp.as_ptr(), cqe, region.ptr.as_ptr(), index)
        })
    }

    /// Moves the QP to error: every work request posted on it completes,
    /// flushed, without waiting for that here.
    pub(crate) fn fail(&self) {
        // SAFETY: A live QP (type invariants). Failing it twice is harmless.
        let _ = unsafe { abi::kverbs_qp_fail(self.qp.as_ptr()) };
    }

    /// Moves the QP to error and waits until every work request posted on
    /// it has completed (flushed).
    pub(crate) fn drain(&self) {
        // SAFETY: A live QP; its CQ's completions are polled meanwhile
        // (by the drain itself or its owner's poller).
        unsafe { abi::ib_drain_qp(self.qp.as_ptr()) };
    }
}

impl<H: CqOwner> Drop for Qp<H> {
    fn drop(&mut self) {
        // SAFETY: Owned (type invariants); the id is live (held here).
        unsafe { abi::rdma_destroy_qp(self.id.0.ptr.as_ptr()) };
    }
}
