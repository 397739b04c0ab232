// SPDX-License-Identifier: GPL-2.0

//! The send path of a connection: the queue of operations, credits, SENDs
//! (inline, segmented or by rendezvous), RDMA READs and WRITEs, and their
//! completions.

use super::*;
use crate::kofi::kept::KeptBuffers;
use kernel::alloc::allocator::Kmalloc;

/// What posting a work request needs of the connection.
struct SendCaps {
    dev: Device,
    lkey: u32,
    max_sge: usize,
    max_sge_rd: usize,
    max_inline: usize,
}

impl SendCaps {
    fn of(g: &Inner) -> Result<SendCaps> {
        Ok(SendCaps {
            dev: g.dev.ok_or(EINVAL)?,
            lkey: g.lkey,
            max_sge: g.max_sge,
            max_sge_rd: g.max_sge_rd,
            max_inline: g.max_inline,
        })
    }
}

/// Splits bytes `offset .. offset + len` of `lent` into pieces that each
/// touch at most `max` of its kvecs or bio_vecs (a work request's SGE
/// limit).
pub(super) fn chunks(
    lent: &Lent,
    offset: usize,
    len: usize,
    max: usize,
) -> Result<KVec<(usize, usize)>> {
    let mut out = KVec::new();
    let mut at = offset;
    while at < offset + len {
        let n = span(lent, at, offset + len - at, max);
        if n == 0 {
            return Err(EINVAL);
        }
        out.push((at, n), GFP_KERNEL)?;
        at += n;
    }
    Ok(out)
}

/// How many of the bytes `offset .. offset + len` of `lent`, from the
/// first on, touch at most `max` of its kvecs or bio_vecs.
pub(super) fn span(lent: &Lent, offset: usize, len: usize, max: usize) -> usize {
    match lent {
        Lent::Kvecs(k) => span_of(k.kvecs().iter().map(|kv| kv.iov_len), offset, len, max),
        Lent::Pages(p) => span_of(
            p.bvecs().iter().map(|bv| bv.bv_len as usize),
            offset,
            len,
            max,
        ),
    }
}

/// [`span`] over the lengths of the buffers.
fn span_of(lens: impl Iterator<Item = usize>, offset: usize, len: usize, max: usize) -> usize {
    let (end, mut pos, mut at, mut pieces) = (offset + len, 0usize, offset, 0);
    for l in lens {
        let (lo, hi) = (pos, pos + l);
        pos = hi;
        if hi <= at || l == 0 {
            continue;
        }
        if lo >= end || pieces == max {
            break;
        }
        pieces += 1;
        at = hi.min(end);
    }
    at - offset
}

impl Sink {
    /// A region over `lent` for the READs landing in it when, piece by
    /// piece, they would be more than one per remote buffer (`split`) and
    /// one MR can take the buffers; else (also when the region cannot be
    /// had: it only saves READs) the buffers themselves.
    pub(super) fn over(g: &Inner, lent: &Lent, split: bool) -> Sink {
        let region = match (&g.domain, split) {
            (Some(d), true) => d.with_pd(|pd| Region::of_lent(pd, lent, false, g.iwarp)),
            _ => Ok(None),
        };
        match region {
            Ok(Some(r)) => Sink::Unposted(r),
            _ => Sink::Buffers,
        }
    }

    /// Where a READ of bytes `offset .. offset + len` of `lent` lands: in
    /// the registered sink, else in the buffers themselves, mapped in at
    /// most `max` SGEs.
    fn mapping(
        &self,
        caps: &SendCaps,
        lent: &Lent,
        offset: usize,
        len: usize,
        max: usize,
    ) -> Result<Mapping> {
        match self {
            Sink::Posted(region) => Mapping::in_region(caps.dev, region, offset, len),
            _ => Mapping::of_lent(caps.dev, lent, (offset, len), false, caps.lkey, max),
        }
    }
}

/// Frames a connection keeps for its next SENDs, and the largest it keeps
/// (an inject's, whole).
const FRAMES_KEPT: usize = 32;
const FRAME_KEPT_MAX: usize = HEADER_LEN + crate::INJECT_SIZE;

/// The buffers of SENDs that completed, kept for the next ones: a SEND's
/// header, or an inject's copy, takes no allocation once the connection is
/// under way (it took a kmalloc and a kfree per SEND).
pub(super) struct Frames(KeptBuffers<Kmalloc>);

impl Frames {
    pub(super) fn new() -> Result<Self> {
        Ok(Frames(KeptBuffers::new(FRAMES_KEPT, FRAME_KEPT_MAX)?))
    }

    /// A frame of `bytes`: room for the header, then them, with capacity
    /// for `more` bytes after (a payload copied in later).
    pub(super) fn frame(&mut self, bytes: &[u8], more: usize) -> Result<KVec<u8>> {
        let mut frame = self.0.take(HEADER_LEN + bytes.len() + more)?;
        frame.extend_with(HEADER_LEN, 0, GFP_KERNEL)?;
        frame.extend_from_slice(bytes, GFP_KERNEL)?;
        Ok(frame)
    }

    /// The frame of a SEND that completed (its mapping gone), for the next.
    fn keep(&mut self, frame: KVec<u8>) {
        self.0.keep(frame);
    }
}

/// Whether a failed send with `flags` is reported. Not an inject's without
/// FI_COMPLETION, for now (libfabric reports it): on rxe, the error at a
/// link's going down made consumers reconnect during the outage, and
/// connections made after that never completed (blk.rst). The connection's
/// end still reaches the consumer (FI_SHUTDOWN, cancelled receives); an
/// inject's success is reported, so counters count it.
fn reports_errors(flags: u64) -> bool {
    flags & FI_INJECT == 0 || flags & FI_COMPLETION != 0
}

impl Conn {
    /// Whether `op` asked for FI_FENCE and has not started.
    fn fenced(op: &TxOp) -> bool {
        match op {
            TxOp::Msg {
                done: Some((_, flags)),
                sent: 0,
                rndv: Rndv::No | Rndv::Try,
                ..
            } => flags & FI_FENCE != 0,
            TxOp::Rma { flags, next: 0, .. } => flags & FI_FENCE != 0,
            _ => false,
        }
    }

    fn queue_op(&self, g: &mut Inner, op: TxOp) -> Result {
        if g.queue.push(op).is_err() {
            return Err(fi_error(abi::FI_EAGAIN));
        }
        self.pump(g);
        Ok(())
    }

    /// Refuses FI_TRANSMIT_COMPLETE on iWARP: siw completes a SEND or an
    /// RDMA WRITE once TCP has its bytes, before the peer has them, so no
    /// more than FI_INJECT_COMPLETE is kept there (a zero-length READ after
    /// a write, which would wait for its placement, upset siw's read
    /// responses when other READs were in flight: verbs.rst).
    fn refuse_on_iwarp(g: &Inner, flags: u64) -> Result {
        if g.iwarp && flags & FI_TRANSMIT_COMPLETE != 0 {
            return Err(fi_error(abi::FI_EBADFLAGS));
        }
        Ok(())
    }

    /// A send from the consumer's buffers (`lent`) or, an inject's, of
    /// `len` bytes that `fill` copies into the frame that goes (after the
    /// header's room; a kept frame, see [`Frames`]); a tagged one has its
    /// `tag` (and FI_TAGGED in its `done` flags).
    pub(crate) fn send(
        &self,
        payload: Payload<impl FnOnce(&mut KVec<u8>) -> Result>,
        data: Option<u64>,
        tag: Option<u64>,
        done: Option<(Context, u64)>,
    ) -> Result {
        let len = match &payload {
            Payload::Lent(l) => l.len(),
            Payload::Inject { len, .. } if *len <= SEGMENT => *len,
            Payload::Inject { .. } => return Err(EINVAL),
        };
        if len > MAX_MSG {
            return Err(EINVAL);
        }
        let mut g = self.inner.lock();
        Self::ensure_connected(&g)?;
        Self::refuse_on_iwarp(&g, done.map_or(0, |(_, f)| f))?;
        let (lent, frame, rndv) = match payload {
            Payload::Lent(l) if len > RNDV_MIN => (Some(l), KVec::new(), Rndv::Try),
            Payload::Lent(l) => (Some(l), KVec::new(), Rndv::No),
            Payload::Inject { fill, .. } => {
                let mut frame = g.frames.frame(&[], len)?;
                fill(&mut frame)?;
                if frame.len() != HEADER_LEN + len {
                    return Err(EINVAL);
                }
                (None, frame, Rndv::No)
            }
        };
        let op = TxOp::Msg {
            lent,
            frame,
            len,
            sent: 0,
            data,
            tag,
            done,
            rndv,
        };
        self.queue_op(&mut g, op)
    }

    /// fi_read/fi_write (and writedata).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn rma(
        &self,
        write: bool,
        local: RmaLocal,
        parts: KVec<RmaPart>,
        data: Option<u64>,
        ctx: Context,
        flags: u64,
    ) -> Result {
        let len = local.len();
        if len > MAX_MSG {
            return Err(EINVAL);
        }
        let mut g = self.inner.lock();
        Self::ensure_connected(&g)?;
        if write {
            Self::refuse_on_iwarp(&g, flags)?;
        }
        // A WRITE sends from at most max_sge local pieces and a READ lands
        // in at most max_sge_rd (one on iWARP): an RMA over more goes in
        // more work requests, one per run of pieces. A READ's buffers in
        // more pieces get a region of their own instead, one READ per
        // remote buffer, when one MR can take them.
        let mut sink = Sink::Buffers;
        let parts = match &local {
            RmaLocal::Lent(l) => {
                let max = if write { g.max_sge } else { g.max_sge_rd };
                // Whole parts fit (the common case): nothing to split.
                let fits = parts.iter().all(|p| span(l, p.offset, p.len, max) == p.len);
                if !fits && !write {
                    sink = Sink::over(&g, l, true);
                }
                if fits || matches!(sink, Sink::Unposted(_)) {
                    parts
                } else {
                    let mut split = KVec::new();
                    for p in parts.iter() {
                        for (offset, n) in chunks(l, p.offset, p.len, max)?.iter() {
                            split.push(
                                RmaPart {
                                    key: p.key,
                                    addr: p.addr + (offset - p.offset) as u64,
                                    offset: *offset,
                                    len: *n,
                                },
                                GFP_KERNEL,
                            )?;
                        }
                    }
                    split
                }
            }
            RmaLocal::Copy(_) => parts,
        };
        let op = TxOp::Rma {
            write,
            local,
            parts,
            next: 0,
            len,
            data,
            ctx,
            flags,
            sink,
        };
        self.queue_op(&mut g, op)
    }

    /// Registers `reg` through this connection's QP: one work request per
    /// MR of the region, each in a slot of its own; the last one's
    /// completion (after the others', the send queue being in order) makes
    /// the region valid.
    pub(crate) fn post_reg(self: &Arc<Self>, reg: &Arc<RegState>) -> Result {
        let mut g = self.inner.lock();
        // An accepted QP is ready to send once rdma_accept returned (on IB
        // and RoCE; iWARP refuses until established, and it waits for that).
        if g.phase != Phase::Accepting {
            Self::ensure_connected(&g)?;
        }
        let g = &mut *g;
        reg.with_region(self, |region| {
            let wrs = region.wrs();
            // All or none: a region is never left half posted for want of
            // slots.
            if g.tx_free.len() < wrs {
                return Err(fi_error(abi::FI_EAGAIN));
            }
            let qp = g.res.as_ref().ok_or(EINVAL)?.qp()?;
            for index in 0..wrs {
                let slot = g.tx_free.pop().ok_or(EINVAL)?;
                if let Err(e) = qp.post_reg(slot, region, index) {
                    let _ = g.tx_free.push(slot, GFP_ATOMIC);
                    // Those posted complete in error: the QP is failing.
                    return Err(e);
                }
                g.tx_wr[slot - RX_DEPTH] = Some(if index + 1 == wrs {
                    TxWr::Reg(reg.clone())
                } else {
                    TxWr::RegPiece
                });
            }
            Ok(())
        })
    }

    /// Sends our greeting, a credit frame, once our regions are valid and
    /// the peer may hear it (an iWARP server speaks after the client). The
    /// peer sends nothing before it: a key it had from the connection's
    /// private data can be used at once. A greeting that cannot be posted
    /// ends the connection, which would wait for it forever.
    pub(super) fn greet(&self, g: &mut Inner) {
        if !g.greeting.ready || g.greeting.sent || (g.speaks_second && !g.greeting.heard) {
            return;
        }
        g.greeting.sent = true;
        if self.post_credit(g).is_err() {
            if let Some(res) = &g.res {
                res.id.disconnect();
            }
        }
    }

    /// An iWARP client's greeting the server has not answered: sent again,
    /// a few times, further apart each time. siw's server puts the QP's
    /// receive upcall on the socket only after it sent the MPA reply, so a
    /// first frame that came between the two waits in the socket, unread,
    /// until more data comes; the server speaks only once it heard us, and
    /// nothing more would come. The new frame makes siw read both.
    pub(super) fn nudge(&self, this: &Arc<Conn>) {
        let mut g = self.inner.lock();
        let unanswered = g.phase == Phase::Connected && g.greeting.sent && !g.greeting.heard;
        if !unanswered || g.greeting.nudges >= NUDGES_MAX || g.credits < 1 {
            return;
        }
        g.greeting.nudges += 1;
        if self.post_credit(&mut g).is_ok() {
            self.greeting_timer.arm(this, NUDGE_MS << g.greeting.nudges);
        }
    }

    /// Posts what the credits and free slots allow, in order, once the
    /// peer greeted us.
    pub(super) fn pump(&self, g: &mut Inner) {
        if !g.greeting.heard {
            return;
        }
        while g.phase == Phase::Connected || g.phase == Phase::Closing {
            if g.tx_free.is_empty() {
                return;
            }
            let Some(front) = g.queue.front() else {
                return;
            };
            // FI_FENCE: the operation starts once every work request posted
            // before it has completed. (Not a rendezvous send's FIN: credits
            // queued behind the fenced operation may be what the peer needs
            // to send it.)
            if Self::fenced(front) && g.tx_wr.iter().any(Option::is_some) {
                return;
            }
            if !self.tables_ready(g) {
                return;
            }
            let Some(front) = g.queue.front() else {
                return;
            };
            let need = match front {
                TxOp::Credit | TxOp::Fin { .. } => 1,
                // Their SENDs answer the peer's announcement, as OP_FIN
                // does; what comes before them takes no credit.
                TxOp::Cts { sink, .. } => u32::from(matches!(sink, Sink::Posted(_))),
                TxOp::RndvWrite { written, .. } => u32::from(*written),
                TxOp::Read { .. }
                | TxOp::Msg {
                    rndv: Rndv::Try, ..
                } => 0,
                TxOp::Msg { .. } => 2,
                TxOp::Rma {
                    write,
                    data,
                    next,
                    parts,
                    ..
                } => {
                    if *write && data.is_some() && *next == parts.len() {
                        2
                    } else {
                        0
                    }
                }
            };
            if g.credits < need {
                // Both sides sending at once can each hold the other's last
                // data credit: the reserved one carries the credits owed, or
                // neither side's receiver would ever hear of free buffers.
                let owed = g.grant as usize >= RX_DEPTH / 2;
                let head_credit = matches!(front, TxOp::Credit | TxOp::Fin { .. });
                if g.credits >= 1 && owed && !head_credit && self.post_credit(g).is_ok() {
                    continue;
                }
                return;
            }
            if let Err(e) = self.post_next(g) {
                // A work request that cannot be posted fails its operation.
                let err = match e.to_errno() {
                    n if n == EINVAL.to_errno() => abi::FI_EINVAL,
                    _ => abi::FI_EIO,
                };
                match g.queue.pop() {
                    Some(TxOp::Read { cookie, .. } | TxOp::Cts { cookie, .. }) => {
                        self.finish_rndv(g, cookie, false)
                    }
                    Some(op) => self.fail_op(g, op, err),
                    None => {}
                }
            }
        }
    }

    /// Whether the operation at the queue's head may go. An RMA naming a
    /// region in pieces (its key has [`wire::KEY_TABLE`]) first has the
    /// region's key table read, once per connection and key, and its parts
    /// split at the pieces, each with its piece's key; an access outside
    /// the region, or a table that cannot be had, fails it (FI_EACCES, as a
    /// bad key does). False while a table read is in flight.
    fn tables_ready(&self, g: &mut Inner) -> bool {
        loop {
            let key = match g.queue.front() {
                Some(TxOp::Rma { parts, next: 0, .. }) => {
                    parts.iter().map(|p| p.key).find(|&k| wire::names_table(k))
                }
                _ => None,
            };
            let Some(key) = key else {
                return true;
            };
            let Some(&(_, table)) = g.tables.iter().find(|(k, _)| *k == key) else {
                if !g.table_read && self.post_table_read(g, key).is_err() {
                    if let Some(op) = g.queue.pop() {
                        self.fail_op(g, op, abi::FI_EIO);
                    }
                    continue;
                }
                return false;
            };
            let split = match (table, g.queue.front()) {
                (Some(t), Some(TxOp::Rma { parts, .. })) => split_parts(parts, key, &t),
                _ => None,
            };
            match (split, g.queue.front_mut()) {
                (Some(split), Some(TxOp::Rma { parts, .. })) => *parts = split,
                _ => {
                    if let Some(op) = g.queue.pop() {
                        self.fail_op(g, op, abi::FI_EACCES);
                    }
                }
            }
        }
    }

    /// Posts the READ of the peer's key table for `key` (its rkey, at
    /// address 0).
    fn post_table_read(&self, g: &mut Inner, key: u64) -> Result {
        let slot = *g.tx_free.last().ok_or(EINVAL)?;
        let caps = SendCaps::of(g)?;
        let mut buf = KVec::new();
        buf.extend_with(wire::TABLE_LEN, 0, GFP_KERNEL)?;
        let map = Mapping::of_buffer(caps.dev, &mut buf, false, caps.lkey)?;
        self.post_send(
            resources(&g.res)?,
            slot,
            WrOp::RdmaRead,
            map.sges(),
            (0, key as u32),
        )?;
        g.table_read = true;
        self.posted(g, slot, TxWr::KeyTable { key, map, buf }, false, false, 0);
        Ok(())
    }

    /// Fails an operation that was queued, not posted (`err`: FI_E*).
    pub(super) fn fail_op(&self, g: &Inner, op: TxOp, err: u32) {
        let Some(ep) = &g.ep else {
            return;
        };
        match op {
            TxOp::Msg {
                done: Some((ctx, flags)),
                ..
            } if reports_errors(flags) => {
                let _ = ep.complete_error(FI_SEND | send_kind(flags), ctx, err, 0, 0, 0);
            }
            TxOp::Rma { write, ctx, .. } => {
                let kind = FI_RMA | if write { FI_WRITE } else { FI_READ };
                let _ = ep.complete_error(kind, ctx, err, 0, 0, 0);
            }
            _ => {}
        }
    }

    /// Posts a header-only SEND (`op`: a credit update or FIN) with the
    /// credits owed; `queued` when it is the queue's head, else outside the
    /// queue on the reserved credit.
    fn post_header_only(&self, g: &mut Inner, op: u8, data: u64, queued: bool) -> Result {
        let caps = SendCaps::of(g)?;
        let grant = g.grant.min(u32::from(u16::MAX)) as u16;
        let slot = *g.tx_free.last().ok_or(EINVAL)?;
        let h = Header {
            op,
            credits: grant,
            data,
            ..Default::default()
        };
        let wr = self.post_head(
            resources(&g.res)?,
            &mut g.frames,
            slot,
            &caps,
            &h,
            None,
            None,
        )?;
        self.posted(g, slot, wr, queued, true, grant);
        Ok(())
    }

    /// Tells the peer, as we close, how many of its SENDs we took
    /// (OP_CLOSE, on the reserved credit): those are done even when our
    /// disconnect fails the QP before their completions come. Without a
    /// credit the peer learns nothing, and reports what its QP says.
    pub(super) fn say_close(&self, g: &mut Inner) {
        if g.phase == Phase::Connected && g.greeting.heard && g.credits >= 1 {
            let _ = self.post_header_only(g, wire::OP_CLOSE, g.sends_received, false);
        }
    }

    /// Posts a credit update outside the queue, on the reserved credit.
    fn post_credit(&self, g: &mut Inner) -> Result {
        self.post_header_only(g, wire::OP_CREDIT, 0, false)
    }

    /// Posts one work request of the operation at the queue's head.
    fn post_next(&self, g: &mut Inner) -> Result {
        match g.queue.front() {
            None => Ok(()),
            Some(TxOp::Fin { cookie }) => {
                let cookie = *cookie;
                self.post_header_only(g, wire::OP_FIN, cookie, true)
            }
            Some(TxOp::Credit) => self.post_header_only(g, wire::OP_CREDIT, 0, true),
            Some(_) => {
                let caps = SendCaps::of(g)?;
                let grant = g.grant.min(u32::from(u16::MAX)) as u16;
                let slot = *g.tx_free.last().ok_or(EINVAL)?;
                self.post_op_part(g, &caps, slot, grant)
            }
        }
    }

    fn post_send(
        &self,
        res: &Resources,
        slot: usize,
        op: WrOp,
        sges: &[abi::ib_sge],
        remote: (u64, u32),
    ) -> Result {
        res.qp()?.post_send(slot, op, sges, remote, false)
    }

    /// Posts a SEND of header `h` and `payload` bytes at `offset` of the
    /// consumer's buffers, or of `frame` (an inject's: the header goes in
    /// its room). Small ones go inline, payload copied after the header;
    /// the others with the header in a mapped buffer and the payload from
    /// the consumer's memory.
    #[allow(clippy::too_many_arguments)]
    fn post_head(
        &self,
        res: &Resources,
        frames: &mut Frames,
        slot: usize,
        caps: &SendCaps,
        h: &Header,
        payload: Option<(&Lent, usize, usize)>,
        frame: Option<KVec<u8>>,
    ) -> Result<TxWr> {
        let payload_len = payload.map_or(0, |p| p.2);
        let mut buf = match frame {
            Some(f) if f.len() >= HEADER_LEN => f,
            Some(_) => return Err(EINVAL),
            // Room for the payload only when it is copied in (inline).
            None if HEADER_LEN + payload_len <= caps.max_inline => {
                frames.frame(&[], payload_len)?
            }
            None => frames.frame(&[], 0)?,
        };
        buf[..HEADER_LEN].copy_from_slice(&h.encode());
        let len = buf.len() - HEADER_LEN + payload_len;
        let inline = HEADER_LEN + len <= caps.max_inline;
        if inline {
            if let Some((lent, offset, n)) = payload {
                lent.gather_range(offset, n, &mut buf)?;
            }
            let sge = inline_sge(&buf);
            res.qp()?
                .post_send(slot, WrOp::Send, &[sge], (0, 0), true)?;
            return Ok(TxWr::Send {
                _map: Mapping::empty(caps.dev, true),
                _buf: buf,
                report: None,
            });
        }
        // The header, then the payload from the consumer's memory: one
        // mapping, whose SGEs are the work request's.
        let map = match payload {
            Some((lent, offset, n)) => Mapping::of_buffer_and_lent(
                caps.dev,
                &mut buf,
                lent,
                (offset, n),
                caps.lkey,
                caps.max_sge,
            )?,
            None => Mapping::of_buffer(caps.dev, &mut buf, true, caps.lkey)?,
        };
        self.post_send(res, slot, WrOp::Send, map.sges(), (0, 0))?;
        Ok(TxWr::Send {
            _map: map,
            _buf: buf,
            report: None,
        })
    }

    /// Bookkeeping after a work request went out.
    fn posted(&self, g: &mut Inner, slot: usize, wr: TxWr, last: bool, sends: bool, grant: u16) {
        let _ = g.tx_free.pop();
        g.tx_wr[slot - RX_DEPTH] = Some(wr);
        g.tx_seq[slot - RX_DEPTH] = sends.then_some(g.sends_posted);
        if sends {
            g.credits -= 1;
            g.grant -= u32::from(grant);
            g.sends_posted += 1;
        }
        if last {
            let _ = g.queue.pop();
        }
    }

    /// The next work request of a message or an RMA.
    fn post_op_part(&self, g: &mut Inner, caps: &SendCaps, slot: usize, grant: u16) -> Result {
        if self.post_rndv(g, caps, slot, grant)? {
            return Ok(());
        }
        let (dev, lkey, max_sge) = (caps.dev, caps.lkey, caps.max_sge);
        let (res, frames) = (&g.res, &mut g.frames);
        let Some(front) = g.queue.front_mut() else {
            return Ok(());
        };
        let (wr, last, sends) = match front {
            TxOp::Msg {
                lent,
                frame,
                len,
                sent,
                data,
                tag,
                done,
                ..
            } => {
                // A segment that does not go inline names at most
                // max_sge - 1 pieces of the consumer's buffers (one SGE
                // is the header's).
                let mut seg = (*len - *sent).min(SEGMENT);
                if let Some(l) = lent {
                    if HEADER_LEN + seg > caps.max_inline {
                        seg = span(l, *sent, seg, caps.max_sge - 1);
                    }
                }
                let mut flags = 0;
                if *sent == 0 {
                    flags |= wire::FLAG_FIRST;
                }
                let last = *sent + seg == *len;
                if last {
                    flags |= wire::FLAG_LAST;
                }
                if data.is_some() {
                    flags |= wire::FLAG_CQ_DATA;
                }
                if tag.is_some() {
                    flags |= wire::FLAG_TAGGED;
                }
                let h = Header {
                    op: wire::OP_MSG,
                    flags,
                    credits: grant,
                    len: *len as u32,
                    data: data.unwrap_or(0),
                    tag: tag.unwrap_or(0),
                };
                let (payload, frame) = match lent {
                    Some(l) => (Some((&*l, *sent, seg)), None),
                    // An inject's bytes fit one segment: its frame goes whole.
                    None if *sent == 0 && last => (None, Some(core::mem::take(frame))),
                    None => return Err(EINVAL),
                };
                let mut wr =
                    self.post_head(resources(res)?, frames, slot, caps, &h, payload, frame)?;
                *sent += seg;
                if let (true, TxWr::Send { report, .. }) = (last, &mut wr) {
                    *report = done.map(|(ctx, flags)| Report {
                        flags: FI_SEND | send_kind(flags) | (flags & FI_COMPLETION),
                        ctx,
                        len: *len,
                        errors: reports_errors(flags),
                    });
                }
                (wr, last, true)
            }
            TxOp::Rma {
                write,
                local,
                parts,
                next,
                len,
                data,
                ctx,
                flags,
                sink,
            } => {
                if let Some(wr) = self.register_sink(res, slot, sink)? {
                    self.posted(g, slot, wr, false, false, 0);
                    return Ok(());
                }
                let kind = FI_RMA | if *write { FI_WRITE } else { FI_READ };
                let report = Report {
                    flags: kind | (*flags & FI_COMPLETION),
                    ctx: *ctx,
                    len: *len,
                    errors: true,
                };
                if *next == parts.len() {
                    // The remote CQ data of a write, after the write.
                    let h = Header {
                        op: wire::OP_WRITE_DATA,
                        credits: grant,
                        len: *len as u32,
                        data: data.unwrap_or(0),
                        ..Default::default()
                    };
                    let mut wr =
                        self.post_head(resources(res)?, frames, slot, caps, &h, None, None)?;
                    if let TxWr::Send { report: r, .. } = &mut wr {
                        *r = Some(report);
                    }
                    (wr, true, true)
                } else {
                    let p = &parts[*next];
                    // A write sends from local memory; a read lands in it. An
                    // inject write's part goes from a buffer of its own, which
                    // lives with the work request.
                    let mut buf = KVec::new();
                    let map = match local {
                        RmaLocal::Lent(l) if !*write => {
                            sink.mapping(caps, l, p.offset, p.len, caps.max_sge_rd)?
                        }
                        RmaLocal::Lent(l) => {
                            Mapping::of_lent(dev, l, (p.offset, p.len), true, lkey, max_sge)?
                        }
                        RmaLocal::Copy(c) => {
                            buf.extend_from_slice(&c[p.offset..p.offset + p.len], GFP_KERNEL)?;
                            Mapping::of_buffer(dev, &mut buf, true, lkey)?
                        }
                    };
                    let op = if *write {
                        WrOp::RdmaWrite
                    } else {
                        WrOp::RdmaRead
                    };
                    let remote = wire::remote(p.key, p.addr);
                    self.post_send(resources(res)?, slot, op, map.sges(), remote)?;
                    *next += 1;
                    let last = *next == parts.len() && data.is_none();
                    (
                        TxWr::Rma {
                            _map: map,
                            _buf: buf,
                            report: last.then_some(report),
                        },
                        last,
                        false,
                    )
                }
            }
            TxOp::Read {
                cookie,
                local,
                key,
                chunks,
                next,
                sink,
            } => {
                if let Some(wr) = self.register_sink(res, slot, sink)? {
                    self.posted(g, slot, wr, false, false, 0);
                    return Ok(());
                }
                let (offset, n) = chunks[*next];
                let map = sink.mapping(caps, local, offset, n, caps.max_sge_rd)?;
                // The sender's region starts at the message's first byte.
                let remote = wire::remote(*key, offset as u64);
                self.post_send(resources(res)?, slot, WrOp::RdmaRead, map.sges(), remote)?;
                *next += 1;
                let last = *next == chunks.len();
                let wr = TxWr::RndvRead {
                    _map: map,
                    cookie: *cookie,
                    last,
                };
                (wr, last, false)
            }
            TxOp::Cts { cookie, len, sink } => {
                if let Some(wr) = self.register_sink(res, slot, sink)? {
                    (wr, false, false)
                } else {
                    let Sink::Posted(region) = sink else {
                        return Err(EINVAL);
                    };
                    let body = wire::RtsBody {
                        key: region.key(),
                        cookie: *cookie,
                    }
                    .encode();
                    let h = Header {
                        op: wire::OP_CTS,
                        credits: grant,
                        len: *len as u32,
                        data: *cookie,
                        ..Default::default()
                    };
                    let frame = Some(frames.frame(&body, 0)?);
                    let wr =
                        self.post_head(resources(res)?, frames, slot, caps, &h, None, frame)?;
                    // The receive waits for the sender's OP_WFIN now, and
                    // keeps its region until then.
                    let waiting = g
                        .reading
                        .iter_mut()
                        .find(|r| r.cookie == *cookie && r.ended.is_none() && r.target.is_none());
                    if let Some(r) = waiting {
                        r.target = Some(region.clone());
                    }
                    (wr, true, true)
                }
            }
            TxOp::RndvWrite {
                cookie,
                key,
                len,
                written,
            } => {
                // Gone when it failed (the connection ended).
                let send = g.rndv_sends.iter().find(|s| s.cookie == *cookie);
                let region = send.map(|s| &s.region).ok_or(EINVAL)?;
                if !*written {
                    // The message's region is one SGE: one WRITE.
                    let map = Mapping::in_region(dev, region, 0, *len)?;
                    let remote = wire::remote(*key, 0);
                    self.post_send(resources(res)?, slot, WrOp::RdmaWrite, map.sges(), remote)?;
                    *written = true;
                    let wr = TxWr::Rma {
                        _map: map,
                        _buf: KVec::new(),
                        report: None,
                    };
                    (wr, false, false)
                } else {
                    let h = Header {
                        op: wire::OP_WFIN,
                        credits: grant,
                        data: *cookie,
                        ..Default::default()
                    };
                    (
                        self.post_head(resources(res)?, frames, slot, caps, &h, None, None)?,
                        true,
                        true,
                    )
                }
            }
            TxOp::Credit | TxOp::Fin { .. } => return Ok(()),
        };
        self.posted(g, slot, wr, last, sends, if sends { grant } else { 0 });
        Ok(())
    }

    /// Posts in `slot` the registration of a READ's sink not yet posted
    /// (the send queue orders it before the READs): the work request to
    /// record, or `None` when there is nothing to register.
    fn register_sink(
        &self,
        res: &Option<Resources>,
        slot: usize,
        sink: &mut Sink,
    ) -> Result<Option<TxWr>> {
        let region = match core::mem::replace(sink, Sink::Buffers) {
            Sink::Unposted(region) => Arc::new(region, GFP_KERNEL)?,
            other => {
                *sink = other;
                return Ok(None);
            }
        };
        resources(res)?.qp()?.post_reg(slot, &region, 0)?;
        *sink = Sink::Posted(region.clone());
        Ok(Some(TxWr::SinkReg { _region: region }))
    }

    /// The rendezvous steps of the message at the queue's head: register
    /// its buffers, then announce them (OP_RTS). False when it goes by
    /// segments instead.
    fn post_rndv(&self, g: &mut Inner, caps: &SendCaps, slot: usize, grant: u16) -> Result<bool> {
        let Some(TxOp::Msg {
            lent,
            len,
            data,
            tag,
            done,
            rndv,
            ..
        }) = g.queue.front_mut()
        else {
            return Ok(false);
        };
        match rndv {
            Rndv::No => Ok(false),
            Rndv::Try => {
                let Some(l) = lent.as_ref() else {
                    *rndv = Rndv::No;
                    return Ok(true);
                };
                let domain = g.domain.as_ref().ok_or(EINVAL)?;
                // The region goes with the send (at its OP_FIN or the
                // connection's close), before the consumer's loan ends.
                let region = domain.with_pd(|pd| Region::of_lent(pd, l, true, false));
                // Buffers no region of one MR can take (a region in pieces
                // would need its key table read first): by segments.
                let Some(region) = region.ok().flatten() else {
                    *rndv = Rndv::No;
                    return Ok(true);
                };
                resources(&g.res)?.qp()?.post_reg(slot, &region, 0)?;
                *rndv = Rndv::Registered(region);
                self.posted(g, slot, TxWr::RndvReg, false, false, 0);
                Ok(true)
            }
            Rndv::Registered(region) => {
                let cookie = g.next_cookie;
                let body = wire::RtsBody {
                    key: region.key(),
                    cookie,
                }
                .encode();
                let mut flags = 0;
                if data.is_some() {
                    flags |= wire::FLAG_CQ_DATA;
                }
                if tag.is_some() {
                    flags |= wire::FLAG_TAGGED;
                }
                let h = Header {
                    op: wire::OP_RTS,
                    flags,
                    credits: grant,
                    len: *len as u32,
                    data: data.unwrap_or(0),
                    tag: tag.unwrap_or(0),
                };
                let frame = Some(g.frames.frame(&body, 0)?);
                let res = resources(&g.res)?;
                let wr = self.post_head(res, &mut g.frames, slot, caps, &h, None, frame)?;
                let Rndv::Registered(region) = core::mem::replace(rndv, Rndv::No) else {
                    return Err(EINVAL);
                };
                let report = done.map(|(ctx, flags)| Report {
                    flags: FI_SEND | send_kind(flags) | (flags & FI_COMPLETION),
                    ctx,
                    len: *len,
                    errors: reports_errors(flags),
                });
                let lent = lent.take().ok_or(EINVAL)?;
                let region = Arc::new(region, GFP_KERNEL)?;
                g.next_cookie += 1;
                g.rndv_sends.push(
                    RndvSend {
                        cookie,
                        region,
                        _lent: lent,
                        len: *len,
                        report,
                    },
                    GFP_ATOMIC,
                )?;
                self.posted(g, slot, wr, true, true, grant);
                Ok(true)
            }
        }
    }

    /// Rendezvous sends whose OP_FIN can no longer come fail; their
    /// regions stay until the QP is gone.
    pub(super) fn fail_rndv_sends(g: &mut Inner, err: u32) {
        for send in g.rndv_sends.iter_mut() {
            if let (Some(r), Some(ep)) = (send.report.take(), &g.ep) {
                let _ = ep.complete_error(r.flags, r.ctx, err, 0, 0, 0);
            }
        }
    }

    /// A send-queue completion.
    pub(super) fn tx_done(&self, g: &mut Inner, wc: &WorkCompletion) {
        let i = wc.slot - RX_DEPTH;
        let Some(wr) = g.tx_wr[i].take() else {
            return;
        };
        let _ = g.tx_free.push(wc.slot, GFP_ATOMIC);
        // A SEND the peer said it took (OP_CLOSE) is done, whatever the
        // QP's failure after it made of its completion.
        let taken = g.tx_seq[i].take().is_some_and(|n| n < g.peer_took);
        let ok = wc.ok() || taken;
        if !ok && g.sq_error.is_none() {
            g.sq_error = Some(wc_error(wc.status()));
            // The QP is in error: end the connection on both sides. Failed
            // first: siw leaves what was queued behind a failed work
            // request in its send queue, and a disconnect (iWARP's moves the
            // QP to CLOSING) then a drain never flushes those; from RTS to
            // error it does, so each completes now (the consumer hears of
            // each) and the connection's close finds nothing left.
            if wc.status() != WcStatus::Flushed {
                if let Some(res) = &g.res {
                    if let Some(qp) = &res.qp {
                        qp.fail();
                    }
                    res.id.disconnect();
                }
            }
        }
        let report = match wr {
            TxWr::Send {
                _map: map,
                _buf: frame,
                report,
            } => {
                // Unmapped first: the bytes are then the CPU's to reuse.
                drop(map);
                g.frames.keep(frame);
                report
            }
            TxWr::Rma { report, .. } => report,
            TxWr::Reg(reg) => {
                reg.done(wc.ok());
                None
            }
            TxWr::RegPiece | TxWr::RndvReg | TxWr::SinkReg { .. } => None,
            TxWr::KeyTable { key, map, buf } => {
                // Unmapped first: the device's bytes are then the CPU's.
                drop(map);
                let table = if wc.ok() {
                    KeyTable::decode(key, &buf)
                } else {
                    None
                };
                g.table_read = false;
                // The oldest goes beyond TABLES_MAX: it is read again if
                // needed. Without room the next access reads this one again.
                if g.tables.len() >= TABLES_MAX {
                    g.tables.remove_at(0);
                }
                let _ = g.tables.push((key, table), GFP_KERNEL);
                None
            }
            TxWr::RndvRead { cookie, last, .. } => {
                if last {
                    self.finish_rndv(g, cookie, wc.ok());
                    self.deliver_held(g);
                }
                None
            }
        };
        self.answer_disconnect(g);
        if let (Some(r), Some(ep)) = (report, &g.ep) {
            if ok {
                let _ = ep.complete(r.flags, r.ctx, r.len, 0);
            } else if r.errors {
                let err = g.sq_error.unwrap_or(abi::FI_EIO);
                let _ = ep.complete_error(r.flags, r.ctx, err, 0, 0, wc.prov_errno());
            }
        }
        self.pump(g);
    }
}

/// Key tables a connection keeps at most.
const TABLES_MAX: usize = 16;

/// `parts` with every part of the region in pieces whose key is `key`
/// split at the pieces of its key table `table`; `None` when a part
/// reaches outside the region.
fn split_parts(parts: &[RmaPart], key: u64, table: &KeyTable) -> Option<KVec<RmaPart>> {
    let mut out = KVec::with_capacity(parts.len(), GFP_KERNEL).ok()?;
    for p in parts {
        if p.key != key {
            out.push(*p, GFP_KERNEL).ok()?;
            continue;
        }
        table.split(key, p.addr, p.len as u64, |addr, len, piece_key| {
            let part = RmaPart {
                key: piece_key,
                addr,
                offset: p.offset + (addr - p.addr) as usize,
                len: len as usize,
            };
            out.push(part, GFP_KERNEL).is_ok()
        })?;
    }
    Some(out)
}
