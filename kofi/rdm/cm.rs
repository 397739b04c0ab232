// SPDX-License-Identifier: GPL-2.0

//! Connections of an RDM endpoint: its listener, connections made on first
//! use and accepted from peers, and what a lost connection fails.

use super::{wire, Conn, Phase, QueuesOwner, Rdm, State, Token, RX_BUFS, SEG};
use crate::abi;
use crate::addr::Name;
use crate::context::Context;
use crate::errno;
use crate::flags::*;
use crate::info::InfoBox;
use crate::lifecycle::{open_cq, open_endpoint, open_eq, open_passive, Owned};
use crate::object::{Bind, Endpoint};
use crate::queue::{EqTaken, QueueOwner};
use kernel::prelude::*;
use kernel::sync::Arc;

/// Connections an endpoint keeps at most (requests beyond are refused).
const CONNS_MAX: usize = 256;
/// Entries of the internal CQ: room for every connection's bounce buffers,
/// its most transmits in flight and a control segment, so it cannot overrun.
const CQ_SIZE: usize = CONNS_MAX * (RX_BUFS + super::TX_INFLIGHT_MAX + 1);
/// The internal EQ's entries: a burst of requests to every connection slot,
/// each with its FI_CONNECTED or FI_SHUTDOWN after, and room for errors, so
/// that an overrun cannot drop a peer's request (the default, 256, could
/// not hold a burst of CONNS_MAX requests and their events).
const EQ_SIZE: usize = 2 * CONNS_MAX + 64;

/// Opens the internal queues and the listener, and learns the endpoint's
/// name. The queues wake `rdm` ([`QueuesOwner`]).
pub(super) fn listen(rdm: &Arc<Rdm>, s: &mut State) -> Result {
    let owner: Arc<dyn QueueOwner> = Arc::new(QueuesOwner(rdm.clone()), GFP_KERNEL)?;
    // The endpoint being opened: its domain and fabric.
    let domain = &rdm.endpoint().domain;
    let fabric = &domain.fabric;
    let eq_attr = abi::fi_eq_attr {
        size: EQ_SIZE,
        ..Default::default()
    };
    s.eq = Some(open_eq(
        fabric,
        &eq_attr,
        Context::NONE,
        Some(owner.clone()),
    )?);
    let cq_attr = abi::fi_cq_attr {
        size: CQ_SIZE,
        format: abi::fi_cq_format_FI_CQ_FORMAT_DATA,
        ..Default::default()
    };
    let cq =
        s.cq.insert(open_cq(domain, &cq_attr, Context::NONE, Some(owner))?);
    // Progress the providers ask of the MSG endpoints is the endpoint's
    // progress to make (`Rdm::progress`), in the consumer's thread when one
    // sleeps: no work item between the socket and the consumer.
    cq.owner_makes_progress();
    // SAFETY: The MSG info, ours, valid.
    let pep = unsafe { open_passive(fabric, s.msg_info.as_ptr(), Context::NONE) }?;
    let listener = s.pep.insert(pep);
    listener.bind_eq(s.eq.as_deref().ok_or(EINVAL)?, 0)?;
    listener.listen()?;
    let mut raw_name = [0u8; 128];
    let mut len = 0;
    listener.provider_getname(&mut raw_name, &mut len)?;
    let name = Name::parse(&raw_name[..len.min(raw_name.len())]).map_err(|_| EINVAL)?;
    if name.is_wildcard() {
        // Peers could not reach us by it: the info needs a source address.
        return Err(errno::eaddrnotavail());
    }
    s.name = name;
    Ok(())
}

/// A new MSG endpoint bound to the internal queues, in `slot`.
fn msg_endpoint(
    rdm: &Rdm,
    s: &mut State,
    info: &InfoBox,
    slot: usize,
    gen: u32,
) -> Result<Owned<Endpoint>> {
    let context = Token::Conn { slot, gen }.encode();
    let domain = &rdm.endpoint().domain;
    // SAFETY: The info is ours, valid.
    let ep = unsafe { open_endpoint(domain, info.as_ptr(), context, &super::RdmEp) }?;
    ep.bind(Bind::Cq(s.cq.as_deref().ok_or(EINVAL)?), FI_SEND | FI_RECV)?;
    ep.bind(Bind::Eq(s.eq.as_deref().ok_or(EINVAL)?), 0)?;
    ep.enable()?;
    Ok(ep)
}

fn new_conn(rdm: &Rdm, s: &mut State, peer: usize, phase: Phase) -> Result<(usize, u32)> {
    rdm.evict_idle(s);
    let live = |s: &State| s.conns.iter().filter(|c| c.is_some()).count();
    if live(s) >= CONNS_MAX {
        rdm.drop_stuck(s);
    }
    if live(s) >= CONNS_MAX {
        return Err(errno::enospc());
    }
    let slot = State::slot(&mut s.conns, CONNS_MAX)?;
    let gen = s.next_gen();
    let mut bufs = KVec::with_capacity(RX_BUFS, GFP_KERNEL)?;
    for _ in 0..RX_BUFS {
        let mut b = KVec::with_capacity(wire::HDR_LEN + SEG, GFP_KERNEL)?;
        b.extend_with(wire::HDR_LEN + SEG, 0, GFP_KERNEL)?;
        bufs.push(b, GFP_KERNEL)?;
    }
    s.conns[slot] = Some(Conn {
        ep: None,
        gen,
        peer,
        phase,
        bufs,
        assembling: None,
        held: 0,
        inflight: 0,
        fetching: 0,
        last_used: 0,
        ctl: KBox::new([0u8; wire::HDR_LEN], GFP_KERNEL)?,
    });
    s.touch(slot);
    Ok((slot, gen))
}

/// Starts a connection to `peer`, which has sends waiting.
pub(super) fn connect(rdm: &Rdm, s: &mut State, peer: usize) -> Result {
    let (slot, gen) = new_conn(rdm, s, peer, Phase::Connecting)?;
    let result = (|| {
        let info = s.msg_info.dup()?;
        let ep = msg_endpoint(rdm, s, &info, slot, gen)?;
        let mut dest = [0u8; 128];
        let name = s.peers[peer].name;
        dest[..name.as_bytes().len()].copy_from_slice(name.as_bytes());
        let (param, len) = wire::cm_encode(&s.name);
        // SAFETY: `dest` holds a socket address (a peer's name), as the MSG
        // endpoints of every provider take.
        let connected = unsafe { ep.connect(dest.as_ptr().cast(), &param[..len]) };
        if let Some(Some(c)) = s.conns.get_mut(slot) {
            c.ep = Some(ep);
        }
        connected
    })();
    match result {
        Ok(()) => {
            s.peers[peer].connecting = Some(slot);
            Ok(())
        }
        Err(e) => {
            s.conns[slot] = None;
            Err(e)
        }
    }
}

/// Posts a connection's bounce buffers.
fn post_buffers(s: &mut State, slot: usize) -> Result {
    let Some(Some(c)) = s.conns.get_mut(slot) else {
        return Err(EINVAL);
    };
    for index in 0..c.bufs.len() {
        super::rx::post_buffer(c, slot, index)?;
    }
    Ok(())
}

/// Reads one event of the internal EQ and acts on it; false when empty.
impl Rdm {
    pub(super) fn one_event(&self, s: &mut State) -> bool {
        let Some(eq) = s.eq.as_ref().map(Owned::arc) else {
            return false;
        };
        // An internal EQ entry's object is the listener or one of our MSG
        // endpoints, whose context names its connection.
        let conn_of = |context: Context| match Token::decode(context) {
            Some(Token::Conn { slot, gen }) => Some((slot, gen)),
            _ => None,
        };
        match eq.take() {
            EqTaken::Empty => false,
            EqTaken::Failed(err) => {
                if let Some((slot, gen)) = conn_of(Context::of(err.context)) {
                    self.conn_lost(s, slot, gen, err.err);
                }
                true
            }
            EqTaken::Event(mut ev) => {
                match ev.event() {
                    abi::FI_CONNREQ => {
                        if let Some(info) = ev.take_info() {
                            self.requested(s, info, ev.cm_data());
                        }
                    }
                    abi::FI_CONNECTED => {
                        if let Some((slot, gen)) = conn_of(ev.context()) {
                            self.connected(s, slot, gen);
                        }
                    }
                    abi::FI_SHUTDOWN => {
                        if let Some((slot, gen)) = conn_of(ev.context()) {
                            // What the provider reported before the event
                            // (the peer's last messages, our sends it
                            // took) counts first.
                            self.drain_cq(s);
                            self.peer_shut(s, slot, gen);
                        }
                    }
                    _ => {}
                }
                true
            }
        }
    }

    /// A peer's connection request: accepted when it names a peer.
    fn requested(&self, s: &mut State, info: InfoBox, data: &[u8]) {
        let result = (|| {
            let name = wire::cm_decode(data).ok_or(EINVAL)?;
            // A peer's name is what it claims; the transport vouches for its
            // host only (the connection's source address): a claim of
            // another host is refused (rdm.rst, the trust model).
            // The provider set the request's destination to the
            // requester's address.
            let source = info.dest_addr().and_then(|b| Name::parse(b).ok());
            let source = source.ok_or(EINVAL)?;
            if !name.same_host(&source) {
                super::log_bad_peer(format_args!(
                    "a peer at {:?} claimed the name {:?}: refused\n",
                    source.as_bytes(),
                    name.as_bytes()
                ));
                return Err(EACCES);
            }
            let peer = s.peer_of(&name)?;
            let (slot, gen) = new_conn(self, s, peer, Phase::Accepting)?;
            let accepted = (|| {
                let ep = msg_endpoint(self, s, &info, slot, gen)?;
                let accepted = ep.accept(&[]);
                if let Some(Some(c)) = s.conns.get_mut(slot) {
                    c.ep = Some(ep);
                }
                accepted
            })();
            if accepted.is_err() {
                s.conns[slot] = None;
            }
            accepted
        })();
        if let Err(e) = result {
            // Why a peer is turned away: a bounded number of lines of their
            // own, so that bad peers' lines do not use them up.
            static SAID: core::sync::atomic::AtomicU32 = core::sync::atomic::AtomicU32::new(0);
            if SAID.fetch_add(1, core::sync::atomic::Ordering::Relaxed) < 16 {
                pr_info!("rdm: a connection request refused: {:?}\n", e);
            }
            if let (Some(pep), Ok(req)) = (s.pep.as_deref(), info.conn_req()) {
                let _ = pep.reject(req, &[]);
            }
        }
    }

    fn connected(&self, s: &mut State, slot: usize, gen: u32) {
        let Some(c) = s.conn(slot, gen) else {
            return;
        };
        c.phase = Phase::Connected;
        let peer = c.peer;
        if post_buffers(s, slot).is_err() {
            self.conn_lost(s, slot, gen, abi::FI_ENOMEM as i32);
            return;
        }
        let p = &mut s.peers[peer];
        if p.connecting == Some(slot) {
            p.connecting = None;
        }
        if p.tx.is_none() {
            p.tx = Some(slot);
            p.attempts = 0;
        }
        self.flush(s, peer);
    }

    /// The peer shut connection `slot`. Sends of ours posted on it may yet
    /// complete well: over RC the acknowledgement of what the peer took can
    /// come after its disconnect, and a peer often closes right after its
    /// last receive. They keep their own completions (the provider ends
    /// each, well or in error); the connection is lost once none is left.
    fn peer_shut(&self, s: &mut State, slot: usize, gen: u32) {
        let quiet = s.sends_quiet(slot);
        let Some(c) = s.conn(slot, gen) else {
            return;
        };
        if quiet || !matches!(c.phase, Phase::Connected | Phase::ByeReceived) {
            self.conn_lost(s, slot, gen, abi::FI_ECONNRESET as i32);
            return;
        }
        c.phase = Phase::Ending;
        let peer = c.peer;
        if s.peers[peer].tx == Some(slot) {
            s.peers[peer].tx = None;
        }
        // Nothing more comes on it: what it was bringing is dropped now.
        self.drop_inbound_of(s, slot);
    }

    /// A connection whose peer shut it (`Phase::Ending`) is lost once its
    /// last posted send completed.
    pub(super) fn end_if_quiet(&self, s: &mut State, slot: Option<usize>) {
        let Some(slot) = slot else {
            return;
        };
        let gen = match s.conns.get(slot) {
            Some(Some(c)) if c.phase == Phase::Ending => c.gen,
            _ => return,
        };
        if s.sends_quiet(slot) {
            self.conn_lost(s, slot, gen, abi::FI_ECONNRESET as i32);
        }
    }

    /// Closes a connection that failed or was shut: what was posted on it
    /// fails with `err`; queued sends try one new connection.
    pub(super) fn conn_lost(&self, s: &mut State, slot: usize, gen: u32, err: i32) {
        let Some(c) = s.conn(slot, gen) else {
            return;
        };
        if c.phase == Phase::Dead {
            return;
        }
        c.phase = Phase::Dead;
        let peer = c.peer;
        // No completion of it after this.
        drop(c.ep.take());
        let err = if err > 0 {
            err
        } else {
            abi::FI_ECONNRESET as i32
        };
        self.fail_conn_ops(s, slot, err);
        self.drop_inbound_of(s, slot);
        let p = &mut s.peers[peer];
        if p.tx == Some(slot) {
            p.tx = None;
        }
        if p.connecting == Some(slot) {
            p.connecting = None;
        }
        // Another connection of the peer may be up (crossing requests).
        let other = s
            .conns
            .iter()
            .enumerate()
            .find(|(i, c)| {
                *i != slot
                    && c.as_ref()
                        .is_some_and(|c| c.peer == peer && c.phase == Phase::Connected)
            })
            .map(|(i, _)| i);
        let closing = s.peer_closing(peer);
        let p = &mut s.peers[peer];
        if p.tx.is_none() && !closing {
            p.tx = other;
        }
        if let Some(Some(c)) = s.conns.get(slot) {
            if c.held == 0 {
                s.conns[slot] = None;
            }
        }
        let p = &s.peers[peer];
        if p.backlog.is_empty() || p.tx.is_some() || p.connecting.is_some() || closing {
            self.flush(s, peer);
            return;
        }
        // Queued sends: a new connection, a few times in a row at most; a
        // peer that is gone refuses every one.
        while s.peers[peer].attempts < super::CONNECT_TRIES {
            s.peers[peer].attempts += 1;
            if connect(self, s, peer).is_ok() {
                return;
            }
        }
        s.peers[peer].attempts = 0;
        self.fail_backlog(s, peer, err);
    }
}

impl Rdm {
    /// Sends control segment `op` on connection `slot`.
    fn send_control(&self, s: &mut State, slot: usize, op: u8) -> Result {
        let Some(Some(c)) = s.conns.get_mut(slot) else {
            return Err(EINVAL);
        };
        *c.ctl = wire::control(op);
        let ep = c.ep.as_deref().ok_or(EINVAL)?;
        let context = Token::Conn { slot, gen: c.gen }.encode();
        super::send_bytes(ep, &c.ctl[..], context)?;
        c.inflight += 1;
        Ok(())
    }

    /// Lets go of the least recently used idle connections while more than
    /// the cache are open.
    pub(super) fn evict_idle(&self, s: &mut State) {
        loop {
            let open = s
                .conns
                .iter()
                .flatten()
                .filter(|c| {
                    matches!(
                        c.phase,
                        Phase::Connecting | Phase::Accepting | Phase::Connected
                    )
                })
                .count();
            if open < s.conn_cache {
                return;
            }
            let idle = s
                .conns
                .iter()
                .enumerate()
                .filter_map(|(i, c)| Some((i, c.as_ref()?)))
                .filter(|(_, c)| {
                    c.phase == Phase::Connected
                        && c.inflight == 0
                        && c.fetching == 0
                        && c.assembling.is_none()
                        && c.held == 0
                        && s.peers[c.peer].backlog.is_empty()
                })
                .min_by_key(|(_, c)| c.last_used)
                .map(|(i, c)| (i, c.peer));
            let Some((slot, peer)) = idle else {
                return;
            };
            if self.send_control(s, slot, wire::OP_BYE).is_err() {
                return;
            }
            if let Some(Some(c)) = s.conns.get_mut(slot) {
                c.phase = Phase::ByeSent;
            }
            if s.peers[peer].tx == Some(slot) {
                s.peers[peer].tx = None;
            }
        }
    }

    /// With every connection in use, closes the least recently used one
    /// already being let go (BYE sent or acknowledged) whose peer has
    /// nothing queued: a peer that never answers BYE cannot hold a slot a
    /// new peer needs.
    fn drop_stuck(&self, s: &mut State) {
        let stuck = s
            .conns
            .iter()
            .enumerate()
            .filter_map(|(i, c)| Some((i, c.as_ref()?)))
            .filter(|(_, c)| {
                matches!(c.phase, Phase::ByeSent | Phase::ByeAcked)
                    && s.peers[c.peer].backlog.is_empty()
            })
            .min_by_key(|(_, c)| c.last_used)
            .map(|(i, c)| (i, c.gen));
        if let Some((slot, gen)) = stuck {
            self.conn_lost(s, slot, gen, abi::FI_ECONNRESET as i32);
        }
    }

    /// A control segment `op` arrived on connection `slot`.
    pub(super) fn control(&self, s: &mut State, slot: usize, gen: u32, op: u8) {
        let Some(c) = s.conn(slot, gen) else {
            return;
        };
        let peer = c.peer;
        match (c.phase, op) {
            (Phase::Connected, wire::OP_BYE) => {
                c.phase = Phase::ByeReceived;
                if s.peers[peer].tx == Some(slot) {
                    s.peers[peer].tx = None;
                }
                self.ack_if_done(s, slot, gen);
            }
            // Our BYE answered, or both asked at once: it is over.
            (Phase::ByeSent, wire::OP_BYE_ACK | wire::OP_BYE) => {
                self.conn_lost(s, slot, gen, abi::FI_ECONNRESET as i32)
            }
            _ => self.conn_lost(s, slot, gen, abi::FI_EPROTO as i32),
        }
    }

    /// Answers a BYE once our own sends on the connection completed.
    pub(super) fn ack_if_done(&self, s: &mut State, slot: usize, gen: u32) {
        let Some(c) = s.conn(slot, gen) else {
            return;
        };
        if c.phase != Phase::ByeReceived || c.inflight != 0 {
            return;
        }
        match self.send_control(s, slot, wire::OP_BYE_ACK) {
            Ok(()) => {
                if let Some(c) = s.conn(slot, gen) {
                    c.phase = Phase::ByeAcked;
                }
            }
            Err(e) => self.conn_lost(s, slot, gen, e.to_errno().unsigned_abs() as i32),
        }
    }

    /// A control segment went out (or failed: `err`).
    pub(super) fn control_sent(&self, s: &mut State, slot: usize, gen: u32, err: i32) {
        let Some(c) = s.conn(slot, gen) else {
            return;
        };
        c.inflight = c.inflight.saturating_sub(1);
        if err != 0 {
            self.conn_lost(s, slot, gen, err);
        }
    }
}
