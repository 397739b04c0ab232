// SPDX-License-Identifier: GPL-2.0

//! A kofi_verbs connection: an rdma_cm id with an RC QP and its CQ. This
//! file holds its state and lifecycle; `conn/tx.rs` the send path,
//! `conn/rx.rs` the receive path, `conn/cm.rs` connection management.
//!
//! Messages go as SENDs into the peer's provider buffers with the protocol
//! of `wire.rs` (credits, segments), sent from the consumer's buffers
//! (DMA-mapped) and copied on receipt into the posted receive, so a message
//! may arrive before its receive and a short receive truncates; a large one
//! goes by rendezvous (the receiver reads it straight into the posted
//! receive). RMA goes straight between the consumer's buffers and the
//! peer's registered region (RDMA READ and WRITE); remote CQ data of a
//! write follows it as a SEND.
//!
//! All state is under one mutex, taken by the endpoint's calls, the CM
//! callback and the CQ callback (all process context). Work requests are
//! signaled and complete in order on the send queue; each names a slot.
//! The rdma_cm id is owned apart, under `Conn::id`: calls that take
//! rdma_cm's handler lock (accept, destroy) are made holding that one but
//! not the state mutex, which the CM callback takes under its handler lock.

use crate::abi;
use crate::compat::VecExt;
use crate::device::{DeviceEntry, RegState, VDomain};
use crate::flags::*;
use crate::kofi::census::Counted;
use crate::kofi::ip_endpoint::ip_conn_by_inherent_methods;
use crate::kofi::{
    cancel_posted, fi_error, report_cancelled, send_kind, Context, EpRef, Lent, PepRef, PostedRecv,
    ProgressWaker,
};
use crate::rdma::{
    inline_sge, CmEvent, CmHandler, CmId, CmIdSlot, CmReply, Cq, CqOwner, Device, IdHandle,
    Mapping, Qp, ReadDepths, Region, WcStatus, WorkCompletion, WrOp,
};
use crate::ring::Ring;
use crate::sockaddr::SockAddr;
use crate::tagged::{HeldMessage, HeldTagged, TaggedRecvs, Trecv};
use crate::timer::{Timer, TimerOwner};
use crate::wire::{self, CmData, Header, KeyTable, RtsBody, HEADER_LEN};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::alloc::KVVec;
use kernel::prelude::*;
use kernel::sync::{
    new_condvar, new_mutex, new_spinlock, Arc, ArcBorrow, CondVar, Mutex, SpinLock,
};
use kernel::time::msecs_to_jiffies;
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

mod cm;
mod rx;
mod tx;

pub(crate) use cm::{Listener, Request};

/// Provider receive buffers per connection (the peer's initial credits).
pub(crate) const RX_DEPTH: usize = 32;
/// Payload bytes of a receive buffer; its header lands in a buffer of its
/// own (a first SGE), so a 64 KiB message, or an RDM segment, is one SEND.
pub(crate) const RX_DATA: usize = 64 << 10;
/// The payload's two pieces, an SGE each: 32 KiB is an order-3
/// allocation, the largest the page allocator does not treat as costly (it
/// retries, and compacts, rather than fail a connection's setup, or a
/// storage consumer's reconnect, when memory is fragmented).
const RX_CHUNK: usize = RX_DATA / 2;
/// Payload bytes per SEND.
const SEGMENT: usize = RX_DATA;
/// Send work requests in flight.
pub(crate) const SQ_DEPTH: usize = 64;
/// How long (ms) a closing connection lets its last sends go (see
/// `Conn::let_last_sends_go`).
const LAST_SENDS_MS: u32 = 50;
/// Bytes a SEND may carry inline, asked of the device (which may take fewer).
const INLINE_ASK: u32 = 256;
/// An iWARP client's unanswered greeting goes again after this, then after
/// twice as long, ... (see `nudge`), at most `NUDGES_MAX` times.
const NUDGE_MS: u32 = 100;
const NUDGES_MAX: u32 = 5;
/// Messages longer than this go by rendezvous (when their buffers fit one
/// region): the receiver RDMA-READs them into the posted receive.
const RNDV_MIN: usize = 64 << 10;
/// Rendezvous reads a connection has in flight at once, each into its own
/// receive (the receives are reported in order all the same): streaming
/// large messages is not held to one round trip per message.
const RNDV_READS: usize = 8;
/// Operations queued on an endpoint (posted or waiting for credits).
pub(crate) const TX_DEPTH: usize = 256;
/// Consumer receives posted on an endpoint.
pub(crate) const RECV_DEPTH: usize = 256;
/// The largest message or RMA.
pub(crate) const MAX_MSG: usize = 16 << 20;
/// Bytes of tagged messages copied out of the provider buffers for
/// receives not yet posted; beyond it they stay in the buffers, in order,
/// and the peer runs out of credits.
const UNEXPECTED_MAX: usize = 8 << 20;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Client: resolving the address, then the route.
    Resolving,
    /// Client: connect sent.
    Connecting,
    /// Server: request reported, waiting for fi_accept or fi_reject.
    Requested,
    /// Server: accept sent.
    Accepting,
    Connected,
    /// fi_shutdown: what is queued and posted goes out, then disconnect.
    Closing,
    Closed,
}

/// A consumer operation waiting for (or in) the send queue.
enum TxOp {
    Msg {
        lent: Option<Lent>,
        /// An inject's frame: room for the header, then its bytes
        /// (copied), at most a [`SEGMENT`]: one SEND, which takes it.
        frame: KVec<u8>,
        len: usize,
        sent: usize,
        data: Option<u64>,
        /// A tagged message's tag.
        tag: Option<u64>,
        done: Option<(Context, u64)>,
        rndv: Rndv,
    },
    Rma {
        write: bool,
        /// The consumer's buffers, or an inject's bytes, copied.
        local: RmaLocal,
        parts: KVec<RmaPart>,
        next: usize,
        len: usize,
        data: Option<u64>,
        ctx: Context,
        flags: u64,
        sink: Sink,
    },
    Credit,
    /// A rendezvous read is done: its sender may complete.
    Fin {
        cookie: u64,
    },
    /// The receive of rendezvous message `cookie` offered to its sender
    /// for writing (iWARP): `sink`, a region over it, is registered (as a
    /// READ's), then OP_CTS names it and `len`, the bytes it takes.
    Cts {
        cookie: u64,
        len: usize,
        sink: Sink,
    },
    /// A rendezvous message (ours, `cookie`) written into the peer's
    /// receive, whose region is `key`: its first `len` bytes in one WRITE
    /// (`written` once posted), then OP_WFIN says so.
    RndvWrite {
        cookie: u64,
        key: u64,
        len: usize,
        written: bool,
    },
    /// A rendezvous message (its sender's `cookie`) read into its
    /// receive: `chunks` are (offset, length) of the local buffers, each
    /// one READ.
    Read {
        cookie: u64,
        local: Lent,
        key: u64,
        chunks: KVec<(usize, usize)>,
        next: usize,
        sink: Sink,
    },
}

/// What a send sends: the consumer's buffers, lent until it completes, or
/// an inject's `len` bytes, which `fill` appends to the frame given to it.
pub(crate) enum Payload<F> {
    Lent(Lent),
    Inject { len: usize, fill: F },
}

/// Whether a message goes by rendezvous.
enum Rndv {
    No,
    /// Large enough: try to register its buffers.
    Try,
    /// Registration posted: announce it.
    Registered(Region),
}

/// Where a READ's data lands: in the consumer's buffers, named piece by
/// piece (at most max_sge_rd of them per READ, one on iWARP), or through a
/// region over them, registered before the first READ, so that each remote
/// buffer takes one READ however many pages it lands in (as rdma_rw's MR
/// path does for nvmet-rdma).
enum Sink {
    Buffers,
    Unposted(Region),
    Posted(Arc<Region>),
}

/// A rendezvous send waiting for its OP_FIN.
struct RndvSend {
    cookie: u64,
    /// The message's bytes, for the peer to read or for us to write.
    region: Arc<Region>,
    _lent: Lent,
    len: usize,
    report: Option<Report>,
}

/// The local side of an RMA.
pub(crate) enum RmaLocal {
    Lent(Lent),
    Copy(KVec<u8>),
}

impl RmaLocal {
    fn len(&self) -> usize {
        match self {
            RmaLocal::Lent(l) => l.len(),
            RmaLocal::Copy(c) => c.len(),
        }
    }
}

/// One remote buffer of an RMA and where its bytes are in the local ones.
#[derive(Clone, Copy)]
pub(crate) struct RmaPart {
    pub(crate) key: u64,
    pub(crate) addr: u64,
    pub(crate) offset: usize,
    pub(crate) len: usize,
}

/// What a send-queue slot holds until its completion.
enum TxWr {
    /// A SEND: the mapping of the provider's bytes and the consumer's data
    /// after them (empty when they went inline), then those bytes (unmapped
    /// first); the report of its operation when it is the last work request
    /// of it.
    Send {
        _map: Mapping,
        _buf: KVec<u8>,
        report: Option<Report>,
    },
    Rma {
        _map: Mapping,
        /// An inject write's bytes of this part.
        _buf: KVec<u8>,
        report: Option<Report>,
    },
    /// The registration of a READ's sink, or of a receive the sender
    /// writes into (OP_CTS).
    SinkReg {
        _region: Arc<Region>,
    },
    /// The last registration work request of a region (its completion
    /// makes the region valid), and one of the others.
    Reg(Arc<RegState>),
    RegPiece,
    /// A READ of the peer's key table for `key` into `buf`.
    KeyTable {
        key: u64,
        map: Mapping,
        buf: KVec<u8>,
    },
    /// The registration of a rendezvous send's buffers (the region lives
    /// with the send).
    RndvReg,
    /// A READ of rendezvous message `cookie`; the last one ends its
    /// receive.
    RndvRead {
        _map: Mapping,
        cookie: u64,
        last: bool,
    },
}

struct Report {
    flags: u64,
    ctx: Context,
    len: usize,
    /// Report a failure too (see `tx::reports_errors`).
    errors: bool,
}

/// A provider receive buffer, posted while the connection lives: a SEND's
/// header lands in `header`, its payload in `data`'s pieces, in order.
struct RxBuf {
    map: Mapping,
    header: KVec<u8>,
    data: [KVec<u8>; 2],
}

impl RxBuf {
    /// A buffer mapped for `dev`, empty.
    fn new(dev: Device, lkey: u32) -> Result<Self> {
        let zeroed = |len: usize| -> Result<KVec<u8>> {
            let mut v = KVec::with_capacity(len, GFP_KERNEL)?;
            v.extend_with(len, 0, GFP_KERNEL)?;
            Ok(v)
        };
        let mut header = zeroed(HEADER_LEN)?;
        let [mut first, mut second] = [zeroed(RX_CHUNK)?, zeroed(RX_CHUNK)?];
        let map = Mapping::of_buffers(
            dev,
            &mut [&mut header, &mut first, &mut second],
            false,
            lkey,
        )?;
        Ok(RxBuf {
            map,
            header,
            data: [first, second],
        })
    }

    /// The header of a SEND of `len` bytes that landed here (None when
    /// `len` is too short for one, or the header is malformed).
    fn decode(&self, len: usize) -> Option<Header> {
        (len >= HEADER_LEN)
            .then(|| Header::decode(&self.header))
            .flatten()
    }

    /// The payload of a SEND of `len` bytes that landed here, piece by
    /// piece.
    fn payload(&self, len: usize) -> impl Iterator<Item = &[u8]> {
        let mut left = len.saturating_sub(HEADER_LEN).min(RX_DATA);
        self.data.iter().map(move |piece| {
            let n = left.min(RX_CHUNK);
            left -= n;
            &piece[..n]
        })
    }

    /// The start of the payload of a SEND of `len` bytes that landed here
    /// (an announcement's body).
    fn body(&self, len: usize) -> &[u8] {
        &self.data[0][..len.saturating_sub(HEADER_LEN).min(RX_CHUNK)]
    }
}

/// The message being received into a posted receive.
struct Assembly {
    recv: PostedRecv,
    total: usize,
    got: usize,
    data: Option<u64>,
    /// A tagged message's tag (0 for an untagged one).
    tag: u64,
}

/// A receive a rendezvous read (or the sender's writes) is filling.
struct Reading {
    /// The receive's region the sender writes into (OP_CTS), deregistered
    /// before the receive is reported (first: it goes before the receive
    /// when a connection drops its readings).
    target: Option<Arc<Region>>,
    assembly: Assembly,
    /// The sender's name for the message (its OP_FIN's).
    cookie: u64,
    /// Whether its read succeeded, once it ended.
    ended: Option<bool>,
}

impl Reading {
    /// Whether it waits for the sender's OP_WFIN (OP_CTS went).
    fn awaits_wfin(&self) -> bool {
        self.target.is_some() && self.ended.is_none()
    }
}

/// A tagged message no receive wanted when it came, out of the provider
/// buffers so that the messages behind it go on.
enum HeldMsg {
    /// A message sent by segments: its bytes, copied.
    Bytes { bytes: KVVec<u8>, data: Option<u64> },
    /// A rendezvous announcement: the message waits at its sender.
    Rts {
        total: usize,
        body: RtsBody,
        data: Option<u64>,
    },
}

impl HeldMessage for HeldMsg {
    fn len(&self) -> usize {
        match self {
            HeldMsg::Bytes { bytes, .. } => bytes.len(),
            HeldMsg::Rts { total, .. } => *total,
        }
    }

    fn data(&self) -> Option<u64> {
        match self {
            HeldMsg::Bytes { data, .. } | HeldMsg::Rts { data, .. } => *data,
        }
    }
}

/// A tagged message being copied out of the provider buffers, segment by
/// segment, to be held.
struct Copying {
    tag: u64,
    data: Option<u64>,
    bytes: KVVec<u8>,
}

/// A held announcement a tagged receive took, waiting for the message in
/// progress to end, or a read to end, before its read starts.
struct ReadyRndv {
    recv: PostedRecv,
    tag: u64,
    total: usize,
    body: RtsBody,
    data: Option<u64>,
}

/// A passive side's request while the listener's CONNECT_REQUEST callback
/// reports it. The consumer may take, reject or drop the request on another
/// CPU before that callback returns; an id must then go back to rdma_cm
/// (destroying it inside its own callback would deadlock), and only the
/// callback can do that.
#[derive(Default)]
struct Reporting {
    active: bool,
    /// The id of a request dropped while `active`.
    orphan: Option<CmId>,
}

/// What the connection uses on the device (the id's owner is `Conn::id`;
/// the id goes with the last of it and these).
struct Resources {
    id: IdHandle,
    /// The QP, once made (before `rx`: it goes before their buffers).
    qp: Option<Qp<Conn>>,
    rx: KVec<RxBuf>,
    /// The QP reached RTS (the accept or the connect went through), so a
    /// drain completes. One whose move to RTR or RTS failed may never
    /// flush (rxe leaves its responder stopped when the move to RTR fails
    /// to allocate), and holds only the provider's receive buffers, which
    /// destroying it releases.
    up: bool,
}

/// A provider buffer holding a segment, and the bytes received into it.
type Held = (usize, usize);

struct Inner {
    phase: Phase,
    ep: Option<EpRef>,
    domain: Option<Arc<VDomain>>,
    res: Option<Resources>,
    dev: Option<Device>,
    lkey: u32,
    max_sge: usize,
    /// SGEs a READ may land in.
    max_sge_rd: usize,
    /// Bytes the QP takes inline.
    max_inline: usize,
    /// Rendezvous sends waiting for their OP_FIN, and the next cookie.
    rndv_sends: KVec<RndvSend>,
    next_cookie: u64,
    /// Private data for the connect, until the route is resolved.
    connect_data: Option<CmData>,
    /// Server: the READ depths the request offered, for the accept.
    peer_reads: Option<ReadDepths>,
    credits: u32,
    /// Buffers reposted and not yet granted to the peer.
    grant: u32,
    tx_wr: KVec<Option<TxWr>>,
    /// Of each posted SEND, how many SENDs went before it on the QP.
    tx_seq: KVec<Option<u64>>,
    tx_free: KVec<usize>,
    /// SENDs posted on the QP, and the peer's SENDs it received.
    sends_posted: u64,
    sends_received: u64,
    /// How many of our SENDs the peer said it took as it closed (OP_CLOSE).
    peer_took: u64,
    queue: Ring<TxOp, KVec<Option<TxOp>>>,
    recvs: Ring<PostedRecv, KVec<Option<PostedRecv>>>,
    /// Buffers holding segments no receive was posted for, in order.
    held: Ring<Held, KVec<Option<Held>>>,
    /// The message being received by segments.
    cur: Option<Assembly>,
    /// Rendezvous reads in flight, oldest first (at most RNDV_READS).
    reading: KVec<Reading>,
    /// Tagged receives; tagged messages held for receives to come, their
    /// bytes, and the one being copied out.
    tagged: TaggedRecvs,
    held_tagged: HeldTagged<HeldMsg>,
    held_bytes: usize,
    copying: Option<Copying>,
    /// Rendezvous reads of held messages, waiting for `cur` to be free and
    /// for room in `reading`.
    ready_rndv: KVec<ReadyRndv>,
    /// The first failed work request's error, for those that follow.
    sq_error: Option<u32>,
    shutdown_reported: bool,
    /// Why a request can no longer be answered (positive FI_E*): its peer
    /// left (FI_ECONNRESET) or its device went (FI_ENODEV). fi_endpoint,
    /// fi_accept and fi_reject on it answer that.
    unanswerable: Option<u32>,
    /// Disconnect once the send queue is empty: after the peer's
    /// disconnect or our fi_shutdown (moving the QP to error sooner would
    /// flush work requests not yet out, or whose ACK is on its way).
    answer_disconnect: bool,
    /// FI_RX_CQ_DATA mode: a write's CQ data takes a posted receive.
    rx_cq_data: bool,
    /// The device is iWARP: its MPA initiator must send the first frame
    /// (siw fails a connection whose first frame comes with the MPA reply).
    iwarp: bool,
    /// iWARP server (MPA responder): nothing is posted on the send queue
    /// until the client's first message came (the client greets at once),
    /// so its own greeting waits for `greeting.heard` too.
    speaks_second: bool,
    /// The greeting (see `greet`): whether ours may go (our regions are
    /// valid), went, and whether the peer's came. Nothing of the consumer's
    /// goes out before the peer's: its regions may not be valid yet.
    greeting: Greeting,
    /// Buffers of SENDs that completed, for the next ones.
    frames: tx::Frames,
    /// The peer's key tables this connection read (regions in pieces), by
    /// key; `None` for one that could not be read or was malformed.
    tables: KVec<(u64, Option<KeyTable>)>,
    /// A key table read is in flight.
    table_read: bool,
}

/// Where a connection's exchange of greetings stands.
#[derive(Clone, Copy, Default)]
pub(crate) struct Greeting {
    pub(crate) ready: bool,
    pub(crate) sent: bool,
    pub(crate) heard: bool,
    /// Times an iWARP client's greeting was sent again (see `nudge`).
    pub(crate) nudges: u32,
}

/// A connection (client or server side).
#[pin_data]
pub(crate) struct Conn {
    #[pin]
    id: Mutex<Option<CmId>>,
    /// A passive side's request id until an endpoint takes it (then it is
    /// `id`'s), shared by the request (the consumer's info) and the
    /// device's removal, which destroys it so that a request the consumer
    /// holds unanswered does not hold the removal too (see `Request`).
    request_id: CmIdSlot,
    #[pin]
    inner: Mutex<Inner>,
    entry: Arc<DeviceEntry>,
    /// A passive side's request is being reported (see `Request`).
    #[pin]
    reporting: Mutex<Reporting>,
    /// Bound to an endpoint (fi_endpoint took the request).
    bound: AtomicBool,
    /// The CQ, once made; a poller holds a reference while it polls, so
    /// `release` can drain through it after taking the resources.
    #[pin]
    cq: SpinLock<Option<Arc<Cq<Conn>>>>,
    /// One poller of the CQ at a time, so completions are handled in order.
    #[pin]
    polling: Mutex<()>,
    /// Where `close` waits, a tick at a time, for its last sends (see
    /// `let_last_sends_go`).
    #[pin]
    sends_gone: CondVar,
    /// Polls the CQ when no consumer sleeps on the endpoint's CQ to do it.
    #[pin]
    work: Work<Conn>,
    /// Its endpoint, for the CQ's events to hand the polling to a consumer
    /// sleeping on the endpoint's receive CQ (one hand-off fewer).
    waker: ProgressWaker,
    /// An iWARP client's greeting not answered in time is sent again (see
    /// `nudge`); the timer sets `nudge_due` and queues the work.
    greeting_timer: Timer<Conn>,
    nudge_due: AtomicBool,
    /// Counts it among the module's live connections (checked at unload).
    _counted: Counted,
}

impl_has_work! {
    impl HasWork<Self> for Conn { self.work }
}

impl WorkItem for Conn {
    type Pointer = Arc<Conn>;

    fn run(this: Arc<Conn>) {
        this.poll();
        if this.nudge_due.swap(false, Ordering::AcqRel) {
            this.nudge(&this);
        }
    }
}

impl TimerOwner for Conn {
    fn timer_fired(this: Arc<Conn>) {
        this.nudge_due.store(true, Ordering::Release);
        // Already queued is fine: that run sees `nudge_due`.
        let _ = crate::workqueue::queue().enqueue(this);
    }
}

impl CqOwner for Conn {
    fn cq_event(this: ArcBorrow<'_, Self>, can_wake: bool) {
        if !(can_wake && this.waker.request()) {
            // Already queued is fine: that run polls what this announces.
            let _ = crate::workqueue::queue().enqueue(Arc::from(this));
        }
    }

    fn completed(&self, wc: &WorkCompletion) {
        let mut g = self.inner.lock();
        if wc.slot < RX_DEPTH {
            self.rx_done(&mut g, wc);
        } else {
            self.tx_done(&mut g, wc);
        }
    }
}

fn ring<T>(n: usize) -> Result<KVec<Option<T>>> {
    let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
    for _ in 0..n {
        v.push(None, GFP_KERNEL)?;
    }
    Ok(v)
}

/// A work completion's status as a positive FI_E*.
fn wc_error(status: WcStatus) -> u32 {
    match status {
        WcStatus::Flushed => abi::FI_ECANCELED,
        WcStatus::AccessDenied => abi::FI_EACCES,
        WcStatus::PeerGone => abi::FI_ECONNRESET,
        WcStatus::Success | WcStatus::Failed => abi::FI_EIO,
    }
}

impl Conn {
    fn new(entry: Arc<DeviceEntry>, phase: Phase, ep: Option<EpRef>) -> Result<Arc<Conn>> {
        let mut tx_free = KVec::with_capacity(SQ_DEPTH, GFP_KERNEL)?;
        let mut tx_wr = KVec::with_capacity(SQ_DEPTH, GFP_KERNEL)?;
        for i in (0..SQ_DEPTH).rev() {
            tx_free.push(RX_DEPTH + i, GFP_KERNEL)?;
            tx_wr.push(None, GFP_KERNEL)?;
        }
        let tx_seq = ring(SQ_DEPTH)?;
        let (queue, recvs, held) = (ring(TX_DEPTH)?, ring(RECV_DEPTH)?, ring(RX_DEPTH)?);
        let (tagged, held_tagged) = (TaggedRecvs::new(RECV_DEPTH)?, HeldTagged::new(RECV_DEPTH)?);
        let ready_rndv = KVec::with_capacity(RECV_DEPTH, GFP_KERNEL)?;
        let reading = KVec::with_capacity(RNDV_READS, GFP_KERNEL)?;
        let waker = ProgressWaker::new();
        if let Some(ep) = &ep {
            waker.arm(ep);
        }
        let greeting_timer = Timer::new()?;
        let frames = tx::Frames::new()?;
        let conn = Arc::pin_init(
            pin_init!(Conn {
                id <- new_mutex!(None, "kofi_verbs_id"),
                request_id: CmIdSlot::empty(),
                inner <- new_mutex!(Inner {
                    phase,
                    ep,
                    domain: None,
                    res: None,
                    dev: None,
                    lkey: 0,
                    max_sge: 1,
                    max_sge_rd: 1,
                    max_inline: 0,
                    rndv_sends: KVec::new(),
                    next_cookie: 1,
                    connect_data: None,
                    peer_reads: None,
                    credits: RX_DEPTH as u32,
                    grant: 0,
                    tx_wr,
                    tx_seq,
                    tx_free,
                    sends_posted: 0,
                    sends_received: 0,
                    peer_took: 0,
                    queue: Ring::new(queue),
                    recvs: Ring::new(recvs),
                    held: Ring::new(held),
                    cur: None,
                    reading,
                    tagged,
                    held_tagged,
                    held_bytes: 0,
                    copying: None,
                    ready_rndv,
                    sq_error: None,
                    shutdown_reported: false,
                    unanswerable: None,
                    answer_disconnect: false,
                    rx_cq_data: false,
                    iwarp: false,
                    speaks_second: false,
                    greeting: Greeting::default(),
                    frames,
                    tables: KVec::new(),
                    table_read: false,
                }, "kofi_verbs_conn"),
                entry,
                reporting <- new_mutex!(Reporting::default(), "kofi_verbs_reporting"),
                bound: AtomicBool::new(false),
                cq <- new_spinlock!(None, "kofi_verbs_cq"),
                polling <- new_mutex!((), "kofi_verbs_polling"),
                sends_gone <- new_condvar!("kofi_verbs_sends_gone"),
                work <- new_work!("kofi_verbs_conn"),
                waker,
                greeting_timer,
                nudge_due: AtomicBool::new(false),
                _counted: Counted::new(),
            }),
            GFP_KERNEL,
        )?;
        Ok(conn)
    }

    /// fi_connect: resolves `dest`, then connects with `param`.
    pub(crate) fn connect(
        dest: &SockAddr,
        param: &[u8],
        ep: EpRef,
        domain: Arc<VDomain>,
        rx_cq_data: bool,
    ) -> Result<Arc<Conn>> {
        let data = CmData::encode(param).ok_or(EINVAL)?;
        let conn = Conn::new(domain.entry().clone(), Phase::Resolving, Some(ep))?;
        let id = CmId::new(conn.clone())?;
        {
            let mut owner = conn.id.lock();
            let mut g = conn.inner.lock();
            g.connect_data = Some(data);
            g.rx_cq_data = rx_cq_data;
            g.domain = Some(domain);
            id.resolve_addr(dest)?;
            g.res = Some(Resources {
                id: id.handle(),
                qp: None,
                rx: KVec::new(),
                up: false,
            });
            *owner = Some(id);
        }
        // The id is armed: on failure it must go before the endpoint does,
        // or rdma_cm would report into a closed endpoint.
        if let Err(e) = conn.entry.add_conn(&conn) {
            conn.close();
            return Err(e);
        }
        Ok(conn)
    }

    /// A connection request's server side, before it is reported.
    pub(crate) fn requested(entry: Arc<DeviceEntry>, reads: ReadDepths) -> Result<Arc<Conn>> {
        let conn = Conn::new(entry, Phase::Requested, None)?;
        conn.inner.lock().peer_reads = Some(reads);
        conn.entry.add_conn(&conn)?;
        Ok(conn)
    }

    /// A request's id, for the state's use (its owner is the request).
    pub(crate) fn set_handle(&self, id: IdHandle) {
        self.inner.lock().res = Some(Resources {
            id,
            qp: None,
            rx: KVec::new(),
            up: false,
        });
    }

    /// The listener's callback starts reporting this request.
    pub(crate) fn begin_report(&self) {
        self.reporting.lock().active = true;
    }

    /// The callback is done reporting: the request's id if the request was
    /// dropped meanwhile (it is the callback's to give back to rdma_cm).
    pub(crate) fn end_report(&self) -> Option<CmId> {
        let mut r = self.reporting.lock();
        r.active = false;
        r.orphan.take()
    }

    /// A dropped request's id: kept for the callback while it is still
    /// reporting (None), else handed back to be destroyed.
    pub(crate) fn orphan(&self, id: CmId) -> Option<CmId> {
        let mut r = self.reporting.lock();
        if r.active {
            r.orphan = Some(id);
            None
        } else {
            Some(id)
        }
    }

    /// A request that could not be reported: forgotten (its id is
    /// rdma_cm's to destroy).
    fn forget_request(&self) {
        drop(self.inner.lock().res.take());
        self.entry.remove_conn(self);
    }

    pub(crate) fn is_bound(&self) -> bool {
        self.bound.load(Ordering::Acquire)
    }

    /// fi_endpoint on a request: the endpoint and domain it now belongs
    /// to, and the request's id.
    pub(crate) fn bind(&self, ep: EpRef, domain: Arc<VDomain>, rx_cq_data: bool) -> Result {
        let mut owner = self.id.lock();
        let mut g = self.inner.lock();
        if g.phase != Phase::Requested || self.bound.swap(true, Ordering::AcqRel) {
            return Err(Self::stale(&g));
        }
        g.rx_cq_data = rx_cq_data;
        // Taken under `id`'s lock, as `device_gone` takes it.
        *owner = Some(self.request_id.take().ok_or(EINVAL)?);
        self.waker.arm(&ep);
        g.ep = Some(ep);
        g.domain = Some(domain);
        Ok(())
    }

    /// Creates the CQ, the QP and posts the receive buffers.
    fn setup(self: ArcBorrow<'_, Self>, g: &mut Inner) -> Result {
        let domain = g.domain.clone().ok_or(EINVAL)?;
        let res = g.res.as_mut().ok_or(EINVAL)?;
        let dev = res.id.device().ok_or(EINVAL)?;
        let (lkey, limits, inline) = domain.with_pd(|pd| {
            // The id must be on the domain's device: a QP lives in one PD.
            if !pd.device().same(&dev) {
                return Err(fi_error(abi::FI_EINVAL));
            }
            let limits = dev.limits();
            let sge = limits.max_sge.min(16);
            // A slot per receive buffer and per send work request.
            let entries = (RX_DEPTH + SQ_DEPTH + 1) as u32;
            let cq = Cq::new(dev, entries, self.into(), RX_DEPTH + SQ_DEPTH)?;
            let (qp, inline) =
                res.id
                    .create_qp(pd, &cq, SQ_DEPTH as u32, RX_DEPTH as u32, sge, INLINE_ASK)?;
            res.qp = Some(qp);
            *self.cq.lock() = Some(cq);
            Ok((pd.lkey(), limits, inline))
        })?;
        g.dev = Some(dev);
        g.lkey = lkey;
        g.max_inline = inline as usize;
        g.iwarp = limits.iwarp;
        g.max_sge = (limits.max_sge.min(16) as usize).max(2);
        g.max_sge_rd = (limits.max_sge_rd.min(limits.max_sge).min(16) as usize).max(1);
        for i in 0..RX_DEPTH {
            res.rx.push(RxBuf::new(dev, lkey)?, GFP_KERNEL)?;
            res.qp()?.post_recv(i, res.rx[i].map.sges())?;
        }
        Ok(())
    }

    /// fi_accept.
    pub(crate) fn accept(self: &Arc<Self>, param: &[u8]) -> Result {
        let data = CmData::encode(param).ok_or(EINVAL)?;
        let owner = self.id.lock();
        let reads = {
            let mut g = self.inner.lock();
            let reads = match (g.phase, &g.ep, g.peer_reads) {
                (Phase::Requested, Some(_), Some(reads)) => reads,
                _ => return Err(Self::stale(&g)),
            };
            self.as_arc_borrow().setup(&mut g)?;
            g.phase = Phase::Accepting;
            g.speaks_second = g.iwarp;
            reads
        };
        // rdma_accept takes the id's handler lock, under which the CM
        // callback takes the state mutex: call it without the latter.
        let r = owner.as_ref().ok_or(EINVAL)?.accept(data.as_bytes(), reads);
        drop(owner);
        let mut g = self.inner.lock();
        if r.is_err() {
            g.phase = Phase::Closed;
            return r;
        }
        // rdma_accept returns with the QP in RTS (iw_cm's accept too).
        if let Some(res) = g.res.as_mut() {
            res.up = true;
        }
        drop(g);
        // Regions registered before any connection of the domain: the
        // consumer may have sent their keys in this accept's private data,
        // so register them now rather than at ESTABLISHED, which the peer's
        // first RMA can beat.
        let domain = self.inner.lock().domain.clone();
        if let Some(domain) = domain {
            domain.register_pending(self);
        }
        Ok(())
    }

    /// Why a request cannot be answered now: its peer left or its device
    /// went, or it was answered before.
    fn stale(g: &Inner) -> Error {
        fi_error(g.unanswerable.unwrap_or(abi::FI_EOPBADSTATE))
    }

    /// fi_reject.
    pub(crate) fn reject(&self, param: &[u8]) -> Result {
        let data = CmData::encode(param).ok_or(EINVAL)?;
        let mut g = self.inner.lock();
        if g.phase != Phase::Requested {
            return Err(Self::stale(&g));
        }
        g.res.as_ref().ok_or(EINVAL)?.id.reject(data.as_bytes())?;
        g.phase = Phase::Closed;
        Ok(())
    }

    /// fi_shutdown: no more sends; once what is queued and posted has gone
    /// out (a last OP_FIN or message must not be flushed), disconnect:
    /// FI_SHUTDOWN here, and at the peer.
    pub(crate) fn shutdown(&self) -> Result {
        let mut g = self.inner.lock();
        if g.phase != Phase::Connected {
            return Err(fi_error(abi::FI_ENOTCONN));
        }
        self.say_close(&mut g);
        g.phase = Phase::Closing;
        g.answer_disconnect = true;
        self.answer_disconnect(&mut g);
        Ok(())
    }

    pub(crate) fn addr(&self, peer: bool) -> Result<SockAddr> {
        let g = self.inner.lock();
        Ok(g.res
            .as_ref()
            .ok_or_else(|| fi_error(abi::FI_ENOTCONN))?
            .id
            .addr(peer))
    }

    /// Closes the connection: no report of it after this returns. The QP
    /// is drained before the consumer's buffers are let go.
    pub(crate) fn close(&self) {
        self.greeting_timer.stop();
        self.let_last_sends_go();
        let mut owner = self.id.lock();
        let res = {
            let mut g = self.inner.lock();
            Self::release_receives(&mut g);
            g.ep = None;
            g.phase = Phase::Closed;
            g.res.take()
        };
        self.release(&mut owner, res);
        drop(owner);
        let mut g = self.inner.lock();
        Self::forget_work_requests(&mut g);
        while g.queue.pop().is_some() {}
        while g.recvs.pop().is_some() {}
        g.rndv_sends = KVec::new();
        g.cur = None;
        g.reading.clear();
        g.copying = None;
        g.ready_rndv = KVec::new();
        g.domain = None;
        drop(g);
        self.entry.remove_conn(self);
    }

    /// Gives the sends posted or queued when the endpoint closes a short,
    /// bounded while to go (polling meanwhile) before the QP's flush drops
    /// them: above all an OP_FIN, whose peer's message completes only with
    /// it, owed for a rendezvous whose receive completed just before (a
    /// consumer often closes right after its last receive). A peer that is
    /// gone fails them at once, so the wait is short then too.
    fn let_last_sends_go(&self) {
        for ms in 0..LAST_SENDS_MS {
            self.poll();
            let mut g = self.inner.lock();
            if ms == 0 {
                // Counted once what came is polled.
                self.say_close(&mut g);
            }
            let up = matches!(g.phase, Phase::Connected | Phase::Closing);
            if !up || (g.queue.len() == 0 && g.tx_wr.iter().all(Option::is_none)) {
                return;
            }
            self.pump(&mut g);
            let _ = self
                .sends_gone
                .wait_interruptible_timeout(&mut g, msecs_to_jiffies(1));
        }
    }

    /// The device is going away: error completions, FI_SHUTDOWN, then close.
    /// A request not taken by an endpoint loses its id here: rdma_cm's
    /// removal of the device waits for every id on it, and the consumer
    /// holding the request may never answer it (fi_endpoint, fi_accept
    /// and fi_reject on it answer -FI_ENODEV after).
    pub(crate) fn device_gone(&self) {
        {
            let mut g = self.inner.lock();
            g.unanswerable = Some(abi::FI_ENODEV);
            if g.phase == Phase::Connected
                || g.phase == Phase::Closing
                || g.phase == Phase::Accepting
                || g.phase == Phase::Connecting
            {
                self.end(&mut g, abi::FI_ECONNRESET);
            }
        }
        // Posted work requests flush with errors while the endpoint is
        // still bound, so the consumer hears of each.
        let mut owner = self.id.lock();
        let res = {
            let mut g = self.inner.lock();
            // Closed under `id`'s lock, with the id taken below: a racing
            // fi_endpoint then finds the request stale, not its id gone.
            if g.phase == Phase::Requested {
                g.phase = Phase::Closed;
            }
            g.res.take()
        };
        let request_id = self.request_id.take();
        self.release(&mut owner, res);
        drop(owner);
        // Its handle went with `res`: dropping it destroys the id, after
        // the listener's callback should that still be reporting it (which
        // may close this connection: not under `id`'s lock).
        drop(request_id);
        let mut g = self.inner.lock();
        g.phase = Phase::Closed;
        // The regions of rendezvous sends go before the domain's PD.
        g.rndv_sends = KVec::new();
        // So do the regions work requests still hold (a READ's sink, a
        // registration): the device must not outlive them (its removal
        // waits for this).
        Self::forget_work_requests(&mut g);
        g.domain = None;
        drop(g);
        self.entry.remove_conn(self);
    }

    /// The QP is gone: what it still held never completes. A device need
    /// not flush every work request its drain overtakes (siw leaves those
    /// queued behind a failed one when the QP went to error from CLOSING,
    /// i.e. after our disconnect). A registration among them fails: whoever
    /// waits for it (fi_mr_reg, the region's close) stops waiting, and the
    /// reference its state holds on this connection goes (else the two
    /// would keep each other).
    fn forget_work_requests(g: &mut Inner) {
        for (wr, seq) in g.tx_wr.iter_mut().zip(g.tx_seq.iter_mut()) {
            *seq = None;
            if let Some(TxWr::Reg(reg)) = wr.take() {
                reg.done(false);
            }
        }
    }

    /// Drains the QP if it came up, then destroys the id (and QP), the CQ
    /// and the buffers, in that order.
    fn release(&self, owner: &mut Option<CmId>, res: Option<Resources>) {
        // No consumer polls for the connection from here on, and an event
        // handed to one whose endpoint began closing was dropped: poll (and
        // arm the CQ) here instead, so the work item sees the next.
        self.waker.disarm();
        self.poll();
        if let Some(res) = &res {
            res.id.disconnect();
            if let (true, Some(qp)) = (res.up, &res.qp) {
                // Flushes every posted work request through `completed`.
                qp.drain();
            }
        }
        // The QP, then the id, then the receive buffers.
        drop(owner.take());
        drop(res);
        // A poller may still hold it: then the CQ goes when that one is done.
        let cq = self.cq.lock().take();
        drop(cq);
    }

    /// Hands what the CQ holds to `completed`, then arms it again (in the
    /// work item, or in a consumer's thread the CQ's event woke).
    pub(crate) fn poll(&self) {
        let _one = self.polling.lock();
        let Some(cq) = self.cq.lock().clone() else {
            return;
        };
        loop {
            cq.poll();
            // Armed, then looked at once more: siw counts a completion for
            // REPORT_MISSED_EVENTS (cq_put) after it checked whether the CQ
            // was armed, with no barrier between, so arming can see no
            // completion while siw sees no arming, and no event comes. The
            // completion itself siw writes before a barrier and that check:
            // a poll after arming finds it, or siw saw the arming.
            if !cq.arm() && cq.poll() == 0 {
                break;
            }
        }
    }

    /// The connection is over: fail what waits, FI_SHUTDOWN once.
    fn end(&self, g: &mut Inner, err: u32) {
        g.phase = Phase::Closed;
        while let Some(op) = g.queue.pop() {
            match op {
                // Never posted: no completion will end its receive.
                TxOp::Read { cookie, .. } | TxOp::Cts { cookie, .. } => {
                    self.finish_rndv(g, cookie, false)
                }
                op => self.fail_op(g, op, err),
            }
        }
        Self::release_receives(g);
        if let Some(ep) = &g.ep {
            if !g.shutdown_reported {
                g.shutdown_reported = true;
                let _ = ep.event(abi::FI_SHUTDOWN, &[]);
            }
        }
    }

    /// No receive can be filled any more: each completes FI_ECANCELED, so
    /// no consumer waits on one for ever. One a rendezvous read is filling
    /// completes when that read does (flushed: FI_EIO), as the device may
    /// write its buffers until then.
    fn release_receives(g: &mut Inner) {
        let Some(ep) = &g.ep else {
            return;
        };
        if let Some(cur) = g.cur.take() {
            report_cancelled(ep, &cur.recv);
        }
        while let Some(r) = g.recvs.pop() {
            report_cancelled(ep, &r);
        }
        g.tagged.cancel_all(ep);
        for r in core::mem::take(&mut g.ready_rndv) {
            report_cancelled(ep, &r.recv);
        }
    }

    fn ensure_connected(g: &Inner) -> Result {
        if g.phase == Phase::Connected {
            Ok(())
        } else {
            Err(fi_error(abi::FI_ENOTCONN))
        }
    }

    /// Whether this is a connected connection of `domain`.
    pub(crate) fn serves(&self, domain: &VDomain) -> bool {
        let g = self.inner.lock();
        g.phase == Phase::Connected
            && g.domain
                .as_ref()
                .is_some_and(|d| core::ptr::eq(&**d, domain))
    }
}

/// The connection's resources on the device, while it has them.
fn resources(res: &Option<Resources>) -> Result<&Resources> {
    res.as_ref().ok_or_else(|| fi_error(abi::FI_ENOTCONN))
}

impl Resources {
    /// The QP, once made.
    fn qp(&self) -> Result<&Qp<Conn>> {
        self.qp.as_ref().ok_or_else(|| fi_error(abi::FI_ENOTCONN))
    }
}

ip_conn_by_inherent_methods!(Conn, progress: poll);
