// SPDX-License-Identifier: GPL-2.0

//! One hardware queue of a kofi_blk device: its connection to the target,
//! the commands in flight by tag, and the work item that reads its CQ.
//!
//! A request is entered in the table under its tag before its command is
//! sent, and leaves it exactly once: when its response arrives (checked
//! against the tag's generation), or when the connection is lost (it is then
//! requeued, to wait for the reconnection or fail at its deadline).

use crate::compat::CStrBytes;
use crate::compat::Stamp;
use crate::errno;
use crate::fabric::{CmEvent, Completion, Connection, Domain, Handlers, Mr};
use crate::mq::{self, Op};
use crate::proto::{self, Accept, Command, Response};
use crate::{abi, flags, Driver};
use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::bindings::bio_vec;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow, SpinLock};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};
use kernel::{new_spinlock, str::CStr};

/// Pages of one request at most: its bytes cut at page boundaries.
pub(crate) const MAX_PAGES: usize = 64;

/// How long a connection attempt waits for the target's answer.
const CONNECT_WAIT_MS: i32 = 10_000;

/// A read's bytes a response may carry, as each receive buffer holds them
/// past the response: a page, offered in the connect (the target may offer
/// less back).
const READ_INLINE_MAX: u32 = kernel::page::PAGE_SIZE as u32;

/// The per-request data of kofi_blk (in the request's PDU): room for the
/// request's pages, for their registration (no allocation per request), and
/// since when it has waited for a working connection.
pub(crate) struct RequestData {
    pages: [bio_vec; MAX_PAGES],
    held_since: Option<Stamp>,
}

impl Default for RequestData {
    fn default() -> Self {
        RequestData {
            pages: [bio_vec::default(); MAX_PAGES],
            held_since: None,
        }
    }
}

/// Ends `rq` (its next use starts afresh).
pub(crate) fn end(mut rq: mq::Request<Driver>, result: Result) {
    rq.data().held_since = None;
    rq.end(result);
}

/// Marks `rq` as waiting for a working connection, from now unless it was
/// already: a request bounced between connections that never answer it
/// keeps its first time.
pub(crate) fn hold(mut rq: mq::Request<Driver>) -> mq::Request<Driver> {
    let data = rq.data();
    if data.held_since.is_none() {
        data.held_since = Some(Stamp::now());
    }
    rq
}

/// Whether `rq` has waited `limit_ms` or longer for a working connection.
pub(crate) fn held_for(rq: &mut mq::Request<Driver>, limit_ms: i64) -> bool {
    rq.data()
        .held_since
        .is_some_and(|t| t.elapsed_ms() >= limit_ms)
}

// SAFETY: Page descriptors, filled and read only by the request's owner.
unsafe impl Send for RequestData {}

impl mq::PageBuffer for RequestData {
    fn page_buffer(&mut self) -> &mut [bio_vec] {
        &mut self.pages
    }
}

/// A command in flight.
struct InFlight {
    rq: mq::Request<Driver>,
    /// The request's pages, registered for the target (none for FLUSH and
    /// inline I/O: a read without one gets its data in its response).
    _mr: Option<Mr>,
    gen: u32,
}

impl InFlight {
    /// A read whose data comes in its response's message.
    fn data_in_response(&self) -> bool {
        self.rq.op() == Op::Read && self._mr.is_none()
    }
}

struct State {
    /// By tag.
    inflight: KVec<Option<InFlight>>,
    /// Each tag's count of uses, sent with the command.
    gens: KVec<u32>,
    /// The connection, while it is up.
    conn: Option<Arc<Connection>>,
    /// A write's bytes its command carries at most on this connection
    /// (the target's offer, within the provider's inject size; 0: none).
    inline_max: usize,
    /// A read's bytes its response carries at most on this connection (the
    /// target's answer to our offer; 0: none).
    read_inline_max: usize,
    /// Set when the device goes: no connection is made any more.
    closed: bool,
}

/// One hardware queue.
///
/// # Invariants
///
/// A connection's handlers hold a pointer to this queue: every connection is
/// taken out of `state` and dropped (closing it, so the handlers stop) while
/// a reference to the queue is held, before the last one goes.
#[pin_data]
pub(crate) struct Queue {
    pub(crate) index: u16,
    depth: u16,
    /// The EQ has an event to read (set by its handler): the work reads the
    /// EQ only then, not on every batch of completions.
    eq_event: AtomicBool,
    #[pin]
    state: SpinLock<State>,
    #[pin]
    work: Work<Queue>,
}

impl_has_work! {
    impl HasWork<Self> for Queue { self.work }
}

/// The private data of a connection request for queue `index`.
fn connect_param(export: &CStr, index: u16, depth: u16) -> Result<[u8; proto::CONNECT_LEN]> {
    proto::connect(export.cstr_bytes(), index, depth, READ_INLINE_MAX)
}

impl Queue {
    pub(crate) fn new(index: u16, depth: u16) -> Result<Arc<Queue>> {
        let mut inflight = KVec::with_capacity(depth.into(), GFP_KERNEL)?;
        let mut gens = KVec::with_capacity(depth.into(), GFP_KERNEL)?;
        for _ in 0..depth {
            inflight.push(None, GFP_KERNEL)?;
            gens.push(0u32, GFP_KERNEL)?;
        }
        Arc::pin_init(
            pin_init!(Queue {
                index,
                depth,
                eq_event: AtomicBool::new(false),
                state <- new_spinlock!(
                    State {
                        inflight,
                        gens,
                        conn: None,
                        inline_max: 0,
                        read_inline_max: 0,
                        closed: false
                    },
                    "kofi_blk::Queue::state"
                ),
                work <- new_work!("kofi_blk::Queue::work"),
            }),
            GFP_KERNEL,
        )
    }

    /// Connects to the export through `domain`; the target's description
    /// of the device.
    pub(crate) fn connect(self: &Arc<Self>, domain: &Arc<Domain>, export: &CStr) -> Result<Accept> {
        let handlers = Handlers {
            cq: Some(queue_event),
            eq: Some(queue_event_eq),
            context: core::ptr::from_ref::<Queue>(&**self)
                .cast_mut()
                .cast::<c_void>(),
        };
        let recv_size = proto::RESPONSE_LEN + READ_INLINE_MAX as usize;
        let conn = Connection::open(domain, &handlers, self.depth.into(), recv_size)?;
        conn.connect(&connect_param(export, self.index, self.depth)?)?;
        let accept = loop {
            match conn.event(CONNECT_WAIT_MS)? {
                Some(CmEvent::Connected(data)) => {
                    break proto::accept(data.bytes(), READ_INLINE_MAX)?
                }
                Some(CmEvent::Error { err, data }) => {
                    // A kofi_blk_reject says why the target refused.
                    return Err(match proto::reject(data.bytes()) {
                        Some(status) => Error::from_errno(-status),
                        None => crate::fabric::fi_error(err as u32),
                    });
                }
                Some(CmEvent::Shutdown) => return Err(errno::econnreset()),
                Some(CmEvent::Other) => continue,
                None => return Err(errno::etimedout()),
            }
        };
        let inject = domain.info().inject_size();
        let inline_max = inject
            .saturating_sub(proto::COMMAND_LEN)
            .min(accept.inline_max as usize);
        let conn = Arc::new(conn, GFP_KERNEL)?;
        let mut s = self.state.lock();
        if s.closed {
            return Err(errno::eshutdown());
        }
        s.conn = Some(conn);
        s.inline_max = inline_max;
        s.read_inline_max = accept.read_inline_max as usize;
        Ok(accept)
    }

    /// Whether request `tag` is in flight here.
    pub(crate) fn holds(&self, tag: u32) -> bool {
        let s = self.state.lock();
        s.inflight.get(tag as usize).is_some_and(|f| f.is_some())
    }

    pub(crate) fn connected(&self) -> bool {
        self.state.lock().conn.is_some()
    }

    fn conn(&self) -> Option<Arc<Connection>> {
        self.state.lock().conn.clone()
    }

    /// The connection and its inline limits: a write's, a read's.
    fn conn_and_inline_max(&self) -> Option<(Arc<Connection>, usize, usize)> {
        let s = self.state.lock();
        Some((s.conn.clone()?, s.inline_max, s.read_inline_max))
    }

    /// Sends `rq`'s command; `Err(rq)` when the queue has no connection or
    /// its endpoint cannot take the command now. A write small enough goes
    /// with its data in the command's message (a copy, injected), a read
    /// small enough gets its data in the response's: no region, no RMA.
    pub(crate) fn submit(&self, mut rq: mq::Request<Driver>) -> Result<(), mq::Request<Driver>> {
        let Some((conn, inline_max, read_inline_max)) = self.conn_and_inline_max() else {
            return Err(rq);
        };
        let fits = rq.op() == Op::Write && rq.bytes() as usize <= inline_max;
        let mut message = fits.then(|| inline_message(&rq).ok()).flatten();
        let data_in_response = rq.op() == Op::Read && rq.bytes() as usize <= read_inline_max;
        let inline = message.is_some() || data_in_response;
        let (opcode, access) = match rq.op() {
            Op::Read => (proto::READ, flags::FI_REMOTE_WRITE),
            Op::Write => (proto::WRITE, flags::FI_REMOTE_READ),
            Op::Flush => (proto::FLUSH, 0),
            Op::Other => {
                end(rq, Err(errno::eopnotsupp()));
                return Ok(());
            }
        };
        let mr = if opcode == proto::FLUSH || inline {
            None
        } else {
            match register(&conn, &mut rq, access) {
                Ok(mr) => Some(mr),
                // A full send queue or a connection going: offered again later.
                Err(e) if e == EAGAIN || e == errno::enotconn() => return Err(rq),
                Err(e) => {
                    end(rq, Err(e));
                    return Ok(());
                }
            }
        };
        let tag = rq.tag() as usize;
        if tag >= self.depth.into() {
            end(rq, Err(EINVAL));
            return Ok(());
        }
        let cmd = Command {
            opcode,
            fua: rq.op() == Op::Write && rq.fua(),
            inline,
            tag: tag as u16,
            gen: 0,
            sector: rq.sector(),
            len: if opcode == proto::FLUSH {
                0
            } else {
                rq.bytes()
            },
            key: mr.as_ref().map_or(0, |m| m.key()),
        };
        let bytes = {
            let mut s = self.state.lock();
            // A disconnect since `conn` was read sweeps only what it finds.
            if !s.conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, &conn)) {
                drop(s);
                drop(mr);
                return Err(rq);
            }
            let gen = s.gens[tag].wrapping_add(1);
            s.gens[tag] = gen;
            s.inflight[tag] = Some(InFlight { rq, _mr: mr, gen });
            Command { gen, ..cmd }.encode()
        };
        let sent = match message.as_mut() {
            Some(m) => {
                m[..proto::COMMAND_LEN].copy_from_slice(&bytes);
                conn.inject(m)
            }
            None => conn.inject(&bytes),
        };
        if sent.is_err() {
            // The endpoint cannot take it (full, or the connection is
            // going): handed back to blk-mq, which offers it again after a
            // completion or a short delay. Requeueing at once instead made
            // kblockd's high-priority worker spin on a queue that cannot
            // move, starving the work that would let it.
            let Some(f) = self.state.lock().inflight[tag].take() else {
                // A disconnect took it first and requeued it.
                return Ok(());
            };
            return Err(f.rq);
        }
        Ok(())
    }

    /// A response arrived (`message`: the response, then an inline read's
    /// data): ends its request, or fails the connection when it answers no
    /// command in flight or carries the wrong number of bytes.
    fn respond(&self, message: &[u8]) -> Result {
        let head = message
            .get(..proto::RESPONSE_LEN)
            .ok_or_else(errno::eproto)?;
        let data = &message[head.len()..];
        let resp = Response::decode(head).ok_or_else(errno::eproto)?;
        let done = {
            let mut s = self.state.lock();
            let slot = s
                .inflight
                .get_mut(resp.tag as usize)
                .ok_or_else(errno::eproto)?;
            match slot {
                // An inline read's success brings all its bytes, anything
                // else none (checked before the request leaves the table:
                // a bad answer leaves it to the disconnect, to go again).
                Some(f) if f.gen == resp.gen => {
                    let want = if f.data_in_response() && resp.status == 0 {
                        f.rq.bytes() as usize
                    } else {
                        0
                    };
                    if data.len() != want {
                        return Err(errno::eproto());
                    }
                    slot.take()
                }
                _ => None,
            }
        };
        let mut done = done.ok_or_else(errno::eproto)?;
        // Dropping the region waits for the target's accesses to end.
        drop(done._mr);
        let result = match resp.status {
            0 if data.is_empty() => Ok(()),
            0 => done.rq.fill_data(data),
            status => Err(proto::status_error(status)),
        };
        end(done.rq, result);
        Ok(())
    }

    /// Closes the connection; requests in flight go back to blk-mq (to wait
    /// for the next connection or fail at their deadline), or fail when
    /// `fail` is set.
    pub(crate) fn disconnect(&self, fail: bool) {
        let conn = {
            let mut s = self.state.lock();
            s.closed |= fail;
            s.conn.take()
        };
        // Closing the endpoint first: no access by the target remains. Its
        // bound regions (FI_MR_ENDPOINT) hold it: it closes after the last
        // of them, each of which ends the target's access through its key.
        drop(conn);
        // One at a time: nothing to allocate under the lock.
        loop {
            let taken = {
                let mut s = self.state.lock();
                s.inflight.iter_mut().find_map(|slot| slot.take())
            };
            let Some(f) = taken else {
                return;
            };
            drop(f._mr);
            if fail {
                end(f.rq, Err(EIO));
            } else {
                hold(f.rq).requeue();
            }
        }
    }

    /// Reads the CQ: responses end their requests; an error ends the
    /// connection.
    fn poll(&self, conn: &Connection) -> Result {
        let mut done: [Completion; 8] = Default::default();
        loop {
            let n = conn.poll(&mut done)?;
            if n == 0 {
                return Ok(());
            }
            for c in &done[..n] {
                if c.err != 0 {
                    return Err(crate::fabric::fi_error(c.err as u32));
                }
                // Read in place (an inline read's data goes from there into
                // its pages), then the buffer is posted again.
                let answered = conn.with_received(c.slot, c.len, |m| self.respond(m))?;
                conn.post_recv(c.slot)?;
                answered?;
            }
        }
    }
}

/// An inline write's message: room for its command, then a copy of its
/// data. Taken without waiting: when memory is short the write goes by RMA.
fn inline_message(rq: &mq::Request<Driver>) -> Result<KVec<u8>> {
    let len = proto::COMMAND_LEN + rq.bytes() as usize;
    let mut m = KVec::with_capacity(len, GFP_NOWAIT | __GFP_NOWARN)?;
    m.extend_from_slice(&[0u8; proto::COMMAND_LEN], GFP_NOWAIT)?;
    rq.copy_data(&mut m)?;
    Ok(m)
}

/// Registers `rq`'s pages for the target, bound to `conn` where the
/// domain binds regions to endpoints.
fn register(conn: &Arc<Connection>, rq: &mut mq::Request<Driver>, access: u64) -> Result<Mr> {
    let pages = rq.pages()?;
    let domain = conn.domain();
    // SAFETY: The request's pages stay until it ends, and the region is
    // dropped before it ends (in `respond` and `disconnect`).
    let mut mr = unsafe { domain.register(pages, access) }?;
    if domain.info().mr_endpoint() {
        mr.enable_on(conn)?;
    }
    Ok(mr)
}

impl WorkItem for Queue {
    type Pointer = Arc<Queue>;

    fn run(this: Arc<Queue>) {
        let Some(conn) = this.conn() else {
            return;
        };
        let failed = match this.poll(&conn) {
            Err(e) => Some(e),
            // Cleared before the read: an event posted meanwhile sets it again.
            Ok(()) if this.eq_event.swap(false, Ordering::AcqRel) => match conn.event(0) {
                Ok(Some(CmEvent::Shutdown)) => Some(errno::econnreset()),
                Ok(Some(CmEvent::Error { err, .. })) => Some(crate::fabric::fi_error(err as u32)),
                _ => None,
            },
            Ok(()) => None,
        };
        drop(conn);
        if let Some(e) = failed {
            pr_warn!("queue {}: connection lost ({:?})\n", this.index, e);
            // The next request offered starts the reconnection.
            this.disconnect(false);
        }
    }
}

/// The CQ's and EQ's handler: the queue's work reads them. Runs in the
/// poster's context.
///
/// # Safety
///
/// `context` is the queue's pointer given in [`Handlers`], valid by the
/// queue's invariant while its connection is open.
unsafe fn wake(context: *mut c_void, eq_event: bool) {
    // SAFETY: The caller's guarantee: a live `Arc<Queue>`'s pointee.
    let queue = unsafe { ArcBorrow::from_raw(context.cast::<Queue>()) };
    if eq_event {
        queue.eq_event.store(true, Ordering::Release);
    }
    let _ = crate::workqueue().enqueue(Arc::<Queue>::from(queue));
}

/// The CQ's handler.
///
/// # Safety
///
/// Called by kofi with a CQ a queue's connection opened.
unsafe extern "C" fn queue_event(cq: *mut abi::fid_cq) {
    // SAFETY: kofi calls the handler with the CQ the queue opened, whose
    // context is the queue's pointer; by the queue's invariant it is alive.
    unsafe { wake((*cq).fid.context, false) };
}

/// The EQ's handler.
///
/// # Safety
///
/// Called by kofi with an EQ a queue's connection opened.
unsafe extern "C" fn queue_event_eq(eq: *mut abi::fid_eq) {
    // SAFETY: As for the CQ: the EQ the queue opened, with its pointer.
    unsafe { wake((*eq).fid.context, true) };
}
