// SPDX-License-Identifier: GPL-2.0

//! Completion and event queues, generic and shared by every provider.
//!
//! Providers add entries from process or softirq context (the queue's lock
//! disables bottom halves); consumers read them without blocking, or sleep in
//! fi_cq_sread/fi_eq_sread on the queue's wait queue ([`CondVar`]) until an
//! entry arrives, the timeout passes (-FI_EAGAIN), fi_cq_signal is called
//! (-FI_EAGAIN) or a signal is pending (-EINTR). A queue holds `size` entries;
//! one more is an overrun, reported in order as an error entry
//! (FI_EOVERRUN), and the provider that posted it is told.

use crate::abi;
use crate::context::Context;
use crate::errno;
use crate::info::InfoBox;
use crate::lock::{new_bh_spinlock, BhSpinLock, BhSpinLockBackend};
use crate::object::{fid_head, Domain, Endpoint, Fabric, Object, Users};
use crate::ring::{CompletionRing, Overrun, Slot};
use core::ptr;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::ffi::c_void;
use kernel::prelude::*;
use kernel::sync::lock::Guard;
use kernel::sync::{new_condvar, Arc, CondVar, CondVarTimeoutResult};
use kernel::time::msecs_to_jiffies;
use kernel::types::Opaque;

/// The owner of a queue inside kofi (the RDM layer's internal queues):
/// told of each entry the queue adds, beside its sleepers, and of each
/// progress request made of it ([`Cq::owner_makes_progress`]). What a
/// consumer's C handler is to the queues of the C API.
pub(crate) trait QueueOwner: Send + Sync {
    /// Any context but hardirq.
    fn wake(&self);
}

/// Who a queue tells of each entry, beside its sleepers.
enum Handler<F> {
    None,
    /// The consumer's C handler (kofi's extension of the queue's attr).
    C(F),
    Owner(Arc<dyn QueueOwner>),
}

impl<F> Handler<F> {
    /// The queue's handler: the attr's or `owner`, not both.
    fn of(c: Option<F>, owner: Option<Arc<dyn QueueOwner>>) -> Result<Self> {
        match (c, owner) {
            (None, None) => Ok(Handler::None),
            (Some(f), None) => Ok(Handler::C(f)),
            (None, Some(o)) => Ok(Handler::Owner(o)),
            (Some(_), Some(_)) => Err(EINVAL),
        }
    }
}

/// A successful completion, in the richest format (FI_CQ_FORMAT_TAGGED).
#[derive(Clone, Copy)]
pub(crate) struct Completion {
    pub(crate) op_context: Context,
    pub(crate) flags: u64,
    pub(crate) len: usize,
    pub(crate) buf: *mut c_void,
    pub(crate) data: u64,
    /// A tagged message's tag (0 for the rest).
    pub(crate) tag: u64,
    /// The sender's address in the receiving RDM endpoint's AV (FI_SOURCE),
    /// or FI_ADDR_NOTAVAIL.
    pub(crate) src: u64,
}

// SAFETY: The pointers are the consumer's cookies, never dereferenced by kofi.
unsafe impl Send for Completion {}

/// An error completion.
pub(crate) struct CqError(pub(crate) abi::fi_cq_err_entry);

// SAFETY: As for `Completion`: opaque cookies only.
unsafe impl Send for CqError {}

impl Completion {
    /// No completion (a reader's buffer before [`Cq::take`] fills it).
    pub(crate) const NONE: Completion = Completion {
        op_context: Context::NONE,
        flags: 0,
        len: 0,
        buf: ptr::null_mut(),
        data: 0,
        tag: 0,
        src: 0,
    };
}

type CqSlot = Slot<Completion, CqError>;

/// What [`Cq::take`] found at the head of a queue.
pub(crate) enum Taken {
    /// This many completions, at the front of the reader's buffer.
    Done(usize),
    /// An error entry (an overrun reads as one with FI_EOVERRUN).
    Failed(abi::fi_cq_err_entry),
    Empty,
}

/// The error entry a popped error or overrun slot reads as.
fn error_entry(slot: CqSlot) -> Option<abi::fi_cq_err_entry> {
    match slot {
        Slot::Failed(e) => Some(e.0),
        Slot::Overrun { lost } => Some(abi::fi_cq_err_entry {
            err: abi::FI_EOVERRUN as i32,
            data: lost,
            ..Default::default()
        }),
        Slot::Done(_) => None,
    }
}

/// A queue's size from its attr: 0 for the default, at most `max`.
fn queue_size(asked: usize, default: u32, max: u32) -> Result<usize> {
    match asked {
        0 => Ok(default as usize),
        n if n > max as usize => Err(EINVAL),
        n => Ok(n),
    }
}

/// Whether a queue with `wait_obj` can be slept on; wait objects other than
/// a kernel wait queue (or none) are not supported.
pub(crate) fn can_wait(wait_obj: abi::fi_wait_obj) -> Result<bool> {
    match wait_obj {
        abi::fi_wait_obj_FI_WAIT_NONE => Ok(false),
        abi::fi_wait_obj_FI_WAIT_UNSPEC | abi::fi_wait_obj_FI_WAIT_QUEUE => Ok(true),
        abi::fi_wait_obj_FI_WAIT_SET
        | abi::fi_wait_obj_FI_WAIT_FD
        | abi::fi_wait_obj_FI_WAIT_MUTEX_COND
        | abi::fi_wait_obj_FI_WAIT_YIELD
        | abi::fi_wait_obj_FI_WAIT_POLLFD => Err(errno::enosys()),
        _ => Err(EINVAL),
    }
}

/// Slots for a ring of `size` entries plus the overrun marker (large queues
/// come from vmalloc).
fn slots<T>(size: usize) -> Result<KVVec<Option<T>>> {
    let mut v = KVVec::with_capacity(size + 1, GFP_KERNEL)?;
    for _ in 0..=size {
        v.push(None, GFP_KERNEL)?;
    }
    Ok(v)
}

/// Endpoints a CQ's sleepers may be asked to make progress for at a time
/// (see [`Cq::request_progress`]); a provider asking for more makes its own.
const PROGRESS_ASKED: usize = 8;

struct CqState {
    ring: CompletionRing<Completion, CqError, KVVec<Option<CqSlot>>>,
    signaled: bool,
    /// Consumers in fi_cq_sread: they make the progress asked of them.
    sleepers: usize,
    /// Endpoints whose provider asked the sleepers for their progress.
    progress: [Option<Arc<Endpoint>>; PROGRESS_ASKED],
}

impl CqState {
    /// An endpoint asked for, taken out (a new request queues it again).
    fn next_progress(&mut self) -> Option<Arc<Endpoint>> {
        self.progress.iter_mut().find_map(Option::take)
    }
}

/// The timeout of an sread, in jiffies; `None` waits forever.
pub(crate) fn timeout_jiffies(timeout_ms: i32) -> Option<kernel::time::Jiffies> {
    u32::try_from(timeout_ms).ok().map(msecs_to_jiffies)
}

/// What an sread (or fi_cntr_wait) does after a wake-up.
pub(crate) enum Wait {
    Again(Option<kernel::time::Jiffies>),
    TimedOut,
    Interrupted,
}

/// Sleeps on `waiters` with `guard` released, for at most `left`.
pub(crate) fn sleep<T, B: kernel::sync::lock::Backend>(
    waiters: &CondVar,
    guard: &mut kernel::sync::lock::Guard<'_, T, B>,
    left: Option<kernel::time::Jiffies>,
) -> Wait {
    match left {
        None => {
            if waiters.wait_interruptible(guard) {
                Wait::Interrupted
            } else {
                Wait::Again(None)
            }
        }
        Some(0) => Wait::TimedOut,
        Some(j) => match waiters.wait_interruptible_timeout(guard, j) {
            CondVarTimeoutResult::Timeout => Wait::Again(Some(0)),
            CondVarTimeoutResult::Woken { jiffies } => Wait::Again(Some(jiffies)),
            CondVarTimeoutResult::Signal { .. } => Wait::Interrupted,
        },
    }
}

/// A completion queue.
#[repr(C)]
#[pin_data]
pub(crate) struct Cq {
    pub(crate) public: Opaque<abi::fid_cq>,
    pub(crate) domain: Arc<Domain>,
    /// Endpoints bound to it.
    pub(crate) users: Users,
    format: u32,
    can_wait: bool,
    /// fi_cq_sread waits for `cond` entries (FI_CQ_COND_THRESHOLD).
    threshold_cond: bool,
    handler: Handler<unsafe extern "C" fn(*mut abi::fid_cq)>,
    /// The queue's owner makes the progress providers ask for, told by the
    /// handler (see [`Cq::owner_makes_progress`]).
    owner_progress: AtomicBool,
    /// KOFI_CQ_HANDLER_PROGRESS: the C consumer's reads make that progress
    /// (see [`Cq::make_asked_progress`]), from its first read on.
    reads_make_progress: bool,
    #[pin]
    state: BhSpinLock<CqState>,
    #[pin]
    waiters: CondVar,
}

// SAFETY: `Cq` is `#[repr(C)]` with `fid_cq` first, of class CQ.
unsafe impl Object for Cq {
    type Public = abi::fid_cq;
    const CLASS: u32 = abi::FI_CLASS_CQ;
}
// SAFETY: The head is written only before publication; the state is locked.
unsafe impl Send for Cq {}
// SAFETY: As above.
unsafe impl Sync for Cq {}

impl Cq {
    /// Checks `attr` and builds the queue, of `owner` if it has one.
    pub(crate) fn new(
        domain: Arc<Domain>,
        attr: &abi::fi_cq_attr,
        context: *mut c_void,
        owner: Option<Arc<dyn QueueOwner>>,
    ) -> Result<impl PinInit<Self, Error>> {
        let size = queue_size(attr.size, abi::KOFI_CQ_SIZE_DEFAULT, abi::KOFI_CQ_SIZE_MAX)?;
        let format = match attr.format {
            abi::fi_cq_format_FI_CQ_FORMAT_UNSPEC => abi::fi_cq_format_FI_CQ_FORMAT_CONTEXT,
            f @ (abi::fi_cq_format_FI_CQ_FORMAT_CONTEXT
            | abi::fi_cq_format_FI_CQ_FORMAT_MSG
            | abi::fi_cq_format_FI_CQ_FORMAT_DATA
            | abi::fi_cq_format_FI_CQ_FORMAT_TAGGED) => f,
            _ => return Err(EINVAL),
        };
        let can_wait = can_wait(attr.wait_obj)?;
        let reads_make_progress = attr.flags == u64::from(abi::KOFI_CQ_HANDLER_PROGRESS);
        // Progress asked of the consumer must reach it: through its handler.
        if (attr.flags != 0 && !reads_make_progress)
            || (reads_make_progress && attr.comp_handler.is_none())
            || attr.wait_cond > abi::fi_cq_wait_cond_FI_CQ_COND_THRESHOLD
            || !attr.wait_set.is_null()
        {
            return Err(EINVAL);
        }
        let ring = CompletionRing::new(slots(size)?);
        let handler = Handler::of(attr.comp_handler, owner)?;
        let threshold_cond = attr.wait_cond == abi::fi_cq_wait_cond_FI_CQ_COND_THRESHOLD;
        Ok(try_pin_init!(Cq {
            public: Opaque::new(abi::fid_cq {
                fid: fid_head(abi::FI_CLASS_CQ, context),
            }),
            domain,
            users: Users::default(),
            format,
            can_wait,
            threshold_cond,
            handler,
            owner_progress: AtomicBool::new(false),
            reads_make_progress,
            state <- new_bh_spinlock!(
                CqState {
                    ring,
                    signaled: false,
                    sleepers: 0,
                    progress: [const { None }; PROGRESS_ASKED],
                },
                "kofi_cq"
            ),
            waiters <- new_condvar!("kofi_cq_waiters"),
        }? Error))
    }

    /// Bytes of one entry in the queue's format.
    fn entry_size(&self) -> usize {
        match self.format {
            abi::fi_cq_format_FI_CQ_FORMAT_CONTEXT => core::mem::size_of::<abi::fi_cq_entry>(),
            abi::fi_cq_format_FI_CQ_FORMAT_MSG => core::mem::size_of::<abi::fi_cq_msg_entry>(),
            abi::fi_cq_format_FI_CQ_FORMAT_TAGGED => {
                core::mem::size_of::<abi::fi_cq_tagged_entry>()
            }
            _ => core::mem::size_of::<abi::fi_cq_data_entry>(),
        }
    }

    /// Writes `c` as entry `i` of the consumer's array `buf`.
    ///
    /// # Safety
    ///
    /// `buf` holds at least `i + 1` entries of the queue's format.
    unsafe fn store(&self, buf: *mut c_void, i: usize, c: Completion) {
        let at = buf.cast::<u8>().wrapping_add(i * self.entry_size());
        // SAFETY: `at` is within the caller's array; unaligned writes as the
        // consumer's buffer carries no alignment promise.
        unsafe {
            match self.format {
                abi::fi_cq_format_FI_CQ_FORMAT_CONTEXT => ptr::write_unaligned(
                    at.cast(),
                    abi::fi_cq_entry {
                        op_context: c.op_context.as_ptr(),
                    },
                ),
                abi::fi_cq_format_FI_CQ_FORMAT_MSG => ptr::write_unaligned(
                    at.cast(),
                    abi::fi_cq_msg_entry {
                        op_context: c.op_context.as_ptr(),
                        flags: c.flags,
                        len: c.len,
                    },
                ),
                abi::fi_cq_format_FI_CQ_FORMAT_TAGGED => ptr::write_unaligned(
                    at.cast(),
                    abi::fi_cq_tagged_entry {
                        op_context: c.op_context.as_ptr(),
                        flags: c.flags,
                        len: c.len,
                        buf: c.buf,
                        data: c.data,
                        tag: c.tag,
                    },
                ),
                _ => ptr::write_unaligned(
                    at.cast(),
                    abi::fi_cq_data_entry {
                        op_context: c.op_context.as_ptr(),
                        flags: c.flags,
                        len: c.len,
                        buf: c.buf,
                        data: c.data,
                    },
                ),
            }
        }
    }

    /// Adds an entry; wakes sleepers and calls the handler.
    pub(crate) fn post(&self, slot: CqSlot) -> Result {
        let result = self.state.lock().ring.post(slot);
        self.waiters.notify_all();
        self.call_handler();
        result.map_err(|(Overrun, _lost)| errno::eoverrun())
    }

    fn call_handler(&self) {
        match &self.handler {
            Handler::None => {}
            // SAFETY: The consumer gave this handler for this queue; it is
            // documented to run in the poster's context.
            Handler::C(handler) => unsafe { handler(self.public()) },
            Handler::Owner(owner) => owner.wake(),
        }
    }

    /// From now on the queue's owner, told by its handler, makes the
    /// progress providers ask of the queue (see [`Cq::request_progress`])
    /// with [`Cq::make_asked_progress`]: the core's RDM layer, whose
    /// internal queue nobody sleeps on, does so (a C consumer asks for it
    /// with KOFI_CQ_HANDLER_PROGRESS).
    pub(crate) fn owner_makes_progress(&self) {
        if !matches!(self.handler, Handler::None) {
            self.owner_progress.store(true, Ordering::Release);
        }
    }

    /// Makes the progress asked of the queue's owner (see
    /// [`Cq::owner_makes_progress`]), endpoint by endpoint, with the queue
    /// unlocked: the providers report to it. Process context.
    pub(crate) fn make_asked_progress(&self) {
        loop {
            let Some(ep) = self.state.lock().next_progress() else {
                return;
            };
            ep.make_progress();
        }
    }

    /// fi_cq_read: up to `count` entries into `buf`.
    ///
    /// # Safety
    ///
    /// `buf` holds `count` entries of the queue's format.
    pub(crate) unsafe fn read(&self, buf: *mut c_void, count: usize) -> Result<usize> {
        // SAFETY: The caller's guarantee.
        unsafe { self.read_from(buf, count, ptr::null_mut()) }
    }

    /// fi_cq_readfrom: as [`Cq::read`], with each entry's source in `src`.
    ///
    /// # Safety
    ///
    /// As [`Cq::read`]; `src` is null or holds `count` addresses.
    pub(crate) unsafe fn read_from(
        &self,
        buf: *mut c_void,
        count: usize,
        src: *mut u64,
    ) -> Result<usize> {
        if self.reads_make_progress {
            // SAFETY: No preconditions.
            if !unsafe { abi::kofi_in_task() } {
                return Err(EINVAL);
            }
            // Not before: a consumer that has not read yet (one waiting on
            // its EQ for the connection, say) would leave the progress that
            // connects it unmade.
            self.owner_progress.store(true, Ordering::Release);
            self.make_asked_progress();
        }
        let mut state = self.state.lock();
        // SAFETY: The caller's guarantee.
        unsafe { self.read_locked(&mut state, buf, count, src) }
    }

    /// # Safety
    ///
    /// As [`Cq::read`].
    unsafe fn read_locked(
        &self,
        state: &mut CqState,
        buf: *mut c_void,
        count: usize,
        src: *mut u64,
    ) -> Result<usize> {
        if state.ring.error_at_head() {
            return Err(errno::eavail());
        }
        let mut i = 0;
        let n = state.ring.pop_done(count, |c| {
            if !src.is_null() {
                // SAFETY: `src` holds `count` addresses and `i < count`.
                unsafe { src.add(i).write_unaligned(c.src) };
            }
            // SAFETY: `i < count` because `pop_done` pops at most `count`.
            unsafe { self.store(buf, i, c) };
            i += 1;
        });
        if n == 0 {
            Err(errno::eagain())
        } else {
            Ok(n)
        }
    }

    /// fi_cq_readerr: the error entry at the head.
    pub(crate) fn read_error(&self, out: &mut abi::fi_cq_err_entry) -> Result<usize> {
        let taken = self.state.lock().ring.pop_error();
        *out = taken.and_then(error_entry).ok_or_else(errno::eagain)?;
        Ok(1)
    }

    /// Takes what the head holds for a reader inside kofi (the RDM layer's
    /// internal queue): completions into `out`, as many as fit, or the
    /// error entry.
    pub(crate) fn take(&self, out: &mut [Completion]) -> Taken {
        let mut state = self.state.lock();
        if let Some(e) = state.ring.pop_error().and_then(error_entry) {
            return Taken::Failed(e);
        }
        let mut slots = out.iter_mut();
        let n = state.ring.pop_done(slots.len(), |c| {
            if let Some(slot) = slots.next() {
                *slot = c;
            }
        });
        if n == 0 {
            Taken::Empty
        } else {
            Taken::Done(n)
        }
    }

    /// fi_cq_sread. On a queue opened with FI_CQ_COND_THRESHOLD, `cond` is
    /// the number of entries (at most `count`) to wait for, as libfabric
    /// reads it (a value, not a pointer); an error entry at the head, the
    /// timeout or fi_cq_signal end the wait with what there is.
    ///
    /// # Safety
    ///
    /// As [`Cq::read`].
    pub(crate) unsafe fn sread(
        &self,
        buf: *mut c_void,
        count: usize,
        src: *mut u64,
        cond: *const c_void,
        timeout_ms: i32,
    ) -> Result<usize> {
        if !self.can_wait {
            return Err(errno::enosys());
        }
        let threshold = if self.threshold_cond {
            (cond as usize).clamp(1, count)
        } else {
            1
        };
        // fi_close refuses the queue while we may sleep on it.
        let _sleeping = self.users.hold();
        let mut left = timeout_jiffies(timeout_ms);
        let mut state = self.state.lock();
        state.sleepers += 1;
        let result = loop {
            let ready = state.ring.len() >= threshold || state.ring.error_at_head();
            if ready || state.signaled || matches!(left, Some(0)) {
                // SAFETY: The caller's guarantee.
                match unsafe { self.read_locked(&mut state, buf, count, src) } {
                    Err(e) if e == errno::eagain() => {}
                    other => break other,
                }
            }
            if state.signaled {
                state.signaled = false;
                break Err(errno::eagain());
            }
            // A provider's progress, asked of this thread instead of its
            // work item: what it reports may be what we wait for.
            if let Some(ep) = state.next_progress() {
                state = self.progress_unlocked(state, ep);
                continue;
            }
            match sleep(&self.waiters, &mut state, left) {
                Wait::Again(l) => left = l,
                Wait::TimedOut => break Err(errno::eagain()),
                Wait::Interrupted => break Err(EINTR),
            }
        };
        state.sleepers -= 1;
        // The last sleeper to leave makes the progress still asked for: the
        // providers counted on a sleeper, and none is left to make it.
        while state.sleepers == 0 {
            let Some(ep) = state.next_progress() else {
                break;
            };
            state = self.progress_unlocked(state, ep);
        }
        result
    }

    /// Makes `ep`'s progress with the queue unlocked (the provider reports
    /// to it), and locks it again.
    fn progress_unlocked<'a>(
        &'a self,
        state: Guard<'a, CqState, BhSpinLockBackend>,
        ep: Arc<Endpoint>,
    ) -> Guard<'a, CqState, BhSpinLockBackend> {
        drop(state);
        ep.make_progress();
        // Maybe the last reference: dropped unlocked too.
        drop(ep);
        self.state.lock()
    }

    /// Asks a consumer sleeping in fi_cq_sread, or the queue's owner (see
    /// [`Cq::owner_makes_progress`]), to make `ep`'s progress (see
    /// `kofi_ep_progress_request`): false when none sleeps and the owner
    /// does not, or the queue of such requests is full. `arc` gives a
    /// reference to keep, taken only when one is queued (the common case,
    /// nobody asleep, costs one lock). Any context but hardirq.
    pub(crate) fn request_progress(
        &self,
        ep: &Endpoint,
        arc: impl FnOnce() -> Arc<Endpoint>,
    ) -> bool {
        let by_owner = self.owner_progress.load(Ordering::Acquire);
        let mut state = self.state.lock();
        if state.sleepers == 0 && !by_owner {
            return false;
        }
        let queued = state.progress.iter().flatten().any(|e| ptr::eq(&**e, ep));
        if !queued {
            let Some(free) = state.progress.iter_mut().find(|e| e.is_none()) else {
                return false;
            };
            *free = Some(arc());
        }
        let one_sleeper = state.sleepers == 1;
        drop(state);
        if one_sleeper {
            // A synchronous wake-up, as a socket's data_ready wakes its
            // reader: the waker (a softirq, or a thread about to wait for
            // the answer) gives way, and the sleeper stays on this CPU. It
            // makes the progress, or leaves as the last sleeper, which makes
            // it too (see `sread`).
            self.waiters.notify_sync();
        } else {
            self.waiters.notify_all();
        }
        if by_owner {
            self.call_handler();
        }
        true
    }

    /// `ep` is closing: no sleeper makes its progress any more.
    pub(crate) fn forget_progress(&self, ep: &Endpoint) {
        let forgotten = {
            let mut state = self.state.lock();
            let slot = state
                .progress
                .iter_mut()
                .find(|e| e.as_ref().is_some_and(|e| ptr::eq(&**e, ep)));
            slot.and_then(Option::take)
        };
        // Dropped with the lock released: it may be the last reference.
        drop(forgotten);
    }

    /// fi_cq_signal: wakes sleepers, which return -FI_EAGAIN.
    pub(crate) fn signal(&self) {
        self.state.lock().signaled = true;
        self.waiters.notify_all();
    }
}

/// An event with its payload, as fi_eq_read copies it out.
pub(crate) struct EqEvent {
    event: u32,
    /// The object a CM event is about (null for fi_eq_write's events).
    fid: *const abi::fid,
    /// That object's context, when the event was added.
    context: Context,
    bytes: KVec<u8>,
    /// The info of an FI_CONNREQ, owned until the consumer reads it.
    info: *mut abi::fi_info,
}

// SAFETY: The info is owned by the event; the other pointers are cookies.
unsafe impl Send for EqEvent {}

impl EqEvent {
    pub(crate) fn event(&self) -> u32 {
        self.event
    }

    /// The context of the object a CM event is about (none for
    /// fi_eq_write's events).
    pub(crate) fn context(&self) -> Context {
        self.context
    }

    /// A CM event's private data: what follows its `fi_eq_cm_entry`.
    pub(crate) fn cm_data(&self) -> &[u8] {
        self.bytes
            .get(core::mem::size_of::<abi::fi_eq_cm_entry>()..)
            .unwrap_or(&[])
    }

    /// An FI_CONNREQ's info, now the caller's (none for other events).
    pub(crate) fn take_info(&mut self) -> Option<InfoBox> {
        let info = core::mem::replace(&mut self.info, ptr::null_mut());
        // SAFETY: The event owned the info: the one a provider's FI_CONNREQ
        // report handed the core (`kofi_pep_connreq`), built with the
        // core's info calls, as fi_freeinfo frees them.
        unsafe { InfoBox::from_raw(info) }
    }
}

impl Drop for EqEvent {
    fn drop(&mut self) {
        // An unread FI_CONNREQ's info dies with it.
        crate::info::fi_freeinfo(self.info);
    }
}

pub(crate) struct EqError {
    entry: abi::fi_eq_err_entry,
    /// The error's data (a rejection's private data), for err_data.
    data: KVec<u8>,
}

// SAFETY: Cookies only (the entry's err_data is null until it is read).
unsafe impl Send for EqError {}

/// Where fi_eq_readerr puts an error's data: the consumer's buffer (its
/// err_data_size was not 0), or the queue's own, as libfabric does.
pub(crate) enum ErrData<'a> {
    Into(&'a mut [u8]),
    Queue,
}

type EqSlot = Slot<EqEvent, EqError>;

/// The error entry an overrun of `lost` events reads as.
fn eq_overrun(lost: u64) -> abi::fi_eq_err_entry {
    abi::fi_eq_err_entry {
        err: abi::FI_EOVERRUN as i32,
        data: lost,
        ..Default::default()
    }
}

/// What [`Eq::take`] found at the head of a queue.
pub(crate) enum EqTaken {
    Event(EqEvent),
    /// An error entry, without its data (an overrun reads as one with
    /// FI_EOVERRUN).
    Failed(abi::fi_eq_err_entry),
    Empty,
}

struct EqState {
    ring: CompletionRing<EqEvent, EqError, KVVec<Option<EqSlot>>>,
    signaled: bool,
    /// The data of the error read last, when the reader gave no buffer:
    /// its err_data points here until the next fi_eq_readerr.
    err_data: KVec<u8>,
}

/// The largest entry an EQ carries: a CM entry with the most private data.
pub(crate) const EQ_ENTRY_MAX: usize =
    core::mem::size_of::<abi::fi_eq_cm_entry>() + abi::KOFI_CM_DATA_MAX as usize;

/// An event queue.
#[repr(C)]
#[pin_data]
pub(crate) struct Eq {
    pub(crate) public: Opaque<abi::fid_eq>,
    pub(crate) fabric: Arc<Fabric>,
    /// Endpoints bound to it.
    pub(crate) users: Users,
    can_wait: bool,
    handler: Handler<unsafe extern "C" fn(*mut abi::fid_eq)>,
    #[pin]
    state: BhSpinLock<EqState>,
    #[pin]
    waiters: CondVar,
}

// SAFETY: `Eq` is `#[repr(C)]` with `fid_eq` first, of class EQ.
unsafe impl Object for Eq {
    type Public = abi::fid_eq;
    const CLASS: u32 = abi::FI_CLASS_EQ;
}
// SAFETY: See `Cq`.
unsafe impl Send for Eq {}
// SAFETY: See `Cq`.
unsafe impl Sync for Eq {}

impl Eq {
    /// Checks `attr` and builds the queue, of `owner` if it has one.
    pub(crate) fn new(
        fabric: Arc<Fabric>,
        attr: &abi::fi_eq_attr,
        context: *mut c_void,
        owner: Option<Arc<dyn QueueOwner>>,
    ) -> Result<impl PinInit<Self, Error>> {
        let size = queue_size(attr.size, abi::KOFI_EQ_SIZE_DEFAULT, abi::KOFI_EQ_SIZE_MAX)?;
        let can_wait = can_wait(attr.wait_obj)?;
        if attr.flags != 0 || !attr.wait_set.is_null() {
            return Err(EINVAL);
        }
        let ring = CompletionRing::new(slots(size)?);
        let handler = Handler::of(attr.event_handler, owner)?;
        Ok(try_pin_init!(Eq {
            public: Opaque::new(abi::fid_eq {
                fid: fid_head(abi::FI_CLASS_EQ, context),
            }),
            fabric,
            users: Users::default(),
            can_wait,
            handler,
            state <- new_bh_spinlock!(EqState {
                ring,
                signaled: false,
                err_data: KVec::new(),
            }, "kofi_eq"),
            waiters <- new_condvar!("kofi_eq_waiters"),
        }? Error))
    }

    fn post(&self, slot: EqSlot) -> Result {
        let result = self.state.lock().ring.post(slot);
        self.waiters.notify_all();
        match &self.handler {
            Handler::None => {}
            // SAFETY: The consumer's handler for this queue, documented to
            // run in the poster's context.
            Handler::C(handler) => unsafe { handler(self.public()) },
            Handler::Owner(owner) => owner.wake(),
        }
        // A lost event's info (if any) is freed as the slot drops here.
        result.map_err(|(Overrun, _lost)| errno::eoverrun())
    }

    /// Adds an event about `fid`, whose context is `context` (null: the
    /// consumer's own): the entry's bytes are `head` followed by `data`. An
    /// `info` passes to the queue (and on to the reader).
    pub(crate) fn post_event(
        &self,
        event: u32,
        fid: *const abi::fid,
        context: Context,
        head: &[u8],
        data: &[u8],
        info: *mut abi::fi_info,
    ) -> Result {
        let mut ev = EqEvent {
            event,
            fid,
            context,
            bytes: KVec::new(),
            info,
        };
        if head.len() + data.len() > EQ_ENTRY_MAX {
            return Err(EINVAL);
        }
        // Events may come from softirq: allocate atomically.
        ev.bytes.extend_from_slice(head, GFP_ATOMIC)?;
        ev.bytes.extend_from_slice(data, GFP_ATOMIC)?;
        self.post(Slot::Done(ev))
    }

    /// Adds an error event with its data (checked by the caller: at most
    /// KOFI_CM_DATA_MAX bytes).
    pub(crate) fn post_error(&self, mut entry: abi::fi_eq_err_entry, data: &[u8]) -> Result {
        entry.err_data = ptr::null_mut();
        entry.err_data_size = 0;
        let mut bytes = KVec::new();
        // Errors may come from softirq: allocate atomically.
        bytes.extend_from_slice(data, GFP_ATOMIC)?;
        self.post(Slot::Failed(EqError { entry, data: bytes }))
    }

    /// Drops the unread events about endpoint `fid`, which is closing: an
    /// entry must never name a closed object (as libfabric's util EQ does
    /// on close). Endpoint events own no info, so none is freed here.
    pub(crate) fn purge(&self, fid: *const abi::fid) {
        self.state.lock().ring.retain(|slot| match slot {
            Slot::Done(ev) => ev.fid != fid || !ev.info.is_null(),
            Slot::Failed(e) => e.entry.fid.cast_const() != fid,
            Slot::Overrun { .. } => true,
        });
    }

    /// fi_eq_read: the event at the head into `buf` (`len` bytes).
    ///
    /// # Safety
    ///
    /// `buf` is valid for `len` bytes of writes.
    unsafe fn read_locked(
        state: &mut EqState,
        event: &mut u32,
        buf: *mut c_void,
        len: usize,
        peek: bool,
    ) -> Result<usize> {
        if state.ring.error_at_head() {
            return Err(errno::eavail());
        }
        let mut size = 0;
        let mut too_small = false;
        // Look first: an entry that does not fit stays queued.
        if let Some(front) = state.ring.front_done() {
            if front.bytes.len() > len {
                too_small = true;
            } else {
                // SAFETY: `buf` has room for `len >= bytes.len()` bytes.
                unsafe {
                    ptr::copy_nonoverlapping(front.bytes.as_ptr(), buf.cast(), front.bytes.len())
                };
                *event = front.event;
                size = front.bytes.len();
            }
        } else {
            return Err(errno::eagain());
        }
        if too_small {
            return Err(errno::etoosmall());
        }
        if !peek {
            state.ring.pop_done(1, |mut ev| {
                // The reader owns the info now.
                ev.info = ptr::null_mut();
            });
        }
        Ok(size)
    }

    /// fi_eq_read.
    ///
    /// # Safety
    ///
    /// `buf` is valid for `len` bytes of writes.
    pub(crate) unsafe fn read(
        &self,
        event: &mut u32,
        buf: *mut c_void,
        len: usize,
        peek: bool,
    ) -> Result<usize> {
        let mut state = self.state.lock();
        // SAFETY: The caller's guarantee.
        unsafe { Self::read_locked(&mut state, event, buf, len, peek) }
    }

    /// fi_eq_sread.
    ///
    /// # Safety
    ///
    /// `buf` is valid for `len` bytes of writes.
    pub(crate) unsafe fn sread(
        &self,
        event: &mut u32,
        buf: *mut c_void,
        len: usize,
        timeout_ms: i32,
        peek: bool,
    ) -> Result<usize> {
        if !self.can_wait {
            return Err(errno::enosys());
        }
        // fi_close refuses the queue while we may sleep on it.
        let _sleeping = self.users.hold();
        let mut left = timeout_jiffies(timeout_ms);
        let mut state = self.state.lock();
        loop {
            // SAFETY: The caller's guarantee.
            match unsafe { Self::read_locked(&mut state, event, buf, len, peek) } {
                Err(e) if e == errno::eagain() => {}
                other => return other,
            }
            if state.signaled {
                state.signaled = false;
                return Err(errno::eagain());
            }
            match sleep(&self.waiters, &mut state, left) {
                Wait::Again(l) => left = l,
                Wait::TimedOut => return Err(errno::eagain()),
                Wait::Interrupted => return Err(EINTR),
            }
        }
    }

    /// fi_eq_readerr: the entry into `out`, its data as `place` says
    /// (`out.err_data` and `err_data_size` then name the bytes).
    pub(crate) fn read_error(
        &self,
        out: &mut abi::fi_eq_err_entry,
        place: ErrData<'_>,
    ) -> Result<usize> {
        let mut state = self.state.lock();
        match state.ring.pop_error() {
            Some(Slot::Failed(e)) => {
                *out = e.entry;
                match place {
                    ErrData::Into(buf) => {
                        let n = buf.len().min(e.data.len());
                        buf[..n].copy_from_slice(&e.data[..n]);
                        out.err_data = buf.as_mut_ptr().cast();
                        out.err_data_size = n;
                    }
                    ErrData::Queue if !e.data.is_empty() => {
                        state.err_data = e.data;
                        out.err_data = state.err_data.as_mut_ptr().cast();
                        out.err_data_size = state.err_data.len();
                    }
                    ErrData::Queue => {}
                }
            }
            Some(Slot::Overrun { lost }) => *out = eq_overrun(lost),
            _ => return Err(errno::eagain()),
        }
        Ok(core::mem::size_of::<abi::fi_eq_err_entry>())
    }

    /// Takes the entry at the head for a reader inside kofi (the RDM
    /// layer's internal queue).
    pub(crate) fn take(&self) -> EqTaken {
        let mut state = self.state.lock();
        match state.ring.pop_error() {
            Some(Slot::Failed(e)) => return EqTaken::Failed(e.entry),
            Some(Slot::Overrun { lost }) => return EqTaken::Failed(eq_overrun(lost)),
            _ => {}
        }
        let mut taken = None;
        state.ring.pop_done(1, |ev| taken = Some(ev));
        taken.map_or(EqTaken::Empty, EqTaken::Event)
    }
}
