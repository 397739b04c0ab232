// SPDX-License-Identifier: GPL-2.0

//! Reliable datagram endpoints (FI_EP_RDM), built once in the core over any
//! provider's FI_EP_MSG endpoints, as libfabric's rxm is.
//!
//! An RDM endpoint listens on a passive endpoint of its own (its name is the
//! listener's address) and keeps one MSG connection per peer, made on the
//! first send and reused. It is a consumer of the public calls: its MSG
//! endpoints report to an internal CQ and EQ whose handlers have the
//! endpoint's progress made (by a data call running, a consumer asleep on
//! its receive CQ, else its work item), which reads them in process
//! context; the providers ask that progress for the MSG endpoints' own
//! progress too.
//!
//! - Sends queue per peer and go out, in order, on the peer's connection
//!   once it is up: send-after-send ordering per peer (FI_ORDER_SAS).
//! - Receives land in bounce buffers posted on each connection, then are
//!   matched in arrival order against the posted receives (FI_ADDR_UNSPEC,
//!   or the source with FI_DIRECTED_RECV). An unmatched message is copied
//!   out of its buffers (up to `COPIED_MAX` an endpoint), else keeps them
//!   until a receive takes it, which holds the peer back through the
//!   provider's own flow control: memory stays bounded.
//! - A message of at least `RNDV_MIN` bytes goes by rendezvous when the
//!   provider has tagged messages: an announcement (OP_RTS) matched like a
//!   message, then the receiver posts the receive's own buffers as a tagged
//!   MSG receive and asks for the bytes (OP_CTS), which the sender sends as
//!   one tagged MSG message straight into them (libfabric's rxm reads them
//!   instead; a tagged message needs no registration).
//! - Requests crossing (both sides connect at once) are both accepted: each
//!   side sends on the first of its connections to the peer that came up and
//!   receives on all, so nothing is lost, duplicated or reordered.
//! - A connection that fails fails what was posted on it (error completions
//!   to the consumer); queued sends try one new connection, and fail if that
//!   fails too. Nothing is sent twice.

pub(crate) mod atomic;
mod cm;
mod rx;
mod tx;
pub(crate) mod wire;

use crate::abi;
use crate::addr::Name;
use crate::backend::{usize_of, usize_option};
use crate::context::Context;
use crate::errno;
use crate::flags::*;
use crate::info::InfoBox;
use crate::iov::Iov;
use crate::lifecycle::Owned;
use crate::msg::{Msg, Rma, RmaMsg, TaggedMsg};
use crate::object::{Endpoint, EpBackend, Object, PassiveEp};
use crate::queue::{Cq, Eq, QueueOwner};
// `pop` and `clear`: the compatibility trait's on 6.12, inherent on 7.3.
#[allow(unused_imports)]
use crate::compat::VecExt;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, ArcBorrow, Mutex};
use kernel::workqueue::{impl_has_work, new_work, Work, WorkItem};

/// Payload bytes of one segment: a segment with its header is one 64 KiB
/// MSG send (the largest kofi_verbs sends without a rendezvous).
pub(crate) const SEG: usize = 64 * 1024 - wire::HDR_LEN;
/// Messages of at least this many bytes go by rendezvous (`rdm.rst`): below
/// it, the two extra control messages cost more than the segments' copies
/// (at 256 KiB, four segments of 64 KiB beat a rendezvous: `bench.rst`).
pub(crate) const RNDV_MIN: usize = 512 * 1024;
/// Bounce buffers posted per connection.
const RX_BUFS: usize = 4;
/// Bytes of unmatched messages an endpoint copies out of their bounce
/// buffers at most, so that the buffers go back at once; beyond, such a
/// message keeps its buffers, and flow control holds its sender back.
const COPIED_MAX: usize = 1 << 20;
/// Transmits (segments and RMA) in flight per connection at most.
const TX_INFLIGHT_MAX: usize = 32;
/// Connection attempts in a row before queued sends fail: a refusal can be
/// transient (siw's TCP socket can find rdma_cm's port still in TIME_WAIT).
const CONNECT_TRIES: u8 = 3;
/// Operations in flight or queued at most (-FI_EAGAIN beyond).
const OPS_MAX: usize = 4096;
/// FI_OPT_MIN_MULTI_RECV until the consumer sets it: a segment's payload.
const MIN_MULTI_RECV_DEFAULT: usize = 16 * 1024;

/// Tells of a peer that broke the protocol or lied about its name; a peer
/// can repeat that at will, so only the first few times are said.
pub(crate) fn log_bad_peer(what: core::fmt::Arguments<'_>) {
    static SAID: AtomicU32 = AtomicU32::new(0);
    if SAID.fetch_add(1, Ordering::Relaxed) < 16 {
        pr_warn!("rdm: {}", what);
    }
}

/// What an internal operation's context stands for: a transmit of
/// `ops[slot]`, receive buffer `index` of `conns[slot]`, or the tagged
/// receive of announced message `inbound` (its id's low 32 bits) on
/// `conns[slot]`. The generation makes a completion of a slot since reused
/// harmless.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Token {
    Tx { slot: usize, gen: u32 },
    Rx { slot: usize, gen: u32, index: usize },
    Conn { slot: usize, gen: u32 },
    Data { slot: usize, inbound: u32 },
}

impl Token {
    const TX: u64 = 1;
    const RX: u64 = 2;
    const CONN: u64 = 3;
    const DATA: u64 = 4;

    pub(crate) fn encode(self) -> Context {
        let (kind, slot, gen, index) = match self {
            Token::Tx { slot, gen } => (Self::TX, slot, gen, 0),
            Token::Rx { slot, gen, index } => (Self::RX, slot, gen, index),
            Token::Conn { slot, gen } => (Self::CONN, slot, gen, 0),
            Token::Data { slot, inbound } => (Self::DATA, slot, inbound, 0),
        };
        let v =
            (kind << 60) | ((slot as u64 & 0xf_ffff) << 40) | (u64::from(gen) << 8) | index as u64;
        Context::value(v)
    }

    pub(crate) fn decode(context: Context) -> Option<Token> {
        let v = context.as_value();
        let slot = ((v >> 40) & 0xf_ffff) as usize;
        let gen = (v >> 8) as u32;
        let index = (v & 0xff) as usize;
        match v >> 60 {
            Self::TX => Some(Token::Tx { slot, gen }),
            Self::RX => Some(Token::Rx { slot, gen, index }),
            Self::CONN => Some(Token::Conn { slot, gen }),
            Self::DATA => Some(Token::Data { slot, inbound: gen }),
            _ => None,
        }
    }
}

/// A consumer's buffers, copied from its call (the array need not outlive
/// the call; the memory must, until the completion).
pub(crate) use crate::iov::Iovs;

impl Iovs {
    /// A copy of a message's kvecs or bio_vecs, and their total (checked).
    pub(crate) fn copy(iov: Iov<'_>) -> Result<(Iovs, usize)> {
        let total = iov.total()?;
        Ok((Iovs::copy_of(iov)?, total))
    }

    /// A copy of the `total` bytes of the buffers, and one kvec of it: an
    /// inject's bytes, taken at the call.
    pub(crate) fn inject_copy(&self, total: usize) -> Result<(Iovs, KVec<u8>)> {
        if !matches!(self, Iovs::Kvec(_)) {
            // Injects of pages are not offered: their bytes are copied only
            // from kernel virtual addresses.
            return Err(errno::eopnotsupp());
        }
        let mut bytes = KVec::new();
        // SAFETY: The consumer's buffers, readable for the call.
        unsafe { self.as_iov().append_to(0, total, &mut bytes) }?;
        Ok((Iovs::one(bytes.as_mut_ptr(), bytes.len()), bytes))
    }

    /// A message of the buffers, without descriptors, to the connected
    /// peer.
    pub(crate) fn msg(&self, context: Context, data: u64) -> Msg<'_> {
        Msg {
            data,
            ..Msg::connected(self.as_iov(), context)
        }
    }

    /// The first buffer's address (the `buf` of a receive completion).
    pub(crate) fn base(&self) -> *mut c_void {
        match self {
            Iovs::Kvec(v) => v.first().map_or(core::ptr::null_mut(), |k| k.iov_base),
            Iovs::Bvec(_) => core::ptr::null_mut(),
        }
    }
}

/// Sends `bytes` (a frame that lives until the send completes) on the MSG
/// endpoint `ep`.
pub(crate) fn send_bytes(ep: &Endpoint, bytes: &[u8], context: Context) -> Result {
    let kvec = abi::kvec {
        iov_base: bytes.as_ptr().cast_mut().cast(),
        iov_len: bytes.len(),
    };
    let m = Msg::connected(Iov::Kvec(core::slice::from_ref(&kvec)), context);
    // SAFETY: Sends read frames the RDM layer keeps until their completion
    // (an atomic's or answer's op, a connection's control buffer); no
    // descriptors.
    unsafe { ep.send(&m, FI_COMPLETION) }
}

/// A peer: the other end of connections, by name.
pub(crate) struct Peer {
    pub(crate) name: Name,
    /// The connection this side sends on, once one is up.
    pub(crate) tx: Option<usize>,
    /// Our own request in progress.
    pub(crate) connecting: Option<usize>,
    /// Operations waiting to be (fully) posted, in order.
    pub(crate) backlog: KVec<usize>,
    /// Connection attempts in a row that failed (reset when one comes up).
    pub(crate) attempts: u8,
    /// The peer's AV address as last looked up (see `Av::addr_of`).
    pub(crate) source: Option<(u64, u64)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Phase {
    Connecting,
    Accepting,
    Connected,
    /// Idle and over the cache: we sent BYE and send nothing more on it.
    ByeSent,
    /// The peer sent BYE: BYE_ACK goes once our sends on it are done.
    ByeReceived,
    /// We sent BYE_ACK; the peer closes it.
    ByeAcked,
    /// The peer shut it while sends of ours on it were posted: nothing new
    /// goes on it, and it is lost once their own completions, which say
    /// whether the peer took them, are in.
    Ending,
    /// Closed; kept only while unmatched messages hold its buffers.
    Dead,
}

impl Phase {
    /// Whether the connection still delivers what the peer sent.
    pub(crate) fn receives(self) -> bool {
        matches!(
            self,
            Phase::Connected | Phase::ByeSent | Phase::ByeReceived | Phase::ByeAcked
        )
    }

    /// Whether it is being let go (nothing new is sent to its peer meanwhile,
    /// so that nothing overtakes what went on it).
    pub(crate) fn closing(self) -> bool {
        matches!(
            self,
            Phase::ByeSent | Phase::ByeReceived | Phase::ByeAcked | Phase::Ending
        )
    }
}

/// One MSG connection.
pub(crate) struct Conn {
    pub(crate) ep: Option<Owned<Endpoint>>,
    pub(crate) gen: u32,
    pub(crate) peer: usize,
    pub(crate) phase: Phase,
    pub(crate) bufs: KVec<KVec<u8>>,
    /// The message whose segments arrive, by inbound id.
    pub(crate) assembling: Option<u64>,
    /// Buffers held by unmatched messages.
    pub(crate) held: usize,
    /// Transmits posted and not completed (a rendezvous send counts one
    /// from its announcement until its bytes went).
    pub(crate) inflight: usize,
    /// Announced messages whose bytes it is to bring (tagged receive
    /// posted): the connection is not idle meanwhile.
    pub(crate) fetching: usize,
    /// When it last carried something, on the endpoint's clock.
    pub(crate) last_used: u64,
    /// The control segment (BYE, BYE_ACK) it sends, kept until sent.
    pub(crate) ctl: KBox<[u8; wire::HDR_LEN]>,
}

pub(crate) enum OpKind {
    Msg {
        hdr: KBox<[u8; wire::HDR_LEN]>,
        /// Payload bytes posted so far.
        sent: usize,
    },
    /// A message by rendezvous: its announcement, then its bytes once the
    /// receiver asked for `granted` of them.
    Rndv {
        rts: KBox<[u8; wire::RTS_LEN]>,
        granted: Option<usize>,
    },
    Rma {
        read: bool,
        rma_iov: KVec<abi::fi_rma_iov>,
        data: u64,
    },
    /// An atomic operation: done once its frame is sent and the target
    /// answered (with the old values for `results`, when it fetches).
    Atomic {
        frame: KVec<u8>,
        results: KVec<abi::fi_ioc>,
        count: usize,
        answered: bool,
    },
    /// Our answer to a peer's atomic operation; nothing to report.
    Answer { frame: KVec<u8> },
}

impl TxOp {
    /// An operation of `kind` for `peer`, queued: nothing posted yet, no
    /// local buffers (set them with struct update syntax).
    pub(crate) fn queued(
        gen: u32,
        peer: usize,
        context: Context,
        flags: u64,
        kind: OpKind,
    ) -> TxOp {
        TxOp {
            gen,
            peer,
            conn: None,
            context,
            flags,
            len: 0,
            iov: Iovs::none(),
            _copy: None,
            kind,
            posted: 0,
            done: 0,
            all_posted: false,
        }
    }
}

/// A consumer's transmit.
pub(crate) struct TxOp {
    pub(crate) gen: u32,
    pub(crate) peer: usize,
    pub(crate) conn: Option<usize>,
    pub(crate) context: Context,
    /// The completion's flags (FI_COMPLETION: the consumer wants one).
    pub(crate) flags: u64,
    pub(crate) len: usize,
    pub(crate) iov: Iovs,
    /// The consumer's bytes of an inject, which it may reuse at once.
    pub(crate) _copy: Option<KVec<u8>>,
    pub(crate) kind: OpKind,
    pub(crate) posted: usize,
    pub(crate) done: usize,
    pub(crate) all_posted: bool,
}

/// Which messages a receive takes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Wants {
    /// Untagged ones (fi_recv).
    Untagged,
    /// Tagged ones whose tag equals `tag` in the bits not in `ignore`.
    Tagged { tag: u64, ignore: u64 },
}

impl Wants {
    /// Whether a message with `tag` (`None`: untagged) is wanted.
    pub(crate) fn takes(self, tag: Option<u64>) -> bool {
        match (self, tag) {
            (Wants::Untagged, None) => true,
            (Wants::Tagged { tag, ignore }, Some(t)) => (t | ignore) == (tag | ignore),
            _ => false,
        }
    }
}

/// What a receive does with the message it took.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Take {
    /// Copies it into the consumer's buffers and completes.
    Copy,
    /// The same, for the message an FI_PEEK | FI_CLAIM reserved.
    Claimed,
    /// Drops it (FI_DISCARD); completes with no bytes when `report`.
    Discard { report: bool },
}

/// The buffer of a posted FI_MULTI_RECV receive: messages take its bytes
/// one after another.
pub(crate) struct Multi {
    /// Names the buffer's `MultiState`.
    pub(crate) id: u64,
    pub(crate) base: *mut u8,
    pub(crate) len: usize,
    /// Bytes given to messages so far (each message's share 8-aligned).
    pub(crate) used: usize,
}

/// A multi-receive buffer's messages in progress, and whether it was
/// released (taken off the posted receives): its release completion comes
/// when both say it is done.
pub(crate) struct MultiState {
    pub(crate) id: u64,
    pub(crate) context: Context,
    pub(crate) outstanding: usize,
    pub(crate) released: bool,
}

/// A consumer's receive.
pub(crate) struct Recv {
    pub(crate) context: Context,
    pub(crate) flags: u64,
    pub(crate) iov: Iovs,
    pub(crate) cap: usize,
    pub(crate) from: Option<Name>,
    pub(crate) wants: Wants,
    pub(crate) take: Take,
    /// A posted FI_MULTI_RECV receive: its buffer.
    pub(crate) multi: Option<Multi>,
    /// A message's share of a multi-receive buffer: that buffer's id.
    pub(crate) parent: Option<u64>,
}

impl Recv {
    /// Whether it takes a message with `tag` from the peer named `sender`.
    pub(crate) fn takes(&self, tag: Option<u64>, sender: &Name) -> bool {
        self.wants.takes(tag) && !matches!(self.from, Some(f) if f != *sender)
    }
}

/// A message arriving or arrived, matched to a receive or not yet.
pub(crate) struct Inbound {
    pub(crate) id: u64,
    pub(crate) conn: usize,
    pub(crate) peer: usize,
    pub(crate) total: usize,
    pub(crate) got: usize,
    pub(crate) data: Option<u64>,
    /// The tag of a tagged message.
    pub(crate) tag: Option<u64>,
    /// The context of the FI_PEEK | FI_CLAIM that reserved it.
    pub(crate) claimed: Option<Context>,
    pub(crate) recv: Option<Recv>,
    /// Its segments so far, waiting for a receive (an announcement, with
    /// no payload, too).
    pub(crate) held: KVec<Held>,
    /// An announced message (OP_RTS): the sender's id for it.
    pub(crate) announced: Option<u64>,
}

/// A segment of an unmatched message, kept for its receive.
pub(crate) enum Held {
    /// In bounce buffer `index` of the message's connection: `len` payload
    /// bytes behind the header.
    Buffer { index: usize, len: usize },
    /// Copied out of its bounce buffer, which went back to the connection.
    Copy(KVVec<u8>),
}

pub(crate) struct State {
    pub(crate) closing: bool,
    pub(crate) msg_info: InfoBox,
    pub(crate) name: Name,
    pub(crate) av: Option<Arc<crate::av::Av>>,
    pub(crate) peers: KVec<Peer>,
    pub(crate) conns: KVec<Option<Conn>>,
    pub(crate) ops: KVec<Option<TxOp>>,
    pub(crate) recvs: KVec<Recv>,
    /// Multi-receive buffers with messages in progress or not released.
    pub(crate) multis: KVec<MultiState>,
    /// FI_OPT_MIN_MULTI_RECV: a multi-receive buffer with less left is
    /// released.
    pub(crate) min_multi_recv: usize,
    pub(crate) inbound: KVec<Inbound>,
    pub(crate) gen: u32,
    pub(crate) next_id: u64,
    /// Bytes held in `Held::Copy` segments, at most `COPIED_MAX`.
    pub(crate) copied: usize,
    /// Connections kept open before idle ones are let go.
    pub(crate) conn_cache: usize,
    /// Peer records kept before unused ones are reused.
    pub(crate) peers_max: usize,
    /// Counts uses, for least recently used.
    pub(crate) clock: u64,
    // Closed last, in this order: the endpoints above go first.
    pub(crate) pep: Option<Owned<PassiveEp>>,
    pub(crate) cq: Option<Owned<Cq>>,
    pub(crate) eq: Option<Owned<Eq>>,
}

// SAFETY: The raw pointers are the consumer's cookies and buffers, handed
// back in completions, and kofi objects usable from any thread.
unsafe impl Send for State {}

impl State {
    pub(crate) fn next_gen(&mut self) -> u32 {
        self.gen = self.gen.wrapping_add(1).max(1);
        self.gen
    }

    /// The live connection in `slot` of generation `gen`.
    pub(crate) fn conn(&mut self, slot: usize, gen: u32) -> Option<&mut Conn> {
        self.conns.get_mut(slot)?.as_mut().filter(|c| c.gen == gen)
    }

    /// Whether no send of ours posted on connection `slot` waits for its
    /// completion.
    pub(crate) fn sends_quiet(&self, slot: usize) -> bool {
        !self
            .ops
            .iter()
            .flatten()
            .any(|op| op.conn == Some(slot) && op.posted > op.done)
    }

    /// Marks connection `slot` used now.
    pub(crate) fn touch(&mut self, slot: usize) {
        self.clock += 1;
        let now = self.clock;
        if let Some(Some(c)) = self.conns.get_mut(slot) {
            c.last_used = now;
        }
    }

    /// Whether a connection of `peer` is being let go.
    pub(crate) fn peer_closing(&self, peer: usize) -> bool {
        self.conns
            .iter()
            .flatten()
            .any(|c| c.peer == peer && c.phase.closing())
    }

    /// The peer named `name`, added when new. With the table full, the
    /// record of a peer nothing refers to (no connection, transmit or
    /// message of it) is reused, so names a flood of peers claimed do not
    /// lock out the next one.
    pub(crate) fn peer_of(&mut self, name: &Name) -> Result<usize> {
        if let Some(i) = self.peers.iter().position(|p| p.name == *name) {
            return Ok(i);
        }
        let fresh = Peer {
            name: *name,
            tx: None,
            connecting: None,
            backlog: KVec::new(),
            attempts: 0,
            source: None,
        };
        if self.peers.len() < self.peers_max {
            self.peers.push(fresh, GFP_KERNEL)?;
            return Ok(self.peers.len() - 1);
        }
        let idle = (0..self.peers.len())
            .find(|&i| self.peer_unused(i))
            .ok_or_else(errno::enospc)?;
        self.peers[idle] = fresh;
        Ok(idle)
    }

    /// Whether nothing refers to peer `i`.
    fn peer_unused(&self, i: usize) -> bool {
        let p = &self.peers[i];
        p.tx.is_none()
            && p.connecting.is_none()
            && p.backlog.is_empty()
            && !self.conns.iter().flatten().any(|c| c.peer == i)
            && !self.ops.iter().flatten().any(|o| o.peer == i)
            && !self.inbound.iter().any(|m| m.peer == i)
    }

    /// The sender's address for FI_SOURCE.
    pub(crate) fn source(&mut self, peer: usize) -> u64 {
        match (&self.av, self.peers.get_mut(peer)) {
            (Some(av), Some(p)) => av.addr_of(&p.name, &mut p.source),
            _ => FI_ADDR_NOTAVAIL,
        }
    }

    /// A free slot in `v`.
    pub(crate) fn slot<T>(v: &mut KVec<Option<T>>, max: usize) -> Result<usize> {
        if let Some(i) = v.iter().position(|s| s.is_none()) {
            return Ok(i);
        }
        if v.len() >= max {
            return Err(errno::eagain());
        }
        v.push(None, GFP_KERNEL)?;
        Ok(v.len() - 1)
    }
}

/// An RDM endpoint's state: `fid.prov_data` of its `Endpoint`.
#[pin_data]
pub(crate) struct Rdm {
    #[pin]
    work: Work<Rdm>,
    /// The consumer's endpoint, alive until our close op returns.
    ep: *const Endpoint,
    /// Largest message.
    max_msg: usize,
    /// The endpoint's own directed-receive capability.
    directed: bool,
    /// Large messages go by rendezvous (the provider has tagged messages).
    rndv: bool,
    /// Data calls running (see [`Rdm::call`]).
    calls: AtomicUsize,
    /// A handler left its progress to the data calls running.
    left_to_calls: AtomicBool,
    #[pin]
    pub(crate) state: Mutex<State>,
}

// SAFETY: `ep` is only used while the endpoint is open, which
// `state.closing` tells under the lock; the rest is locked or immutable.
unsafe impl Send for Rdm {}
// SAFETY: As above.
unsafe impl Sync for Rdm {}

impl_has_work! {
    impl HasWork<Self> for Rdm { self.work }
}

impl WorkItem for Rdm {
    type Pointer = Arc<Rdm>;

    fn run(this: Arc<Rdm>) {
        this.progress();
    }
}

impl Rdm {
    /// Queues the progress work.
    fn kick(self: Arc<Self>) {
        // Already queued is fine: that run will see what is new.
        let _ = crate::workqueue::queue().enqueue(self);
    }

    /// The consumer's endpoint.
    ///
    /// The caller holds the state lock and has seen `closing` false.
    pub(crate) fn endpoint(&self) -> &Endpoint {
        // SAFETY: The endpoint lives until the close op, which sets `closing`
        // under the lock before it returns.
        unsafe { &*self.ep }
    }

    /// Runs a data call, then the progress the handlers left to it (see
    /// [`wake`]) in the caller's thread.
    fn call<R>(&self, f: impl FnOnce() -> R) -> R {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let result = f();
        self.calls.fetch_sub(1, Ordering::SeqCst);
        // A handler that saw this call running said so before it looked;
        // one that looks after the decrement wakes as usual.
        if self.left_to_calls.swap(false, Ordering::SeqCst) {
            self.progress();
        }
        result
    }

    /// Makes the progress the MSG endpoints' providers asked of the
    /// endpoint, then reads the internal CQ and EQ until both are empty (in
    /// the work item, or in a consumer's thread: see [`wake`]).
    pub(crate) fn progress(&self) {
        let internal = self.state.lock().cq.as_ref().map(Owned::arc);
        if let Some(cq) = internal {
            // Without the state lock: a provider's progress reports to the
            // internal CQ, whose handler wakes us again.
            cq.make_asked_progress();
        }
        let mut s = self.state.lock();
        loop {
            if s.closing {
                return;
            }
            // Completions first: a shutdown follows the completions of what
            // went out before it.
            let completions = self.drain_cq(&mut s);
            let events = self.one_event(&mut s);
            if completions == 0 && !events {
                break;
            }
        }
    }
}

/// There is progress to make: a data call running makes it before it
/// returns (a send's own completion, say, which TCP's taking the bytes
/// reported inside the call), else a consumer asleep on the endpoint's
/// receive CQ in its own thread, else the work item: a hand-off and a
/// context switch fewer per message. Any context but hardirq.
fn wake(rdm: &Arc<Rdm>) {
    // Said before looking at the calls: a call that ends after this look
    // sees it (see `Rdm::call`).
    rdm.left_to_calls.store(true, Ordering::SeqCst);
    if rdm.calls.load(Ordering::SeqCst) != 0 {
        return;
    }
    // SAFETY: Called by the internal queues, which add entries only while
    // open; `RdmEp::close` closes them before it returns, and the endpoint
    // lives until then.
    let ep = unsafe { &*rdm.ep };
    if !ep.request_progress() {
        rdm.clone().kick();
    }
}

/// The internal queues' owner: what they add (an entry, or progress asked
/// of us) is the endpoint's progress to make ([`wake`]); may be told in
/// softirq context. It holds the endpoint's state until the queues go
/// (`RdmEp::close`, or a failed open).
pub(crate) struct QueuesOwner(pub(crate) Arc<Rdm>);

impl QueueOwner for QueuesOwner {
    fn wake(&self) {
        wake(&self.0);
    }
}

/// The `Rdm` of `ep`, an FI_EP_RDM endpoint whose fi_close has not begun
/// (the caller holds its progress gate open); `None` before its open op
/// set it.
fn of_endpoint(ep: &Endpoint) -> Option<Arc<Rdm>> {
    // SAFETY: The endpoint's head; `prov_data` is null or the reference
    // `open` stored, which only `RdmEp::close` takes back, after fi_close began.
    let raw = unsafe { (*ep.public().cast::<abi::fid>()).prov_data };
    if raw.is_null() {
        return None;
    }
    // SAFETY: As above: a live `Arc<Rdm>` reference.
    Some(unsafe { ArcBorrow::from_raw(raw.cast::<Rdm>()) }.into())
}

/// The MSG info an RDM info was made from (see `info::rdm_twin`), with
/// tagged messages when `tagged` (the rendezvous' bytes travel as one).
fn msg_info_of(info: *const abi::fi_info, tagged: bool) -> Result<InfoBox> {
    // SAFETY: The core checked the info and its attrs.
    let mut b = unsafe { InfoBox::copy_of(info) }?;
    // SAFETY: A copy of a checked info: its attrs are set.
    unsafe { b.make_msg_twin(tagged) };
    Ok(b)
}

/// Opens the RDM layer of `e`: its listener and internal queues.
///
/// # Safety
///
/// `info` is a checked info, valid for the call.
unsafe fn open(e: &Endpoint, info: *const abi::fi_info) -> Result {
    // SAFETY: The caller's guarantee.
    if unsafe { (*info).mode } & abi::FI_RX_CQ_DATA != 0 {
        // Its infos never offer the mode: refused, not ignored.
        return Err(EINVAL);
    }
    let rndv = crate::backend::ProviderEp::offers_tagged(e);
    let msg_info = msg_info_of(info, rndv)?;
    let rdm = Arc::pin_init(
        try_pin_init!(Rdm {
            work <- new_work!("kofi_rdm"),
            ep: core::ptr::from_ref(e),
            max_msg: e.limits.max_msg_size,
            directed: e.limits.caps & FI_DIRECTED_RECV != 0,
            rndv,
            calls: AtomicUsize::new(0),
            left_to_calls: AtomicBool::new(false),
            state <- new_mutex!(
                State {
                    closing: false,
                    msg_info,
                    name: unreachable_name(),
                    av: None,
                    peers: KVec::new(),
                    conns: KVec::new(),
                    ops: KVec::new(),
                    recvs: KVec::new(),
                    multis: KVec::new(),
                    min_multi_recv: MIN_MULTI_RECV_DEFAULT,
                    inbound: KVec::new(),
                    gen: 0,
                    next_id: 0,
                    copied: 0,
                    conn_cache: abi::KOFI_RDM_CONN_CACHE_DEFAULT as usize,
                    peers_max: abi::KOFI_RDM_PEERS_MAX as usize,
                    clock: 0,
                    pep: None,
                    cq: None,
                    eq: None,
                },
                "kofi_rdm_state"
            ),
        }? Error),
        GFP_KERNEL,
    )?;
    {
        let mut s = rdm.state.lock();
        if let Err(err) = cm::listen(&rdm, &mut s) {
            s.closing = true;
            s.pep = None;
            s.cq = None;
            s.eq = None;
            return Err(err);
        }
    }
    // SAFETY: The core's endpoint head, which nothing else writes while
    // it opens; the reference is taken back in `close`.
    unsafe { (*e.fid()).prov_data = Arc::into_raw(rdm).cast_mut().cast() };
    Ok(())
}

/// A placeholder name before the listener has one.
fn unreachable_name() -> Name {
    let mut b = [0u8; crate::addr::SIN_LEN];
    b[..2].copy_from_slice(&crate::addr::AF_INET.to_ne_bytes());
    match Name::parse(&b) {
        Ok(n) => n,
        Err(_) => unreachable!(),
    }
}

/// The `Rdm` of `ep`, an open FI_EP_RDM endpoint (the core calls its
/// backend only between `open` and `close`).
fn rdm_of(ep: &Endpoint) -> Result<ArcBorrow<'_, Rdm>> {
    // SAFETY: The endpoint's head; `prov_data` is null or the reference
    // `open` stored, which only `close` takes back, after the core's last
    // call on the backend.
    let raw = unsafe { (*ep.fid()).prov_data };
    if raw.is_null() {
        return Err(errno::eopbadstate());
    }
    // SAFETY: As above: a live `Arc<Rdm>` reference, for as long as `ep`.
    Ok(unsafe { ArcBorrow::from_raw(raw.cast::<Rdm>()) })
}

/// The RDM layer as an endpoint's backend: every FI_EP_RDM endpoint's.
/// Connection management calls have none: -FI_ENOSYS.
pub(crate) struct RdmEp;

impl EpBackend for RdmEp {
    unsafe fn open(&self, ep: &Endpoint, info: *const abi::fi_info) -> Result {
        // SAFETY: The caller's guarantee.
        unsafe { open(ep, info) }
    }

    fn make_progress(&self, ep: &Endpoint) {
        // The gate only decides whether the endpoint is still open, as its
        // progress makes that of its MSG endpoints, each under a gate of its
        // own (of this lock's class).
        let rdm = {
            let open = ep.progress_gate.lock();
            if !*open {
                return;
            }
            of_endpoint(ep)
        };
        if let Some(rdm) = rdm {
            rdm.progress();
        }
    }

    fn close(&self, ep: &Endpoint) {
        // SAFETY: `open` stored an `Arc::into_raw` there, taken back once,
        // here: the core closes an endpoint it opened once.
        let rdm = unsafe { Arc::from_raw((*ep.fid()).prov_data.cast::<Rdm>()) };
        let (conns, pep, cq, eq) = {
            let mut s = rdm.state.lock();
            s.closing = true;
            // What is in flight is dropped with the endpoint, as on close of
            // an MSG endpoint; buffers go once the endpoints that use them
            // are shut.
            s.ops.clear();
            s.recvs.clear();
            s.multis.clear();
            s.inbound.clear();
            let conns = core::mem::take(&mut s.conns);
            (conns, s.pep.take(), s.cq.take(), s.eq.take())
        };
        // Endpoints, then the listener, then the queues they were bound to.
        drop(conns);
        drop(pep);
        drop(cq);
        drop(eq);
    }

    fn enable(&self, ep: &Endpoint) -> Result {
        let rdm = rdm_of(ep)?;
        // The consumer's fi_enable runs on its open endpoint.
        let av = ep.bindings.lock().av.clone();
        let mut s = rdm.state.lock();
        s.av = av;
        if s.av.is_none() {
            return Err(errno::enoav());
        }
        Ok(())
    }

    unsafe fn send(&self, ep: &Endpoint, m: &Msg<'_>, flags: u64) -> Result {
        let rdm = rdm_of(ep)?;
        rdm.call(|| tx::sendmsg(&rdm, m, None, flags))
    }

    unsafe fn recv(&self, ep: &Endpoint, m: &Msg<'_>, flags: u64) -> Result {
        let rdm = rdm_of(ep)?;
        rdm.call(|| rx::recvmsg(&rdm, m, flags))
    }

    unsafe fn rma(&self, ep: &Endpoint, kind: Rma, m: &RmaMsg<'_>, flags: u64) -> Result {
        let rdm = rdm_of(ep)?;
        rdm.call(|| tx::rma(&rdm, m, flags, kind == Rma::Read))
    }

    unsafe fn tsend(&self, ep: &Endpoint, m: &TaggedMsg<'_>, flags: u64) -> Result {
        let rdm = rdm_of(ep)?;
        rdm.call(|| tx::sendmsg(&rdm, &m.msg, Some(m.tag), flags))
    }

    unsafe fn trecv(&self, ep: &Endpoint, m: &TaggedMsg<'_>, flags: u64) -> Result {
        let rdm = rdm_of(ep)?;
        rdm.call(|| rx::trecvmsg(&rdm, m, flags))
    }

    unsafe fn atomic(&self, ep: &Endpoint, a: &abi::kofi_atomic, flags: u64) -> Result {
        let rdm = rdm_of(ep)?;
        rdm.call(|| tx::atomic(&rdm, a, flags))
    }

    fn cancel(&self, ep: &Endpoint, context: Context) -> Result {
        let rdm = rdm_of(ep)?;
        rdm.call(|| rx::cancel(&rdm, context))
    }

    fn getname(&self, ep: &Endpoint, buf: &mut [u8], len: &mut usize) -> Result {
        let rdm = rdm_of(ep)?;
        let s = rdm.state.lock();
        let name = s.name.as_bytes();
        *len = name.len();
        let dst = buf.get_mut(..name.len()).ok_or_else(errno::etoosmall)?;
        dst.copy_from_slice(name);
        Ok(())
    }

    fn getopt(
        &self,
        ep: &Endpoint,
        name: c_int,
        buf: &mut [u8],
        len: &mut usize,
    ) -> Option<Result> {
        let get = || {
            let rdm = rdm_of(ep)?;
            let s = rdm.state.lock();
            let v = match name as u32 {
                abi::KOFI_OPT_RDM_CONN_CACHE => s.conn_cache,
                abi::KOFI_OPT_RDM_CONNS => {
                    s.conns.iter().flatten().filter(|c| c.ep.is_some()).count()
                }
                abi::KOFI_OPT_RDM_PEERS => s.peers_max,
                abi::FI_OPT_CM_DATA_SIZE => 0,
                abi::FI_OPT_MIN_MULTI_RECV => s.min_multi_recv,
                _ => return Err(errno::enoprotoopt()),
            };
            Ok(v)
        };
        Some(get().and_then(|v| usize_option(buf, len, v)))
    }

    fn setopt(&self, ep: &Endpoint, name: c_int, val: &[u8]) -> Result {
        let name = name as u32;
        let known = [
            abi::KOFI_OPT_RDM_CONN_CACHE,
            abi::KOFI_OPT_RDM_PEERS,
            abi::FI_OPT_MIN_MULTI_RECV,
        ];
        if !known.contains(&name) {
            return Err(errno::enoprotoopt());
        }
        let v = usize_of(val)?;
        let rdm = rdm_of(ep)?;
        let mut s = rdm.state.lock();
        match name {
            abi::KOFI_OPT_RDM_CONN_CACHE if v != 0 => s.conn_cache = v,
            abi::KOFI_OPT_RDM_PEERS if v != 0 && v <= abi::KOFI_RDM_PEERS_MAX as usize => {
                s.peers_max = v
            }
            abi::FI_OPT_MIN_MULTI_RECV => s.min_multi_recv = v,
            _ => return Err(EINVAL),
        }
        Ok(())
    }
}
