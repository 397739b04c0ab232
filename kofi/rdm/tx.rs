// SPDX-License-Identifier: GPL-2.0

//! The transmit side of an RDM endpoint: sends cut into segments and RMA,
//! queued per peer and posted in order on the peer's connection.

use super::atomic::{self, Kind};
use super::{
    send_bytes, wire, Iovs, OpKind, Phase, Rdm, State, Token, TxOp, OPS_MAX, RNDV_MIN, SEG,
    TX_INFLIGHT_MAX,
};
use crate::abi;
use crate::compat::VecExt;
use crate::context::Context;
use crate::errno;
use crate::flags::*;
use crate::iovec::Descs;
use crate::msg::{Msg, Rma, RmaMsg, TaggedMsg};
use crate::object::Endpoint;
use crate::queue::Completion;
use core::ptr;
use kernel::prelude::*;

/// Which peer an operation goes to: the AV entry's name.
fn peer_for(s: &mut State, addr: u64) -> Result<usize> {
    let av = s.av.as_ref().ok_or_else(errno::enoav)?;
    let name = av.name_of(addr).ok_or(EINVAL)?;
    s.peer_of(&name)
}

/// Queues `op` for its peer and posts what can go now.
fn submit(rdm: &Rdm, s: &mut State, op: TxOp) -> Result {
    let peer = op.peer;
    let slot = State::slot(&mut s.ops, OPS_MAX)?;
    s.peers[peer].backlog.push(slot, GFP_KERNEL)?;
    s.ops[slot] = Some(op);
    let p = &s.peers[peer];
    if p.tx.is_none() && p.connecting.is_none() && !s.peer_closing(peer) {
        if let Err(e) = super::cm::connect(rdm, s, peer) {
            s.peers[peer].backlog.pop();
            s.ops[slot] = None;
            return Err(e);
        }
    }
    rdm.flush(s, peer);
    Ok(())
}

/// Refuses what an RDM operation cannot promise: it completes when the MSG
/// operation under it does, which is only FI_INJECT_COMPLETE on some
/// providers, and its peers' connections are not ordered against each
/// other (FI_FENCE).
fn refuse_unkept(flags: u64) -> Result {
    if flags & (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_FENCE) != 0 {
        return Err(errno::ebadflags());
    }
    Ok(())
}

/// `fi_sendmsg` and the other sends; `tag` for a tagged one (fi_tsendmsg).
pub(super) fn sendmsg(rdm: &Rdm, m: &Msg<'_>, tag: Option<u64>, flags: u64) -> Result {
    refuse_unkept(flags)?;
    let mut s = rdm.state.lock();
    if s.closing {
        return Err(errno::eopbadstate());
    }
    let peer = peer_for(&mut s, m.addr)?;
    let (mut iov, total) = Iovs::copy(m.local.iov)?;
    if total > u32::MAX as usize {
        return Err(errno::emsgsize());
    }
    let mut copy = None;
    if flags & FI_INJECT != 0 {
        // The consumer may reuse its buffer on return: send from a copy.
        let (one, bytes) = iov.inject_copy(total)?;
        iov = one;
        copy = Some(bytes);
    }
    let data = (flags & FI_REMOTE_CQ_DATA != 0).then_some(m.data);
    let header = wire::Header {
        total: total as u32,
        data,
        tag,
    };
    let op_kind = if rdm.rndv && copy.is_none() && total >= RNDV_MIN {
        // Its id is written when it is posted (the op's slot and generation).
        let rts = KBox::new(wire::rts(&header, 0), GFP_KERNEL)?;
        OpKind::Rndv { rts, granted: None }
    } else {
        let hdr = KBox::new(header.encode(), GFP_KERNEL)?;
        OpKind::Msg { hdr, sent: 0 }
    };
    let gen = s.next_gen();
    let kind = if tag.is_some() { FI_TAGGED } else { FI_MSG };
    let flags = kind | FI_SEND | (flags & FI_COMPLETION);
    let op = TxOp {
        len: total,
        iov,
        _copy: copy,
        ..TxOp::queued(gen, peer, m.context, flags, op_kind)
    };
    submit(rdm, &mut s, op)
}

/// `fi_readmsg`/`fi_writemsg`: one MSG RMA on the peer's connection.
pub(super) fn rma(rdm: &Rdm, m: &RmaMsg<'_>, flags: u64, read: bool) -> Result {
    let (remote, m) = (m.remote, &m.msg);
    refuse_unkept(flags)?;
    let mut s = rdm.state.lock();
    if s.closing {
        return Err(errno::eopbadstate());
    }
    let peer = peer_for(&mut s, m.addr)?;
    let (mut iov, total) = Iovs::copy(m.local.iov)?;
    let mut rma_iov = KVec::with_capacity(remote.len(), GFP_KERNEL)?;
    rma_iov.extend_from_slice(remote, GFP_KERNEL)?;
    let mut copy = None;
    if !read && flags & FI_INJECT != 0 {
        // The consumer may reuse its buffer on return: send from a copy.
        let (one, bytes) = iov.inject_copy(total)?;
        iov = one;
        copy = Some(bytes);
    }
    let gen = s.next_gen();
    let kind = if read { FI_READ } else { FI_WRITE };
    let flags = FI_RMA | kind | (flags & (FI_COMPLETION | FI_REMOTE_CQ_DATA));
    let rma = OpKind::Rma {
        read,
        rma_iov,
        data: m.data,
    };
    let op = TxOp {
        len: total,
        iov,
        _copy: copy,
        ..TxOp::queued(gen, peer, m.context, flags, rma)
    };
    submit(rdm, &mut s, op)
}

/// The elements of an array of `fi_ioc`s, each a 64-bit value, read.
///
/// # Safety
///
/// `iov` holds `count` entries, each naming `count` elements of kernel
/// memory the consumer lent for the call.
unsafe fn read_elements(iov: *const abi::fi_ioc, count: usize, out: &mut KVec<u8>) -> Result {
    if count == 0 {
        return Ok(());
    }
    // SAFETY: The caller's guarantee.
    for v in unsafe { core::slice::from_raw_parts(iov, count) } {
        // SAFETY: As above: `v.count` elements at `v.addr`.
        let bytes =
            unsafe { core::slice::from_raw_parts(v.addr.cast::<u8>(), v.count * atomic::SIZE) };
        for e in bytes.chunks_exact(atomic::SIZE) {
            let mut b = [0u8; 8];
            b.copy_from_slice(e);
            out.extend_from_slice(&u64::from_ne_bytes(b).to_le_bytes(), GFP_KERNEL)?;
        }
    }
    Ok(())
}

/// `fi_atomicmsg` and the other atomic operations: one frame to the peer,
/// done when the peer answered (with the old values of a fetching form).
pub(super) fn atomic(rdm: &Rdm, a: &abi::kofi_atomic, flags: u64) -> Result {
    refuse_unkept(flags)?;
    if flags & FI_REMOTE_CQ_DATA != 0 {
        return Err(errno::ebadflags());
    }
    // SAFETY: The core checked the operation.
    let m = unsafe { &*a.msg };
    let kind = if a.compare_count != 0 {
        Kind::Compare
    } else if a.result_count != 0 {
        Kind::Fetch
    } else {
        Kind::Plain
    };
    if !atomic::served(m.datatype, m.op, kind) {
        return Err(errno::eopnotsupp());
    }
    if m.rma_iov_count != 1 {
        // One remote array per operation.
        return Err(EINVAL);
    }
    // SAFETY: The core checked `rma_iov` holds `rma_iov_count` entries.
    let target = unsafe { *m.rma_iov };
    let count = target.count;
    if count == 0 || count > atomic::MAX_COUNT {
        return Err(EINVAL);
    }
    let request = wire::AtomicRequest {
        op: m.op as u8,
        datatype: m.datatype as u8,
        kind: kind as u8,
        id: 0,
        addr: target.addr,
        key: target.key,
        count,
    };
    let mut frame = KVec::with_capacity(request.frame_len(), GFP_KERNEL)?;
    // The id is set when it goes out (`post_next`).
    frame.extend_from_slice(&request.encode_header(), GFP_KERNEL)?;
    // SAFETY: The core checked the arrays and that their counts agree with
    // the remote one's.
    unsafe {
        if m.op == atomic::op::READ {
            // A read has no operands (their addresses may be null).
            for _ in 0..count {
                frame.extend_from_slice(&[0u8; atomic::SIZE], GFP_KERNEL)?;
            }
        } else {
            read_elements(m.msg_iov, m.iov_count, &mut frame)?;
        }
        read_elements(a.comparev, a.compare_count, &mut frame)?;
    }
    let mut results = KVec::with_capacity(a.result_count, GFP_KERNEL)?;
    if a.result_count != 0 {
        // SAFETY: As above.
        for r in unsafe { core::slice::from_raw_parts(a.resultv, a.result_count) } {
            results.push(*r, GFP_KERNEL)?;
        }
    }
    let mut s = rdm.state.lock();
    if s.closing {
        return Err(errno::eopbadstate());
    }
    let peer = peer_for(&mut s, m.addr)?;
    let gen = s.next_gen();
    let rw = if kind == Kind::Plain {
        FI_WRITE
    } else {
        FI_READ
    };
    let flags = FI_ATOMIC | rw | (flags & FI_COMPLETION);
    let kind = OpKind::Atomic {
        frame,
        results,
        count,
        answered: false,
    };
    let op = TxOp::queued(gen, peer, Context::of(m.context), flags, kind);
    submit(rdm, &mut s, op)
}

/// Queues our answer to a peer's atomic operation.
pub(super) fn answer(rdm: &Rdm, s: &mut State, peer: usize, frame: KVec<u8>) -> Result {
    let gen = s.next_gen();
    let op = TxOp::queued(gen, peer, Context::NONE, 0, OpKind::Answer { frame });
    submit(rdm, s, op)
}

/// What posting the next part of an operation did.
enum Posted {
    /// The operation is all posted.
    All,
    /// Part of it; more to post.
    Part,
    /// The connection's queue is full: later.
    Again,
}

/// One segment's buffers: the header then `len` payload bytes from `off`.
fn segment(op: &TxOp, hdr: &[u8; wire::HDR_LEN], off: usize, len: usize) -> Result<Iovs> {
    let mut out = match &op.iov {
        Iovs::Kvec(v) => {
            let mut out = Descs::with_capacity(v.len() + 1, GFP_KERNEL)?;
            out.push(
                abi::kvec {
                    iov_base: hdr.as_ptr().cast_mut().cast(),
                    iov_len: wire::HDR_LEN,
                },
                GFP_KERNEL,
            )?;
            Iovs::Kvec(out)
        }
        Iovs::Bvec(v) => {
            let mut out = Descs::with_capacity(v.len() + 1, GFP_KERNEL)?;
            let addr = hdr.as_ptr();
            // SAFETY: The header is kmalloc'ed (a `KBox`), in the linear map.
            let page = unsafe { abi::kofi_virt_to_page(addr.cast()) };
            out.push(
                abi::bio_vec {
                    bv_page: page,
                    bv_len: wire::HDR_LEN as u32,
                    bv_offset: (addr as usize % kernel::page::PAGE_SIZE) as u32,
                },
                GFP_KERNEL,
            )?;
            Iovs::Bvec(out)
        }
    };
    op.iov.as_iov().window_into(off, len, &mut out)?;
    Ok(out)
}

/// How a request or announcement names operation `ops[slot]` of generation
/// `gen` (see `op_named`).
fn op_id(slot: usize, gen: u32) -> u64 {
    (slot as u64) << 32 | u64::from(gen)
}

/// The operation a peer's answer names by `id` (`op_id`), with its slot;
/// `None` when that slot no longer holds it.
fn op_named(s: &mut State, id: u64) -> Option<(usize, &mut TxOp)> {
    let slot = (id >> 32) as usize;
    match s.ops.get_mut(slot) {
        Some(Some(op)) if u64::from(op.gen) == id & 0xffff_ffff => Some((slot, op)),
        _ => None,
    }
}

/// Sends the frame `bytes` of an operation that is all of it; then it is
/// all posted.
fn send_whole(ep: &Endpoint, bytes: &[u8], context: Context, all_posted: &mut bool) -> Result {
    send_bytes(ep, bytes, context)?;
    *all_posted = true;
    Ok(())
}

fn post_next(s: &mut State, slot: usize, conn: usize) -> Result<Posted> {
    let (ep, room) = match s.conns.get(conn) {
        Some(Some(c)) if c.phase == Phase::Connected && c.inflight < TX_INFLIGHT_MAX => {
            match c.ep.as_deref() {
                Some(ep) => (ep, TX_INFLIGHT_MAX - c.inflight),
                None => return Ok(Posted::Again),
            }
        }
        _ => return Ok(Posted::Again),
    };
    let Some(Some(op)) = s.ops.get_mut(slot) else {
        return Ok(Posted::All);
    };
    if op.conn.is_some_and(|c| c != conn) {
        // Part of it went on a connection since lost; it fails there.
        return Ok(Posted::All);
    }
    let context = Token::Tx { slot, gen: op.gen }.encode();
    let id = op_id(slot, op.gen);
    match &mut op.kind {
        OpKind::Atomic { frame, .. } => frame[16..24].copy_from_slice(&id.to_le_bytes()),
        OpKind::Rndv { rts, .. } => rts[wire::HDR_LEN..].copy_from_slice(&id.to_le_bytes()),
        _ => {}
    }
    let posted = match &op.kind {
        OpKind::Msg { hdr, sent } => {
            let off = *sent;
            let n = (op.len - off).min(SEG);
            let seg = segment(op, hdr, off, n)?;
            // The next segment follows at once when the connection has room
            // for it: the provider may join them (TCP: one skb for several).
            let more = if off + n < op.len && room > 1 {
                FI_MORE
            } else {
                0
            };
            // SAFETY: The consumer's buffers, valid until the operation
            // completes, which is after this segment's send; the header is
            // the op's; no descriptors.
            let posted = unsafe { ep.send(&seg.msg(context, 0), FI_COMPLETION | more) };
            if posted.is_ok() {
                if let OpKind::Msg { sent, .. } = &mut op.kind {
                    *sent += n;
                }
                op.all_posted = off + n == op.len;
            }
            posted
        }
        OpKind::Atomic { frame, .. } | OpKind::Answer { frame } => {
            send_whole(ep, frame, context, &mut op.all_posted)
        }
        // The bytes go when the receiver asks (`granted`).
        OpKind::Rndv { rts, .. } => send_whole(ep, &rts[..], context, &mut op.all_posted),
        OpKind::Rma {
            read,
            rma_iov,
            data,
        } => {
            let kind = if *read { Rma::Read } else { Rma::Write };
            let flags = FI_COMPLETION | (op.flags & FI_REMOTE_CQ_DATA);
            let m = RmaMsg {
                msg: op.iov.msg(context, *data),
                remote: rma_iov,
            };
            // SAFETY: The consumer's buffers, valid until the operation
            // completes; no descriptors.
            let posted = unsafe { ep.rma(kind, &m, flags) };
            if posted.is_ok() {
                op.all_posted = true;
            }
            posted
        }
    };
    match posted {
        Err(e) if e == errno::eagain() => return Ok(Posted::Again),
        Err(e) => return Err(e),
        Ok(()) => {}
    }
    op.posted += 1;
    op.conn = Some(conn);
    let posted = if op.all_posted {
        Posted::All
    } else {
        Posted::Part
    };
    if let Some(Some(c)) = s.conns.get_mut(conn) {
        c.inflight += 1;
    }
    s.touch(conn);
    Ok(posted)
}

impl Rdm {
    /// Posts the peer's queued operations, in order, while its connection
    /// takes them.
    pub(super) fn flush(&self, s: &mut State, peer: usize) {
        loop {
            let Some(conn) = s.peers[peer].tx else {
                return;
            };
            let Some(&slot) = s.peers[peer].backlog.first() else {
                return;
            };
            match post_next(s, slot, conn) {
                Ok(Posted::All) => {
                    s.peers[peer].backlog.remove_at(0);
                    self.finish_if_done(s, slot);
                }
                Ok(Posted::Part) => {}
                Ok(Posted::Again) => return,
                Err(e) => {
                    let partial = s.ops[slot].as_ref().is_some_and(|o| o.posted > 0);
                    if partial {
                        // The peer saw part of a message: only dropping the
                        // connection keeps it from taking the next as the rest.
                        let gen = s.conns[conn].as_ref().map_or(0, |c| c.gen);
                        self.conn_lost(s, conn, gen, e.to_errno().unsigned_abs() as i32);
                        return;
                    }
                    s.peers[peer].backlog.remove_at(0);
                    self.fail_op(s, slot, e.to_errno().unsigned_abs() as i32);
                }
            }
        }
    }

    /// Reports an operation whose parts all completed.
    fn finish_if_done(&self, s: &mut State, slot: usize) {
        let done = matches!(s.ops.get(slot), Some(Some(op))
            if op.all_posted && op.done == op.posted
                && !matches!(op.kind, OpKind::Atomic { answered: false, .. }
                    | OpKind::Rndv { granted: None, .. }));
        if !done {
            return;
        }
        let Some(op) = s.ops[slot].take() else {
            return;
        };
        if matches!(op.kind, OpKind::Answer { .. }) {
            return;
        }
        let _ = crate::report::complete_from(
            self.endpoint(),
            Completion {
                op_context: op.context,
                flags: op.flags,
                len: 0,
                buf: ptr::null_mut(),
                data: 0,
                tag: 0,
                src: FI_ADDR_NOTAVAIL,
            },
        );
    }

    /// Fails an operation with `err` (a positive FI_E*).
    pub(super) fn fail_op(&self, s: &mut State, slot: usize, err: i32) {
        let Some(op) = s.ops.get_mut(slot).and_then(|o| o.take()) else {
            return;
        };
        if let Some(i) = s.peers[op.peer].backlog.iter().position(|x| *x == slot) {
            s.peers[op.peer].backlog.remove_at(i);
        }
        if matches!(op.kind, OpKind::Answer { .. }) {
            // The peer's operation fails with the connection it came on.
            return;
        }
        let _ = crate::report::complete_error_of(
            self.endpoint(),
            abi::fi_cq_err_entry {
                op_context: op.context.as_ptr(),
                flags: op.flags,
                err,
                ..Default::default()
            },
        );
    }

    /// Fails what was posted on connection `conn`.
    pub(super) fn fail_conn_ops(&self, s: &mut State, conn: usize, err: i32) {
        for slot in 0..s.ops.len() {
            if matches!(&s.ops[slot], Some(op) if op.conn == Some(conn)) {
                self.fail_op(s, slot, err);
            }
        }
    }

    /// Fails everything queued for `peer`.
    pub(super) fn fail_backlog(&self, s: &mut State, peer: usize, err: i32) {
        while let Some(&slot) = s.peers[peer].backlog.first() {
            self.fail_op(s, slot, err);
            if s.peers[peer].backlog.first() == Some(&slot) {
                s.peers[peer].backlog.remove_at(0);
            }
        }
    }

    /// An internal transmit completed (`err`: 0 or a positive FI_E*).
    pub(super) fn tx_done(&self, s: &mut State, slot: usize, gen: u32, err: i32) {
        let Some(Some(op)) = s.ops.get_mut(slot) else {
            return;
        };
        if op.gen != gen {
            return;
        }
        let peer = op.peer;
        let conn = op.conn;
        // An atomic operation keeps its connection busy until answered; a
        // rendezvous until this completion is its last.
        let waits = err == 0
            && match op.kind {
                OpKind::Atomic {
                    answered: false, ..
                } => true,
                OpKind::Rndv { granted, .. } => granted.is_none() || op.done + 1 != op.posted,
                _ => false,
            };
        if !waits {
            self.release_inflight(s, conn);
        }
        let Some(Some(op)) = s.ops.get_mut(slot) else {
            return;
        };
        if err != 0 {
            let msg = matches!(op.kind, OpKind::Msg { .. } | OpKind::Rndv { .. });
            let conn = op.conn;
            self.fail_op(s, slot, err);
            if let (true, Some(c)) = (msg, conn) {
                // A message cut short would garble the peer's next one.
                let cgen = s.conns.get(c).and_then(|c| c.as_ref()).map_or(0, |c| c.gen);
                self.conn_lost(s, c, cgen, err);
            }
            self.end_if_quiet(s, conn);
            return;
        }
        op.done += 1;
        self.finish_if_done(s, slot);
        self.flush(s, peer);
        self.end_if_quiet(s, conn);
    }

    /// One transmit of connection `conn` is over.
    fn release_inflight(&self, s: &mut State, conn: Option<usize>) {
        if let Some(Some(c)) = conn.map(|c| s.conns.get_mut(c)).unwrap_or(None) {
            c.inflight = c.inflight.saturating_sub(1);
            let cgen = c.gen;
            if let Some(c) = conn {
                self.ack_if_done(s, c, cgen);
            }
        }
    }

    /// Peer `peer` answered atomic operation `id` with `status` (0 or a
    /// positive FI_E*) and, when it fetched, the old values. An answer to
    /// nothing of ours is the peer breaking the protocol (`Err`).
    pub(super) fn answered(
        &self,
        s: &mut State,
        peer: usize,
        id: u64,
        status: u32,
        values: &[u8],
    ) -> Result<(), ()> {
        let Some((slot, op)) = op_named(s, id) else {
            return Err(());
        };
        if op.peer != peer {
            return Err(());
        }
        let OpKind::Atomic {
            results,
            count,
            answered,
            ..
        } = &mut op.kind
        else {
            return Err(());
        };
        if *answered {
            return Err(());
        }
        if status == 0 && !results.is_empty() {
            if values.len() != *count * atomic::SIZE {
                return Err(());
            }
            let mut at = values.chunks_exact(atomic::SIZE);
            for r in results.iter() {
                for i in 0..r.count {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(at.next().ok_or(())?);
                    let v = u64::from_le_bytes(b);
                    // SAFETY: The consumer lent `r.count` elements at
                    // `r.addr` until the operation completes (the core
                    // checked the counts add up to `count`).
                    unsafe { r.addr.cast::<u64>().add(i).write_unaligned(v) };
                }
            }
        }
        *answered = true;
        let sent = op.all_posted && op.done == op.posted;
        let conn = op.conn;
        if sent {
            self.release_inflight(s, conn);
        }
        if status != 0 {
            self.fail_op(s, slot, status as i32);
        } else {
            self.finish_if_done(s, slot);
        }
        // The connection may take what waited for room.
        self.flush(s, peer);
        Ok(())
    }

    /// Peer `peer` asked for `cts.len` bytes of our announced message
    /// `cts.id`: they go as one tagged message on the connection the
    /// announcement went on. A request naming an operation no longer there
    /// (failed with its connection) is stale and ignored; one for something
    /// else of ours, or for more than the message, is the peer breaking the
    /// protocol (`Err`).
    pub(super) fn granted(&self, s: &mut State, peer: usize, cts: wire::Cts) -> Result<(), ()> {
        let Some((slot, op)) = op_named(s, cts.id) else {
            return Ok(());
        };
        let len = cts.len as usize;
        let OpKind::Rndv { granted, .. } = &mut op.kind else {
            return Err(());
        };
        if op.peer != peer || granted.is_some() || !op.all_posted || len > op.len {
            return Err(());
        }
        *granted = Some(len);
        let conn = op.conn;
        if len > 0 {
            if let Err(e) = send_granted(s, slot, cts.id, len) {
                // The receiver waits for these bytes: only dropping the
                // connection releases its receive.
                if let Some(c) = conn {
                    let cgen = s.conns.get(c).and_then(|c| c.as_ref()).map_or(0, |c| c.gen);
                    self.conn_lost(s, c, cgen, e.to_errno().unsigned_abs() as i32);
                }
                return Ok(());
            }
        } else if matches!(&s.ops[slot], Some(op) if op.done == op.posted) {
            // Dropped by the receive, and the announcement already went:
            // the operation is over.
            self.release_inflight(s, conn);
        }
        self.finish_if_done(s, slot);
        self.flush(s, peer);
        Ok(())
    }
}

/// Sends the first `len` bytes of rendezvous operation `slot` (announced as
/// `id`) as a tagged message with tag `id`, into the receive the peer
/// posted for them. It takes no transmit slot of its own: the announcement's
/// is kept for it.
fn send_granted(s: &mut State, slot: usize, id: u64, len: usize) -> Result {
    let Some(Some(op)) = s.ops.get(slot) else {
        return Err(EINVAL);
    };
    let conn = op.conn.ok_or(EINVAL)?;
    let ep = match s.conns.get(conn) {
        Some(Some(c)) if c.phase.receives() => c.ep.as_deref().ok_or(EINVAL)?,
        _ => return Err(EINVAL),
    };
    let context = Token::Tx { slot, gen: op.gen }.encode();
    let window;
    let iov = if len == op.len {
        op.iov.as_iov()
    } else {
        window = op.iov.as_iov().window(0, len)?;
        window.as_iov()
    };
    let m = TaggedMsg {
        msg: Msg::connected(iov, context),
        tag: id,
        ignore: 0,
    };
    // SAFETY: The consumer's buffers, valid until the operation completes,
    // which is after this send's completion; no descriptors.
    unsafe { ep.tsend(&m, FI_COMPLETION) }?;
    if let Some(Some(op)) = s.ops.get_mut(slot) {
        op.posted += 1;
    }
    Ok(())
}
