// SPDX-License-Identifier: GPL-2.0

//! The receive path of a connection: provider buffers, held (unexpected)
//! segments, assembly into posted receives, rendezvous reads, and credits
//! owed to the peer.

use super::tx::chunks;
use super::*;

/// Reports a finished receive: its message, truncated (FI_ETRUNC, what did
/// not fit in olen), or failed (`ok` false: its read failed).
fn report_recv(ep: Option<&EpRef>, done: &Assembly, ok: bool) {
    let Some(ep) = ep else {
        return;
    };
    let cap = done.recv.capacity();
    if !ok {
        let _ = ep.recv_failed(&done.recv, abi::FI_EIO, 0, 0, done.tag);
    } else if done.total > cap {
        let _ = ep.recv_failed(&done.recv, abi::FI_ETRUNC, cap, done.total - cap, done.tag);
    } else {
        let _ = ep.recv_done(&done.recv, done.total, done.data, done.tag);
    }
}

/// Remote CQ data of a message with header `h`.
fn data_of(h: &Header) -> Option<u64> {
    (h.flags & wire::FLAG_CQ_DATA != 0).then_some(h.data)
}

impl Conn {
    /// A posted receive: filled by the next message (or held segments).
    pub(crate) fn post_recv(&self, recv: PostedRecv) -> Result {
        if recv.tag.is_some() {
            return self.post_trecv(recv, 0);
        }
        let mut g = self.inner.lock();
        if g.phase == Phase::Closed {
            return Err(fi_error(abi::FI_ENOTCONN));
        }
        if g.recvs.push(recv).is_err() {
            return Err(fi_error(abi::FI_EAGAIN));
        }
        self.deliver_held(&mut g);
        Ok(())
    }

    /// A tagged receive with fi_trecvmsg's `flags`: a held message it takes
    /// fills it (see `HeldTagged::trecv`), else it is posted.
    pub(crate) fn post_trecv(&self, recv: PostedRecv, flags: u64) -> Result {
        let g = &mut *self.inner.lock();
        if g.phase == Phase::Closed {
            return Err(fi_error(abi::FI_ENOTCONN));
        }
        match g.held_tagged.trecv(recv, flags, g.ep.as_ref())? {
            Trecv::Answered => return Ok(()),
            Trecv::Take { recv, tag, msg } => self.take_held(g, recv, tag, msg),
            Trecv::Discard { recv, tag, msg } => {
                match msg {
                    HeldMsg::Bytes { bytes, .. } => g.held_bytes -= bytes.len(),
                    // Its sender waits for the read: let it complete.
                    HeldMsg::Rts { body, .. } => {
                        let _ = g.queue.push(TxOp::Fin {
                            cookie: body.cookie,
                        });
                    }
                }
                if let (Some(recv), Some(ep)) = (recv, &g.ep) {
                    let _ = ep.recv_done(&recv, 0, None, tag);
                }
            }
            Trecv::Post(recv) => g.tagged.push(recv)?,
        }
        // Room to hold may have come back; a read may start.
        self.deliver_held(g);
        Ok(())
    }

    /// `recv` takes the held message `msg`, tagged `tag`.
    fn take_held(&self, g: &mut Inner, recv: PostedRecv, tag: u64, msg: HeldMsg) {
        match msg {
            HeldMsg::Bytes { bytes, data } => {
                g.held_bytes -= bytes.len();
                recv.fill(&bytes);
                let done = Assembly {
                    recv,
                    total: bytes.len(),
                    got: bytes.len(),
                    data,
                    tag,
                };
                report_recv(g.ep.as_ref(), &done, true);
            }
            HeldMsg::Rts { total, body, data } => {
                // Room for one per receive was reserved at the start.
                if g.ready_rndv.len() == g.ready_rndv.capacity() {
                    if let Some(ep) = &g.ep {
                        let _ = ep.recv_failed(&recv, abi::FI_ENOMEM, 0, 0, tag);
                    }
                    let _ = g.queue.push(TxOp::Fin {
                        cookie: body.cookie,
                    });
                    return;
                }
                let ready = ReadyRndv {
                    recv,
                    tag,
                    total,
                    body,
                    data,
                };
                let _ = g.ready_rndv.push(ready, GFP_KERNEL);
            }
        }
    }

    /// Whether a rendezvous read may start: no message is being received
    /// by segments, and fewer than RNDV_READS reads are in flight.
    fn read_room(g: &Inner) -> bool {
        g.cur.is_none() && g.reading.len() < RNDV_READS
    }

    /// Starts the reads of held announcements taken by receives, while
    /// there is room (see `read_room`).
    fn start_ready(&self, g: &mut Inner) {
        while Self::read_room(g) && !g.ready_rndv.is_empty() {
            let r = g.ready_rndv.remove_at(0);
            self.start_rndv(g, r.recv, r.tag, r.total, r.body, r.data);
        }
    }

    /// fi_cancel on a connection: its oldest posted receive with `context`
    /// is taken back (reported FI_ECANCELED); -FI_EBUSY while a message is
    /// being received into it.
    pub(crate) fn cancel_recv(&self, context: Context) -> Result {
        let g = &mut *self.inner.lock();
        if g.tagged.cancel(context, g.ep.as_ref()) {
            return Ok(());
        }
        let filling = g.cur.as_ref().map(|c| c.recv.context) == Some(context)
            || g.reading.iter().any(|r| r.assembly.recv.context == context)
            || g.ready_rndv.iter().any(|r| r.recv.context == context);
        cancel_posted(&mut g.recvs, context, g.ep.as_ref(), filling)
    }

    /// The rendezvous read of the sender's message `cookie` is over
    /// (`ok`): its receive, once those before it are reported, is reported
    /// too, and each sender may complete (OP_FIN). Reads end in the order
    /// they were posted (one QP), so this is usually the oldest.
    pub(super) fn finish_rndv(&self, g: &mut Inner, cookie: u64, ok: bool) {
        if let Some(r) = g
            .reading
            .iter_mut()
            .find(|r| r.cookie == cookie && r.ended.is_none())
        {
            r.ended = Some(ok);
        }
        while g.reading.first().is_some_and(|r| r.ended.is_some()) {
            let mut done = g.reading.remove_at(0);
            // The sender may write no more once the consumer has the
            // receive back (the region's last reference, unless its
            // registration is still in flight).
            done.target = None;
            report_recv(g.ep.as_ref(), &done.assembly, done.ended == Some(true));
            let _ = g.queue.push(TxOp::Fin {
                cookie: done.cookie,
            });
        }
    }

    /// A receive completion into provider buffer `i`.
    pub(super) fn rx_done(&self, g: &mut Inner, wc: &WorkCompletion) {
        let i = wc.slot;
        if !wc.ok() {
            // The QP is flushing: every OP_FIN that came is processed (the
            // CQ is in order, the CM's disconnect event is not).
            Self::fail_rndv_sends(g, abi::FI_ECONNRESET);
            // Likewise every OP_WFIN: the receives still waiting for the
            // sender's writes fail (no work request of ours ends them).
            while let Some(cookie) = g.reading.iter().find(|r| r.awaits_wfin()).map(|r| r.cookie) {
                self.finish_rndv(g, cookie, false);
            }
            return;
        }
        g.sends_received += 1;
        // The peer spoke: an iWARP server may send, and the peer's regions
        // are valid (its greeting is its first frame; pumped below).
        g.greeting.heard = true;
        self.greet(g);
        let len = (wc.byte_len as usize).min(HEADER_LEN + RX_DATA);
        let header = match &g.res {
            Some(res) => {
                res.rx[i].map.sync_for_cpu(len);
                let h = res.rx[i].decode(len);
                if h.is_none() {
                    // A malformed message: the peer is broken; disconnect.
                    res.id.disconnect();
                }
                h
            }
            None => None,
        };
        let Some(h) = header else {
            return;
        };
        g.credits = g
            .credits
            .saturating_add(u32::from(h.credits))
            .min(RX_DEPTH as u32);
        // Messages take a receive, and in FI_RX_CQ_DATA mode so does a
        // write's CQ data, in order with them.
        let takes_recv = matches!(h.op, wire::OP_MSG | wire::OP_RTS)
            || (h.op == wire::OP_WRITE_DATA && g.rx_cq_data);
        if takes_recv {
            if g.held.len() != 0 || !self.deliver(g, i, &h, len) {
                let _ = g.held.push((i, len));
                self.pump(g);
                return;
            }
        } else if h.op == wire::OP_CTS {
            self.cts_received(g, i, &h, len);
        } else if h.op == wire::OP_WFIN {
            let ours = g
                .reading
                .iter()
                .any(|r| r.cookie == h.data && r.awaits_wfin());
            if ours {
                self.finish_rndv(g, h.data, true);
                self.deliver_held(g);
            } else if let Some(res) = &g.res {
                // No receive of ours waits for it: the peer is broken.
                res.id.disconnect();
            }
        } else if h.op == wire::OP_CLOSE {
            if h.data <= g.sends_posted {
                g.peer_took = h.data;
            } else if let Some(res) = &g.res {
                // It took more than we sent: the peer is broken.
                res.id.disconnect();
            }
        } else if h.op == wire::OP_FIN {
            if let Some(i) = g.rndv_sends.iter().position(|r| r.cookie == h.data) {
                let send = g.rndv_sends.swap_remove(i);
                if let (Some(r), Some(ep)) = (&send.report, &g.ep) {
                    let _ = ep.complete(r.flags, r.ctx, r.len, 0);
                }
            }
        } else if h.op == wire::OP_WRITE_DATA {
            if let Some(ep) = &g.ep {
                let flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
                let _ = ep.complete(flags, Context::NONE, h.len as usize, h.data);
            }
        }
        self.repost(g, i);
        self.pump(g);
    }

    /// Hands buffer `i` back to the device and counts it as a credit owed.
    pub(super) fn repost(&self, g: &mut Inner, i: usize) {
        let Some(res) = &g.res else {
            return;
        };
        res.rx[i].map.sync_for_device();
        let sges = res.rx[i].map.sges();
        if res.qp().and_then(|qp| qp.post_recv(i, sges)).is_ok() {
            g.grant += 1;
        }
        let queued_sends = g.queue.len() != 0;
        if g.grant as usize >= RX_DEPTH / 2 && !queued_sends {
            let _ = g.queue.push(TxOp::Credit);
        }
    }

    /// Copies the segment in buffer `i` into the receive it belongs to (or
    /// into the copy of a tagged message no receive wants); false when none
    /// is posted and it cannot be copied out (the segment is held).
    pub(super) fn deliver(&self, g: &mut Inner, i: usize, h: &Header, len: usize) -> bool {
        // A message's segments come together: the rest of one being copied.
        if g.copying.is_some() && h.op == wire::OP_MSG {
            self.copy_segment(g, i, h, len);
            return true;
        }
        // Messages wait behind the rendezvous reads in flight (receives are
        // reported in order); another announcement may start its read.
        if !g.reading.is_empty() && h.op != wire::OP_RTS {
            return false;
        }
        if h.op == wire::OP_RTS {
            return self.deliver_rts(g, i, h, len);
        }
        if h.op == wire::OP_WRITE_DATA {
            return Self::deliver_write_data(g, h);
        }
        if g.cur.is_none() {
            let recv = match h.tag() {
                Some(tag) => g.tagged.take_for(tag),
                None => g.recvs.pop(),
            };
            let Some(recv) = recv else {
                if !self.start_copying(g, h) {
                    return false;
                }
                self.copy_segment(g, i, h, len);
                return true;
            };
            g.cur = Some(Assembly {
                recv,
                total: h.len as usize,
                got: 0,
                data: data_of(h),
                tag: h.tag().unwrap_or(0),
            });
        }
        let Some(res) = &g.res else {
            return true;
        };
        let Some(cur) = g.cur.as_mut() else {
            return true;
        };
        for piece in res.rx[i].payload(len) {
            cur.recv.fill_at(cur.got, piece);
            cur.got += piece.len();
        }
        if h.flags & wire::FLAG_LAST == 0 {
            return true;
        }
        if let Some(done) = g.cur.take() {
            report_recv(g.ep.as_ref(), &done, true);
        }
        self.start_ready(g);
        true
    }

    /// Whether a message of `len` bytes more (0: an announcement) may be
    /// held out of the provider buffers.
    fn may_hold(g: &Inner, len: usize) -> bool {
        g.held_tagged.len() < RECV_DEPTH && g.held_bytes + len <= UNEXPECTED_MAX
    }

    /// Starts copying out the tagged message whose first segment has header
    /// `h`, which no receive wants; false when it is untagged or there is
    /// no room (it stays in the provider buffers).
    fn start_copying(&self, g: &mut Inner, h: &Header) -> bool {
        let Some(tag) = h.tag() else {
            return false;
        };
        let total = h.len as usize;
        if h.flags & wire::FLAG_FIRST == 0 || !Self::may_hold(g, total) {
            return false;
        }
        let Ok(bytes) = KVVec::with_capacity(total, GFP_KERNEL) else {
            return false;
        };
        g.copying = Some(Copying {
            tag,
            data: data_of(h),
            bytes,
        });
        true
    }

    /// Appends the segment in buffer `i` to the message being copied out;
    /// at its last, holds the message.
    fn copy_segment(&self, g: &mut Inner, i: usize, h: &Header, len: usize) {
        let (Some(res), Some(c)) = (&g.res, g.copying.as_mut()) else {
            return;
        };
        for piece in res.rx[i].payload(len) {
            // No more than the first segment announced (its capacity).
            let n = piece.len().min(c.bytes.capacity() - c.bytes.len());
            let _ = c.bytes.extend_from_slice(&piece[..n], GFP_KERNEL);
        }
        if h.flags & wire::FLAG_LAST == 0 {
            return;
        }
        if let Some(c) = g.copying.take() {
            g.held_bytes += c.bytes.len();
            let msg = HeldMsg::Bytes {
                bytes: c.bytes,
                data: c.data,
            };
            // Room was checked when the copy started.
            let _ = g.held_tagged.push(c.tag, msg);
        }
    }

    /// FI_RX_CQ_DATA mode: a remote write's CQ data (an OP_WRITE_DATA)
    /// takes the next receive, which reports it; false when none is posted
    /// (it is held). A message's segments come together, so none is being
    /// assembled here, and reads in flight were waited for above.
    fn deliver_write_data(g: &mut Inner, h: &Header) -> bool {
        if g.cur.is_some() {
            return false;
        }
        let Some(recv) = g.recvs.pop() else {
            return false;
        };
        if let Some(ep) = &g.ep {
            let flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA | (recv.flags & FI_COMPLETION);
            let _ = ep.complete(flags, recv.context, h.len as usize, h.data);
        }
        true
    }

    /// An OP_RTS in buffer `i`: read the message into the next receive;
    /// false when none is posted, or RNDV_READS reads are in flight (the
    /// announcement is held in the buffer). A tagged one no receive wants
    /// is held out of the buffers.
    pub(super) fn deliver_rts(&self, g: &mut Inner, i: usize, h: &Header, len: usize) -> bool {
        if !Self::read_room(g) {
            return false;
        }
        let Some(res) = &g.res else {
            return true;
        };
        let Some(body) = wire::RtsBody::decode(res.rx[i].body(len)) else {
            // A malformed announcement: the peer is broken.
            res.id.disconnect();
            return true;
        };
        let (total, data) = (h.len as usize, data_of(h));
        let recv = match h.tag() {
            Some(tag) => g.tagged.take_for(tag),
            None => g.recvs.pop(),
        };
        let Some(recv) = recv else {
            let Some(tag) = h.tag() else {
                return false;
            };
            if !Self::may_hold(g, 0) {
                return false;
            }
            let msg = HeldMsg::Rts { total, body, data };
            // Room was checked above.
            let _ = g.held_tagged.push(tag, msg);
            return true;
        };
        self.start_rndv(g, recv, h.tag().unwrap_or(0), total, body, data);
        true
    }

    /// A region over `recv`'s buffers its sender may write into, when one
    /// MR takes them.
    fn write_target(g: &Inner, recv: &PostedRecv) -> Option<Region> {
        let local = recv.lend().ok()?;
        let domain = g.domain.as_ref()?;
        domain
            .with_pd(|pd| Region::of_lent(pd, &local, false, true))
            .ok()?
    }

    /// An OP_CTS in buffer `i`: the peer's receive of our rendezvous
    /// message is ready for our writes.
    fn cts_received(&self, g: &mut Inner, i: usize, h: &Header, len: usize) {
        let Some(res) = &g.res else {
            return;
        };
        let body = wire::RtsBody::decode(res.rx[i].body(len)).filter(|b| b.cookie == h.data);
        let send = body.and_then(|b| g.rndv_sends.iter().find(|s| s.cookie == b.cookie));
        let (Some(body), Some(send)) = (body, send) else {
            // Not a message of ours that waits: the peer is broken.
            res.id.disconnect();
            return;
        };
        let len = (h.len as usize).min(send.len);
        let op = TxOp::RndvWrite {
            cookie: body.cookie,
            key: body.key,
            len,
            // Nothing to write: OP_WFIN at once.
            written: len == 0,
        };
        if g.queue.push(op).is_err() {
            // Never written, the message would wait forever: end instead.
            res.id.disconnect();
        }
    }

    /// Reads the announced message (`total` bytes, `body`) into `recv`,
    /// behind the reads in flight; the caller saw `read_room`.
    fn start_rndv(
        &self,
        g: &mut Inner,
        recv: PostedRecv,
        tag: u64,
        total: usize,
        body: RtsBody,
        data: Option<u64>,
    ) {
        let n = total.min(recv.capacity());
        let cookie = body.cookie;
        // On iWARP the sender writes the message into a region over the
        // receive (the region a READ's sink would need anyway: wire.rs).
        let target = if g.iwarp && n > 0 {
            Self::write_target(g, &recv)
        } else {
            None
        };
        // Else it is read; into more pieces than one READ names: through a
        // region of its own when one MR takes them (as an fi_read is, tx.rs).
        let read = target.is_none().then(|| {
            recv.lend().and_then(|local| {
                let chunks = chunks(&local, 0, n, g.max_sge_rd)?;
                let sink = Sink::over(g, &local, chunks.len() > 1);
                let chunks = match sink {
                    Sink::Unposted(_) => {
                        let mut one = KVec::new();
                        one.push((0, n), GFP_KERNEL)?;
                        one
                    }
                    _ => chunks,
                };
                Ok((chunks, local, sink))
            })
        });
        let reading = Reading {
            // Set once OP_CTS goes (tx.rs): no OP_WFIN counts before.
            target: None,
            assembly: Assembly {
                recv,
                total,
                got: n,
                data,
                tag,
            },
            cookie,
            ended: None,
        };
        // Within the RNDV_READS reserved (`read_room`): no allocation, so
        // no failure.
        let _ = g.reading.push(reading, GFP_ATOMIC);
        let op = match (target, read) {
            (Some(region), _) => TxOp::Cts {
                cookie,
                len: n,
                sink: Sink::Unposted(region),
            },
            (None, Some(Ok((chunks, local, sink)))) if !chunks.is_empty() => TxOp::Read {
                cookie,
                local,
                key: body.key,
                chunks,
                next: 0,
                sink,
            },
            (None, Some(Ok(_))) => return self.finish_rndv(g, cookie, true),
            _ => return self.finish_rndv(g, cookie, false),
        };
        if g.queue.push(op).is_err() {
            self.finish_rndv(g, cookie, false);
        }
    }

    /// Delivers held segments now that a receive is posted, then posts
    /// what that queued (a rendezvous read, credits): the pump runs however
    /// the loop ends, or a read queued behind a held message would wait for
    /// a completion that never comes.
    pub(super) fn deliver_held(&self, g: &mut Inner) {
        self.start_ready(g);
        while let Some(&(i, len)) = g.held.front() {
            let header = g.res.as_ref().and_then(|r| r.rx[i].decode(len));
            let Some(h) = header else {
                break;
            };
            if !self.deliver(g, i, &h, len) {
                break;
            }
            let _ = g.held.pop();
            self.repost(g, i);
        }
        self.pump(g);
    }
}
