// SPDX-License-Identifier: GPL-2.0

//! Connection management: rdma_cm events of a connection, disconnects, and
//! the listener that turns connection requests into FI_CONNREQ.

use super::*;

impl Conn {
    pub(super) fn cm(self: ArcBorrow<'_, Self>, event: CmEvent<'_>) {
        if matches!(event, CmEvent::Disconnected) {
            // The CQ is in order, the CM's events are not: what the peer
            // sent before it disconnected, and its acknowledgements of what
            // it took of ours, are reported before the FI_SHUTDOWN below.
            self.poll();
        }
        let mut g = self.inner.lock();
        match event {
            CmEvent::AddrResolved => {
                if let Some(res) = &g.res {
                    if res.id.resolve_route().is_err() {
                        self.cm_error(&mut g, abi::FI_EHOSTUNREACH);
                    }
                }
            }
            CmEvent::RouteResolved => {
                let r = self.setup(&mut g).and_then(|()| {
                    let data = g.connect_data.take().ok_or(EINVAL)?;
                    g.res.as_ref().ok_or(EINVAL)?.id.connect(data.as_bytes())
                });
                match r {
                    Ok(()) => g.phase = Phase::Connecting,
                    Err(_) => self.cm_error(&mut g, abi::FI_ECONNREFUSED),
                }
            }
            CmEvent::Established(data) => {
                // rdma_cm reports it with the QP in RTS.
                if let Some(res) = g.res.as_mut() {
                    res.up = true;
                }
                if g.phase != Phase::Connecting && g.phase != Phase::Accepting {
                    return;
                }
                let client = g.phase == Phase::Connecting;
                g.phase = Phase::Connected;
                // Regions registered before any connection become valid
                // through this one, and every registration in flight
                // completes, before our greeting tells the peer it may use
                // their keys.
                if let Some(domain) = g.domain.clone() {
                    drop(g);
                    domain.register_pending(&Arc::from(self));
                    domain.settle_registrations();
                    g = self.inner.lock();
                }
                if let Some(ep) = &g.ep {
                    let data = if client {
                        wire::cm_data_decode(data)
                    } else {
                        &[]
                    };
                    let _ = ep.event(abi::FI_CONNECTED, data);
                }
                g.greeting.ready = true;
                self.greet(&mut g);
                if g.iwarp && !g.speaks_second && g.greeting.sent && !g.greeting.heard {
                    self.greeting_timer.arm(&Arc::from(self), NUDGE_MS);
                }
                self.pump(&mut g);
            }
            CmEvent::Rejected(data) => {
                let data = wire::cm_data_decode(data);
                self.cm_error_with(&mut g, abi::FI_ECONNREFUSED, data)
            }
            CmEvent::Unreachable => self.cm_error(&mut g, abi::FI_EHOSTUNREACH),
            CmEvent::Error(err) => self.cm_error(&mut g, err),
            CmEvent::Disconnected => {
                // Answer the peer's disconnect (IB's DREP, so its side
                // completes too) once nothing is in flight.
                g.answer_disconnect = true;
                self.answer_disconnect(&mut g);
                if g.phase == Phase::Connected || g.phase == Phase::Closing {
                    self.end(&mut g, abi::FI_ECONNRESET);
                } else if g.phase == Phase::Requested {
                    self.cm_error(&mut g, abi::FI_ECONNRESET);
                }
            }
            _ => {}
        }
    }

    /// Disconnects, when asked to, once nothing is queued or posted; ends a
    /// connection shutting down.
    pub(super) fn answer_disconnect(&self, g: &mut Inner) {
        let queued = g.phase == Phase::Closing && g.queue.len() != 0;
        if g.answer_disconnect && g.tx_free.len() == SQ_DEPTH && !queued {
            g.answer_disconnect = false;
            if let Some(res) = &g.res {
                res.id.disconnect();
            }
            if g.phase == Phase::Closing {
                self.end(g, abi::FI_ECONNRESET);
            }
        }
    }

    /// A connection that never came up.
    pub(super) fn cm_error(&self, g: &mut Inner, err: u32) {
        self.cm_error_with(g, err, &[]);
    }

    /// A connection that never came up, with the peer's private data (of
    /// its rejection).
    fn cm_error_with(&self, g: &mut Inner, err: u32, data: &[u8]) {
        if matches!(g.phase, Phase::Closed | Phase::Connected | Phase::Closing) {
            return;
        }
        if g.phase == Phase::Requested {
            // The client gave up before we answered.
            g.unanswerable = Some(abi::FI_ECONNRESET);
        }
        g.phase = Phase::Closed;
        if let Some(ep) = &g.ep {
            let _ = ep.event_error(err, 0, data);
        }
    }
}

impl CmHandler for Conn {
    fn cm_event(this: ArcBorrow<'_, Self>, event: CmEvent<'_>) -> CmReply {
        this.cm(event);
        CmReply::Done
    }
}

/// The provider's state of a connection request: the server connection,
/// which keeps the request's id (`Conn::request_id`) until an endpoint
/// takes it or the device goes.
pub(crate) struct Request {
    pub(crate) conn: Arc<Conn>,
}

impl Drop for Request {
    fn drop(&mut self) {
        if self.conn.is_bound() {
            // An endpoint took the connection and its id.
            return;
        }
        let id = match self.conn.request_id.take() {
            // Still being reported: the callback gives the id back.
            Some(id) => match self.conn.orphan(id) {
                Some(id) => Some(id),
                None => return,
            },
            None => None,
        };
        // Not taken by an endpoint: nobody else will close it.
        self.conn.close();
        drop(id);
    }
}

/// A listening id and the passive endpoint it reports requests to.
pub(crate) struct Listener {
    pub(crate) pep: PepRef,
    /// Taken by the passive endpoint's close, or by the device's removal.
    pub(crate) id: CmIdSlot,
}

impl Listener {
    pub(crate) fn close(&self) {
        drop(self.id.take());
    }
}

impl CmHandler for Listener {
    fn cm_event(this: ArcBorrow<'_, Self>, event: CmEvent<'_>) -> CmReply {
        match event {
            CmEvent::ConnectRequest(new, data) => Self::request(this, new, data),
            CmEvent::DeviceRemoval => {
                // The listener was bound to the device's address: it goes
                // with it (rdma_cm waits for that), and the consumer hears
                // of it, as from libfabric's verbs provider, so that it can
                // listen again once the address has a device. Reported
                // before the id leaves its slot: until then a close of the
                // passive endpoint destroys the id, which waits for this
                // callback, so the endpoint is live.
                if this.id.is_full() {
                    let _ = this.pep.error(abi::FI_ENODEV);
                }
                match this.id.take() {
                    Some(id) => CmReply::GiveBack(id),
                    None => CmReply::Done,
                }
            }
            _ => CmReply::Done,
        }
    }
}

impl Listener {
    /// A connection request: reported as FI_CONNREQ; when it cannot be, its
    /// new id goes back to rdma_cm (not adopted, or given back).
    fn request(this: ArcBorrow<'_, Self>, new: crate::rdma::NewId, data: &[u8]) -> CmReply {
        let Some(dev) = new.device() else {
            return CmReply::Done;
        };
        let Some(entry) = crate::device::entry_of(&dev) else {
            return CmReply::Done;
        };
        let (local, peer) = (new.addr(false), new.addr(true));
        let limits = dev.limits();
        let dev_info = Some((dev.name(), &limits));
        let Ok(info) = crate::msg_info(Some(&local), Some(&peer), local.is_ipv6(), dev_info) else {
            return CmReply::Done;
        };
        let Ok(conn) = Conn::requested(entry, new.read_depths()) else {
            return CmReply::Done;
        };
        let Ok(id) = new.adopt(conn.clone()) else {
            conn.forget_request();
            return CmReply::Done;
        };
        conn.set_handle(id.handle());
        conn.begin_report();
        // Whatever fails from here drops the request, which leaves the id
        // to this callback (as does a consumer that rejects or drops the
        // request before this returns).
        if let Err(id) = conn.request_id.put(id) {
            // Not a new connection's (empty) slot: never so.
            conn.forget_request();
            return CmReply::GiveBack(id);
        }
        let request = Request { conn: conn.clone() };
        // A request not reported was dropped, which left its id here.
        let _ = this.pep.connreq(info, request, wire::cm_data_decode(data));
        match conn.end_report() {
            Some(id) => {
                conn.forget_request();
                CmReply::GiveBack(id)
            }
            None => CmReply::Done,
        }
    }
}
