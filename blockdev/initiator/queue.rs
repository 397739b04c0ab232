// SPDX-License-Identifier: GPL-2.0

//! One hardware queue of a kofi_blk device: its connection to the target,
//! the commands in flight by tag, and the work item that reads its CQ.
//!
//! A request is entered in the table under its tag before its command is
//! sent, and leaves it exactly once: when its response arrives (checked
//! against the tag's generation) and, for a write sent from its own pages,
//! its send has completed; or when the connection is lost (it is then
//! requeued, to wait for the reconnection or fail at its deadline), once
//! the connection is closed.

use crate::compat::CStrBytes;
use crate::compat::Stamp;
use crate::errno;
use crate::fabric::{CmEvent, Completion, Connection, Domain, Handlers, Mr, SEND_PIECES_MAX};
use crate::mq::{self, Op};
use crate::proto::{self, Accept, Command, Response};
use crate::{abi, flags, Driver};
use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::bindings::bio_vec;
use kernel::prelude::*;
use kernel::sync::{Arc, ArcBorrow, CondVar, SpinLock};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};
use kernel::{new_condvar, new_spinlock, str::CStr};

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
    send: SendState,
}

/// Where the send of an inline write's message, from the request's pages,
/// stands.
enum SendState {
    /// Completed, or none made: the response ends the request.
    Done,
    /// In progress: the provider may still read the pages.
    Pending,
    /// In progress and answered: its completion ends the request with the
    /// response's result.
    Answered(Result),
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
    /// Holders of a connection taken from `conn` ([`ConnUse`]). No new
    /// connection is installed while there are any, so once `conn` is
    /// taken, none means no one else holds the connection taken.
    users: u32,
    /// A write's bytes its command carries at most on this connection
    /// (the target's offer; 0: none).
    inline_max: usize,
    /// The request's pieces an inline write's message takes at most (the
    /// provider's iov limit, less the command's).
    inline_pieces: usize,
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
    /// Signalled when `state.users` drops to 0.
    #[pin]
    unused: CondVar,
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
                        users: 0,
                        inline_max: 0,
                        inline_pieces: 0,
                        read_inline_max: 0,
                        closed: false
                    },
                    "kofi_blk::Queue::state"
                ),
                unused <- new_condvar!("kofi_blk::Queue::unused"),
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
        let inline_pieces = domain
            .info()
            .iov_limit()
            .saturating_sub(1)
            .min(SEND_PIECES_MAX);
        let conn = Arc::new(conn, GFP_KERNEL)?;
        let mut s = self.state.lock();
        // The last connection's holders first (see `State::users`).
        while s.users != 0 {
            self.unused.wait(&mut s);
        }
        if s.closed {
            return Err(errno::eshutdown());
        }
        s.conn = Some(conn);
        s.inline_max = accept.inline_max as usize;
        s.inline_pieces = inline_pieces;
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

    /// The connection, held until the use is dropped.
    fn conn(&self) -> Option<ConnUse<'_>> {
        let mut s = self.state.lock();
        let conn = s.conn.clone()?;
        s.users += 1;
        Some(ConnUse {
            queue: self,
            conn: Some(conn),
            inline_max: s.inline_max,
            inline_pieces: s.inline_pieces,
            read_inline_max: s.read_inline_max,
        })
    }

    /// Sends `rq`'s command; `Err(rq)` when the queue has no connection or
    /// its endpoint cannot take the command now. A write small enough goes
    /// with its data in the command's message, sent from the request's
    /// pages; a read small enough gets its data in the response's: no
    /// region, no RMA.
    pub(crate) fn submit(&self, mut rq: mq::Request<Driver>) -> Result<(), mq::Request<Driver>> {
        let Some(user) = self.conn() else {
            return Err(rq);
        };
        let conn = user.conn();
        let fits = rq.op() == Op::Write && rq.bytes() as usize <= user.inline_max;
        let data_pages = if fits {
            inline_pages(&mut rq, user.inline_pieces)
        } else {
            None
        };
        let data_in_response = rq.op() == Op::Read && rq.bytes() as usize <= user.read_inline_max;
        let inline = data_pages.is_some() || data_in_response;
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
            match register(conn, &mut rq, access) {
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
            if !s.conn.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
                drop(s);
                drop(mr);
                return Err(rq);
            }
            let gen = s.gens[tag].wrapping_add(1);
            s.gens[tag] = gen;
            s.inflight[tag] = Some(InFlight {
                rq,
                _mr: mr,
                gen,
                send: if data_pages.is_some() {
                    SendState::Pending
                } else {
                    SendState::Done
                },
            });
            Command { gen, ..cmd }.encode()
        };
        let sent = match &data_pages {
            // SAFETY: The pages are the request's, which stay until it ends;
            // it ends only once this send's completion has been read
            // (`sent`), or after the connection is closed (`disconnect`).
            Some((pages, n)) => unsafe { conn.send_with_pages(tag, &bytes, &pages[..*n]) },
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
                Some(f) if f.gen == resp.gen && !matches!(f.send, SendState::Answered(_)) => {
                    let want = if f.data_in_response() && resp.status == 0 {
                        f.rq.bytes() as usize
                    } else {
                        0
                    };
                    if data.len() != want {
                        return Err(errno::eproto());
                    }
                    if matches!(f.send, SendState::Pending) {
                        // Its pages are the provider's until the send's
                        // completion, which ends it.
                        f.send = SendState::Answered(proto::status_result(resp.status));
                        return Ok(());
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
            0 if !data.is_empty() => done.rq.fill_data(data),
            status => proto::status_result(status),
        };
        end(done.rq, result);
        Ok(())
    }

    /// The send of inline write `tag` completed: it ends if it was answered.
    fn sent(&self, tag: usize) -> Result {
        let done = {
            let mut s = self.state.lock();
            let slot = s.inflight.get_mut(tag).ok_or_else(errno::eproto)?;
            match slot.as_mut().map(|f| &mut f.send) {
                Some(send @ SendState::Pending) => {
                    *send = SendState::Done;
                    return Ok(());
                }
                Some(SendState::Answered(_)) => slot.take(),
                _ => None,
            }
        };
        let Some(InFlight {
            rq,
            send: SendState::Answered(result),
            ..
        }) = done
        else {
            return Err(errno::eproto());
        };
        end(rq, result);
        Ok(())
    }

    /// Closes the connection; requests in flight go back to blk-mq (to wait
    /// for the next connection or fail at their deadline), or fail when
    /// `fail` is set. Returns once the connection is closed.
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
        // Requests with a send in progress from their pages wait for the
        // close (the provider reads them until then): the others first.
        self.hand_back(fail, |f| matches!(f.send, SendState::Done));
        // The regions are gone; once no one else uses the connection, the
        // last reference was dropped and the endpoint is closed.
        let mut s = self.state.lock();
        while s.users != 0 {
            self.unused.wait(&mut s);
        }
        drop(s);
        self.hand_back(fail, |_| true);
    }

    /// Takes the requests in flight that `which` picks out of the table and
    /// requeues them, or fails them when `fail` is set. One at a time:
    /// nothing to allocate under the lock.
    fn hand_back(&self, fail: bool, which: impl Fn(&InFlight) -> bool) {
        loop {
            let taken = {
                let mut s = self.state.lock();
                s.inflight
                    .iter_mut()
                    .find(|slot| slot.as_ref().is_some_and(&which))
                    .and_then(|slot| slot.take())
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
                if c.sent {
                    self.sent(c.slot)?;
                    continue;
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

/// A holder of the queue's connection outside its lock (see
/// [`State::users`]).
struct ConnUse<'a> {
    queue: &'a Queue,
    /// Dropped before the count goes down.
    conn: Option<Arc<Connection>>,
    inline_max: usize,
    inline_pieces: usize,
    read_inline_max: usize,
}

impl ConnUse<'_> {
    fn conn(&self) -> &Arc<Connection> {
        self.conn.as_ref().expect("held until drop")
    }
}

impl Drop for ConnUse<'_> {
    fn drop(&mut self) {
        drop(self.conn.take());
        let mut s = self.queue.state.lock();
        s.users -= 1;
        if s.users == 0 {
            self.queue.unused.notify_all();
        }
    }
}

/// An inline write's pages, copied off the request (which moves into the
/// table before its send): None when they take more than `max` pieces, and
/// the write goes by RMA.
fn inline_pages(
    rq: &mut mq::Request<Driver>,
    max: usize,
) -> Option<([bio_vec; SEND_PIECES_MAX], usize)> {
    let pages = rq.pages().ok()?;
    if pages.len() > max.min(SEND_PIECES_MAX) {
        return None;
    }
    let mut copy = [bio_vec::default(); SEND_PIECES_MAX];
    copy[..pages.len()].copy_from_slice(pages);
    Some((copy, pages.len()))
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
        let Some(user) = this.conn() else {
            return;
        };
        let conn = user.conn();
        let failed = match this.poll(conn) {
            Err(e) => Some(e),
            // Cleared before the read: an event posted meanwhile sets it again.
            Ok(()) if this.eq_event.swap(false, Ordering::AcqRel) => match conn.event(0) {
                Ok(Some(CmEvent::Shutdown)) => Some(errno::econnreset()),
                Ok(Some(CmEvent::Error { err, .. })) => Some(crate::fabric::fi_error(err as u32)),
                _ => None,
            },
            Ok(()) => None,
        };
        drop(user);
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
