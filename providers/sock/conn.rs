// SPDX-License-Identifier: GPL-2.0

//! A kofi_sock connection: one TCP socket carrying wire frames, driven by
//! its socket callbacks through a work item on the provider's workqueue
//! (WQ_MEM_RECLAIM, in a memalloc_noio scope) and by the endpoint's calls.
//!
//! Everything about a connection is under its mutex: the socket, the phase,
//! the frames waiting to go out, the frame coming in, the posted receives
//! (untagged and tagged), the unexpected messages and the RMAs in flight.
//! Reporting to the core happens under it too (the core's queues take only
//! spinlocks).
//!
//! A malformed frame, a socket error or EOF ends the connection: pending
//! transmits and RMAs complete with FI_ECONNRESET and FI_SHUTDOWN (or a
//! connection error) goes to the EQ. An RMA the target refuses (key, range,
//! rights) completes with an error at the initiator; the connection stays.

use crate::abi;
use crate::compat::VecExt;
use crate::flags::*;
use crate::iovec::Iov;
use crate::kofi::census::Counted;
use crate::kofi::ip_endpoint::ip_conn_by_inherent_methods;
use crate::kofi::kept::KeptBuffers;
use crate::kofi::{
    cancel_posted, fi_error, report_cancelled, send_kind, Context, DomainRef, EpRef, Info, Lent,
    MrHold, PostedRecv, ProgressWaker,
};
use crate::listener::Listener;
use crate::prefetch::{Prefetch, Reader};
use crate::ring::Ring;
use crate::socket::{NoIo, Received, SockAddr, Socket, SocketOwner};
use crate::tagged::{HeldMessage, HeldTagged, TaggedRecvs, Trecv};
use crate::wire::{self, Header, Op, HEADER_LEN};
use kernel::alloc::{allocator::KVmalloc, KVVec};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, ArcBorrow, Mutex};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

/// Frames waiting to go out, per connection.
pub(crate) const TX_DEPTH: usize = 256;
/// Posted receives, per connection.
pub(crate) const RX_DEPTH: usize = 256;
/// The largest message or RMA.
pub(crate) const MAX_MSG: usize = 4 << 20;
/// Bytes of messages held for receives not yet posted; beyond it the
/// connection stops reading and TCP holds the sender back.
const UNEXPECTED_MAX: usize = 8 << 20;
/// The largest untagged message held before its receive is posted. A
/// larger one waits in the socket, TCP holding the sender back, and is read
/// straight into the receive whose poster makes the progress (libfabric's
/// tcp provider holds none): holding it cost a second copy and an
/// allocation per message, where a stream's receiver falls behind.
const HELD_MSG_MAX: usize = 4096;
/// Bytes of answers to the peer's reads waiting to go out; beyond it the
/// connection stops reading until the peer takes them, so a peer asking
/// for data it does not read holds at most this much here.
const REPLY_MAX: usize = 2 * MAX_MSG;
/// The largest frame before the handshake is done: a CONNECT, ACCEPT or
/// REJECT carries private data only.
const HANDSHAKE_FRAME_MAX: u64 = wire::CM_DATA_MAX;

/// Where a connection stands.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// Client: TCP connecting.
    Connecting,
    /// Client: CONNECT sent, waiting for ACCEPT or REJECT.
    AwaitAccept,
    /// Server: waiting for the client's CONNECT.
    AwaitConnect,
    /// Server: FI_CONNREQ posted, waiting for fi_accept or fi_reject.
    AwaitDecision,
    /// Server: REJECT queued; close once it is out.
    Rejecting,
    Connected,
    Closed,
}

/// A frame to send, and what to report once it is out.
struct TxFrame {
    header: [u8; HEADER_LEN],
    payload: TxPayload,
    /// An answer to a peer's read (counted in `Inner::reply_bytes`).
    reply: bool,
    /// What the frame completes once TCP has taken it.
    done: Option<Done>,
}

/// A completion reported once TCP has taken a frame: a send's, or an RMA
/// write's that asked for no more than FI_INJECT_COMPLETE (its target does
/// not answer it).
#[derive(Clone, Copy)]
pub(crate) struct Done {
    context: Context,
    /// The completion's flags (FI_COMPLETION when a CQ entry is wanted).
    flags: u64,
    len: usize,
}

impl Done {
    /// A send's, with the call's `flags`.
    pub(crate) fn send(context: Context, flags: u64) -> Done {
        Done {
            context,
            flags: FI_SEND | send_kind(flags) | (flags & FI_COMPLETION),
            len: 0,
        }
    }

    /// An unanswered write's.
    fn write(call: &RmaCall) -> Done {
        Done {
            context: call.context,
            flags: FI_RMA | FI_WRITE | (call.flags & FI_COMPLETION),
            len: call.len,
        }
    }
}

/// Payloads up to this many bytes travel in their frame itself: an inject
/// of a command or of its answer (kofi_blk's are 40 and 16 bytes) allocates
/// nothing.
const INLINE_MAX: usize = 64;

/// Copies of larger injects go into buffers the connection keeps once TCP
/// took the last ones (see [`KeptBuffers`]): up to this many, of at most an
/// inject's size.
const KEPT: usize = 32;

/// What follows a frame's header.
pub(crate) enum TxPayload {
    None,
    /// A small copy, in the frame: the first `.1` bytes.
    Inline([u8; INLINE_MAX], usize),
    /// A copy (vmalloc'd when large: no payload needs contiguous pages).
    Copied(KVVec<u8>),
    /// The consumer's buffers, sent from in place.
    Lent(Lent),
    /// The window of a region a peer reads, held while TCP copies from it
    /// in place: only while the read is answered (see
    /// [`Inner::let_go_of_region`]).
    Region(MrHold),
}

impl TxPayload {
    fn len(&self) -> usize {
        match self {
            TxPayload::None => 0,
            TxPayload::Inline(_, len) => *len,
            TxPayload::Copied(v) => v.len(),
            TxPayload::Lent(l) => l.len(),
            TxPayload::Region(held) => held.len(),
        }
    }

    /// Calls `f` with an iterator over the payload's bytes from byte `skip`
    /// on (None when there are none), valid for the call.
    fn with_iter_at<R>(
        &self,
        skip: usize,
        f: impl FnOnce(Option<&abi::iov_iter>) -> Result<R>,
    ) -> Result<R> {
        let copy = match self {
            TxPayload::None => return f(None),
            TxPayload::Inline(bytes, len) => &bytes[..*len],
            TxPayload::Copied(v) => &v[..],
            TxPayload::Lent(l) => return f(Some(&l.iter_at(skip))),
            TxPayload::Region(held) => {
                let skip = skip.min(held.len());
                return f(Some(&held.iter(
                    abi::ITER_SOURCE,
                    skip,
                    held.len() - skip,
                )?));
            }
        };
        let kv = abi::kvec {
            iov_base: copy.as_ptr().cast_mut().cast(),
            iov_len: copy.len(),
        };
        f(Some(
            &Iov::Kvec(core::slice::from_ref(&kv)).iter_at(abi::ITER_SOURCE, skip),
        ))
    }

    /// A copy of `len` bytes, which `copy` writes into the room it is
    /// given: the frame's own when they fit in it, else a buffer `buffer`
    /// gives with room for them.
    fn copy_with(
        len: usize,
        copy: impl FnOnce(&mut [u8]) -> Result,
        buffer: impl FnOnce(usize) -> Result<KVVec<u8>>,
    ) -> Result<TxPayload> {
        if len == 0 {
            return Ok(TxPayload::None);
        }
        if len <= INLINE_MAX {
            let mut bytes = [0; INLINE_MAX];
            copy(&mut bytes[..len])?;
            return Ok(TxPayload::Inline(bytes, len));
        }
        let mut v = buffer(len)?;
        v.extend_with(len, 0, GFP_KERNEL)?;
        copy(&mut v)?;
        Ok(TxPayload::Copied(v))
    }

    /// A copy of `data`.
    fn copy_of(data: &[u8]) -> Result<TxPayload> {
        let copy = |room: &mut [u8]| {
            room.copy_from_slice(data);
            Ok(())
        };
        TxPayload::copy_with(data.len(), copy, |len| {
            Ok(KVVec::with_capacity(len, GFP_KERNEL)?)
        })
    }
}

/// One RMA call: one part per remote buffer, answered in order; the call
/// completes (once) when its last part is answered.
pub(crate) struct RmaCall {
    id: u64,
    write: bool,
    context: Context,
    flags: u64,
    len: usize,
    /// A read's local buffers.
    local: Option<PostedRecv>,
    /// The first part's failure, if any.
    status: u32,
    parts_left: usize,
}

/// A part of an RMA call waiting for the peer's answer.
struct PendingRma {
    id: u64,
    call: u64,
    /// Where the part's bytes go in the call's local buffers (reads).
    offset: usize,
    len: usize,
}

/// A part of an RMA call to post: a remote buffer and where its bytes are
/// in the call's local buffers (a write's part carries them: its share of
/// the consumer's buffers, or a copy of an inject's).
pub(crate) struct RmaPart {
    pub(crate) key: u64,
    pub(crate) addr: u64,
    pub(crate) offset: usize,
    pub(crate) len: usize,
    pub(crate) payload: TxPayload,
}

/// A tagged message no receive wanted yet: its bytes and remote CQ data.
struct HeldBytes {
    data: KVVec<u8>,
    cq_data: Option<u64>,
}

impl HeldMessage for HeldBytes {
    fn len(&self) -> usize {
        self.data.len()
    }

    fn data(&self) -> Option<u64> {
        self.cq_data
    }
}

/// What waits for a posted receive.
enum Unexpected {
    /// A message no receive was posted for.
    Message {
        data: KVVec<u8>,
        cq_data: Option<u64>,
    },
    /// FI_RX_CQ_DATA mode: a remote write of `len` bytes carrying CQ data
    /// `data`, waiting for the receive it takes.
    WriteData { len: usize, data: u64 },
}

/// The frame being received: its header, then its payload.
struct Incoming {
    header: [u8; HEADER_LEN],
    header_got: usize,
    parsed: Option<Header>,
    /// The payload read so far; its capacity, once started, is the frame's
    /// length (not zero-filled first: the socket writes every byte).
    payload: KVVec<u8>,
    /// Whether `payload` was sized for the frame (a held-back Send is not).
    started: bool,
    /// A message going straight into a posted receive (no copy).
    direct: Option<Direct>,
}

/// A message received straight into the receive that was waiting for it.
struct Direct {
    recv: PostedRecv,
    /// Bytes of the message received so far (into `recv`, then drained).
    got: usize,
}

impl Direct {
    fn new(recv: PostedRecv) -> Direct {
        Direct { recv, got: 0 }
    }
}

impl Incoming {
    /// Whether a frame is held back until a receive is posted (see
    /// `waits_for_hold`): reading stopped there, and nothing but a new
    /// receive's poster starts it again (the socket's bytes are in already).
    fn held_back(&self) -> bool {
        self.parsed.is_some() && !self.started && self.direct.is_none()
    }

    fn new() -> Incoming {
        Incoming {
            header: [0; HEADER_LEN],
            header_got: 0,
            parsed: None,
            payload: KVVec::new(),
            started: false,
            direct: None,
        }
    }
}

type Posted = Ring<PostedRecv, KVec<Option<PostedRecv>>>;
type Held = Ring<Unexpected, KVec<Option<Unexpected>>>;
type Queued = Ring<TxFrame, KVec<Option<TxFrame>>>;

fn slots<T>(n: usize) -> Result<KVec<Option<T>>> {
    let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
    for _ in 0..n {
        v.push(None, GFP_KERNEL)?;
    }
    Ok(v)
}

struct Inner {
    sock: Option<Socket>,
    /// Bytes read from `sock` ahead of the frame parser: every read goes
    /// through it ([`Inner::reader`]).
    prefetch: Prefetch,
    phase: Phase,
    ep: Option<EpRef>,
    domain: Option<DomainRef>,
    /// Server side, until its FI_CONNREQ went out: the listener that owns
    /// the connection.
    listener: Option<Arc<Listener>>,
    /// Client: the private data CONNECT carries.
    connect_data: TxPayload,
    tx: Queued,
    /// Bytes of the front frame already sent.
    tx_sent: usize,
    /// Bytes of queued answers to the peer's reads.
    reply_bytes: usize,
    /// Reading stopped for want of room to answer (see `receive`).
    rx_waits_for_tx: bool,
    rx: Incoming,
    posted: Posted,
    unexpected: Held,
    /// Tagged receives, and tagged messages no receive wanted yet.
    tagged: TaggedRecvs,
    held_tagged: HeldTagged<HeldBytes>,
    /// Bytes held of both kinds of message.
    unexpected_bytes: usize,
    rma: KVec<PendingRma>,
    calls: KVec<RmaCall>,
    next_id: u64,
    /// FI_SHUTDOWN (or a connection error) was reported.
    ended: bool,
    /// Server: the client left before its request was answered; answering
    /// it (fi_endpoint, fi_accept, fi_reject) fails with FI_ECONNRESET.
    peer_left_unanswered: bool,
    /// Server: the CONNECT's private data, until FI_CONNREQ goes out.
    connreq_data: Option<KVVec<u8>>,
    /// FI_RX_CQ_DATA mode: a write's CQ data takes a posted receive.
    rx_cq_data: bool,
    /// Buffers of injects TCP took, for the next injects' copies.
    kept: KeptBuffers<KVmalloc>,
}

/// A connection.
#[pin_data]
pub(crate) struct Conn {
    #[pin]
    work: Work<Conn>,
    #[pin]
    inner: Mutex<Inner>,
    /// Its endpoint, for the socket's callbacks to hand the progress to a
    /// consumer sleeping on the endpoint's receive CQ.
    waker: ProgressWaker,
    /// Counts it among the module's live connections (checked at unload).
    _counted: Counted,
}

impl_has_work! {
    impl HasWork<Self> for Conn { self.work }
}

impl WorkItem for Conn {
    type Pointer = Arc<Conn>;

    fn run(this: Arc<Conn>) {
        this.progress();
    }
}

impl SocketOwner for Conn {
    /// Has the connection's progress made. A consumer sleeping on the
    /// endpoint's receive CQ makes it in its own thread, which the work item
    /// would only wake after making it: one hand-off (a context switch,
    /// under TCG tens of microseconds) fewer.
    fn socket_event(this: ArcBorrow<'_, Self>) {
        // The endpoint outlives this call: its close detaches the socket,
        // which waits for callbacks in progress.
        if !this.waker.request() {
            Arc::<Conn>::from(this).kick();
        }
    }
}

impl Conn {
    /// A connection over `sock`, whose callbacks kick it from here on.
    fn new(sock: Socket, phase: Phase, listener: Option<Arc<Listener>>) -> Result<Arc<Conn>> {
        let inner = Inner {
            sock: Some(sock),
            prefetch: Prefetch::new()?,
            phase,
            ep: None,
            domain: None,
            listener,
            connect_data: TxPayload::None,
            tx: Ring::new(slots(TX_DEPTH)?),
            tx_sent: 0,
            reply_bytes: 0,
            rx_waits_for_tx: false,
            rx: Incoming::new(),
            posted: Ring::new(slots(RX_DEPTH)?),
            unexpected: Ring::new(slots(RX_DEPTH)?),
            tagged: TaggedRecvs::new(RX_DEPTH)?,
            held_tagged: HeldTagged::new(RX_DEPTH)?,
            unexpected_bytes: 0,
            rma: KVec::new(),
            calls: KVec::new(),
            next_id: 1,
            ended: false,
            peer_left_unanswered: false,
            connreq_data: None,
            rx_cq_data: false,
            kept: KeptBuffers::new(KEPT, crate::INJECT_SIZE)?,
        };
        let conn = Arc::pin_init(
            pin_init!(Conn {
                work <- new_work!("kofi_sock_conn"),
                inner <- new_mutex!(inner, "kofi_sock_conn"),
                waker: ProgressWaker::new(),
                _counted: Counted::new(),
            }),
            GFP_KERNEL,
        )?;
        {
            let mut g = conn.inner.lock();
            if let Some(s) = g.sock.as_mut() {
                s.attach(conn.clone())?;
            }
        }
        Ok(conn)
    }

    /// A client connection to `addr`, carrying `data` in its CONNECT
    /// (`rx_cq_data`: the endpoint's FI_RX_CQ_DATA mode).
    pub(crate) fn connect(
        addr: &SockAddr,
        data: &[u8],
        ep: EpRef,
        domain: DomainRef,
        rx_cq_data: bool,
    ) -> Result<Arc<Conn>> {
        let connect_data = TxPayload::copy_of(data)?;
        let sock = Socket::new(addr.is_ipv6())?;
        // From here the socket holds the connection: every failure closes it.
        let conn = Conn::new(sock, Phase::Connecting, None)?;
        let started = {
            let mut g = conn.inner.lock();
            g.connect_data = connect_data;
            g.rx_cq_data = rx_cq_data;
            conn.waker.arm(&ep);
            g.ep = Some(ep);
            g.domain = Some(domain);
            g.sock
                .as_ref()
                .map_or(Err(fi_error(abi::FI_ENOTCONN)), |s| s.connect(addr))
        };
        if let Err(e) = started {
            conn.close();
            return Err(e);
        }
        conn.kick();
        Ok(conn)
    }

    /// A server connection for a socket `listener` accepted; the caller
    /// holds the listener's pending lock until it holds the connection too
    /// (a CONNECT read at once, the socket's callbacks kicking the work, is
    /// handed over only then), and kicks it after.
    pub(crate) fn accepted(sock: Socket, listener: Arc<Listener>) -> Result<Arc<Conn>> {
        Conn::new(sock, Phase::AwaitConnect, Some(listener))
    }

    /// Queues the work item (already queued is fine).
    pub(crate) fn kick(self: &Arc<Self>) {
        let _ = crate::workqueue::queue().enqueue(self.clone());
    }

    /// Binds the endpoint that accepts this (server) connection
    /// (`rx_cq_data`: its FI_RX_CQ_DATA mode).
    pub(crate) fn bind(&self, ep: EpRef, domain: DomainRef, rx_cq_data: bool) -> Result {
        let mut g = self.inner.lock();
        if g.phase != Phase::AwaitDecision || g.ep.is_some() {
            return Err(g.unanswerable());
        }
        g.rx_cq_data = rx_cq_data;
        self.waker.arm(&ep);
        g.ep = Some(ep);
        g.domain = Some(domain);
        Ok(())
    }

    /// Whether the peer has sent anything, read or waiting in the socket:
    /// a pending connection that has is not slow, its CONNECT waits for
    /// this connection's work item.
    pub(crate) fn heard_from(&self) -> bool {
        let g = self.inner.lock();
        g.rx.header_got > 0 || g.sock.as_ref().is_some_and(Socket::readable)
    }

    /// Whether an endpoint took this (server) connection.
    pub(crate) fn is_bound(&self) -> bool {
        self.inner.lock().ep.is_some()
    }

    /// fi_accept: ACCEPT with `data`, then FI_CONNECTED here.
    pub(crate) fn accept(self: &Arc<Self>, data: &[u8]) -> Result {
        {
            let mut g = self.inner.lock();
            if g.phase != Phase::AwaitDecision || g.ep.is_none() {
                return Err(g.unanswerable());
            }
            g.queue(Header::new(Op::Accept), TxPayload::copy_of(data)?, None)?;
            g.phase = Phase::Connected;
            if let Some(ep) = &g.ep {
                // A full EQ records its own overrun.
                let _ = ep.event(abi::FI_CONNECTED, &[]);
            }
        }
        self.kick();
        Ok(())
    }

    /// fi_reject: REJECT with `data`; the connection closes once it is out.
    /// It goes to TCP here: the request is dropped when this returns, which
    /// closes the connection, and TCP still sends what it holds then.
    pub(crate) fn reject(self: &Arc<Self>, data: &[u8]) -> Result {
        {
            let mut g = self.inner.lock();
            if g.phase != Phase::AwaitDecision {
                return Err(g.unanswerable());
            }
            let h = Header {
                status: abi::ECONNREFUSED,
                ..Header::new(Op::Reject)
            };
            g.queue(h, TxPayload::copy_of(data)?, None)?;
            g.phase = Phase::Rejecting;
            g.flush(false);
        }
        self.kick();
        Ok(())
    }

    /// fi_shutdown: SHUTDOWN to the peer, FI_SHUTDOWN here.
    pub(crate) fn shutdown(self: &Arc<Self>) -> Result {
        let mut g = self.inner.lock();
        if g.phase != Phase::Connected {
            return Err(fi_error(abi::FI_ENOTCONN));
        }
        let _ = g.queue(Header::new(Op::Shutdown), TxPayload::None, None);
        g.flush(false);
        if let Some(s) = &g.sock {
            s.shutdown();
        }
        g.end(abi::FI_ECONNRESET, true);
        Ok(())
    }

    /// Closes without a word to anyone: the endpoint (or request) is gone.
    pub(crate) fn close(&self) {
        let mut g = self.inner.lock();
        g.release_receives();
        g.ep = None;
        g.listener = None;
        g.phase = Phase::Closed;
        // Dropping the socket detaches its callbacks and releases it.
        g.sock = None;
    }

    pub(crate) fn addr(&self, peer: bool) -> Result<SockAddr> {
        let g = self.inner.lock();
        g.sock
            .as_ref()
            .ok_or_else(|| fi_error(abi::FI_ENOTCONN))?
            .name(peer)
    }

    /// Queues a message whose payload goes out from the consumer's buffers
    /// (kvecs or pages, copied by TCP alone), then pushes (`more`: FI_MORE).
    pub(crate) fn post_payload(
        self: &Arc<Self>,
        header: Header,
        payload: Lent,
        done: Option<Done>,
        more: bool,
    ) -> Result {
        let progress = {
            let mut g = self.inner.lock();
            if g.phase != Phase::Connected {
                return Err(fi_error(abi::FI_ENOTCONN));
            }
            g.queue(header, TxPayload::Lent(payload), done)?;
            g.push(more)
        };
        if progress {
            self.kick();
        }
        Ok(())
    }

    /// Queues a message of a copy of its `len` bytes, which `copy` writes
    /// (into the frame, or a kept buffer), then pushes what it can (`more`:
    /// FI_MORE).
    pub(crate) fn post_copy(
        self: &Arc<Self>,
        header: Header,
        len: usize,
        copy: impl FnOnce(&mut [u8]) -> Result,
        done: Option<Done>,
        more: bool,
    ) -> Result {
        let progress = {
            let mut g = self.inner.lock();
            if g.phase != Phase::Connected {
                return Err(fi_error(abi::FI_ENOTCONN));
            }
            let payload = TxPayload::copy_with(len, copy, |len| g.kept.take(len))?;
            g.queue(header, payload, done)?;
            g.push(more)
        };
        if progress {
            self.kick();
        }
        Ok(())
    }

    /// Queues an RMA call, a frame per part (Write with its bytes, or
    /// ReadReq), all or none; the last Write carries `cq_data`. A write
    /// that asks for no more than FI_INJECT_COMPLETE completes once TCP has
    /// taken its last part, unanswered; the rest complete on the answers.
    pub(crate) fn post_rma(
        self: &Arc<Self>,
        mut call: RmaCall,
        parts: KVec<RmaPart>,
        cq_data: Option<u64>,
    ) -> Result {
        let progress = {
            let mut g = self.inner.lock();
            if g.phase != Phase::Connected {
                return Err(fi_error(abi::FI_ENOTCONN));
            }
            if TX_DEPTH - g.tx.len() < parts.len() {
                return Err(fi_error(abi::FI_EAGAIN));
            }
            let levels = FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE;
            let unanswered = call.write && call.flags & levels == FI_INJECT_COMPLETE;
            if !unanswered {
                g.rma.reserve(parts.len(), GFP_KERNEL)?;
                g.calls.reserve(1, GFP_KERNEL)?;
            }
            call.id = g.next_id;
            call.parts_left = parts.len();
            g.next_id += 1;
            let count = parts.len();
            for (i, part) in parts.into_iter().enumerate() {
                let id = g.next_id;
                g.next_id += 1;
                let op = if call.write { Op::Write } else { Op::ReadReq };
                let mut h = Header::new(op);
                h.key = part.key;
                h.addr = part.addr;
                h.rma_len = part.len as u64;
                h.id = id;
                let last = i + 1 == count;
                if let (Some(data), true) = (cq_data, last) {
                    h.flags = wire::FLAG_CQ_DATA;
                    h.data = data;
                }
                if unanswered {
                    h.flags |= wire::FLAG_NO_ANSWER;
                    let done = last.then(|| Done::write(&call));
                    // Room in the queue was checked above.
                    g.queue(h, part.payload, done)?;
                    continue;
                }
                // Room in the queue and the vectors was checked above.
                g.queue(h, part.payload, None)?;
                g.rma.push(
                    PendingRma {
                        id,
                        call: call.id,
                        offset: part.offset,
                        len: part.len,
                    },
                    GFP_KERNEL,
                )?;
            }
            let more = call.flags & FI_MORE != 0;
            if !unanswered {
                g.calls.push(call, GFP_KERNEL)?;
            }
            g.push(more)
        };
        if progress {
            self.kick();
        }
        Ok(())
    }

    /// fi_cancel on a connection: its oldest posted receive with `context`
    /// is taken back (reported FI_ECANCELED); -FI_EBUSY while a message is
    /// being read into it.
    pub(crate) fn cancel_recv(&self, context: Context) -> Result {
        let g = &mut *self.inner.lock();
        if g.tagged.cancel(context, g.ep.as_ref()) {
            return Ok(());
        }
        let filling = g.rx.direct.as_ref().map(|d| d.recv.context) == Some(context);
        cancel_posted(&mut g.posted, context, g.ep.as_ref(), filling)
    }

    /// Posts a receive; a held message completes it at once.
    pub(crate) fn post_recv(self: &Arc<Self>, recv: PostedRecv) -> Result {
        if recv.tag.is_some() {
            return self.post_trecv(recv, 0);
        }
        let held_back = {
            let mut g = self.inner.lock();
            if let Some(held) = g.unexpected.pop() {
                match held {
                    Unexpected::Message { data, cq_data } => {
                        g.unexpected_bytes -= data.len();
                        g.deliver(recv, &data, cq_data, 0);
                    }
                    Unexpected::WriteData { len, data } => g.report_write_data(recv, len, data),
                }
            } else {
                g.posted.push(recv).map_err(|_| fi_error(abi::FI_EAGAIN))?;
            }
            g.rx.held_back()
        };
        // Reading stopped for want of a receive: it goes on, in the
        // poster's thread, which reads the waiting message straight into
        // this receive (a work item would cost a hop per message where a
        // stream's receiver is behind). Otherwise the socket's next bytes
        // wake the work item, as ever.
        if held_back {
            self.progress();
        }
        Ok(())
    }

    /// A tagged receive with fi_trecvmsg's `flags`: a held message it takes
    /// completes it at once (see `HeldTagged::trecv`), else it is posted.
    pub(crate) fn post_trecv(self: &Arc<Self>, recv: PostedRecv, flags: u64) -> Result {
        let held_back = {
            let g = &mut *self.inner.lock();
            match g.held_tagged.trecv(recv, flags, g.ep.as_ref())? {
                Trecv::Answered => return Ok(()),
                Trecv::Take { recv, tag, msg } => {
                    g.unexpected_bytes -= msg.data.len();
                    g.deliver(recv, &msg.data, msg.cq_data, tag);
                }
                Trecv::Discard { recv, tag, msg } => {
                    g.unexpected_bytes -= msg.data.len();
                    if let (Some(recv), Some(ep)) = (recv, &g.ep) {
                        let _ = ep.recv_done(&recv, 0, None, tag);
                    }
                }
                Trecv::Post(recv) => g.tagged.push(recv)?,
            }
            g.rx.held_back()
        };
        // Reading stopped for want of a receive or of room to hold (a
        // message taken frees some): it goes on, in the poster's thread.
        if held_back {
            self.progress();
        }
        Ok(())
    }

    /// Makes what progress the socket allows (in the work item, or in a
    /// consumer's thread the socket's callbacks woke).
    pub(crate) fn progress(self: &Arc<Self>) {
        let _noio = NoIo::enter();
        let mut g = self.inner.lock();
        loop {
            if let Err(e) = g.step_connect() {
                g.fail(e);
                break;
            }
            let sent = g.flush(false);
            let received = match g.receive() {
                Ok(n) => n,
                Err(e) => {
                    g.fail(e);
                    false
                }
            };
            if g.phase == Phase::Rejecting && g.tx.len() == 0 {
                g.sock = None;
                g.phase = Phase::Closed;
            }
            if !sent && !received {
                break;
            }
        }
        // A connection request goes out, or a connection that closed
        // before its request leaves its listener, with no lock of ours held.
        let request = g.take_connreq();
        let gone = if g.phase == Phase::Closed {
            g.listener.take()
        } else {
            None
        };
        drop(g);
        if let Some((listener, info, data)) = request {
            listener.hand_over(self, info, &data);
        }
        if let Some(listener) = gone {
            listener.forget(self);
        }
    }
}

/// Reads the `len` bytes TCP said it holds, `recv(at, n)` reading up to `n`
/// of them from byte `at` on; a socket that then has none is broken.
fn read_held(len: usize, mut recv: impl FnMut(usize, usize) -> Result<Received>) -> Result {
    let mut got = 0;
    while got < len {
        match recv(got, len - got)? {
            Received::Bytes(n) => got += n,
            Received::WouldBlock | Received::Eof => return Err(fi_error(abi::FI_ECONNRESET)),
        }
    }
    Ok(())
}

/// The connection's socket `sock`, read through `prefetch` (fields of one
/// [`Inner`], borrowed apart from the rest).
fn reader<'a>(sock: &'a Option<Socket>, prefetch: &'a mut Prefetch) -> Result<Reader<'a>> {
    let sock = sock.as_ref().ok_or_else(|| fi_error(abi::FI_ENOTCONN))?;
    Ok(Reader::new(sock, prefetch))
}

fn pop_rma(v: &mut KVec<PendingRma>, id: u64) -> Option<PendingRma> {
    let i = v.iter().position(|p| p.id == id)?;
    Some(v.swap_remove(i))
}

/// A connection error's FI_E* from a kernel error.
fn errnum(e: Error) -> u32 {
    e.to_errno().unsigned_abs()
}

/// The status a WriteAck or ReadResp carries for `r`.
fn status_of(r: Result) -> u32 {
    match r {
        Ok(()) => 0,
        Err(e) => errnum(e),
    }
}

impl Inner {
    /// Queues a frame: `header` (its length set) and `payload`.
    fn queue(&mut self, mut header: Header, payload: TxPayload, done: Option<Done>) -> Result {
        header.len = payload.len() as u64;
        self.tx
            .push(TxFrame {
                header: header.encode(),
                payload,
                reply: false,
                done,
            })
            .map_err(|_| fi_error(abi::FI_EAGAIN))
    }

    /// Client: once TCP is up, CONNECT goes out.
    fn step_connect(&mut self) -> Result {
        if self.phase != Phase::Connecting {
            return Ok(());
        }
        let up = self
            .sock
            .as_ref()
            .ok_or_else(|| fi_error(abi::FI_ENOTCONN))?
            .established()?;
        if up {
            let data = core::mem::replace(&mut self.connect_data, TxPayload::None);
            self.queue(Header::new(Op::Connect), data, None)?;
            self.phase = Phase::AwaitAccept;
        }
        Ok(())
    }

    /// A consumer's send (`more`: FI_MORE, another follows at once):
    /// flushes, then whether the work item has something left to do: frames
    /// TCP did not take yet, or reading held back for their room. (What TCP
    /// took needs nothing more: its completions went out in `flush`, and the
    /// socket's callbacks kick the work for the rest.)
    fn push(&mut self, more: bool) -> bool {
        self.flush(more);
        self.tx.len() != 0 || self.rx_waits_for_tx
    }

    /// Sends queued frames until the socket is full; whether any byte went.
    /// With `more_follows` (FI_MORE) TCP holds the last frame's bytes too
    /// (MSG_MORE) for the next call's frame to join them in one segment; it
    /// sends them at that call, at an acknowledgement, or at its probe timer
    /// if the consumer breaks FI_MORE's promise.
    fn flush(&mut self, more_follows: bool) -> bool {
        let mut moved = false;
        loop {
            let Some(sock) = self.sock.as_ref() else {
                return moved;
            };
            let Some(front) = self.tx.front() else {
                return moved;
            };
            let payload_len = front.payload.len();
            let total = HEADER_LEN + payload_len;
            let more = self.tx.len() > 1 || more_follows;
            // What is left of the header and of the payload behind it, in
            // one socket call.
            let header = front.header.get(self.tx_sent..).unwrap_or(&[]);
            let skip = self.tx_sent.saturating_sub(HEADER_LEN);
            let result = front
                .payload
                .with_iter_at(skip, |payload| sock.send_frame(header, payload, more));
            let sent = match result {
                Ok(n) => n,
                Err(e) => {
                    self.fail(e);
                    return moved;
                }
            };
            if sent == 0 {
                return moved;
            }
            moved = true;
            self.tx_sent += sent;
            if self.tx_sent < total {
                continue;
            }
            self.tx_sent = 0;
            if let Some(frame) = self.tx.pop() {
                if frame.reply {
                    self.reply_bytes -= payload_len;
                }
                if let (Some(done), Some(ep)) = (frame.done, &self.ep) {
                    let _ = ep.complete(done.flags, done.context, done.len, 0);
                }
                // TCP has the bytes: the copy's buffer serves the next.
                if let TxPayload::Copied(buf) = frame.payload {
                    self.kept.keep(buf);
                }
            }
        }
    }

    /// Reads frames while there is room to act on them; whether any byte came.
    fn receive(&mut self) -> Result<bool> {
        let mut moved = false;
        loop {
            if matches!(
                self.phase,
                Phase::Closed | Phase::Connecting | Phase::Rejecting
            ) || self.sock.is_none()
            {
                return Ok(moved);
            }
            // Answers to a peer's reads need room in the transmit queue, and
            // a message with no receive needs room in the hold: otherwise
            // stop reading, and TCP holds the peer back.
            self.rx_waits_for_tx = self.tx.len() + 1 >= TX_DEPTH || self.reply_bytes >= REPLY_MAX;
            if self.rx_waits_for_tx {
                return Ok(moved);
            }
            if self.rx.parsed.is_none() {
                let got = self.rx.header_got;
                let n = match self.read_into_header(got)? {
                    Some(n) => n,
                    None => return Ok(moved),
                };
                moved = true;
                self.rx.header_got += n;
                if self.rx.header_got < HEADER_LEN {
                    continue;
                }
                // Before the handshake is done a peer can only send its
                // private data: nothing larger is allocated for it.
                let max_msg = if self.phase == Phase::Connected {
                    MAX_MSG as u64
                } else {
                    HANDSHAKE_FRAME_MAX
                };
                let limits = wire::Limits { max_msg };
                let h = Header::parse(&self.rx.header, &limits)
                    .map_err(|_| fi_error(abi::FI_EPROTO))?;
                if let Some(recv) = self.waiting_recv(&h) {
                    self.rx.parsed = Some(h);
                    self.rx.direct = Some(Direct::new(recv));
                    moved |= self.receive_direct()?;
                    continue;
                }
                if self.waits_for_hold(&h) {
                    // Keep the header, read the payload later.
                    self.rx.parsed = Some(h);
                    self.rx.payload = KVVec::new();
                    return Ok(moved);
                }
                if self.write_in_place(&h)? || self.read_answer_in_place(&h)? {
                    self.rx = Incoming::new();
                    continue;
                }
                self.start_payload(h)?;
            }
            if self.rx.direct.is_some() {
                if !self.receive_direct()? {
                    return Ok(moved);
                }
                moved = true;
                continue;
            }
            let h = self.rx.parsed.ok_or(EINVAL)?;
            if !self.rx.started {
                // A held-back frame: a receive for it now, or room to hold it?
                if let Some(recv) = self.waiting_recv(&h) {
                    self.rx.direct = Some(Direct::new(recv));
                    continue;
                }
                if self.waits_for_hold(&h) {
                    return Ok(moved);
                }
                self.start_payload(h)?;
            }
            let len = h.len as usize;
            while self.rx.payload.len() < len {
                let got = self.rx.payload.len();
                let mut reader = reader(&self.sock, &mut self.prefetch)?;
                match reader.recv_append(&mut self.rx.payload, len - got)? {
                    Received::Bytes(_) => moved = true,
                    Received::WouldBlock => return Ok(moved),
                    Received::Eof => return Err(fi_error(abi::FI_ECONNRESET)),
                }
            }
            let payload = core::mem::replace(&mut self.rx.payload, KVVec::new());
            self.rx = Incoming::new();
            self.dispatch(h, payload)?;
        }
    }

    /// Receives the direct message in progress as far as the socket allows,
    /// and completes its receive when it is whole; whether any byte came.
    fn receive_direct(&mut self) -> Result<bool> {
        let (Some(h), Some(d)) = (self.rx.parsed, self.rx.direct.as_mut()) else {
            return Ok(false);
        };
        let len = h.len as usize;
        let cap = d.recv.capacity();
        let mut reader = reader(&self.sock, &mut self.prefetch)?;
        let mut moved = false;
        while d.got < len {
            let got = if d.got < cap {
                reader.recv_into(&d.recv, d.got, len.min(cap) - d.got)?
            } else {
                // What does not fit is read and dropped (FI_ETRUNC below).
                let mut scratch = [0u8; 256];
                let n = (len - d.got).min(scratch.len());
                reader.recv(&mut scratch[..n])?
            };
            match got {
                Received::Bytes(n) => {
                    d.got += n;
                    moved = true;
                }
                Received::WouldBlock => return Ok(moved),
                Received::Eof => return Err(fi_error(abi::FI_ECONNRESET)),
            }
        }
        let Some(d) = self.rx.direct.take() else {
            return Ok(moved);
        };
        self.rx = Incoming::new();
        if let Some(ep) = &self.ep {
            let tag = h.tag().unwrap_or(0);
            if len > cap {
                let _ = ep.recv_failed(&d.recv, abi::FI_ETRUNC, cap, len - cap, tag);
            } else {
                let cq_data = (h.flags & wire::FLAG_CQ_DATA != 0).then_some(h.data);
                let _ = ep.recv_done(&d.recv, len, cq_data, tag);
            }
        }
        Ok(true)
    }

    /// The posted receive message `h` goes straight into, if one waits. (A
    /// posted receive means no message it would take is held: posting one
    /// takes the oldest such message first.)
    fn waiting_recv(&mut self, h: &Header) -> Option<PostedRecv> {
        if h.op != Some(Op::Send) || self.phase != Phase::Connected || self.ep.is_none() {
            return None;
        }
        match h.tag() {
            Some(tag) => self.tagged.take_for(tag),
            None => self.posted.pop(),
        }
    }

    /// Whether frame `h` takes a receive, none is posted, and it is not to
    /// be held: an untagged message over `HELD_MSG_MAX`, or one that would
    /// overfill the hold (bytes or slots). Then reading stops until a
    /// receive is posted, and TCP holds the sender back. A message takes a
    /// receive, and in FI_RX_CQ_DATA mode a write carrying CQ data (held
    /// without its bytes, which go to the region).
    fn waits_for_hold(&self, h: &Header) -> bool {
        if let (Some(Op::Send), Some(tag)) = (h.op, h.tag()) {
            return !self.tagged.wants(tag)
                && (self.unexpected_bytes + h.len as usize > UNEXPECTED_MAX
                    || self.held_tagged.len() == RX_DEPTH);
        }
        let held_bytes = match h.op {
            Some(Op::Send) => h.len as usize,
            Some(Op::Write) if self.rx_cq_data && h.flags & wire::FLAG_CQ_DATA != 0 => 0,
            _ => return false,
        };
        self.posted.len() == 0
            && (held_bytes > HELD_MSG_MAX
                || self.unexpected_bytes + held_bytes > UNEXPECTED_MAX
                || self.unexpected.len() == RX_DEPTH)
    }

    /// Reads header bytes from `at`; None when nothing is there.
    fn read_into_header(&mut self, at: usize) -> Result<Option<usize>> {
        let mut reader = reader(&self.sock, &mut self.prefetch)?;
        // Most frames end where the socket's bytes do: a look at its queue
        // is cheaper than the receive call that would find it empty.
        if !reader.has_input() {
            return Ok(None);
        }
        match reader.recv(&mut self.rx.header[at..])? {
            Received::Bytes(n) => Ok(Some(n)),
            Received::WouldBlock => Ok(None),
            Received::Eof => Err(fi_error(abi::FI_ECONNRESET)),
        }
    }

    fn start_payload(&mut self, h: Header) -> Result {
        self.rx.parsed = Some(h);
        self.rx.payload = KVVec::with_capacity(h.len as usize, GFP_KERNEL)?;
        self.rx.started = true;
        Ok(())
    }

    /// Acts on a whole frame.
    fn dispatch(&mut self, h: Header, payload: KVVec<u8>) -> Result {
        let op = h.op.ok_or(EINVAL)?;
        let proto = || fi_error(abi::FI_EPROTO);
        match (self.phase, op) {
            (Phase::AwaitConnect, Op::Connect) => {
                self.phase = Phase::AwaitDecision;
                self.connreq_data = Some(payload);
            }
            (Phase::AwaitAccept, Op::Accept) => {
                self.phase = Phase::Connected;
                if let Some(ep) = &self.ep {
                    let _ = ep.event(abi::FI_CONNECTED, &payload);
                }
            }
            (Phase::AwaitAccept, Op::Reject) => {
                if let Some(ep) = &self.ep {
                    let refused = abi::FI_ECONNREFUSED;
                    let _ = ep.event_error(refused, -(abi::ECONNREFUSED as i32), &payload);
                }
                self.ended = true;
                self.close_quietly();
            }
            (Phase::Connected, Op::Send) => {
                let cq_data = (h.flags & wire::FLAG_CQ_DATA != 0).then_some(h.data);
                if let Some(tag) = h.tag() {
                    match self.tagged.take_for(tag) {
                        Some(recv) => self.deliver(recv, &payload, cq_data, tag),
                        None => {
                            self.unexpected_bytes += payload.len();
                            let held = HeldBytes {
                                data: payload,
                                cq_data,
                            };
                            // Cannot allocate: `waits_for_hold` kept room.
                            self.held_tagged.push(tag, held)?;
                        }
                    }
                    return Ok(());
                }
                match self.posted.pop() {
                    Some(recv) => self.deliver(recv, &payload, cq_data, 0),
                    None => {
                        self.unexpected_bytes += payload.len();
                        let held = Unexpected::Message {
                            data: payload,
                            cq_data,
                        };
                        // Cannot fail: `waits_for_hold` kept a slot free.
                        if self.unexpected.push(held).is_err() {
                            return Err(proto());
                        }
                    }
                }
            }
            (Phase::Connected, Op::Write) => {
                let written = self.rma_write(&h, &payload);
                self.written(&h, written)?;
            }
            (Phase::Connected, Op::ReadReq) => {
                let (status, data) = self.rma_read(&h);
                let len = data.len();
                if let (0, Some(ep)) = (status, &self.ep) {
                    // Counted on a counter (FI_RMA_EVENT); never a CQ entry.
                    let _ = ep.complete(FI_REMOTE_READ | FI_RMA, Context::NONE, len, 0);
                }
                let resp = Header {
                    status,
                    id: h.id,
                    ..Header::new(Op::ReadResp)
                };
                self.queue(resp, data, None)?;
                self.reply_bytes += len;
                if let Some(frame) = self.tx.back_mut() {
                    frame.reply = true;
                }
                // The answer carries the region as the read finds it,
                // before a write behind it in the stream changes it.
                self.flush(false);
                self.let_go_of_region();
            }
            (Phase::Connected, Op::WriteAck | Op::ReadResp) => {
                // An answer to nothing pending (a failed unanswered write's
                // among them) ends the connection.
                let pending = pop_rma(&mut self.rma, h.id).ok_or_else(proto)?;
                self.finish_rma(pending, op == Op::WriteAck, h.status, Some(&payload))?;
            }
            (Phase::Connected, Op::Shutdown) => {
                self.end(abi::FI_ECONNRESET, true);
            }
            _ => return Err(proto()),
        }
        Ok(())
    }

    /// A peer's Write is in its region (or refused): the target's report
    /// first (a CQ entry for remote CQ data, a count for a counter:
    /// FI_RMA_EVENT), then the answer. An unanswered write is answered only
    /// when it failed: its writer has no call waiting for it and ends the
    /// connection.
    fn written(&mut self, h: &Header, written: Result) -> Result {
        if written.is_ok() {
            let cq_data = (h.flags & wire::FLAG_CQ_DATA != 0).then_some(h.data);
            self.report_write(h.len as usize, cq_data)?;
        }
        if written.is_err() || h.flags & wire::FLAG_NO_ANSWER == 0 {
            let ack = Header {
                status: status_of(written),
                id: h.id,
                ..Header::new(Op::WriteAck)
            };
            self.queue(ack, TxPayload::None, None)?;
        }
        Ok(())
    }

    /// Reads a Write whose payload TCP already holds whole straight into
    /// its region, with no frame buffer nor copy, and acts on it; whether it
    /// did. The region is held for that read alone: a Write whose bytes are
    /// not all there yet, or that the key table refuses, takes the buffered
    /// path, so a peer that stalls in the middle of a frame never holds a
    /// region its consumer wants to close.
    fn write_in_place(&mut self, h: &Header) -> Result<bool> {
        let len = h.len as usize;
        if h.op != Some(Op::Write) || self.phase != Phase::Connected || len == 0 {
            return Ok(false);
        }
        let Some(domain) = self.domain.as_ref() else {
            return Ok(false);
        };
        let mut reader = reader(&self.sock, &mut self.prefetch)?;
        if reader.input_len() < len {
            return Ok(false);
        }
        let Ok(held) = domain.mr_get(h.key, h.addr, len, FI_REMOTE_WRITE) else {
            return Ok(false);
        };
        read_held(len, |at, n| reader.recv_into_region(&held, at, n))?;
        drop(held);
        self.written(h, Ok(()))?;
        Ok(true)
    }

    /// Reads the answer to a part of one of our reads straight into the
    /// read's local buffers (the consumer's, lent until it completes) when
    /// TCP holds it whole, and acts on it; whether it did. Anything else (a
    /// failure, an answer to nothing pending or of the wrong length) takes
    /// the buffered path, which refuses what it must.
    fn read_answer_in_place(&mut self, h: &Header) -> Result<bool> {
        let len = h.len as usize;
        if h.op != Some(Op::ReadResp) || self.phase != Phase::Connected || h.status != 0 {
            return Ok(false);
        }
        let mut reader = reader(&self.sock, &mut self.prefetch)?;
        let Some(i) = self.rma.iter().position(|p| p.id == h.id) else {
            return Ok(false);
        };
        let pending = &self.rma[i];
        let call = self.calls.iter().find(|c| c.id == pending.call);
        let Some(local) = call.and_then(|c| c.local.as_ref()) else {
            return Ok(false);
        };
        if len == 0 || pending.len != len || reader.input_len() < len {
            return Ok(false);
        }
        let offset = pending.offset;
        read_held(len, |at, n| reader.recv_into(local, offset + at, n))?;
        let pending = self.rma.swap_remove(i);
        self.finish_rma(pending, false, 0, None)?;
        Ok(true)
    }

    /// Writes an incoming RMA into the region.
    fn rma_write(&self, h: &Header, payload: &[u8]) -> Result {
        let domain = self
            .domain
            .as_ref()
            .ok_or_else(|| fi_error(abi::FI_ENOTCONN))?;
        let held = domain.mr_get(h.key, h.addr, payload.len(), FI_REMOTE_WRITE)?;
        held.write(0, payload)
    }

    /// The bytes a peer asks to read: the status, and the region's window
    /// held for TCP to copy from in place (no copy of kofi's, nor a buffer
    /// for one, when the socket takes the answer at once).
    fn rma_read(&self, h: &Header) -> (u32, TxPayload) {
        let Some(domain) = &self.domain else {
            return (abi::ENOTCONN, TxPayload::None);
        };
        match domain.mr_get(h.key, h.addr, h.rma_len as usize, FI_REMOTE_READ) {
            Ok(held) if held.len() == 0 => (0, TxPayload::None),
            Ok(held) => (0, TxPayload::Region(held)),
            Err(e) => (errnum(e), TxPayload::None),
        }
    }

    /// An answer TCP did not take whole lets go of the region it reads
    /// from, for a copy of its window (TCP took the bytes already sent from
    /// the region itself): a write that follows in the stream must not
    /// change what it carries, and a peer that stops reading must not hold
    /// a region its consumer wants to close. Without memory for the copy
    /// the connection ends (part of the answer may be on its way).
    fn let_go_of_region(&mut self) {
        let Some(frame) = self.tx.back_mut() else {
            return;
        };
        let TxPayload::Region(held) = &frame.payload else {
            return;
        };
        match held.copy_out() {
            Ok(copy) => frame.payload = TxPayload::Copied(copy),
            Err(e) => self.fail(e),
        }
    }

    /// A part of an RMA call was answered (`write`: by WriteAck); a read's
    /// bytes in `payload`, or already in its local buffers (None).
    fn finish_rma(
        &mut self,
        pending: PendingRma,
        write: bool,
        status: u32,
        payload: Option<&[u8]>,
    ) -> Result {
        let i = self
            .calls
            .iter()
            .position(|c| c.id == pending.call)
            .ok_or_else(|| fi_error(abi::FI_EPROTO))?;
        let call = &mut self.calls[i];
        if call.write != write {
            return Err(fi_error(abi::FI_EPROTO));
        }
        if status != 0 {
            if call.status == 0 {
                call.status = status;
            }
        } else if let (Some(local), Some(payload)) = (&call.local, payload) {
            if payload.len() != pending.len {
                return Err(fi_error(abi::FI_EPROTO));
            }
            local.fill_at(pending.offset, payload);
        }
        call.parts_left -= 1;
        if call.parts_left != 0 {
            return Ok(());
        }
        let call = self.calls.swap_remove(i);
        if let Some(ep) = &self.ep {
            let kind = FI_RMA | if call.write { FI_WRITE } else { FI_READ };
            if call.status != 0 {
                let err = call.status;
                let _ = ep.complete_error(kind, call.context, err, 0, 0, -(err as i32));
            } else {
                let flags = kind | (call.flags & FI_COMPLETION);
                let _ = ep.complete(flags, call.context, call.len, 0);
            }
        }
        Ok(())
    }

    /// Completes a receive with a message (tagged `tag`, if tagged).
    fn deliver(&self, recv: PostedRecv, data: &[u8], cq_data: Option<u64>, tag: u64) {
        let Some(ep) = &self.ep else {
            return;
        };
        let copied = recv.fill(data);
        if copied < data.len() {
            let _ = ep.recv_failed(&recv, abi::FI_ETRUNC, copied, data.len() - copied, tag);
            return;
        }
        let _ = ep.recv_done(&recv, data.len(), cq_data, tag);
    }

    /// Reports a peer's write of `len` bytes, done: with remote CQ data,
    /// in FI_RX_CQ_DATA mode through the next receive (held until one is
    /// posted), otherwise on its own.
    fn report_write(&mut self, len: usize, cq_data: Option<u64>) -> Result {
        match cq_data {
            Some(data) if self.rx_cq_data => match self.posted.pop() {
                Some(recv) => self.report_write_data(recv, len, data),
                // Cannot fail: `waits_for_hold` kept a slot free.
                None => self
                    .unexpected
                    .push(Unexpected::WriteData { len, data })
                    .map_err(|_| fi_error(abi::FI_EPROTO))?,
            },
            _ => {
                if let Some(ep) = &self.ep {
                    let flags = FI_REMOTE_WRITE | FI_RMA | cq_data.map_or(0, |_| FI_REMOTE_CQ_DATA);
                    let _ = ep.complete(flags, Context::NONE, len, cq_data.unwrap_or(0));
                }
            }
        }
        Ok(())
    }

    /// FI_RX_CQ_DATA mode: a remote write of `len` bytes with CQ data
    /// `data` took `recv`, which reports it.
    fn report_write_data(&self, recv: PostedRecv, len: usize, data: u64) {
        if let Some(ep) = &self.ep {
            let flags = FI_REMOTE_WRITE | FI_RMA | FI_REMOTE_CQ_DATA;
            let _ = ep.complete(
                flags | (recv.flags & FI_COMPLETION),
                recv.context,
                len,
                data,
            );
        }
    }

    /// The connection failed (`e`): report and close.
    fn fail(&mut self, e: Error) {
        let err = errnum(e);
        // A connection that never came up: its endpoint (a server's, once
        // fi_endpoint took the request) hears why, once.
        let err = match self.phase {
            Phase::Connecting | Phase::AwaitAccept if err == abi::ECONNRESET => abi::ECONNREFUSED,
            Phase::Connecting | Phase::AwaitAccept => err,
            Phase::AwaitDecision => {
                self.peer_left_unanswered = true;
                abi::FI_ECONNRESET
            }
            Phase::Connected => return self.end(abi::FI_ECONNRESET, true),
            _ => return self.close_quietly(),
        };
        if let (false, Some(ep)) = (self.ended, &self.ep) {
            let _ = ep.event_error(err, -(err as i32), &[]);
        }
        self.ended = true;
        self.close_quietly();
    }

    /// Why a request cannot be answered now: its client left, or it was
    /// answered before.
    fn unanswerable(&self) -> Error {
        match self.peer_left_unanswered {
            true => fi_error(abi::FI_ECONNRESET),
            false => fi_error(abi::FI_EOPBADSTATE),
        }
    }

    /// The connection is over: fail what is pending, FI_SHUTDOWN once.
    fn end(&mut self, err: u32, report: bool) {
        self.release_receives();
        if let Some(ep) = &self.ep {
            while let Some(frame) = self.tx.pop() {
                if let Some(done) = frame.done {
                    let kind = done.flags & !FI_COMPLETION;
                    let _ = ep.complete_error(kind, done.context, err, 0, 0, 0);
                }
            }
            while let Some(call) = self.calls.pop() {
                let kind = FI_RMA | if call.write { FI_WRITE } else { FI_READ };
                let _ = ep.complete_error(kind, call.context, err, 0, 0, 0);
            }
            self.rma = KVec::new();
            if report && !self.ended {
                let _ = ep.event(abi::FI_SHUTDOWN, &[]);
            }
        }
        self.ended = true;
        self.close_quietly();
    }

    /// No receive can be filled any more: each completes FI_ECANCELED (the
    /// one a message was being read into too), so no consumer waits on one
    /// for ever.
    fn release_receives(&mut self) {
        let Some(ep) = &self.ep else {
            return;
        };
        if let Some(d) = self.rx.direct.take() {
            report_cancelled(ep, &d.recv);
        }
        while let Some(r) = self.posted.pop() {
            report_cancelled(ep, &r);
        }
        self.tagged.cancel_all(ep);
    }

    fn close_quietly(&mut self) {
        self.phase = Phase::Closed;
        self.sock = None;
        self.tx_sent = 0;
    }

    /// A connection request ready to go to the passive endpoint, with the
    /// listener that hands it over (and no longer owns the connection).
    fn take_connreq(&mut self) -> Option<(Arc<Listener>, Info, KVVec<u8>)> {
        let data = self.connreq_data.take()?;
        let info = (|| -> Result<Info> {
            let sock = self
                .sock
                .as_ref()
                .ok_or_else(|| fi_error(abi::FI_ENOTCONN))?;
            let (local, peer) = (sock.name(false)?, sock.name(true)?);
            crate::msg_info(Some(&local), Some(&peer), local.is_ipv6())
        })();
        match info {
            Ok(info) => Some((self.listener.take()?, info, data)),
            Err(_) => {
                self.close_quietly();
                None
            }
        }
    }
}

/// An RMA call for `post_rma`: `len` bytes in all, `local` the buffers a
/// read fills.
pub(crate) fn rma_call(
    write: bool,
    context: Context,
    flags: u64,
    len: usize,
    local: Option<PostedRecv>,
) -> RmaCall {
    RmaCall {
        id: 0,
        write,
        context,
        flags,
        len,
        local,
        status: 0,
        parts_left: 0,
    }
}

ip_conn_by_inherent_methods!(Conn, progress: progress);
