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
    let (cap, ctx) = (done.recv.capacity(), done.recv.context);
    if !ok {
        let _ = ep.complete_error(FI_RECV | FI_MSG, ctx, abi::FI_EIO, 0, 0, 0);
    } else if done.total > cap {
        let _ = ep.complete_error(
            FI_RECV | FI_MSG,
            ctx,
            abi::FI_ETRUNC,
            cap,
            done.total - cap,
            0,
        );
    } else {
        let mut flags = FI_RECV | FI_MSG | (done.recv.flags & FI_COMPLETION);
        if done.data.is_some() {
            flags |= FI_REMOTE_CQ_DATA;
        }
        let _ = ep.complete(flags, ctx, done.total, done.data.unwrap_or(0));
    }
}

impl Conn {
    /// A posted receive: filled by the next message (or held segments).
    pub(crate) fn post_recv(&self, recv: PostedRecv) -> Result {
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

    /// fi_cancel on a connection: its oldest posted receive with `context`
    /// is taken back (reported FI_ECANCELED); -FI_EBUSY while a message is
    /// being received into it.
    pub(crate) fn cancel_recv(&self, context: Context) -> Result {
        let g = &mut *self.inner.lock();
        let filling = g.cur.as_ref().map(|c| c.recv.context) == Some(context);
        cancel_posted(&mut g.recvs, context, g.ep.as_ref(), filling)
    }

    /// The rendezvous read into the receive in progress is over (`ok`):
    /// report the receive, and let the sender complete (OP_FIN).
    pub(super) fn finish_rndv(&self, g: &mut Inner, ok: bool) {
        let Some(done) = g.cur.take() else {
            return;
        };
        let Some(cookie) = done.rndv else {
            g.cur = Some(done);
            return;
        };
        report_recv(g.ep.as_ref(), &done, ok);
        let _ = g.queue.push(TxOp::Fin { cookie });
    }

    /// A receive completion into provider buffer `i`.
    pub(super) fn rx_done(&self, g: &mut Inner, wc: &WorkCompletion) {
        let i = wc.slot;
        if !wc.ok() {
            // The QP is flushing: every OP_FIN that came is processed (the
            // CQ is in order, the CM's disconnect event is not).
            Self::fail_rndv_sends(g, abi::FI_ECONNRESET);
            return;
        }
        // The peer spoke: an iWARP server may send, and the peer's regions
        // are valid (its greeting is its first frame; pumped below).
        g.greeting.heard = true;
        self.greet(g);
        let len = (wc.byte_len as usize).min(RX_BUF);
        let header = match &g.res {
            Some(res) => {
                res.rx[i].map.sync_for_cpu(len);
                let h = Header::decode(&res.rx[i].buf[..len]);
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
        } else if h.op == wire::OP_FIN {
            if let Some(i) = g.rndv_sends.iter().position(|r| r.cookie == h.data) {
                let send = swap_remove(&mut g.rndv_sends, i);
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
        if res
            .id
            .post_recv(&self.slots, i, res.rx[i].map.sges())
            .is_ok()
        {
            g.grant += 1;
        }
        let queued_sends = g.queue.len() != 0;
        if g.grant as usize >= RX_DEPTH / 2 && !queued_sends {
            let _ = g.queue.push(TxOp::Credit);
        }
    }

    /// Copies the segment in buffer `i` into the receive it belongs to;
    /// false when none is posted (the segment is held).
    pub(super) fn deliver(&self, g: &mut Inner, i: usize, h: &Header, len: usize) -> bool {
        // Messages wait behind a rendezvous read in progress.
        if g.cur.as_ref().is_some_and(|c| c.rndv.is_some()) {
            return false;
        }
        if h.op == wire::OP_RTS {
            return self.deliver_rts(g, i, h, len);
        }
        if h.op == wire::OP_WRITE_DATA {
            return Self::deliver_write_data(g, h);
        }
        if g.cur.is_none() {
            let Some(recv) = g.recvs.pop() else {
                return false;
            };
            g.cur = Some(Assembly {
                recv,
                total: h.len as usize,
                got: 0,
                data: (h.flags & wire::FLAG_CQ_DATA != 0).then_some(h.data),
                rndv: None,
            });
        }
        let Some(res) = &g.res else {
            return true;
        };
        let payload = &res.rx[i].buf[HEADER_LEN..len.max(HEADER_LEN)];
        let Some(cur) = g.cur.as_mut() else {
            return true;
        };
        cur.recv.fill_at(cur.got, payload);
        cur.got += payload.len();
        if h.flags & wire::FLAG_LAST == 0 {
            return true;
        }
        if let Some(done) = g.cur.take() {
            report_recv(g.ep.as_ref(), &done, true);
        }
        true
    }

    /// FI_RX_CQ_DATA mode: a remote write's CQ data (an OP_WRITE_DATA)
    /// takes the next receive, which reports it; false when none is posted
    /// (it is held). A message's segments come together, so none is being
    /// assembled here but one being read (waited for above).
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
    /// false when none is posted (the announcement is held).
    pub(super) fn deliver_rts(&self, g: &mut Inner, i: usize, h: &Header, len: usize) -> bool {
        if g.cur.is_some() {
            return false;
        }
        let Some(res) = &g.res else {
            return true;
        };
        let Some(body) = wire::RtsBody::decode(&res.rx[i].buf[HEADER_LEN..len.max(HEADER_LEN)])
        else {
            // A malformed announcement: the peer is broken.
            res.id.disconnect();
            return true;
        };
        let Some(recv) = g.recvs.pop() else {
            return false;
        };
        let total = h.len as usize;
        let n = total.min(recv.capacity());
        let read = recv
            .lend()
            .and_then(|local| Ok((chunks(&local, 0, n, g.max_sge_rd)?, local)));
        g.cur = Some(Assembly {
            recv,
            total,
            got: n,
            data: (h.flags & wire::FLAG_CQ_DATA != 0).then_some(h.data),
            rndv: Some(body.cookie),
        });
        match read {
            Ok((chunks, local)) if !chunks.is_empty() => {
                let op = TxOp::Read {
                    local,
                    key: body.key,
                    chunks,
                    next: 0,
                };
                if g.queue.push(op).is_err() {
                    self.finish_rndv(g, false);
                }
            }
            Ok(_) => self.finish_rndv(g, true),
            Err(_) => self.finish_rndv(g, false),
        }
        true
    }

    /// Delivers held segments now that a receive is posted, then posts
    /// what that queued (a rendezvous read, credits): the pump runs however
    /// the loop ends, or a read queued behind a held message would wait for
    /// a completion that never comes.
    pub(super) fn deliver_held(&self, g: &mut Inner) {
        while let Some(&(i, len)) = g.held.front() {
            let header = g
                .res
                .as_ref()
                .and_then(|r| Header::decode(&r.rx[i].buf[..len]));
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
