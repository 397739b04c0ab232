// SPDX-License-Identifier: GPL-2.0

//! The kofi consumer layer kofi_blk is written on: the exported `fi_*` calls
//! behind owned types that close what they opened, and the one place of this
//! module that calls them.
//!
//! A [`Connection`] owns its endpoint, its CQ and the receive buffers it
//! posts, and closes the endpoint before the buffers go: the provider never
//! writes into freed memory. Operation contexts are slot numbers, never
//! pointers the provider could make the module dereference.

use crate::abi;
use crate::errno;
use crate::flags;
use core::ffi::c_void;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicU8, Ordering};
use kernel::bindings::bio_vec;
use kernel::error::to_result;
use kernel::page::Page;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

/// A negative `fi_*` return (an errno or `-FI_E*`) as an [`Error`].
fn error(ret: isize) -> Error {
    Error::from_errno(ret as i32)
}

pub(crate) use crate::fi_error::fi_error;

/// Private data of a connection event, as the peer sent it.
pub(crate) struct CmData {
    bytes: [u8; abi::KOFI_CM_DATA_MAX as usize],
    len: usize,
}

impl CmData {
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// An `fi_eq_cm_entry` with room for private data.
#[repr(C)]
struct CmEntry {
    entry: abi::fi_eq_cm_entry,
    data: [u8; abi::KOFI_CM_DATA_MAX as usize],
}

/// What an event queue reports about a connection.
pub(crate) enum CmEvent {
    /// The peer accepted, with its private data.
    Connected(CmData),
    /// The connection ended.
    Shutdown,
    /// The connection failed (`err` positive, `FI_E*`); a rejection carries
    /// the peer's private data.
    Error { err: i32, data: CmData },
    /// Anything else (the layer's consumer asks for none).
    Other,
}

/// The fi_info of one provider for a destination.
///
/// # Invariants
///
/// `0` came from `fi_getinfo` and is freed once, by drop.
pub(crate) struct Info(NonNull<abi::fi_info>);

// SAFETY: An fi_info is plain data that no one else holds.
unsafe impl Send for Info {}
// SAFETY: Only read through shared references.
unsafe impl Sync for Info {}

impl Info {
    /// The MSG endpoint info of `provider` for `node`:`service`, with
    /// messages and RMA.
    pub(crate) fn msg(provider: &CStr, node: &CStr, service: &CStr) -> Result<Info> {
        // SAFETY: No preconditions.
        let hints = NonNull::new(unsafe { abi::fi_allocinfo() }).ok_or(ENOMEM)?;
        let hints = Info(hints);
        let mut out = ptr::null_mut();
        // SAFETY: `hints` came whole from fi_allocinfo, with its attrs; the
        // name is a kmalloc'ed copy fi_freeinfo frees; the strings are
        // NUL-terminated.
        let ret = unsafe {
            let h = hints.0.as_ptr();
            (*(*h).ep_attr).type_ = abi::fi_ep_type_FI_EP_MSG;
            (*h).caps = flags::FI_MSG | flags::FI_RMA;
            // Regions bound to the queue's endpoint, where a provider can
            // register them without waiting (kofi_verbs).
            (*(*h).domain_attr).mr_mode = (abi::FI_MR_PROV_KEY | abi::FI_MR_ENDPOINT) as i32;
            (*(*h).fabric_attr).prov_name =
                abi::kstrdup(provider.as_char_ptr(), kernel::bindings::GFP_KERNEL);
            if (*(*h).fabric_attr).prov_name.is_null() {
                return Err(ENOMEM);
            }
            abi::fi_getinfo(
                abi::KOFI_ABI_VERSION,
                node.as_char_ptr(),
                service.as_char_ptr(),
                0,
                h,
                &mut out,
            )
        };
        to_result(ret)?;
        // INVARIANT: fi_getinfo succeeded, so `out` is a list it allocated.
        Ok(Info(NonNull::new(out).ok_or_else(errno::enodata)?))
    }

    fn as_ptr(&self) -> *mut abi::fi_info {
        self.0.as_ptr()
    }

    /// Whether regions are bound to an endpoint and enabled (FI_MR_ENDPOINT).
    pub(crate) fn mr_endpoint(&self) -> bool {
        // SAFETY: By the invariant, a whole info with its attrs.
        let mode = unsafe { (*(*self.as_ptr()).domain_attr).mr_mode };
        mode & abi::FI_MR_ENDPOINT as i32 != 0
    }

    /// Buffers one send takes at most.
    pub(crate) fn iov_limit(&self) -> usize {
        // SAFETY: By the invariant, a whole info with its attrs.
        unsafe { (*(*self.as_ptr()).tx_attr).iov_limit }
    }

    /// Buffers one memory registration takes at most.
    pub(crate) fn mr_iov_limit(&self) -> usize {
        // SAFETY: By the invariant, a whole info with its attrs.
        unsafe { (*(*self.as_ptr()).domain_attr).mr_iov_limit }
    }
}

impl Drop for Info {
    fn drop(&mut self) {
        // SAFETY: By the invariant, freed only here.
        unsafe { abi::fi_freeinfo(self.as_ptr()) };
    }
}

/// Closes `fid` (an object of this layer, closed once, by its owner's drop).
fn close(fid: *mut abi::fid) {
    // SAFETY: The owner's invariant: an open object nothing uses any more.
    unsafe { abi::fi_close(fid) };
}

/// A fabric and one domain of it, opened from `info`. Shared: each
/// connection and region made on it holds it, so it closes after them.
///
/// # Invariants
///
/// Both are open; the domain is closed before the fabric.
pub(crate) struct Domain {
    fabric: NonNull<abi::fid_fabric>,
    domain: NonNull<abi::fid_domain>,
    info: Info,
}

// SAFETY: kofi objects may be used from any thread (FI_THREAD_SAFE).
unsafe impl Send for Domain {}
// SAFETY: As for Send.
unsafe impl Sync for Domain {}

impl Domain {
    pub(crate) fn open(info: Info) -> Result<Arc<Domain>> {
        let mut fabric = ptr::null_mut();
        // SAFETY: `info` is a whole fi_info; `fabric` is ours to fill.
        to_result(unsafe {
            abi::fi_fabric((*info.as_ptr()).fabric_attr, &mut fabric, ptr::null_mut())
        })?;
        let fabric = NonNull::new(fabric).ok_or(EINVAL)?;
        let mut domain = ptr::null_mut();
        // SAFETY: `fabric` is open; `info` is whole.
        let ret =
            unsafe { abi::fi_domain(fabric.as_ptr(), info.as_ptr(), &mut domain, ptr::null_mut()) };
        match NonNull::new(domain) {
            Some(domain) if ret == 0 => Ok(Arc::new(
                Domain {
                    fabric,
                    domain,
                    info,
                },
                GFP_KERNEL,
            )?),
            _ => {
                close(fabric.as_ptr().cast());
                Err(if ret < 0 { error(ret as isize) } else { EINVAL })
            }
        }
    }

    /// What the domain was opened from.
    pub(crate) fn info(&self) -> &Info {
        &self.info
    }

    /// Registers `pages` for the peer to read (`FI_REMOTE_READ`) or write
    /// (`FI_REMOTE_WRITE`).
    ///
    /// # Safety
    ///
    /// The pages must stay valid until the returned region is dropped.
    pub(crate) unsafe fn register(self: &Arc<Self>, pages: &[bio_vec], access: u64) -> Result<Mr> {
        let mut mr = ptr::null_mut();
        // SAFETY: The domain is open; `pages` is an array of `pages.len()`
        // bio_vecs (the kernel's type, which kofi's ABI uses), valid as the
        // caller promises.
        to_result(unsafe {
            abi::fi_mr_regbv(
                self.domain.as_ptr(),
                pages.as_ptr(),
                pages.len(),
                access,
                0,
                0,
                0,
                &mut mr,
                ptr::null_mut(),
            )
        })?;
        // INVARIANT: fi_mr_regbv succeeded.
        Ok(Mr {
            mr: NonNull::new(mr).ok_or(EINVAL)?,
            _domain: self.clone(),
            bound: None,
        })
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        close(self.domain.as_ptr().cast());
        close(self.fabric.as_ptr().cast());
    }
}

/// A registered memory region, and the domain (and the connection it is
/// bound to) it is closed before.
///
/// # Invariants
///
/// `mr` is open until drop closes it.
pub(crate) struct Mr {
    mr: NonNull<abi::fid_mr>,
    _domain: Arc<Domain>,
    /// The endpoint cannot close while a region is bound to it.
    bound: Option<Arc<Connection>>,
}

// SAFETY: Regions may be closed from any thread.
unsafe impl Send for Mr {}
// SAFETY: Only its key is read through shared references.
unsafe impl Sync for Mr {}

impl Mr {
    pub(crate) fn key(&self) -> u64 {
        // SAFETY: By the invariant, an open region.
        unsafe { abi::fi_mr_key(self.mr.as_ptr()) }
    }

    /// Binds the region to `conn`'s endpoint and enables it (FI_MR_ENDPOINT
    /// domains): what `conn` posts next may carry its key. -FI_EAGAIN when
    /// the endpoint's send queue is full.
    pub(crate) fn enable_on(&mut self, conn: &Arc<Connection>) -> Result {
        // SAFETY: By the invariants, an open region and an open endpoint of
        // its domain.
        to_result(unsafe { abi::fi_mr_bind(self.mr.as_ptr(), conn.ep.as_ptr().cast(), 0) })?;
        self.bound = Some(conn.clone());
        // SAFETY: An open region, bound.
        to_result(unsafe { abi::fi_mr_enable(self.mr.as_ptr()) })
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // fi_close waits for accesses in progress: the pages are free after.
        close(self.mr.as_ptr().cast());
    }
}

/// What a CQ reports of one operation.
#[derive(Clone, Copy, Default)]
pub(crate) struct Completion {
    /// The operation's slot (see [`Connection`]): a receive's, or a send's
    /// when `sent` is set.
    pub(crate) slot: usize,
    pub(crate) sent: bool,
    pub(crate) len: usize,
    /// 0, or the operation's error (positive, `FI_E*`).
    pub(crate) err: i32,
}

/// Where a receive buffer is.
const IDLE: u8 = 0;
/// Posted: the provider's.
const POSTED: u8 = 1;
/// Being read by this layer's caller ([`Connection::with_received`]).
const READING: u8 = 2;

/// Bytes of a send slot's own buffer (a head before the caller's pages,
/// [`Connection::send_with_pages`]): a command fits.
pub(crate) const SEND_HEAD_MAX: usize = 64;

/// The caller's pieces one send from a send slot takes at most.
pub(crate) const SEND_PIECES_MAX: usize = 16;

/// Send slots whose heads one page holds.
const HEADS_PER_PAGE: usize = kernel::page::PAGE_SIZE / SEND_HEAD_MAX;

/// One endpoint connected to a peer, its EQ and CQ, `count` receive
/// buffers of `size` bytes, posted by slot number, and `count` send slots,
/// each with a buffer for the head of a message whose rest is the caller's
/// pages.
///
/// # Invariants
///
/// `ep`, `cq` and `eq` are open; `ep` is bound to both and is closed first.
/// A receive buffer is written by the provider only while its state is
/// `POSTED`, and read by this layer only while it is `READING`. A send
/// slot's head is written by this layer only while its state is `IDLE`;
/// `heads` holds `count` of them, [`HEADS_PER_PAGE`] to a page.
pub(crate) struct Connection {
    ep: NonNull<abi::fid_ep>,
    cq: NonNull<abi::fid_cq>,
    eq: NonNull<abi::fid_eq>,
    size: usize,
    /// Large (a page and a response per slot): vmalloc'd when it must be.
    bufs: KVVec<u8>,
    state: KVec<AtomicU8>,
    /// Pages, as the provider takes a send's pieces; freed after the
    /// endpoint's close, as `bufs`.
    heads: KVec<Page>,
    /// Per send slot: `IDLE`, or `POSTED` until its completion is read.
    sending: KVec<AtomicU8>,
    /// Closed after the endpoint and queues (fields drop after `drop`).
    domain: Arc<Domain>,
}

// SAFETY: kofi objects may be used from any thread; the buffers are guarded
// by their flags.
unsafe impl Send for Connection {}
// SAFETY: As for Send.
unsafe impl Sync for Connection {}

/// The callbacks a [`Connection`] calls, in the poster's context (which may
/// be softirq: they must not sleep), with the context given at open.
pub(crate) struct Handlers {
    pub(crate) cq: abi::kofi_cq_handler_t,
    pub(crate) eq: abi::kofi_eq_handler_t,
    pub(crate) context: *mut c_void,
}

impl Connection {
    /// Opens an endpoint on `domain` (to its info's destination) with its
    /// queues, and posts `count` receives of `size` bytes.
    pub(crate) fn open(
        domain: &Arc<Domain>,
        handlers: &Handlers,
        count: usize,
        size: usize,
    ) -> Result<Connection> {
        let mut bufs = KVVec::new();
        bufs.extend_with(count * size, 0u8, GFP_KERNEL)?;
        let mut state = KVec::with_capacity(count, GFP_KERNEL)?;
        let mut sending = KVec::with_capacity(count, GFP_KERNEL)?;
        for _ in 0..count {
            state.push(AtomicU8::new(IDLE), GFP_KERNEL)?;
            sending.push(AtomicU8::new(IDLE), GFP_KERNEL)?;
        }
        let mut heads = KVec::new();
        for _ in 0..count.div_ceil(HEADS_PER_PAGE) {
            heads.push(Page::alloc_page(GFP_KERNEL)?, GFP_KERNEL)?;
        }
        let mut eq_attr = abi::fi_eq_attr {
            event_handler: handlers.eq,
            ..Default::default()
        };
        let mut cq_attr = abi::fi_cq_attr {
            format: abi::fi_cq_format_FI_CQ_FORMAT_MSG,
            size: 2 * count + 16,
            // The queue's work reads the CQ: the provider's progress is made
            // there too, with no work item of the provider's in between.
            flags: abi::KOFI_CQ_HANDLER_PROGRESS.into(),
            comp_handler: handlers.cq,
            ..Default::default()
        };
        let (mut eq, mut cq, mut ep) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        // SAFETY: The domain is open; the attrs and out pointers are ours.
        let ret = unsafe {
            abi::fi_eq_open(
                domain.fabric.as_ptr(),
                &mut eq_attr,
                &mut eq,
                handlers.context,
            )
        };
        to_result(ret)?;
        let eq = NonNull::new(eq).ok_or(EINVAL)?;
        // SAFETY: As above: the domain is open, the attr and out pointer ours.
        let ret = unsafe {
            abi::fi_cq_open(
                domain.domain.as_ptr(),
                &mut cq_attr,
                &mut cq,
                handlers.context,
            )
        };
        let Some(cq) = NonNull::new(cq).filter(|_| ret == 0) else {
            close(eq.as_ptr().cast());
            return Err(if ret < 0 { error(ret as isize) } else { EINVAL });
        };
        // SAFETY: The domain is open and `info` whole.
        let ret = unsafe {
            abi::fi_endpoint(
                domain.domain.as_ptr(),
                domain.info.as_ptr(),
                &mut ep,
                ptr::null_mut(),
            )
        };
        let Some(ep) = NonNull::new(ep).filter(|_| ret == 0) else {
            close(cq.as_ptr().cast());
            close(eq.as_ptr().cast());
            return Err(if ret < 0 { error(ret as isize) } else { EINVAL });
        };
        // INVARIANT: all three are open; the binds follow.
        let conn = Connection {
            ep,
            cq,
            eq,
            size,
            bufs,
            state,
            heads,
            sending,
            domain: domain.clone(),
        };
        // SAFETY: `ep`, `eq` and `cq` are open objects of this domain.
        unsafe {
            to_result(abi::fi_ep_bind(ep.as_ptr(), &mut (*eq.as_ptr()).fid, 0))?;
            to_result(abi::fi_ep_bind(
                ep.as_ptr(),
                &mut (*cq.as_ptr()).fid,
                flags::FI_SEND | flags::FI_RECV,
            ))?;
            to_result(abi::fi_enable(ep.as_ptr()))?;
        }
        for slot in 0..count {
            conn.post_recv(slot)?;
        }
        Ok(conn)
    }

    /// The domain the connection was opened on.
    pub(crate) fn domain(&self) -> &Arc<Domain> {
        &self.domain
    }

    /// Posts receive buffer `slot` (its completion names `slot`).
    pub(crate) fn post_recv(&self, slot: usize) -> Result {
        let state = self.state.get(slot).ok_or(EINVAL)?;
        if state
            .compare_exchange(IDLE, POSTED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(EBUSY);
        }
        // SAFETY: The buffer lies inside `bufs`, which outlives the endpoint
        // (closed first); it is now `POSTED`, so this layer leaves it to the
        // provider. The context is a number, never dereferenced.
        let ret = unsafe {
            abi::fi_recv(
                self.ep.as_ptr(),
                self.bufs.as_ptr().add(slot * self.size).cast_mut().cast(),
                self.size,
                ptr::null_mut(),
                0,
                (slot + 1) as *mut c_void,
            )
        };
        if ret < 0 {
            state.store(IDLE, Ordering::Release);
            return Err(error(ret));
        }
        Ok(())
    }

    /// Calls `f` with the first `len` bytes receive `slot` received (at
    /// most its size), once its completion was read; EBUSY while it is
    /// posted. The buffer cannot be posted again while `f` reads it.
    pub(crate) fn with_received<R>(
        &self,
        slot: usize,
        len: usize,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        let state = self.state.get(slot).ok_or(EINVAL)?;
        if state
            .compare_exchange(IDLE, READING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(EBUSY);
        }
        let r = f(&self.bufs[slot * self.size..][..len.min(self.size)]);
        state.store(IDLE, Ordering::Release);
        Ok(r)
    }

    /// Sends `head` followed by the bytes of `pages`, as one message, from
    /// send slot `slot`; its completion names the slot ([`Completion::sent`]).
    /// `head` is copied into the slot's own buffer, and the provider reads
    /// the pages until the send completes. EBUSY while the slot's previous
    /// send has not completed; E2BIG beyond [`SEND_HEAD_MAX`] or
    /// [`SEND_PIECES_MAX`].
    ///
    /// # Safety
    ///
    /// The pages must stay valid until this send's completion has been read
    /// ([`Connection::poll`]) or the connection has been dropped.
    pub(crate) unsafe fn send_with_pages(
        &self,
        slot: usize,
        head: &[u8],
        pages: &[bio_vec],
    ) -> Result {
        let state = self.sending.get(slot).ok_or(EINVAL)?;
        if head.len() > SEND_HEAD_MAX || pages.len() > SEND_PIECES_MAX {
            return Err(E2BIG);
        }
        if state
            .compare_exchange(IDLE, POSTED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(EBUSY);
        }
        let page = &self.heads[slot / HEADS_PER_PAGE];
        let offset = slot % HEADS_PER_PAGE * SEND_HEAD_MAX;
        // SAFETY: `head` is readable for its length, which fits the slot's
        // room inside the page; the slot was idle, so the provider reads none
        // of it and no one else writes it.
        unsafe { page.write_raw(head.as_ptr(), offset, head.len()) }?;
        let mut iov = [bio_vec::default(); 1 + SEND_PIECES_MAX];
        iov[0] = bio_vec {
            bv_page: page.as_ptr(),
            bv_len: head.len() as u32,
            bv_offset: offset as u32,
        };
        iov[1..=pages.len()].copy_from_slice(pages);
        let msg = abi::fi_msg {
            msg_bvec: iov.as_ptr(),
            iov_count: 1 + pages.len(),
            context: (self.state.len() + slot + 1) as *mut c_void,
            ..Default::default()
        };
        // SAFETY: The endpoint is open; the head's page outlives it and the
        // caller keeps the pages until the completion or the close; `iov`
        // is read during the call only; the context is a number.
        let ret = unsafe { abi::fi_sendmsg(self.ep.as_ptr(), &msg, flags::FI_COMPLETION) };
        if ret < 0 {
            state.store(IDLE, Ordering::Release);
            return Err(error(ret));
        }
        Ok(())
    }

    /// The completion of the operation with `context` (as posted here):
    /// its slot is free again.
    fn completed(&self, context: *mut c_void, len: usize, err: i32) -> Result<Completion> {
        let n = self.state.len();
        let (slot, sent, flag) = match (context as usize).wrapping_sub(1) {
            slot if slot < n => (slot, false, &self.state[slot]),
            slot if slot - n < n => (slot - n, true, &self.sending[slot - n]),
            _ => return Err(errno::eproto()),
        };
        // A receive is the caller's to read now; a send slot is free.
        let _ = flag.compare_exchange(POSTED, IDLE, Ordering::AcqRel, Ordering::Acquire);
        Ok(Completion {
            slot,
            sent,
            len,
            err,
        })
    }

    /// Sends `bytes` at once (copied: no completion).
    pub(crate) fn inject(&self, bytes: &[u8]) -> Result {
        // SAFETY: The endpoint is open; fi_inject copies `bytes` before it
        // returns.
        let ret =
            unsafe { abi::fi_inject(self.ep.as_ptr(), bytes.as_ptr().cast(), bytes.len(), 0) };
        if ret < 0 {
            return Err(error(ret));
        }
        Ok(())
    }

    /// Connects to `info`'s destination with `param` as private data.
    pub(crate) fn connect(&self, param: &[u8]) -> Result {
        // SAFETY: The endpoint is open; its domain's info is whole (dest_addr
        // is its resolved destination); `param` is readable.
        to_result(unsafe {
            abi::fi_connect(
                self.ep.as_ptr(),
                (*self.domain.info.as_ptr()).dest_addr,
                param.as_ptr().cast(),
                param.len(),
            )
        })
    }

    /// Reads the CQ: completions into `out` (receives marked done, send
    /// slots free again), up to its length; an error entry is returned
    /// alone. 0 when empty.
    pub(crate) fn poll(&self, out: &mut [Completion]) -> Result<usize> {
        let mut entries = [abi::fi_cq_msg_entry::default(); 16];
        let want = out.len().min(entries.len());
        // SAFETY: The CQ is open and of FI_CQ_FORMAT_MSG; `entries` holds
        // `want` of its entries.
        let n = unsafe { abi::fi_cq_read(self.cq.as_ptr(), entries.as_mut_ptr().cast(), want) };
        if n == -(abi::FI_EAGAIN as isize) {
            return Ok(0);
        }
        if n == -(abi::FI_EAVAIL as isize) {
            let mut err = abi::fi_cq_err_entry::default();
            // SAFETY: The CQ is open; `err` is one error entry.
            let n = unsafe { abi::fi_cq_readerr(self.cq.as_ptr(), &mut err, 0) };
            if n < 0 || out.is_empty() {
                return Err(error(n.min(-1)));
            }
            let code = err.err.max(1);
            // One of no operation posted here still ends the connection,
            // with the provider's error.
            out[0] = self
                .completed(err.op_context, 0, code)
                .map_err(|_| fi_error(code as u32))?;
            return Ok(1);
        }
        if n < 0 {
            return Err(error(n));
        }
        let n = n as usize;
        for (o, e) in out.iter_mut().zip(&entries[..n]) {
            *o = self.completed(e.op_context, e.len, 0)?;
        }
        Ok(n)
    }

    /// Reads one event of the EQ, or None; `wait_ms` > 0 waits that long.
    pub(crate) fn event(&self, wait_ms: i32) -> Result<Option<CmEvent>> {
        let mut entry = KBox::new(
            CmEntry {
                entry: abi::fi_eq_cm_entry::default(),
                data: [0; abi::KOFI_CM_DATA_MAX as usize],
            },
            GFP_KERNEL,
        )?;
        let mut event = 0u32;
        let buf: *mut CmEntry = &mut *entry;
        let size = core::mem::size_of::<CmEntry>();
        // SAFETY: The EQ is open; `buf` is writable for `size` bytes.
        let n = unsafe {
            if wait_ms > 0 {
                abi::fi_eq_sread(self.eq.as_ptr(), &mut event, buf.cast(), size, wait_ms, 0)
            } else {
                abi::fi_eq_read(self.eq.as_ptr(), &mut event, buf.cast(), size, 0)
            }
        };
        let head = core::mem::size_of::<abi::fi_eq_cm_entry>();
        if n == -(abi::FI_EAGAIN as isize) || n == -(kernel::bindings::ETIMEDOUT as isize) {
            return Ok(None);
        }
        if n == -(abi::FI_EAVAIL as isize) {
            let mut data = CmData {
                bytes: [0; abi::KOFI_CM_DATA_MAX as usize],
                len: 0,
            };
            let mut err = abi::fi_eq_err_entry {
                err_data: data.bytes.as_mut_ptr().cast(),
                err_data_size: data.bytes.len(),
                ..Default::default()
            };
            // SAFETY: The EQ is open; `err` is one error entry whose
            // err_data points at `data.bytes`, of the size it names.
            let n = unsafe { abi::fi_eq_readerr(self.eq.as_ptr(), &mut err, 0) };
            if n < 0 {
                return Err(error(n));
            }
            data.len = err.err_data_size.min(data.bytes.len());
            return Ok(Some(CmEvent::Error { err: err.err, data }));
        }
        if n < head as isize {
            return Err(if n < 0 { error(n) } else { errno::eproto() });
        }
        if !entry.entry.info.is_null() {
            // SAFETY: An info the event handed over, ours to free.
            unsafe { abi::fi_freeinfo(entry.entry.info) };
        }
        Ok(Some(match event {
            abi::FI_CONNECTED => {
                let len = (n as usize - head).min(entry.data.len());
                let mut data = CmData {
                    bytes: [0; abi::KOFI_CM_DATA_MAX as usize],
                    len,
                };
                data.bytes[..len].copy_from_slice(&entry.data[..len]);
                CmEvent::Connected(data)
            }
            abi::FI_SHUTDOWN => CmEvent::Shutdown,
            _ => CmEvent::Other,
        }))
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        // The endpoint first: its posted receives end, and the provider
        // stops writing into `bufs` and posting to the queues.
        close(self.ep.as_ptr().cast());
        close(self.cq.as_ptr().cast());
        close(self.eq.as_ptr().cast());
    }
}
