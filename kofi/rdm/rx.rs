// SPDX-License-Identifier: GPL-2.0

//! The receive side of an RDM endpoint: bounce buffers on each connection,
//! messages assembled from their segments, matched in arrival order against
//! the consumer's receives.

use super::atomic::{self, Kind};
use super::{
    wire, Conn, Held, Inbound, Iovs, Multi, MultiState, Phase, Rdm, Recv, State, Take, Token,
    Wants, COPIED_MAX,
};
use crate::abi;
use crate::addr::Name;
use crate::compat::VecExt;
use crate::context::Context;
use crate::errno;
use crate::flags::*;
use crate::iov::Iov;
use crate::lifecycle::Owned;
use crate::msg::{Msg, TaggedMsg};
use crate::queue::{Completion, Taken};
use core::ptr;
use kernel::prelude::*;

/// Receives posted at most (-FI_EAGAIN beyond).
const RECVS_MAX: usize = 4096;

/// Posts bounce buffer `index` of `c` (in `slot`) on its endpoint.
pub(super) fn post_buffer(c: &mut Conn, slot: usize, index: usize) -> Result {
    let context = Token::Rx {
        slot,
        gen: c.gen,
        index,
    }
    .encode();
    let ep = c.ep.as_deref().ok_or(EINVAL)?;
    let buf = &mut c.bufs[index];
    let kvec = abi::kvec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let m = Msg::connected(Iov::Kvec(core::slice::from_ref(&kvec)), context);
    // SAFETY: The bounce buffer is the connection's, touched by nothing
    // else while posted, and freed only with the connection, after its
    // endpoint closed; no descriptors.
    unsafe { ep.recv(&m, FI_COMPLETION) }
}

/// Gives buffer `index` of connection `slot` back: reposted while the
/// connection is up, and the connection freed when dead and unheld.
fn release_buffer(s: &mut State, slot: usize, index: usize, was_held: bool) -> Result {
    let Some(Some(c)) = s.conns.get_mut(slot) else {
        return Ok(());
    };
    if was_held {
        c.held -= 1;
    }
    match c.phase {
        p if p.receives() => post_buffer(c, slot, index),
        Phase::Dead if c.held == 0 && c.assembling.is_none() => {
            s.conns[slot] = None;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Keeps the `len` payload bytes in buffer `index` of connection `slot` for
/// an unmatched message: copied out, the buffer going back at once, while
/// the endpoint's copies stay within `COPIED_MAX`; else in the buffer
/// itself, which the connection then goes without until a receive takes
/// the message.
fn hold(s: &mut State, slot: usize, index: usize, len: usize) -> Result<Held> {
    let Some(Some(c)) = s.conns.get_mut(slot) else {
        return Err(EINVAL);
    };
    if s.copied + len <= COPIED_MAX {
        let bytes = &c.bufs[index][wire::HDR_LEN..wire::HDR_LEN + len];
        let mut copy = KVVec::new();
        // Without memory for a copy, the buffer itself.
        if copy.extend_from_slice(bytes, GFP_KERNEL).is_ok() {
            release_buffer(s, slot, index, false)?;
            s.copied += len;
            return Ok(Held::Copy(copy));
        }
    }
    c.held += 1;
    Ok(Held::Buffer { index, len })
}

/// Payload bytes of segment `h`.
fn held_len(h: &Held) -> usize {
    match h {
        Held::Buffer { len, .. } => *len,
        Held::Copy(copy) => copy.len(),
    }
}

/// Bytes of `held` copied out of their buffers.
fn copied_len(held: &[Held]) -> usize {
    held.iter()
        .map(|h| match h {
            Held::Copy(copy) => copy.len(),
            Held::Buffer { .. } => 0,
        })
        .sum()
}

/// The source a receive takes messages from: any, or with
/// FI_DIRECTED_RECV the AV entry `addr` names.
fn source_of(rdm: &Rdm, s: &State, addr: u64) -> Result<Option<Name>> {
    if !rdm.directed || addr == FI_ADDR_UNSPEC {
        return Ok(None);
    }
    let av = s.av.as_ref().ok_or_else(errno::enoav)?;
    Ok(Some(av.name_of(addr).ok_or(EINVAL)?))
}

/// The first message that arrived, that no receive took or claimed, and
/// that a receive wanting `wants` from `from` takes.
fn first_unexpected(s: &State, wants: Wants, from: Option<Name>) -> Option<usize> {
    s.inbound.iter().position(|ib| {
        ib.recv.is_none()
            && ib.claimed.is_none()
            && wants.takes(ib.tag)
            && !matches!(from, Some(f) if s.peers[ib.peer].name != f)
    })
}

/// A message from `peer` on connection `slot` begins (`h`: its header;
/// `held`: the buffers it holds; `announced`: the sender's id of a
/// rendezvous): entered as inbound, with the first posted receive that takes
/// it, in posting order, taken off the posted ones. Its index, and that
/// receive; on an error it is not entered.
fn arrive(
    s: &mut State,
    slot: usize,
    peer: usize,
    h: &wire::Header,
    held: KVec<Held>,
    announced: Option<u64>,
) -> Result<(usize, Option<Recv>)> {
    let total = h.total as usize;
    let id = s.next_id;
    s.next_id += 1;
    let ib = Inbound {
        id,
        conn: slot,
        peer,
        total,
        got: 0,
        data: h.data,
        tag: h.tag,
        claimed: None,
        recv: None,
        held,
        announced,
    };
    s.inbound.push(ib, GFP_KERNEL)?;
    let i = s.inbound.len() - 1;
    let name = s.peers[peer].name;
    let Some(r) = s.recvs.iter().position(|r| r.takes(h.tag, &name)) else {
        return Ok((i, None));
    };
    let recv = if s.recvs[r].multi.is_some() {
        match carve(s, r, total) {
            Ok(share) => share,
            Err(e) => {
                // Nothing of it stays behind.
                s.inbound.pop();
                return Err(e);
            }
        }
    } else {
        s.recvs.remove_at(r)
    };
    Ok((i, Some(recv)))
}

/// Gives `recv` the first message waiting that it takes, or posts it; a
/// multi-receive buffer takes every waiting message it can.
fn post(rdm: &Rdm, s: &mut State, recv: Recv) -> Result {
    if s.recvs.len() >= RECVS_MAX {
        return Err(errno::eagain());
    }
    let Some(id) = recv.multi.as_ref().map(|m| m.id) else {
        match first_unexpected(s, recv.wants, recv.from) {
            Some(i) => rdm.take_inbound(s, i, recv),
            None => s.recvs.push(recv, GFP_KERNEL)?,
        }
        return Ok(());
    };
    let (wants, from) = (recv.wants, recv.from);
    if let Err(e) = s.recvs.push(recv, GFP_KERNEL) {
        if let Some(i) = s.multis.iter().position(|m| m.id == id) {
            s.multis.remove_at(i);
        }
        return Err(e.into());
    }
    while let Some(i) = first_unexpected(s, wants, from) {
        let Some(at) = s
            .recvs
            .iter()
            .position(|r| r.multi.as_ref().is_some_and(|m| m.id == id))
        else {
            break;
        };
        let share = carve(s, at, s.inbound[i].total)?;
        rdm.take_inbound(s, i, share);
    }
    Ok(())
}

/// A message of `total` bytes takes its share of the multi-receive buffer
/// posted at `recvs[at]`: a receive over the buffer's next free bytes. The
/// buffer is released (no longer posted) once less than the minimum is
/// left; a message larger than what is left is truncated (FI_ETRUNC).
fn carve(s: &mut State, at: usize, total: usize) -> Result<Recv> {
    let min = s.min_multi_recv.max(1);
    let r = &mut s.recvs[at];
    let Some(m) = r.multi.as_mut() else {
        return Err(EINVAL);
    };
    let room = m.len - m.used;
    let iov = Iovs::one(m.base.wrapping_add(m.used), room);
    m.used = (m.used + total.min(room)).next_multiple_of(8).min(m.len);
    let (id, released) = (m.id, m.len - m.used < min);
    let share = Recv {
        context: r.context,
        flags: r.flags,
        iov,
        cap: room,
        from: r.from,
        wants: r.wants,
        take: Take::Copy,
        multi: None,
        parent: Some(id),
    };
    if released {
        s.recvs.remove_at(at);
    }
    if let Some(st) = s.multis.iter_mut().find(|st| st.id == id) {
        st.outstanding += 1;
        st.released |= released;
    }
    Ok(share)
}

/// `fi_recvmsg` and the other receives.
pub(super) fn recvmsg(rdm: &Rdm, m: &Msg<'_>, flags: u64) -> Result {
    let mut s = rdm.state.lock();
    if s.closing {
        return Err(errno::eopbadstate());
    }
    let from = source_of(rdm, &s, m.addr)?;
    let (iov, cap) = Iovs::copy(m.local.iov)?;
    let multi = if flags & FI_MULTI_RECV != 0 {
        // One buffer of the kernel's address space: each message's
        // completion points into it.
        let base = match &iov {
            Iovs::Kvec(v) if v.len() == 1 => v[0].iov_base.cast::<u8>(),
            _ => return Err(EINVAL),
        };
        let id = s.next_id;
        s.next_id += 1;
        s.multis.push(
            MultiState {
                id,
                context: m.context,
                outstanding: 0,
                released: false,
            },
            GFP_KERNEL,
        )?;
        Some(Multi {
            id,
            base,
            len: cap,
            used: 0,
        })
    } else {
        None
    };
    let recv = Recv {
        context: m.context,
        flags: FI_MSG | FI_RECV | (flags & FI_COMPLETION),
        iov,
        cap,
        from,
        wants: Wants::Untagged,
        take: Take::Copy,
        multi,
        parent: None,
    };
    post(rdm, &mut s, recv)
}

/// `fi_trecvmsg` and the other tagged receives (fi_tagged.h says what
/// FI_PEEK, FI_CLAIM and FI_DISCARD do; the core checked the combination).
pub(super) fn trecvmsg(rdm: &Rdm, m: &TaggedMsg<'_>, flags: u64) -> Result {
    let mut s = rdm.state.lock();
    if s.closing {
        return Err(errno::eopbadstate());
    }
    let from = source_of(rdm, &s, m.msg.addr)?;
    let wants = Wants::Tagged {
        tag: m.tag,
        ignore: m.ignore,
    };
    if flags & FI_PEEK != 0 {
        return peek(rdm, &mut s, m, wants, from, flags);
    }
    let take = if flags & FI_DISCARD != 0 {
        Take::Discard { report: true }
    } else if flags & FI_CLAIM != 0 {
        Take::Claimed
    } else {
        Take::Copy
    };
    let (iov, cap) = match take {
        // The buffers are not used (fi_tagged.h).
        Take::Discard { .. } => (Iovs::none(), 0),
        _ => Iovs::copy(m.msg.local.iov)?,
    };
    let recv = Recv {
        context: m.msg.context,
        flags: FI_TAGGED | FI_RECV | (flags & FI_COMPLETION),
        iov,
        cap,
        from,
        wants,
        take,
        multi: None,
        parent: None,
    };
    if flags & FI_CLAIM == 0 {
        return post(rdm, &mut s, recv);
    }
    let i = s
        .inbound
        .iter()
        .position(|ib| ib.claimed == Some(m.msg.context) && ib.recv.is_none())
        .ok_or_else(errno::enomsg)?;
    s.inbound[i].claimed = None;
    rdm.take_inbound(&mut s, i, recv);
    Ok(())
}

/// FI_PEEK: reports the first message waiting that `m` would take (its
/// length, tag and data; FI_ENOMSG when there is none), and claims or drops
/// it as `flags` say.
fn peek(
    rdm: &Rdm,
    s: &mut State,
    m: &TaggedMsg<'_>,
    wants: Wants,
    from: Option<Name>,
    flags: u64,
) -> Result {
    if flags & FI_CLAIM != 0 && s.inbound.iter().any(|ib| ib.claimed == Some(m.msg.context)) {
        // A context names one claim.
        return Err(EINVAL);
    }
    // The answer is the completion: always written.
    let rflags = FI_TAGGED | FI_RECV | FI_COMPLETION;
    let Some(i) = first_unexpected(s, wants, from) else {
        let entry = abi::fi_cq_err_entry {
            op_context: m.msg.context.as_ptr(),
            flags: rflags,
            tag: m.tag,
            err: abi::FI_ENOMSG as i32,
            ..Default::default()
        };
        return crate::report::complete_error_of(rdm.endpoint(), entry);
    };
    let (peer, total, data, tag) = {
        let ib = &s.inbound[i];
        (ib.peer, ib.total, ib.data, ib.tag)
    };
    let src = s.source(peer);
    let data_flag = if data.is_some() { FI_REMOTE_CQ_DATA } else { 0 };
    let reported = crate::report::complete_from(
        rdm.endpoint(),
        Completion {
            op_context: m.msg.context,
            flags: rflags | data_flag,
            len: total,
            buf: ptr::null_mut(),
            data: data.unwrap_or(0),
            tag: tag.unwrap_or(0),
            src,
        },
    );
    if flags & FI_DISCARD != 0 {
        let recv = Recv {
            context: m.msg.context,
            flags: rflags,
            iov: Iovs::none(),
            cap: 0,
            from,
            wants,
            take: Take::Discard { report: false },
            multi: None,
            parent: None,
        };
        rdm.take_inbound(s, i, recv);
    } else if flags & FI_CLAIM != 0 {
        s.inbound[i].claimed = Some(m.msg.context);
    }
    reported
}

/// The tag a receive's error entry carries.
fn tag_of(r: &Recv) -> u64 {
    match r.wants {
        Wants::Tagged { tag, .. } => tag,
        Wants::Untagged => 0,
    }
}

/// fi_cancel: takes back the oldest receive posted with `context` that no
/// message was matched to yet (-FI_EBUSY when one is being filled).
pub(super) fn cancel(rdm: &Rdm, context: Context) -> Result {
    let mut s = rdm.state.lock();
    if let Some(i) = s.recvs.iter().position(|r| r.context == context) {
        let r = s.recvs.remove_at(i);
        let mut flags = r.flags;
        if let Some(id) = r.multi.as_ref().map(|m| m.id) {
            // A multi-receive buffer: released now, or by its release
            // completion once the messages in it are done.
            let Some(at) = s.multis.iter().position(|m| m.id == id) else {
                return Ok(());
            };
            if s.multis[at].outstanding != 0 {
                s.multis[at].released = true;
                return Ok(());
            }
            s.multis.remove_at(at);
            flags |= FI_MULTI_RECV;
        }
        let entry = abi::fi_cq_err_entry {
            op_context: r.context.as_ptr(),
            flags,
            buf: r.iov.base(),
            tag: tag_of(&r),
            err: abi::FI_ECANCELED as i32,
            ..Default::default()
        };
        let _ = crate::report::complete_error_of(rdm.endpoint(), entry);
        return Ok(());
    }
    let filling = s
        .inbound
        .iter()
        .any(|ib| ib.recv.as_ref().is_some_and(|r| r.context == context));
    Err(if filling {
        errno::ebusy()
    } else {
        errno::enoent()
    })
}

impl Rdm {
    /// Reads the internal CQ; the number of entries handled.
    pub(super) fn drain_cq(&self, s: &mut State) -> usize {
        let Some(cq) = s.cq.as_ref().map(Owned::arc) else {
            return 0;
        };
        let mut handled = 0;
        let mut entries = [Completion::NONE; 16];
        loop {
            match cq.take(&mut entries) {
                Taken::Done(n) => {
                    for e in &entries[..n] {
                        self.completed(s, e.op_context, e.flags, e.len, e.data, 0);
                    }
                    handled += n;
                }
                Taken::Failed(err) => {
                    handled += 1;
                    self.completed(
                        s,
                        Context::of(err.op_context),
                        err.flags,
                        err.len,
                        err.data,
                        err.err.max(1),
                    );
                }
                Taken::Empty => return handled,
            }
        }
    }

    fn completed(&self, s: &mut State, ctx: Context, flags: u64, len: usize, data: u64, err: i32) {
        match Token::decode(ctx) {
            Some(Token::Tx { slot, gen }) => self.tx_done(s, slot, gen, err),
            Some(Token::Rx { slot, gen, index }) => {
                self.rx_done(s, slot, gen, index, flags, len, data, err)
            }
            Some(Token::Conn { slot, gen }) => self.control_sent(s, slot, gen, err),
            Some(Token::Data { slot, inbound }) => self.fetched(s, slot, inbound, len, err),
            None => {
                // A remote write with CQ data that took no buffer
                // (kofi_sock): its source is not known here.
                if err == 0 && flags & FI_REMOTE_CQ_DATA != 0 {
                    self.report_remote_write(len, data, FI_ADDR_NOTAVAIL);
                }
            }
        }
    }

    fn report_remote_write(&self, len: usize, data: u64, src: u64) {
        let _ = crate::report::complete_from(
            self.endpoint(),
            Completion {
                op_context: Context::NONE,
                flags: FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
                len,
                buf: ptr::null_mut(),
                data,
                tag: 0,
                src,
            },
        );
    }

    /// A bounce buffer was filled (or flushed, with `err`).
    #[allow(clippy::too_many_arguments)]
    fn rx_done(
        &self,
        s: &mut State,
        slot: usize,
        gen: u32,
        index: usize,
        flags: u64,
        len: usize,
        data: u64,
        err: i32,
    ) {
        if err == abi::FI_ECANCELED as i32 {
            // Taken back as its connection ended: the end itself comes
            // through the EQ (FI_SHUTDOWN), or from our own close.
            return;
        }
        let Some(c) = s.conn(slot, gen) else {
            return;
        };
        if !c.phase.receives() {
            return;
        }
        if err != 0 {
            self.conn_lost(s, slot, gen, err);
            return;
        }
        let peer = c.peer;
        if flags & FI_REMOTE_WRITE != 0 {
            // Remote CQ data of a write took this buffer (kofi_verbs).
            let src = s.source(peer);
            self.report_remote_write(len, data, src);
            if release_buffer(s, slot, index, false).is_err() {
                self.conn_lost(s, slot, gen, abi::FI_EIO as i32);
            }
            return;
        }
        s.touch(slot);
        // A rendezvous' announcement or request, between messages.
        let rndv = s.conns[slot].as_ref().and_then(|c| {
            let b = c.bufs[index].get(..len)?;
            match wire::frame_op(b)? {
                op @ (wire::OP_RTS | wire::OP_CTS) if c.assembling.is_none() => Some(op),
                _ => None,
            }
        });
        if let Some(op) = rndv {
            let ok = if op == wire::OP_RTS {
                self.announced(s, slot, index, len)
            } else {
                let cts = s.conns[slot]
                    .as_ref()
                    .and_then(|c| wire::Cts::decode(c.bufs[index].get(..len)?));
                if release_buffer(s, slot, index, false).is_err() {
                    self.conn_lost(s, slot, gen, abi::FI_EIO as i32);
                    return;
                }
                cts.ok_or(()).and_then(|cts| self.granted(s, peer, cts))
            };
            if ok.is_err() {
                super::log_bad_peer(format_args!(
                    "dropping a connection: bad rendezvous frame\n"
                ));
                self.conn_lost(s, slot, gen, abi::FI_EPROTO as i32);
            }
            return;
        }
        // An atomic request or answer, between messages.
        let frame = s.conns[slot].as_ref().and_then(|c| {
            let b = c.bufs[index].get(..len)?;
            match wire::frame_op(b)? {
                op @ (wire::OP_ATOMIC | wire::OP_ATOMIC_ACK) if c.assembling.is_none() => {
                    let mut copy = KVec::with_capacity(len, GFP_KERNEL).ok()?;
                    copy.extend_from_slice(b, GFP_KERNEL).ok()?;
                    Some((op, copy))
                }
                _ => None,
            }
        });
        if let Some((op, bytes)) = frame {
            if release_buffer(s, slot, index, false).is_err() {
                self.conn_lost(s, slot, gen, abi::FI_EIO as i32);
                return;
            }
            let ok = if op == wire::OP_ATOMIC {
                self.serve_atomic(s, peer, &bytes)
            } else {
                wire::answer_decode(&bytes)
                    .ok_or(())
                    .and_then(|(id, status, values)| {
                        // A status that is no error number is an I/O error.
                        let status = if status > 4095 { abi::FI_EIO } else { status };
                        self.answered(s, peer, id, status, values)
                    })
            };
            if ok.is_err() {
                super::log_bad_peer(format_args!("dropping a connection: bad atomic frame\n"));
                self.conn_lost(s, slot, gen, abi::FI_EPROTO as i32);
            }
            return;
        }
        let op = s.conns[slot]
            .as_ref()
            .and_then(|c| wire::control_op(c.bufs[index].get(..len)?));
        if let Some(op) = op {
            if release_buffer(s, slot, index, false).is_err() {
                self.conn_lost(s, slot, gen, abi::FI_EIO as i32);
                return;
            }
            self.control(s, slot, gen, op);
            return;
        }
        match self.segment(s, slot, index, len) {
            Ok(()) => {}
            // Ours, not the peer's: the connection goes with the error.
            Err(SegmentError::Local(e)) => {
                self.conn_lost(s, slot, gen, e.to_errno().unsigned_abs() as i32)
            }
            Err(e) => {
                super::log_bad_peer(format_args!(
                    "dropping a connection: bad segment ({:?})\n",
                    e
                ));
                self.conn_lost(s, slot, gen, abi::FI_EPROTO as i32);
            }
        }
    }

    /// Serves peer `peer`'s atomic request `bytes` on our regions and queues
    /// the answer. A malformed request is the peer breaking the protocol
    /// (`Err`); one we cannot serve is answered with an error.
    fn serve_atomic(&self, s: &mut State, peer: usize, bytes: &[u8]) -> Result<(), ()> {
        let r = wire::AtomicRequest::decode(bytes, atomic::MAX_COUNT).map_err(|_| ())?;
        let kind = Kind::from_u8(r.kind).ok_or(())?;
        let (datatype, aop) = (u32::from(r.datatype), u32::from(r.op));
        let fetches = kind != Kind::Plain;
        let mut old = [0u8; atomic::MAX_COUNT * atomic::SIZE];
        let old = &mut old[..r.count * atomic::SIZE];
        let status = if !atomic::served(datatype, aop, kind) {
            abi::FI_EOPNOTSUPP
        } else {
            let access = match (kind, aop) {
                (Kind::Plain, _) => FI_REMOTE_WRITE,
                (Kind::Fetch, atomic::op::READ) => FI_REMOTE_READ,
                _ => FI_REMOTE_READ | FI_REMOTE_WRITE,
            };
            let mut elements = [0u8; atomic::MAX_COUNT * atomic::SIZE];
            let elements = &mut elements[..r.count * atomic::SIZE];
            let done = crate::mr::update_span(
                &self.endpoint().domain,
                r.key,
                r.addr,
                access,
                elements,
                |b| {
                    old.copy_from_slice(b);
                    for (i, e) in b.chunks_exact_mut(atomic::SIZE).enumerate() {
                        let mut v = [0u8; 8];
                        v.copy_from_slice(e);
                        let (operand, compare) = r.values(bytes, i);
                        let new =
                            atomic::apply(datatype, aop, u64::from_ne_bytes(v), operand, compare);
                        e.copy_from_slice(&new.to_ne_bytes());
                    }
                },
            );
            match done {
                Ok(()) => 0,
                Err(e) => e.to_errno().unsigned_abs(),
            }
        };
        let mut frame = KVec::new();
        let built = frame
            .extend_from_slice(&wire::answer_header(r.id, status), GFP_KERNEL)
            .and_then(|()| {
                if status != 0 || !fetches {
                    return Ok(());
                }
                for e in old.chunks_exact(atomic::SIZE) {
                    let mut v = [0u8; 8];
                    v.copy_from_slice(e);
                    frame.extend_from_slice(&u64::from_ne_bytes(v).to_le_bytes(), GFP_KERNEL)?;
                }
                Ok(())
            });
        if built.is_err() {
            return Err(());
        }
        super::tx::answer(self, s, peer, frame).map_err(|_| ())
    }

    /// The announcement of `len` bytes in buffer `index` of connection
    /// `slot`: a message, matched like one; its buffer is held until a
    /// receive takes it (which bounds what a peer can announce unasked).
    fn announced(&self, s: &mut State, slot: usize, index: usize, len: usize) -> Result<(), ()> {
        let Some(Some(c)) = s.conns.get_mut(slot) else {
            return Ok(());
        };
        let (h, sender_id) =
            wire::rts_decode(c.bufs[index].get(..len).ok_or(())?).map_err(|_| ())?;
        let total = h.total as usize;
        if total == 0 || total > self.max_msg {
            return Err(());
        }
        let mut held = KVec::new();
        held.push(Held::Buffer { index, len: 0 }, GFP_KERNEL)
            .map_err(|_| ())?;
        c.held += 1;
        let peer = c.peer;
        let Ok((i, recv)) = arrive(s, slot, peer, &h, held, Some(sender_id)) else {
            if let Some(Some(c)) = s.conns.get_mut(slot) {
                c.held -= 1;
            }
            return Err(());
        };
        if let Some(recv) = recv {
            self.take_inbound(s, i, recv);
        }
        Ok(())
    }

    /// Announced message `i` has its receive: its buffers are posted as a
    /// tagged receive on the connection it was announced on, then the
    /// sender is asked for the bytes they take (none for a receive that
    /// drops it, which completes at once).
    fn request(&self, s: &mut State, i: usize) {
        let ib = &s.inbound[i];
        let (Some(r), Some(sender_id)) = (&ib.recv, ib.announced) else {
            return;
        };
        let len = match r.take {
            Take::Discard { .. } => 0,
            Take::Copy | Take::Claimed => ib.total.min(r.cap),
        };
        let (conn, peer, id) = (ib.conn, ib.peer, ib.id);
        let gen = s
            .conns
            .get(conn)
            .and_then(|c| c.as_ref())
            .map_or(0, |c| c.gen);
        let posted = if len == 0 {
            Ok(())
        } else {
            self.post_fetch(s, i, sender_id)
        };
        let asked = posted.and_then(|()| {
            let cts = wire::Cts {
                id: sender_id,
                len: len as u32,
            };
            let mut frame = KVec::new();
            frame.extend_from_slice(&cts.encode(), GFP_KERNEL)?;
            super::tx::answer(self, s, peer, frame)
        });
        if asked.is_err() {
            // Nothing else would complete it: the connection goes, and the
            // receive back to the front.
            self.conn_lost(s, conn, gen, abi::FI_EIO as i32);
            return;
        }
        if len == 0 {
            if let Some(i) = s.inbound.iter().position(|ib| ib.id == id) {
                s.inbound[i].got = s.inbound[i].total;
                self.deliver(s, i);
            }
        }
    }

    /// Posts the receive of announced message `i` as a tagged receive (tag
    /// the sender's id for it) on its connection.
    fn post_fetch(&self, s: &mut State, i: usize, sender_id: u64) -> Result {
        let ib = &s.inbound[i];
        let r = ib.recv.as_ref().ok_or(EINVAL)?;
        let Some(Some(c)) = s.conns.get_mut(ib.conn) else {
            return Err(EINVAL);
        };
        if !c.phase.receives() {
            return Err(EINVAL);
        }
        let ep = c.ep.as_deref().ok_or(EINVAL)?;
        let context = Token::Data {
            slot: ib.conn,
            inbound: ib.id as u32,
        }
        .encode();
        let m = TaggedMsg {
            msg: Msg::connected(r.iov.as_iov(), context),
            tag: sender_id,
            ignore: 0,
        };
        // SAFETY: A posted receive's buffers, the consumer's until its
        // completion, which comes after this one's; no descriptors.
        unsafe { ep.trecv(&m, FI_COMPLETION) }?;
        c.fetching += 1;
        Ok(())
    }

    /// The tagged receive of announced message `inbound` (its id's low
    /// bits) on connection `slot` completed with `len` bytes, or `err`.
    fn fetched(&self, s: &mut State, slot: usize, inbound: u32, len: usize, err: i32) {
        if err == abi::FI_ECANCELED as i32 {
            // Taken back as its connection ended (`drop_inbound_of`).
            return;
        }
        let Some(i) = s.inbound.iter().position(|ib| {
            ib.conn == slot
                && ib.announced.is_some()
                && ib.recv.is_some()
                && ib.id as u32 == inbound
        }) else {
            return;
        };
        let gen = match s.conns.get_mut(slot) {
            Some(Some(c)) => {
                c.fetching = c.fetching.saturating_sub(1);
                c.gen
            }
            _ => return,
        };
        let ib = &s.inbound[i];
        let want = ib.recv.as_ref().map_or(0, |r| ib.total.min(r.cap));
        if err != 0 || len != want {
            if err == 0 {
                super::log_bad_peer(format_args!("dropping a connection: rendezvous length\n"));
            }
            let err = if err != 0 { err } else { abi::FI_EPROTO as i32 };
            self.conn_lost(s, slot, gen, err);
            return;
        }
        s.inbound[i].got = s.inbound[i].total;
        self.deliver(s, i);
    }

    /// One segment of `len` bytes in buffer `index` of connection `slot`.
    fn segment(
        &self,
        s: &mut State,
        slot: usize,
        index: usize,
        len: usize,
    ) -> Result<(), SegmentError> {
        let Some(Some(c)) = s.conns.get(slot) else {
            return Ok(());
        };
        let bytes = c.bufs[index].get(..len).ok_or(SegmentError::Length)?;
        let h = wire::Header::decode(bytes).map_err(|_| SegmentError::Header)?;
        let payload = len - wire::HDR_LEN;
        let peer = c.peer;
        let id = match c.assembling {
            Some(id) => {
                let ib = s
                    .inbound
                    .iter()
                    .find(|ib| ib.id == id)
                    .ok_or(SegmentError::State)?;
                if ib.total != h.total as usize || ib.got + payload > ib.total || payload == 0 {
                    return Err(SegmentError::Length);
                }
                if ib.tag != h.tag {
                    return Err(SegmentError::Header);
                }
                id
            }
            None => {
                let total = h.total as usize;
                if total > self.max_msg || payload > total || (payload == 0 && total != 0) {
                    return Err(SegmentError::Length);
                }
                let (i, recv) =
                    arrive(s, slot, peer, &h, KVec::new(), None).map_err(SegmentError::Local)?;
                s.inbound[i].recv = recv;
                let id = s.inbound[i].id;
                if let Some(Some(c)) = s.conns.get_mut(slot) {
                    c.assembling = Some(id);
                }
                id
            }
        };
        let i = s
            .inbound
            .iter()
            .position(|ib| ib.id == id)
            .ok_or(SegmentError::State)?;
        let matched = s.inbound[i].recv.is_some();
        if matched {
            let at = s.inbound[i].got;
            if let (Some(r), Some(Some(c))) = (&s.inbound[i].recv, s.conns.get(slot)) {
                // SAFETY: A posted receive's buffers, the consumer's until
                // its completion, apart from the connection's bounce buffer.
                unsafe {
                    r.iov
                        .as_iov()
                        .copy_in(at, &c.bufs[index][wire::HDR_LEN..len])
                };
            }
            s.inbound[i].got += payload;
            release_buffer(s, slot, index, false).map_err(SegmentError::Local)?;
        } else {
            // Room for the entry first: nothing is lost if there is none.
            s.inbound[i]
                .held
                .reserve(1, GFP_KERNEL)
                .map_err(|_| SegmentError::Local(ENOMEM))?;
            let held = hold(s, slot, index, payload).map_err(SegmentError::Local)?;
            s.inbound[i]
                .held
                .push(held, GFP_KERNEL)
                .map_err(|_| SegmentError::Local(ENOMEM))?;
            s.inbound[i].got += payload;
        }
        if s.inbound[i].got == s.inbound[i].total {
            if let Some(Some(c)) = s.conns.get_mut(slot) {
                c.assembling = None;
            }
            if matched {
                self.deliver(s, i);
            }
        }
        Ok(())
    }

    /// A receive takes unmatched message `i`: its held segments are copied.
    pub(super) fn take_inbound(&self, s: &mut State, i: usize, recv: Recv) {
        let held = core::mem::take(&mut s.inbound[i].held);
        let (conn, id, announced) = (s.inbound[i].conn, s.inbound[i].id, s.inbound[i].announced);
        let mut at = 0;
        for h in held.iter() {
            let bytes = match h {
                Held::Buffer { index, len } => match s.conns.get(conn) {
                    Some(Some(c)) => &c.bufs[*index][wire::HDR_LEN..wire::HDR_LEN + len],
                    _ => &[][..],
                },
                Held::Copy(copy) => &copy[..],
            };
            // SAFETY: As in `segment`: the receive's buffers, the
            // consumer's until its completion.
            unsafe { recv.iov.as_iov().copy_in(at, bytes) };
            at += held_len(h);
        }
        s.inbound[i].recv = Some(recv);
        s.copied -= copied_len(&held);
        for h in held.iter() {
            let Held::Buffer { index, .. } = *h else {
                continue;
            };
            if release_buffer(s, conn, index, true).is_err() {
                let gen = s
                    .conns
                    .get(conn)
                    .and_then(|c| c.as_ref())
                    .map_or(0, |c| c.gen);
                self.conn_lost(s, conn, gen, abi::FI_EIO as i32);
                break;
            }
        }
        // `i` may have moved if the connection was lost; find it again.
        if announced.is_some() {
            if let Some(i) = s.inbound.iter().position(|ib| ib.id == id) {
                self.request(s, i);
            }
        } else if let Some(i) = s
            .inbound
            .iter()
            .position(|ib| ib.recv.is_some() && ib.got == ib.total)
        {
            self.deliver(s, i);
        }
    }

    /// Completes matched, whole message `i` to the consumer.
    fn deliver(&self, s: &mut State, i: usize) {
        let ib = s.inbound.remove_at(i);
        let Some(r) = ib.recv else {
            return;
        };
        let src = s.source(ib.peer);
        let data_flag = if ib.data.is_some() {
            FI_REMOTE_CQ_DATA
        } else {
            0
        };
        let len = match r.take {
            Take::Discard { report: false } => None,
            Take::Discard { report: true } => Some(0),
            Take::Copy | Take::Claimed if ib.total > r.cap => {
                let _ = crate::report::complete_error_of(
                    self.endpoint(),
                    abi::fi_cq_err_entry {
                        op_context: r.context.as_ptr(),
                        flags: r.flags | data_flag,
                        len: r.cap,
                        buf: r.iov.base(),
                        data: ib.data.unwrap_or(0),
                        tag: ib.tag.unwrap_or(0),
                        olen: ib.total - r.cap,
                        err: abi::FI_ETRUNC as i32,
                        ..Default::default()
                    },
                );
                None
            }
            Take::Copy | Take::Claimed => Some(ib.total),
        };
        if let Some(len) = len {
            let _ = crate::report::complete_from(
                self.endpoint(),
                Completion {
                    op_context: r.context,
                    flags: r.flags | data_flag,
                    len,
                    buf: r.iov.base(),
                    data: ib.data.unwrap_or(0),
                    tag: ib.tag.unwrap_or(0),
                    src,
                },
            );
        }
        if let Some(id) = r.parent {
            self.share_done(s, id);
        }
    }

    /// A message's share of multi-receive buffer `id` completed: once the
    /// buffer is released and none is in progress, its release completion
    /// (FI_MULTI_RECV alone in the flags) says the consumer has it back.
    fn share_done(&self, s: &mut State, id: u64) {
        let Some(i) = s.multis.iter().position(|m| m.id == id) else {
            return;
        };
        let m = &mut s.multis[i];
        m.outstanding -= 1;
        if !m.released || m.outstanding != 0 {
            return;
        }
        let m = s.multis.remove_at(i);
        let _ = crate::report::complete_from(
            self.endpoint(),
            Completion {
                op_context: m.context,
                flags: FI_MULTI_RECV | FI_COMPLETION,
                len: 0,
                buf: ptr::null_mut(),
                data: 0,
                tag: 0,
                src: FI_ADDR_NOTAVAIL,
            },
        );
    }

    /// Forgets what connection `slot` was assembling: a receive it had
    /// taken goes back to the front of the posted ones; one that took a
    /// claimed message fails, and a discard is done.
    pub(super) fn drop_inbound_of(&self, s: &mut State, slot: usize) {
        let Some(Some(c)) = s.conns.get_mut(slot) else {
            return;
        };
        c.fetching = 0;
        if let Some(id) = c.assembling.take() {
            if let Some(i) = s.inbound.iter().position(|ib| ib.id == id) {
                self.drop_inbound(s, slot, i);
            }
        }
        // Announced messages of it can no longer be fetched.
        while let Some(i) = s
            .inbound
            .iter()
            .position(|ib| ib.conn == slot && ib.announced.is_some())
        {
            self.drop_inbound(s, slot, i);
        }
    }

    /// Forgets message `i` of connection `slot`, as `drop_inbound_of` says.
    fn drop_inbound(&self, s: &mut State, slot: usize, i: usize) {
        let ib = s.inbound.remove_at(i);
        s.copied -= copied_len(&ib.held);
        let buffers = ib.held.iter().filter(|h| matches!(h, Held::Buffer { .. }));
        if let Some(Some(c)) = s.conns.get_mut(slot) {
            c.held -= buffers.count();
        }
        let Some(r) = ib.recv else {
            return;
        };
        let err = match r.take {
            Take::Copy => {
                let _ = s.recvs.insert(0, r, GFP_KERNEL);
                return;
            }
            Take::Discard { report: false } => return,
            Take::Discard { report: true } => 0,
            Take::Claimed => abi::FI_ECONNRESET as i32,
        };
        let entry = abi::fi_cq_err_entry {
            op_context: r.context.as_ptr(),
            flags: r.flags,
            tag: ib.tag.unwrap_or(0),
            err,
            ..Default::default()
        };
        let _ = if err == 0 {
            crate::report::complete_from(
                self.endpoint(),
                Completion {
                    op_context: r.context,
                    flags: r.flags,
                    len: 0,
                    buf: ptr::null_mut(),
                    data: 0,
                    tag: entry.tag,
                    src: FI_ADDR_NOTAVAIL,
                },
            )
        } else {
            crate::report::complete_error_of(self.endpoint(), entry)
        };
    }
}

/// Why a segment is refused: the peer broke the protocol, or (`Local`) this
/// side could not take it (no memory; the provider refused the bounce
/// buffer's repost, as on a connection it already ended).
#[derive(Debug)]
enum SegmentError {
    Header,
    Length,
    State,
    Local(Error),
}
