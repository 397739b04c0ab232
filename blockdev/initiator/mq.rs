// SPDX-License-Identifier: GPL-2.0

//! The blk-mq layer kofi_blk is written on: what 6.12's `kernel::block::mq`
//! lacks for a fabric driver, in the same style: a request's position,
//! length, direction and pages, per-request data in its PDU, ending with an
//! error or requeueing, device data per tag set, sleeping `queue_rq`
//! (`BLK_MQ_F_BLOCKING`) and a timeout handler. All of this module's unsafe
//! code is in this file.
//!
//! A driver implements [`Operations`]; blk-mq hands it each request as an
//! owned [`Request`], which the driver ends (or requeues) exactly once, from
//! any context, and which it may keep meanwhile (in its own table by tag).

use crate::compat::CStrBytes;
use crate::errno;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use kernel::bindings;
use kernel::error::{from_err_ptr, to_result};
use kernel::ffi::{c_char, c_int, c_uint, c_void};
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow};
use kernel::types::{ForeignOwnable, Opaque};

// The kernel's bindings name opaque types of their own (as the kernel's own
// users of them do, the lint is allowed).
#[allow(improper_ctypes)]
extern "C" {
    /// The request's data pages, one bio_vec per page piece (glue).
    fn kofi_blk_rq_pages(
        rq: *mut bindings::request,
        out: *mut bindings::bio_vec,
        max: c_int,
    ) -> c_int;
    /// Copies `len` bytes of `src` into the request's data: how many
    /// (glue).
    fn kofi_blk_rq_fill(rq: *mut bindings::request, src: *const c_void, len: usize) -> usize;
    /// The disks' operations: none but the owner, this module (glue), so
    /// an open disk pins it.
    static kofi_blk_fops: bindings::block_device_operations;
    /// blk_mq_alloc_disk, whose lock class key only the C macro makes (glue).
    fn kofi_blk_alloc_disk(
        set: *mut bindings::blk_mq_tag_set,
        lim: *mut bindings::queue_limits,
    ) -> *mut bindings::gendisk;
    /// `BLK_STS_RESOURCE` (glue).
    static kofi_blk_sts_resource: bindings::blk_status_t;
    /// A volatile write cache and FUA: flushes and FUA writes reach the
    /// target (glue).
    static kofi_blk_features: bindings::blk_features_t;
}

/// What a request asks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Read,
    Write,
    Flush,
    /// Discard, zeroes and the rest: not offered, refused.
    Other,
}

/// Per-request data with room for the request's pages ([`Request::pages`]).
pub(crate) trait PageBuffer {
    fn page_buffer(&mut self) -> &mut [bindings::bio_vec];
}

/// What the driver's timeout handler decided.
pub(crate) enum Timeout {
    /// The driver has ended the request, or will.
    Done,
    /// Wait another period.
    ResetTimer,
}

/// A blk-mq driver.
pub(crate) trait Operations: Sized + 'static {
    /// The device's data, shared by its queues.
    type Data: Send + Sync;
    /// Per-request data, in the request's PDU; made once per request slot.
    type RequestData: Default + Send;

    /// A new request for hardware queue `queue`. `Err(rq)` hands it back:
    /// blk-mq retries it a little later.
    fn queue_rq(
        data: ArcBorrow<'_, Self::Data>,
        queue: u32,
        rq: Request<Self>,
        last: bool,
    ) -> Result<(), Request<Self>>;

    /// Request `tag` of queue `queue` has taken longer than the tag set's
    /// timeout.
    fn timed_out(data: ArcBorrow<'_, Self::Data>, queue: u32, tag: u32) -> Timeout;
}

/// A request the driver owns, from `queue_rq` until it ends or requeues it.
/// Dropping it otherwise hands it back to blk-mq unended: only `queue_rq`'s
/// busy answer may do that.
///
/// # Invariants
///
/// `0` is a started request of a tag set of `T`, owned by this value alone:
/// blk-mq neither ends nor frees it until [`Request::end`] or
/// [`Request::requeue`] consumes it. Its PDU holds a `T::RequestData`.
pub(crate) struct Request<T: Operations>(NonNull<bindings::request>, PhantomData<T>);

// SAFETY: A request may be ended from any thread; its data is Send.
unsafe impl<T: Operations> Send for Request<T> {}

impl<T: Operations> Request<T> {
    fn raw(&self) -> *mut bindings::request {
        self.0.as_ptr()
    }

    /// The first 512-byte sector.
    pub(crate) fn sector(&self) -> u64 {
        // SAFETY: By the invariant, a started request, which the block
        // layer no longer changes.
        unsafe { (*self.raw()).__sector }
    }

    /// The bytes it moves.
    pub(crate) fn bytes(&self) -> u32 {
        // SAFETY: As in `sector`.
        unsafe { (*self.raw()).__data_len }
    }

    /// Its tag, unique in its hardware queue while it is owned.
    pub(crate) fn tag(&self) -> u32 {
        // SAFETY: As in `sector`.
        unsafe { (*self.raw()).tag as u32 }
    }

    fn flags(&self) -> u32 {
        // SAFETY: As in `sector`.
        unsafe { (*self.raw()).cmd_flags }
    }

    pub(crate) fn op(&self) -> Op {
        match self.flags() & ((1 << bindings::REQ_OP_BITS) - 1) {
            bindings::req_op_REQ_OP_READ => Op::Read,
            bindings::req_op_REQ_OP_WRITE => Op::Write,
            bindings::req_op_REQ_OP_FLUSH => Op::Flush,
            _ => Op::Other,
        }
    }

    /// A write that must be on stable media when it completes.
    pub(crate) fn fua(&self) -> bool {
        self.flags() & (1 << bindings::req_flag_bits___REQ_FUA) != 0
    }

    /// Its data pages, one bio_vec per page piece, in the buffer its data
    /// offers; E2BIG when they do not fit.
    pub(crate) fn pages(&mut self) -> Result<&[bindings::bio_vec]>
    where
        T::RequestData: PageBuffer,
    {
        let raw = self.raw();
        let buf = self.data().page_buffer();
        let max = c_int::try_from(buf.len()).map_err(|_| EINVAL)?;
        // SAFETY: By the invariant, a started request whose bios stay until
        // it ends; `buf` has room for `max` entries.
        let n = unsafe { kofi_blk_rq_pages(raw, buf.as_mut_ptr(), max) };
        to_result(n.min(0))?;
        Ok(&buf[..n as usize])
    }

    /// Fills its data (a read's) with `src`, which must be exactly its
    /// length (EINVAL otherwise, and the data is not to be trusted).
    pub(crate) fn fill_data(&mut self, src: &[u8]) -> Result {
        if src.len() != self.bytes() as usize {
            return Err(EINVAL);
        }
        // SAFETY: By the invariant, a started request whose bios stay until
        // it ends, owned here; `src` is readable for its length.
        let n = unsafe { kofi_blk_rq_fill(self.raw(), src.as_ptr().cast(), src.len()) };
        if n != src.len() {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// The driver's data of this request.
    pub(crate) fn data(&mut self) -> &mut T::RequestData {
        // SAFETY: By the invariant, the PDU holds a `T::RequestData`, and
        // this value owns the request, so no one else reaches it.
        unsafe { &mut *bindings::blk_mq_rq_to_pdu(self.raw()).cast::<T::RequestData>() }
    }

    /// Ends the request: its I/O succeeded, or failed with `result`'s error.
    pub(crate) fn end(self, result: Result) {
        let status = match result {
            Ok(()) => bindings::BLK_STS_OK as bindings::blk_status_t,
            // SAFETY: No preconditions; maps any errno.
            Err(e) => unsafe { bindings::errno_to_blk_status(e.to_errno()) },
        };
        // SAFETY: By the invariant, owned and started; consumed here, so it
        // is ended once.
        unsafe { bindings::blk_mq_end_request(self.raw(), status) };
    }

    /// Gives the request back to blk-mq, to be queued again (kicking the
    /// requeue list).
    pub(crate) fn requeue(self) {
        // SAFETY: By the invariant, owned and started; consumed here.
        unsafe { bindings::blk_mq_requeue_request(self.raw(), true) };
    }
}

/// The C entry points of a tag set of `T`.
struct OperationsVTable<T: Operations>(PhantomData<T>);

impl<T: Operations> OperationsVTable<T> {
    /// # Safety
    ///
    /// Called by blk-mq with a hardware context of a tag set of `T` whose
    /// `driver_data` was set by `init_hctx`, and a new request of it.
    unsafe extern "C" fn queue_rq(
        hctx: *mut bindings::blk_mq_hw_ctx,
        bd: *const bindings::blk_mq_queue_data,
    ) -> bindings::blk_status_t {
        // SAFETY: blk-mq passes valid queue data with a request not started.
        let (rq, last) = unsafe { ((*bd).rq, (*bd).last) };
        // SAFETY: A new request of this hardware queue, started once.
        unsafe { bindings::blk_mq_start_request(rq) };
        // SAFETY: `init_hctx` set `driver_data` to the tag set's data, the
        // foreign pointer of an `Arc<T::Data>` the disk keeps until the tag
        // set is freed; `queue_num` is plain data.
        let (data, queue) = unsafe {
            (
                <Arc<T::Data> as ForeignOwnable>::borrow((*hctx).driver_data),
                (*hctx).queue_num,
            )
        };
        // INVARIANT: started above; blk-mq leaves it to the driver until it
        // is ended or requeued, or handed back below.
        let request = Request(NonNull::new(rq).expect("blk-mq request"), PhantomData);
        match T::queue_rq(data, queue, request, last) {
            Ok(()) => bindings::BLK_STS_OK as bindings::blk_status_t,
            // Handed back: blk-mq owns it again and runs the queue later.
            // SAFETY: A constant of the glue.
            Err(_rq) => unsafe { kofi_blk_sts_resource },
        }
    }

    /// # Safety
    ///
    /// Called by blk-mq for a request of a tag set of `T` it started.
    unsafe extern "C" fn timeout(rq: *mut bindings::request) -> bindings::blk_eh_timer_return {
        // SAFETY: A started request has its hardware context, whose
        // driver_data `init_hctx` set to the Arc's foreign pointer the disk
        // keeps; the tag is plain data.
        let (data, queue, tag) = unsafe {
            let hctx = (*rq).mq_hctx;
            (
                <Arc<T::Data> as ForeignOwnable>::borrow((*hctx).driver_data),
                (*hctx).queue_num,
                (*rq).tag as u32,
            )
        };
        match T::timed_out(data, queue, tag) {
            Timeout::Done => bindings::blk_eh_timer_return_BLK_EH_DONE,
            Timeout::ResetTimer => bindings::blk_eh_timer_return_BLK_EH_RESET_TIMER,
        }
    }

    /// # Safety
    ///
    /// Called by blk-mq for a hardware context of a tag set of `T`.
    unsafe extern "C" fn init_hctx(
        hctx: *mut bindings::blk_mq_hw_ctx,
        tagset_data: *mut c_void,
        _index: c_uint,
    ) -> c_int {
        // SAFETY: blk-mq passes the hardware context it initialises.
        unsafe { (*hctx).driver_data = tagset_data };
        0
    }

    /// # Safety
    ///
    /// Called by blk-mq for each request slot of a tag set of `T`, whose
    /// PDU is `cmd_size` (a `T::RequestData`) bytes.
    unsafe extern "C" fn init_request(
        _set: *mut bindings::blk_mq_tag_set,
        rq: *mut bindings::request,
        _hctx_idx: c_uint,
        _numa_node: crate::compat::NumaNode,
    ) -> c_int {
        // SAFETY: The PDU is room for a `T::RequestData`, suitably aligned
        // (blk-mq aligns it for any type), and not initialised yet.
        unsafe {
            bindings::blk_mq_rq_to_pdu(rq)
                .cast::<T::RequestData>()
                .write(T::RequestData::default())
        };
        0
    }

    /// # Safety
    ///
    /// Called by blk-mq once for each slot `init_request` initialised.
    unsafe extern "C" fn exit_request(
        _set: *mut bindings::blk_mq_tag_set,
        rq: *mut bindings::request,
        _hctx_idx: c_uint,
    ) {
        // SAFETY: `init_request` wrote a `T::RequestData` here; dropped once.
        unsafe { ptr::drop_in_place(bindings::blk_mq_rq_to_pdu(rq).cast::<T::RequestData>()) };
    }

    const VTABLE: bindings::blk_mq_ops = bindings::blk_mq_ops {
        queue_rq: Some(Self::queue_rq),
        queue_rqs: None,
        commit_rqs: None,
        get_budget: None,
        put_budget: None,
        set_rq_budget_token: None,
        get_rq_budget_token: None,
        timeout: Some(Self::timeout),
        poll: None,
        complete: None,
        init_hctx: Some(Self::init_hctx),
        exit_hctx: None,
        init_request: Some(Self::init_request),
        exit_request: Some(Self::exit_request),
        cleanup_rq: None,
        busy: None,
        map_queues: None,
        #[cfg(CONFIG_BLK_DEBUG_FS)]
        show_rq: None,
    };
}

/// What a [`Disk`] is made of.
pub(crate) struct DiskParams<'a> {
    pub(crate) name: &'a CStr,
    pub(crate) queues: u32,
    pub(crate) depth: u32,
    pub(crate) sectors: u64,
    pub(crate) block_size: u32,
    /// Bytes per request at most.
    pub(crate) max_io: u32,
    /// A request's allowance before [`Operations::timed_out`], in jiffies.
    pub(crate) timeout: u32,
}

/// A block device of `T`: its tag set and gendisk, added until drop.
///
/// # Invariants
///
/// `set` is an allocated tag set whose driver_data is `data`'s foreign
/// pointer; `disk` an added gendisk of it.
pub(crate) struct Disk<T: Operations> {
    set: Pin<KBox<Opaque<bindings::blk_mq_tag_set>>>,
    disk: NonNull<bindings::gendisk>,
    data: *mut c_void,
    _p: PhantomData<Arc<T::Data>>,
}

// SAFETY: The gendisk and tag set may be torn down from any thread.
unsafe impl<T: Operations> Send for Disk<T> {}
// SAFETY: No method takes `&self` to change anything.
unsafe impl<T: Operations> Sync for Disk<T> {}

impl<T: Operations> Disk<T> {
    /// Makes the tag set and the gendisk and adds it: requests may arrive
    /// before this returns.
    pub(crate) fn add(data: Arc<T::Data>, p: &DiskParams<'_>) -> Result<Disk<T>> {
        if !(512..=4096).contains(&p.block_size) || !p.block_size.is_power_of_two() {
            return Err(EINVAL);
        }
        if p.max_io < p.block_size || p.queues == 0 || p.depth == 0 {
            return Err(EINVAL);
        }
        let data = crate::compat::into_foreign(data);
        // SAFETY: A tag set is integers and pointers, all valid as zero.
        let mut raw: bindings::blk_mq_tag_set = unsafe { core::mem::zeroed() };
        raw.ops = &OperationsVTable::<T>::VTABLE;
        raw.nr_hw_queues = p.queues;
        raw.queue_depth = p.depth;
        raw.cmd_size = core::mem::size_of::<T::RequestData>() as u32;
        raw.numa_node = bindings::NUMA_NO_NODE;
        raw.timeout = p.timeout;
        raw.flags = crate::compat::BLK_MQ_F_SHOULD_MERGE | bindings::BLK_MQ_F_BLOCKING;
        raw.driver_data = data;
        let set = match KBox::pin(Opaque::new(raw), GFP_KERNEL) {
            Ok(set) => set,
            Err(e) => {
                // SAFETY: From into_foreign above, not handed to blk-mq.
                drop(unsafe { Arc::<T::Data>::from_foreign(data) });
                return Err(e.into());
            }
        };
        // SAFETY: A zeroed tag set with its parameters, pinned in the box.
        if let Err(e) = to_result(unsafe { bindings::blk_mq_alloc_tag_set(set.get()) }) {
            // SAFETY: As above: blk-mq did not keep it.
            drop(unsafe { Arc::<T::Data>::from_foreign(data) });
            return Err(e);
        }
        // INVARIANT: the set is allocated; the gendisk is added below or the
        // partial disk is dropped (which frees the set and the data).
        let mut disk = Disk {
            set,
            disk: NonNull::dangling(),
            data,
            _p: PhantomData,
        };
        // SAFETY: Queue limits are integers, all valid as zero (defaults).
        let mut lim: bindings::queue_limits = unsafe { core::mem::zeroed() };
        lim.logical_block_size = p.block_size;
        lim.physical_block_size = p.block_size;
        lim.max_hw_sectors = p.max_io >> 9;
        lim.max_segments = (p.max_io / bindings::PAGE_SIZE as u32).max(1) as u16;
        lim.max_segment_size = bindings::PAGE_SIZE as u32;
        // No gaps inside a page run: an RDMA provider registers a request's
        // pages as one region of whole pages (as nvme-rdma asks).
        lim.virt_boundary_mask = kernel::page::PAGE_SIZE - 1;
        // SAFETY: A constant of the glue.
        lim.features = unsafe { kofi_blk_features };
        // SAFETY: The tag set is allocated; `lim` is ours.
        let gendisk = from_err_ptr(unsafe { kofi_blk_alloc_disk(disk.set.get(), &mut lim) })?;
        // SAFETY: A new gendisk, ours until added; the operations are a
        // static of the glue; the name buffer is DISK_NAME_LEN bytes, and the
        // copy leaves room for the NUL.
        unsafe {
            (*gendisk).fops = ptr::addr_of!(kofi_blk_fops);
            let name = p.name.cstr_bytes();
            let room = (*gendisk).disk_name.len() - 1;
            if name.len() > room {
                bindings::put_disk(gendisk);
                return Err(errno::enametoolong());
            }
            for (d, s) in (*gendisk).disk_name.iter_mut().zip(name) {
                *d = c_char::from_ne_bytes([*s]);
            }
            bindings::set_capacity(gendisk, p.sectors);
        }
        // SAFETY: The gendisk is ready and not added yet.
        let ret = unsafe { bindings::device_add_disk(ptr::null_mut(), gendisk, ptr::null_mut()) };
        if ret != 0 {
            // SAFETY: Not added: put_disk is its cleanup.
            unsafe { bindings::put_disk(gendisk) };
            return Err(Error::from_errno(ret));
        }
        disk.disk = NonNull::new(gendisk).ok_or(EINVAL)?;
        Ok(disk)
    }
}

impl<T: Operations> Drop for Disk<T> {
    fn drop(&mut self) {
        if self.disk != NonNull::dangling() {
            // SAFETY: By the invariant, an added gendisk: removed (waiting
            // for requests in flight) and put once.
            unsafe {
                bindings::del_gendisk(self.disk.as_ptr());
                bindings::put_disk(self.disk.as_ptr());
            }
        }
        // SAFETY: By the invariant the set is allocated; no disk uses it now.
        unsafe { bindings::blk_mq_free_tag_set(self.set.get()) };
        // SAFETY: The foreign pointer `add` made; blk-mq no longer uses it.
        drop(unsafe { Arc::<T::Data>::from_foreign(self.data) });
    }
}
