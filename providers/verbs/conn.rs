// SPDX-License-Identifier: GPL-2.0

//! A kofi_verbs connection: an rdma_cm id with an RC QP and its CQ.
//!
//! Messages go as SENDs into the peer's provider buffers with the protocol
//! of `wire.rs` (credits, segments), sent from the consumer's buffers
//! (DMA-mapped) and copied on receipt into the posted receive, so a message
//! may arrive before its receive and a short receive truncates; a large one
//! goes by rendezvous (the receiver reads it straight into the posted
//! receive, see `wire.rs`). RMA goes
//! straight between the consumer's buffers and the peer's registered region
//! (RDMA READ and WRITE); remote CQ data of a write follows it as a SEND.
//!
//! All state is under one mutex, taken by the endpoint's calls, the CM
//! callback and the CQ callback (all process context). Work requests are
//! signaled and complete in order on the send queue; each names a slot.
//! The rdma_cm id is owned apart, under `Conn::id`: calls that take
//! rdma_cm's handler lock (accept, destroy) are made holding that one but
//! not the state mutex, which the CM callback takes under its handler lock.

use crate::abi;
use crate::device::{DeviceEntry, RegState, VDomain};
use crate::flags::*;
use crate::kofi::{fi_error, swap_remove, Context, EpRef, Lent, MrMemory, PepRef, PostedRecv};
use crate::rdma::{
    inline_sge, CmEvent, CmHandler, CmId, CmIdSlot, Completion, Cq, Device, IdHandle, Mapping,
    Region, Slots, WorkCompletion,
};
use crate::ring::Ring;
use crate::sockaddr::SockAddr;
use crate::wire::{self, Header, HEADER_LEN};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, ArcBorrow, Mutex};

/// Provider receive buffers per connection (the peer's initial credits).
pub(crate) const RX_DEPTH: usize = 32;
/// Bytes of a receive buffer, header included.
pub(crate) const RX_BUF: usize = 16384;
/// Payload bytes per SEND.
const SEGMENT: usize = RX_BUF - HEADER_LEN;
/// Send work requests in flight.
pub(crate) const SQ_DEPTH: usize = 64;
/// Bytes a SEND may carry inline, asked of the device (which may take fewer).
const INLINE_ASK: u32 = 256;
/// Messages longer than this go by rendezvous (when their buffers fit one
/// region): the receiver RDMA-READs them into the posted receive.
const RNDV_MIN: usize = 64 << 10;
/// Operations queued on an endpoint (posted or waiting for credits).
pub(crate) const TX_DEPTH: usize = 256;
/// Consumer receives posted on an endpoint.
pub(crate) const RECV_DEPTH: usize = 256;
/// The largest message or RMA.
pub(crate) const MAX_MSG: usize = 16 << 20;
/// Private data bytes on connect, accept and reject (IB's connect request
/// carries 56, less our length byte).
pub(crate) const CM_DATA_MAX: usize = 55;

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
        /// An inject's bytes, copied.
        copy: KVec<u8>,
        len: usize,
        sent: usize,
        data: Option<u64>,
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
    },
    Credit,
    /// A rendezvous read is done: its sender may complete.
    Fin {
        cookie: u64,
    },
    /// A rendezvous message read into the receive in progress: `chunks`
    /// are (offset, length) of the local buffers, each one READ.
    Read {
        local: Lent,
        key: u64,
        chunks: KVec<(usize, usize)>,
        next: usize,
    },
}

/// Whether a message goes by rendezvous.
enum Rndv {
    No,
    /// Large enough: try to register its buffers.
    Try,
    /// Registration posted: announce it.
    Registered(Region),
}

/// A rendezvous send waiting for its OP_FIN.
struct RndvSend {
    cookie: u64,
    _region: Region,
    _lent: Lent,
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
pub(crate) struct RmaPart {
    pub(crate) key: u64,
    pub(crate) addr: u64,
    pub(crate) offset: usize,
    pub(crate) len: usize,
}

/// What a send-queue slot holds until its completion.
enum TxWr {
    /// A SEND: the consumer's mapped data, the mapping of the provider's
    /// bytes (none when they went inline) and those bytes; the report of
    /// its operation when it is the last work request of it.
    Send {
        _map: Mapping,
        _head: Option<Mapping>,
        _buf: KVec<u8>,
        report: Option<Report>,
    },
    Rma {
        _map: Mapping,
        /// An inject write's bytes of this part.
        _buf: KVec<u8>,
        report: Option<Report>,
    },
    Reg(Arc<RegState>),
    /// The registration of a rendezvous send's buffers (the region lives
    /// with the send).
    RndvReg,
    /// A READ of a rendezvous message; the last one ends the receive.
    RndvRead {
        _map: Mapping,
        last: bool,
    },
}

struct Report {
    flags: u64,
    ctx: Context,
    len: usize,
    /// Report success too (not an inject without FI_COMPLETION).
    always: bool,
}

/// A provider receive buffer, posted while the connection lives.
struct RxBuf {
    map: Mapping,
    buf: KVec<u8>,
}

/// The message being received into a posted receive.
struct Assembly {
    recv: PostedRecv,
    total: usize,
    got: usize,
    data: Option<u64>,
    /// Read by rendezvous: the sender's cookie.
    rndv: Option<u64>,
}

/// What the connection uses on the device (the id itself is owned by
/// `Conn::id`, which drops it only after taking these away).
struct Resources {
    id: IdHandle,
    cq: Option<Cq>,
    rx: KVec<RxBuf>,
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
    connect_data: KVec<u8>,
    credits: u32,
    /// Buffers reposted and not yet granted to the peer.
    grant: u32,
    tx_wr: KVec<Option<TxWr>>,
    tx_free: KVec<usize>,
    queue: Ring<TxOp, KVec<Option<TxOp>>>,
    recvs: Ring<PostedRecv, KVec<Option<PostedRecv>>>,
    /// Buffers holding segments no receive was posted for, in order.
    held: Ring<Held, KVec<Option<Held>>>,
    cur: Option<Assembly>,
    /// The first failed work request's error, for those that follow.
    sq_error: Option<u32>,
    shutdown_reported: bool,
    /// Disconnect once the send queue is empty: after the peer's
    /// disconnect or our fi_shutdown (moving the QP to error sooner would
    /// flush work requests not yet out, or whose ACK is on its way).
    answer_disconnect: bool,
}

/// A connection (client or server side).
#[pin_data]
pub(crate) struct Conn {
    slots: Slots<Conn>,
    #[pin]
    id: Mutex<Option<CmId>>,
    #[pin]
    inner: Mutex<Inner>,
    entry: Arc<DeviceEntry>,
    /// A passive side's request is being reported (see `Request`).
    in_connreq: AtomicBool,
    /// Bound to an endpoint (fi_endpoint took the request).
    bound: AtomicBool,
}

fn ring<T>(n: usize) -> Result<KVec<Option<T>>> {
    let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
    for _ in 0..n {
        v.push(None, GFP_KERNEL)?;
    }
    Ok(v)
}

/// A work completion's status as a positive FI_E*.
fn wc_error(status: u32) -> u32 {
    match status {
        abi::ib_wc_status_IB_WC_WR_FLUSH_ERR => abi::FI_ECANCELED,
        abi::ib_wc_status_IB_WC_REM_ACCESS_ERR | abi::ib_wc_status_IB_WC_LOC_PROT_ERR => {
            abi::FI_EACCES
        }
        abi::ib_wc_status_IB_WC_RETRY_EXC_ERR | abi::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR => {
            abi::FI_ECONNRESET
        }
        _ => abi::FI_EIO,
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
        let slots = Slots::new(RX_DEPTH + SQ_DEPTH)?;
        let (queue, recvs, held) = (ring(TX_DEPTH)?, ring(RECV_DEPTH)?, ring(RX_DEPTH)?);
        let conn = Arc::pin_init(
            pin_init!(Conn {
                slots,
                id <- new_mutex!(None, "kofi_verbs_id"),
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
                    connect_data: KVec::new(),
                    credits: RX_DEPTH as u32,
                    grant: 0,
                    tx_wr,
                    tx_free,
                    queue: Ring::new(queue),
                    recvs: Ring::new(recvs),
                    held: Ring::new(held),
                    cur: None,
                    sq_error: None,
                    shutdown_reported: false,
                    answer_disconnect: false,
                }, "kofi_verbs_conn"),
                entry,
                in_connreq: AtomicBool::new(false),
                bound: AtomicBool::new(false),
            }),
            GFP_KERNEL,
        )?;
        // SAFETY: The connection frees its CQ (in `close`) before it can be
        // dropped: the CM id holds a reference until then.
        unsafe { conn.slots.bind(&conn) };
        Ok(conn)
    }

    /// fi_connect: resolves `dest`, then connects with `param`.
    pub(crate) fn connect(
        dest: &SockAddr,
        param: &[u8],
        ep: EpRef,
        domain: Arc<VDomain>,
    ) -> Result<Arc<Conn>> {
        if param.len() > CM_DATA_MAX {
            return Err(EINVAL);
        }
        let conn = Conn::new(domain.entry().clone(), Phase::Resolving, Some(ep))?;
        let id = CmId::new(conn.clone())?;
        {
            let mut owner = conn.id.lock();
            let mut g = conn.inner.lock();
            g.connect_data.push(param.len() as u8, GFP_KERNEL)?;
            g.connect_data.extend_from_slice(param, GFP_KERNEL)?;
            g.domain = Some(domain);
            id.resolve_addr(dest)?;
            g.res = Some(Resources {
                // SAFETY: `close` takes the resources before the id.
                id: unsafe { id.handle() },
                cq: None,
                rx: KVec::new(),
            });
            *owner = Some(id);
        }
        conn.entry.add_conn(&conn)?;
        Ok(conn)
    }

    /// A connection request's server side, before it is reported.
    pub(crate) fn requested(entry: Arc<DeviceEntry>) -> Result<Arc<Conn>> {
        let conn = Conn::new(entry, Phase::Requested, None)?;
        conn.entry.add_conn(&conn)?;
        Ok(conn)
    }

    /// A request's id, for the state's use (its owner is the request).
    pub(crate) fn set_handle(&self, id: IdHandle) {
        self.inner.lock().res = Some(Resources {
            id,
            cq: None,
            rx: KVec::new(),
        });
    }

    /// Marks that the request is being handed to the consumer; while so,
    /// dropping the request leaves the id to rdma_cm.
    pub(crate) fn set_in_connreq(&self, on: bool) {
        self.in_connreq.store(on, Ordering::Release);
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

    pub(crate) fn in_connreq(&self) -> bool {
        self.in_connreq.load(Ordering::Acquire)
    }

    /// fi_endpoint on a request: the endpoint and domain it now belongs
    /// to, and the request's id.
    pub(crate) fn bind(&self, ep: EpRef, domain: Arc<VDomain>, id: &CmIdSlot) -> Result {
        let mut owner = self.id.lock();
        let mut g = self.inner.lock();
        if g.phase != Phase::Requested || self.bound.swap(true, Ordering::AcqRel) {
            return Err(fi_error(abi::FI_EOPBADSTATE));
        }
        *owner = Some(id.take().ok_or(EINVAL)?);
        g.ep = Some(ep);
        g.domain = Some(domain);
        Ok(())
    }

    /// Creates the CQ, the QP and posts the receive buffers.
    fn setup(&self, g: &mut Inner) -> Result {
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
            let cq = Cq::new(dev, (RX_DEPTH + SQ_DEPTH + 1) as u32)?;
            let inline =
                res.id
                    .create_qp(pd, &cq, SQ_DEPTH as u32, RX_DEPTH as u32, sge, INLINE_ASK)?;
            res.cq = Some(cq);
            Ok((pd.lkey(), limits, inline))
        })?;
        g.dev = Some(dev);
        g.lkey = lkey;
        g.max_inline = inline as usize;
        g.max_sge = (limits.max_sge.min(16) as usize).max(2);
        g.max_sge_rd = (limits.max_sge_rd.min(limits.max_sge).min(16) as usize).max(1);
        for i in 0..RX_DEPTH {
            let mut buf = KVec::with_capacity(RX_BUF, GFP_KERNEL)?;
            buf.extend_with(RX_BUF, 0, GFP_KERNEL)?;
            let map = Mapping::of_buffer(dev, &mut buf, false, lkey)?;
            res.rx.push(RxBuf { map, buf }, GFP_KERNEL)?;
            res.id.post_recv(&self.slots, i, res.rx[i].map.sges())?;
        }
        Ok(())
    }

    /// fi_accept.
    pub(crate) fn accept(&self, param: &[u8]) -> Result {
        if param.len() > CM_DATA_MAX {
            return Err(EINVAL);
        }
        let mut data = KVec::with_capacity(param.len() + 1, GFP_KERNEL)?;
        data.push(param.len() as u8, GFP_KERNEL)?;
        data.extend_from_slice(param, GFP_KERNEL)?;
        let owner = self.id.lock();
        {
            let mut g = self.inner.lock();
            if g.phase != Phase::Requested || g.ep.is_none() {
                return Err(fi_error(abi::FI_EOPBADSTATE));
            }
            self.setup(&mut g)?;
            g.phase = Phase::Accepting;
        }
        // rdma_accept takes the id's handler lock, under which the CM
        // callback takes the state mutex: call it without the latter.
        let r = owner.as_ref().ok_or(EINVAL)?.accept(&data);
        if r.is_err() {
            self.inner.lock().phase = Phase::Closed;
        }
        r
    }

    /// fi_reject.
    pub(crate) fn reject(&self, param: &[u8]) -> Result {
        if param.len() > CM_DATA_MAX {
            return Err(EINVAL);
        }
        let mut data = KVec::with_capacity(param.len() + 1, GFP_KERNEL)?;
        data.push(param.len() as u8, GFP_KERNEL)?;
        data.extend_from_slice(param, GFP_KERNEL)?;
        let mut g = self.inner.lock();
        if g.phase != Phase::Requested {
            return Err(fi_error(abi::FI_EOPBADSTATE));
        }
        g.res.as_ref().ok_or(EINVAL)?.id.reject(&data)?;
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
        let mut owner = self.id.lock();
        let res = {
            let mut g = self.inner.lock();
            g.ep = None;
            g.phase = Phase::Closed;
            g.res.take()
        };
        self.release(&mut owner, res);
        drop(owner);
        let mut g = self.inner.lock();
        while g.queue.pop().is_some() {}
        while g.recvs.pop().is_some() {}
        g.rndv_sends = KVec::new();
        g.cur = None;
        g.domain = None;
        drop(g);
        self.entry.remove_conn(self);
    }

    /// The device is going away: error completions, FI_SHUTDOWN, then close.
    pub(crate) fn device_gone(&self) {
        {
            let mut g = self.inner.lock();
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
        let res = self.inner.lock().res.take();
        self.release(&mut owner, res);
        drop(owner);
        let mut g = self.inner.lock();
        g.phase = Phase::Closed;
        // The regions of rendezvous sends go before the domain's PD.
        g.rndv_sends = KVec::new();
        g.domain = None;
        drop(g);
        self.entry.remove_conn(self);
    }

    /// Drains the QP, then destroys the id (and QP), the CQ and the
    /// buffers, in that order.
    fn release(&self, owner: &mut Option<CmId>, res: Option<Resources>) {
        if let Some(res) = &res {
            res.id.disconnect();
            // Flushes every posted work request through `completed`.
            res.id.drain();
        }
        drop(owner.take());
        if let Some(res) = res {
            drop(res.cq);
            drop(res.rx);
        }
    }

    /// The connection is over: fail what waits, FI_SHUTDOWN once.
    fn end(&self, g: &mut Inner, err: u32) {
        g.phase = Phase::Closed;
        while let Some(op) = g.queue.pop() {
            if let Some(ep) = &g.ep {
                match op {
                    TxOp::Msg {
                        done: Some((ctx, _)),
                        ..
                    } => {
                        let _ = ep.complete_error(FI_SEND | FI_MSG, ctx, err, 0, 0, 0);
                    }
                    TxOp::Rma { write, ctx, .. } => {
                        let kind = FI_RMA | if write { FI_WRITE } else { FI_READ };
                        let _ = ep.complete_error(kind, ctx, err, 0, 0, 0);
                    }
                    _ => {}
                }
            }
        }
        if let Some(ep) = &g.ep {
            if !g.shutdown_reported {
                g.shutdown_reported = true;
                let _ = ep.event(abi::FI_SHUTDOWN, &[]);
            }
        }
    }

    fn ensure_connected(g: &Inner) -> Result {
        if g.phase == Phase::Connected {
            Ok(())
        } else {
            Err(fi_error(abi::FI_ENOTCONN))
        }
    }

    fn queue_op(&self, g: &mut Inner, op: TxOp) -> Result {
        if g.queue.push(op).is_err() {
            return Err(fi_error(abi::FI_EAGAIN));
        }
        self.pump(g);
        Ok(())
    }

    /// A send from the consumer's buffers (`lent`) or of a copy (inject).
    pub(crate) fn send(
        &self,
        lent: Option<Lent>,
        copy: KVec<u8>,
        data: Option<u64>,
        done: Option<(Context, u64)>,
    ) -> Result {
        let len = lent.as_ref().map_or(copy.len(), Lent::len);
        if len > MAX_MSG {
            return Err(EINVAL);
        }
        let mut g = self.inner.lock();
        Self::ensure_connected(&g)?;
        let rndv = if lent.is_some() && len > RNDV_MIN {
            Rndv::Try
        } else {
            Rndv::No
        };
        let op = TxOp::Msg {
            lent,
            copy,
            len,
            sent: 0,
            data,
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
        // A READ lands in at most max_sge_rd local pieces (one on iWARP):
        // split each remote buffer's read to fit.
        let parts = match (&local, write) {
            (RmaLocal::Lent(l), false) => {
                let mut split = KVec::new();
                for p in parts.iter() {
                    for (offset, n) in chunks(l, p.offset, p.len, g.max_sge_rd)?.iter() {
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
            _ => parts,
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
        };
        self.queue_op(&mut g, op)
    }

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

    /// Registers `reg` through this connection's QP.
    pub(crate) fn post_reg(&self, reg: &Arc<RegState>) -> Result {
        let mut g = self.inner.lock();
        Self::ensure_connected(&g)?;
        let slot = crate::kofi::pop(&mut g.tx_free).ok_or_else(|| fi_error(abi::FI_EAGAIN))?;
        let posted = reg.with_region(|region| {
            g.res
                .as_ref()
                .ok_or(EINVAL)?
                .id
                .post_reg(&self.slots, slot, region)
        });
        match posted {
            Ok(()) => {
                g.tx_wr[slot - RX_DEPTH] = Some(TxWr::Reg(reg.clone()));
                Ok(())
            }
            Err(e) => {
                let _ = g.tx_free.push(slot, GFP_ATOMIC);
                Err(e)
            }
        }
    }

    /// Posts what the credits and free slots allow, in order.
    fn pump(&self, g: &mut Inner) {
        while g.phase == Phase::Connected || g.phase == Phase::Closing {
            if g.tx_free.is_empty() {
                return;
            }
            let Some(front) = g.queue.front() else {
                return;
            };
            let need = match front {
                TxOp::Credit | TxOp::Fin { .. } => 1,
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
                return;
            }
            if let Err(e) = self.post_next(g) {
                // A work request that cannot be posted fails its operation.
                let err = match e.to_errno() {
                    n if n == EINVAL.to_errno() => abi::FI_EINVAL,
                    _ => abi::FI_EIO,
                };
                match g.queue.pop() {
                    Some(TxOp::Read { .. }) => self.finish_rndv(g, false),
                    Some(op) => self.fail_op(g, op, err),
                    None => {}
                }
            }
        }
    }

    fn fail_op(&self, g: &Inner, op: TxOp, err: u32) {
        let Some(ep) = &g.ep else {
            return;
        };
        match op {
            TxOp::Msg {
                done: Some((ctx, _)),
                ..
            } => {
                let _ = ep.complete_error(FI_SEND | FI_MSG, ctx, err, 0, 0, 0);
            }
            TxOp::Rma { write, ctx, .. } => {
                let kind = FI_RMA | if write { FI_WRITE } else { FI_READ };
                let _ = ep.complete_error(kind, ctx, err, 0, 0, 0);
            }
            _ => {}
        }
    }

    /// Posts one work request of the operation at the queue's head.
    fn post_next(&self, g: &mut Inner) -> Result {
        let dev = g.dev.ok_or(EINVAL)?;
        let caps = SendCaps {
            dev,
            lkey: g.lkey,
            max_sge: g.max_sge,
            max_sge_rd: g.max_sge_rd,
            max_inline: g.max_inline,
        };
        let grant = g.grant.min(u16::MAX as u32) as u16;
        let slot = *g.tx_free.last().ok_or(EINVAL)?;
        let Some(front) = g.queue.front_mut() else {
            return Ok(());
        };
        let (wr, last, sends) = match front {
            TxOp::Credit | TxOp::Fin { .. } => {
                let (op, data) = match front {
                    TxOp::Fin { cookie } => (wire::OP_FIN, *cookie),
                    _ => (wire::OP_CREDIT, 0),
                };
                let h = Header {
                    op,
                    credits: grant,
                    data,
                    ..Default::default()
                };
                let wr = self.post_head(resources(&g.res)?, slot, &caps, &h, None, None)?;
                (wr, true, true)
            }
            _ => return self.post_op_part(g, &caps, slot, grant),
        };
        self.posted(g, slot, wr, last, sends, grant);
        Ok(())
    }

    fn post_send(
        &self,
        res: &Resources,
        slot: usize,
        opcode: u32,
        sges: &[abi::ib_sge],
        remote: (u64, u32),
    ) -> Result {
        res.id
            .post_send(&self.slots, slot, opcode, sges, remote, false)
    }

    /// Posts a SEND of header `h` and `payload` bytes at `offset` of the
    /// consumer's buffers (or of `copy`, an inject's). Small ones go inline,
    /// payload copied after the header; the others with the header in a
    /// mapped buffer and the payload from the consumer's memory.
    fn post_head(
        &self,
        res: &Resources,
        slot: usize,
        caps: &SendCaps,
        h: &Header,
        payload: Option<(&Lent, usize, usize)>,
        copy: Option<&[u8]>,
    ) -> Result<TxWr> {
        let len = payload.map_or(0, |p| p.2) + copy.map_or(0, <[u8]>::len);
        let inline = HEADER_LEN + len <= caps.max_inline;
        let mut buf = KVec::with_capacity(HEADER_LEN + len, GFP_KERNEL)?;
        buf.extend_from_slice(&h.encode(), GFP_KERNEL)?;
        if let Some(c) = copy {
            buf.extend_from_slice(c, GFP_KERNEL)?;
        }
        let mut map = Mapping::empty(caps.dev, true);
        if let Some((lent, offset, n)) = payload {
            if inline {
                lent.gather_range(offset, n, &mut buf)?;
            } else {
                map = Mapping::of_lent(
                    caps.dev,
                    lent,
                    (offset, n),
                    true,
                    caps.lkey,
                    caps.max_sge - 1,
                )?;
            }
        }
        if inline {
            let sge = inline_sge(&buf);
            res.id.post_send(
                &self.slots,
                slot,
                abi::ib_wr_opcode_IB_WR_SEND,
                &[sge],
                (0, 0),
                true,
            )?;
            return Ok(TxWr::Send {
                _map: map,
                _head: None,
                _buf: buf,
                report: None,
            });
        }
        let head = Mapping::of_buffer(caps.dev, &mut buf, true, caps.lkey)?;
        let mut sges = KVec::with_capacity(1 + map.sges().len(), GFP_KERNEL)?;
        sges.extend_from_slice(head.sges(), GFP_KERNEL)?;
        sges.extend_from_slice(map.sges(), GFP_KERNEL)?;
        self.post_send(res, slot, abi::ib_wr_opcode_IB_WR_SEND, &sges, (0, 0))?;
        Ok(TxWr::Send {
            _map: map,
            _head: Some(head),
            _buf: buf,
            report: None,
        })
    }

    /// Bookkeeping after a work request went out.
    fn posted(&self, g: &mut Inner, slot: usize, wr: TxWr, last: bool, sends: bool, grant: u16) {
        let _ = crate::kofi::pop(&mut g.tx_free);
        g.tx_wr[slot - RX_DEPTH] = Some(wr);
        if sends {
            g.credits -= 1;
            g.grant -= u32::from(grant);
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
        let res = &g.res;
        let Some(front) = g.queue.front_mut() else {
            return Ok(());
        };
        let (wr, last, sends) = match front {
            TxOp::Msg {
                lent,
                copy,
                len,
                sent,
                data,
                done,
                ..
            } => {
                let seg = (*len - *sent).min(SEGMENT);
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
                let h = Header {
                    op: wire::OP_MSG,
                    flags,
                    credits: grant,
                    len: *len as u32,
                    data: data.unwrap_or(0),
                };
                let (payload, copied) = match lent {
                    Some(l) => (Some((&*l, *sent, seg)), None),
                    None => (None, Some(&copy[*sent..*sent + seg])),
                };
                let mut wr = self.post_head(resources(res)?, slot, caps, &h, payload, copied)?;
                *sent += seg;
                if let (true, TxWr::Send { report, .. }) = (last, &mut wr) {
                    *report = done.map(|(ctx, flags)| Report {
                        flags: FI_SEND | FI_MSG | (flags & FI_COMPLETION),
                        ctx,
                        len: *len,
                        always: true,
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
            } => {
                let kind = FI_RMA | if *write { FI_WRITE } else { FI_READ };
                let report = Report {
                    flags: kind | (*flags & FI_COMPLETION),
                    ctx: *ctx,
                    len: *len,
                    // An inject write reports only when asked to.
                    always: *flags & FI_INJECT == 0 || *flags & FI_COMPLETION != 0,
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
                    let mut wr = self.post_head(resources(res)?, slot, caps, &h, None, None)?;
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
                        RmaLocal::Lent(l) => {
                            Mapping::of_lent(dev, l, (p.offset, p.len), *write, lkey, max_sge)?
                        }
                        RmaLocal::Copy(c) => {
                            buf.extend_from_slice(&c[p.offset..p.offset + p.len], GFP_KERNEL)?;
                            Mapping::of_buffer(dev, &mut buf, true, lkey)?
                        }
                    };
                    let opcode = if *write {
                        abi::ib_wr_opcode_IB_WR_RDMA_WRITE
                    } else {
                        abi::ib_wr_opcode_IB_WR_RDMA_READ
                    };
                    // The key carries the rkey and what to add to the address.
                    let rkey = p.key as u32;
                    let addr = p.addr.wrapping_add(p.key >> 32);
                    self.post_send(resources(res)?, slot, opcode, map.sges(), (addr, rkey))?;
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
                local,
                key,
                chunks,
                next,
            } => {
                let (offset, n) = chunks[*next];
                let map = Mapping::of_lent(dev, local, (offset, n), false, lkey, caps.max_sge_rd)?;
                // The sender's region starts at the message's first byte.
                let addr = (offset as u64).wrapping_add(*key >> 32);
                self.post_send(
                    resources(res)?,
                    slot,
                    abi::ib_wr_opcode_IB_WR_RDMA_READ,
                    map.sges(),
                    (addr, *key as u32),
                )?;
                *next += 1;
                let last = *next == chunks.len();
                (TxWr::RndvRead { _map: map, last }, last, false)
            }
            TxOp::Credit | TxOp::Fin { .. } => return Ok(()),
        };
        self.posted(g, slot, wr, last, sends, if sends { grant } else { 0 });
        Ok(())
    }

    /// The rendezvous steps of the message at the queue's head: register
    /// its buffers, then announce them (OP_RTS). False when it goes by
    /// segments instead.
    fn post_rndv(&self, g: &mut Inner, caps: &SendCaps, slot: usize, grant: u16) -> Result<bool> {
        let Some(TxOp::Msg {
            lent,
            len,
            data,
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
                let memory = match l {
                    Lent::Kvecs(k) => MrMemory::Kvecs(k.kvecs()),
                    Lent::Pages(p) => MrMemory::Pages(p.bvecs()),
                };
                let domain = g.domain.as_ref().ok_or(EINVAL)?;
                // SAFETY: The consumer lends the buffers until the send
                // completes, which is after the region is dropped (with the
                // send, at its OP_FIN or the connection's close); the PD
                // outlives the connection.
                let region =
                    domain.with_pd(|pd| unsafe { Region::new(pd, &memory, 0, true, false) });
                let Ok(region) = region else {
                    // Buffers no region can take: by segments.
                    *rndv = Rndv::No;
                    return Ok(true);
                };
                resources(&g.res)?.id.post_reg(&self.slots, slot, &region)?;
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
                let h = Header {
                    op: wire::OP_RTS,
                    flags: if data.is_some() {
                        wire::FLAG_CQ_DATA
                    } else {
                        0
                    },
                    credits: grant,
                    len: *len as u32,
                    data: data.unwrap_or(0),
                };
                let wr = self.post_head(resources(&g.res)?, slot, caps, &h, None, Some(&body))?;
                let Rndv::Registered(region) = core::mem::replace(rndv, Rndv::No) else {
                    return Err(EINVAL);
                };
                let report = done.map(|(ctx, flags)| Report {
                    flags: FI_SEND | FI_MSG | (flags & FI_COMPLETION),
                    ctx,
                    len: *len,
                    always: true,
                });
                let lent = lent.take().ok_or(EINVAL)?;
                g.next_cookie += 1;
                g.rndv_sends.push(
                    RndvSend {
                        cookie,
                        _region: region,
                        _lent: lent,
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
    fn fail_rndv_sends(g: &mut Inner, err: u32) {
        for send in g.rndv_sends.iter_mut() {
            if let (Some(r), Some(ep)) = (send.report.take(), &g.ep) {
                let _ = ep.complete_error(r.flags, r.ctx, err, 0, 0, 0);
            }
        }
    }

    /// The rendezvous read into the receive in progress is over (`ok`):
    /// report the receive, and let the sender complete (OP_FIN).
    fn finish_rndv(&self, g: &mut Inner, ok: bool) {
        let Some(done) = g.cur.take() else {
            return;
        };
        let Some(cookie) = done.rndv else {
            g.cur = Some(done);
            return;
        };
        if let Some(ep) = &g.ep {
            let cap = done.recv.capacity();
            let ctx = done.recv.context;
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
        let _ = g.queue.push(TxOp::Fin { cookie });
    }

    /// A send-queue completion.
    fn tx_done(&self, g: &mut Inner, wc: &WorkCompletion) {
        let i = wc.slot - RX_DEPTH;
        let Some(wr) = g.tx_wr[i].take() else {
            return;
        };
        let _ = g.tx_free.push(wc.slot, GFP_ATOMIC);
        if !wc.ok() && g.sq_error.is_none() {
            g.sq_error = Some(wc_error(wc.status));
            // The QP is in error: end the connection on both sides.
            if wc.status != abi::ib_wc_status_IB_WC_WR_FLUSH_ERR {
                if let Some(res) = &g.res {
                    res.id.disconnect();
                }
            }
        }
        let report = match wr {
            TxWr::Send { report, .. } | TxWr::Rma { report, .. } => report,
            TxWr::Reg(reg) => {
                reg.done(wc.ok());
                None
            }
            TxWr::RndvReg => None,
            TxWr::RndvRead { last, .. } => {
                if last {
                    self.finish_rndv(g, wc.ok());
                    self.deliver_held(g);
                }
                None
            }
        };
        self.answer_disconnect(g);
        if let (Some(r), Some(ep)) = (report, &g.ep) {
            if wc.ok() {
                if r.always {
                    let _ = ep.complete(r.flags, r.ctx, r.len, 0);
                }
            } else {
                let err = g.sq_error.unwrap_or(abi::FI_EIO);
                let _ = ep.complete_error(r.flags, r.ctx, err, 0, 0, wc.status as i32);
            }
        }
        self.pump(g);
    }

    /// A receive completion into provider buffer `i`.
    fn rx_done(&self, g: &mut Inner, wc: &WorkCompletion) {
        let i = wc.slot;
        if !wc.ok() {
            // The QP is flushing: every OP_FIN that came is processed (the
            // CQ is in order, the CM's disconnect event is not).
            Self::fail_rndv_sends(g, abi::FI_ECONNRESET);
            return;
        }
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
        match h.op {
            wire::OP_MSG | wire::OP_RTS => {
                if g.held.len() != 0 || !self.deliver(g, i, &h, len) {
                    let _ = g.held.push((i, len));
                    self.pump(g);
                    return;
                }
            }
            wire::OP_FIN => {
                if let Some(i) = g.rndv_sends.iter().position(|r| r.cookie == h.data) {
                    let send = swap_remove(&mut g.rndv_sends, i);
                    if let (Some(r), Some(ep)) = (&send.report, &g.ep) {
                        let _ = ep.complete(r.flags, r.ctx, r.len, 0);
                    }
                }
            }
            wire::OP_WRITE_DATA => {
                if let Some(ep) = &g.ep {
                    let flags = FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA;
                    let _ = ep.complete(flags, Context::NONE, h.len as usize, h.data);
                }
            }
            _ => {}
        }
        self.repost(g, i);
        self.pump(g);
    }

    /// Hands buffer `i` back to the device and counts it as a credit owed.
    fn repost(&self, g: &mut Inner, i: usize) {
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
    fn deliver(&self, g: &mut Inner, i: usize, h: &Header, len: usize) -> bool {
        // Messages wait behind a rendezvous read in progress.
        if g.cur.as_ref().is_some_and(|c| c.rndv.is_some()) {
            return false;
        }
        if h.op == wire::OP_RTS {
            return self.deliver_rts(g, i, h, len);
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
        let Some(done) = g.cur.take() else {
            return true;
        };
        if let Some(ep) = &g.ep {
            let cap = done.recv.capacity();
            if done.total > cap {
                let _ = ep.complete_error(
                    FI_RECV | FI_MSG,
                    done.recv.context,
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
                let _ = ep.complete(flags, done.recv.context, done.total, done.data.unwrap_or(0));
            }
        }
        true
    }

    /// An OP_RTS in buffer `i`: read the message into the next receive;
    /// false when none is posted (the announcement is held).
    fn deliver_rts(&self, g: &mut Inner, i: usize, h: &Header, len: usize) -> bool {
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

    /// Delivers held segments now that a receive is posted.
    fn deliver_held(&self, g: &mut Inner) {
        while let Some(&(i, len)) = g.held.front() {
            let header = g
                .res
                .as_ref()
                .and_then(|r| Header::decode(&r.rx[i].buf[..len]));
            let Some(h) = header else {
                return;
            };
            if !self.deliver(g, i, &h, len) {
                return;
            }
            let _ = g.held.pop();
            self.repost(g, i);
        }
        self.pump(g);
    }

    /// Whether this is a connected connection of `domain`.
    pub(crate) fn serves(&self, domain: &VDomain) -> bool {
        let g = self.inner.lock();
        g.phase == Phase::Connected
            && g.domain
                .as_ref()
                .is_some_and(|d| core::ptr::eq(&**d, domain))
    }

    fn cm(&self, event: CmEvent<'_>) {
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
                    let data = core::mem::take(&mut g.connect_data);
                    g.res.as_ref().ok_or(EINVAL)?.id.connect(&data)
                });
                match r {
                    Ok(()) => g.phase = Phase::Connecting,
                    Err(_) => self.cm_error(&mut g, abi::FI_ECONNREFUSED),
                }
            }
            CmEvent::Established(data) => {
                if g.phase != Phase::Connecting && g.phase != Phase::Accepting {
                    return;
                }
                let client = g.phase == Phase::Connecting;
                g.phase = Phase::Connected;
                // Regions registered before any connection become valid
                // through this one, ahead of anything the consumer sends.
                if let Some(domain) = g.domain.clone() {
                    drop(g);
                    domain.register_pending(self);
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
                self.pump(&mut g);
            }
            CmEvent::Rejected => self.cm_error(&mut g, abi::FI_ECONNREFUSED),
            CmEvent::Unreachable => self.cm_error(&mut g, abi::FI_EHOSTUNREACH),
            CmEvent::Error(err) => self.cm_error(&mut g, err),
            CmEvent::Disconnected => {
                // Answer the peer's disconnect (IB's DREP, so its side
                // completes too) once nothing is in flight.
                g.answer_disconnect = true;
                self.answer_disconnect(&mut g);
                if g.phase == Phase::Connected || g.phase == Phase::Closing {
                    self.end(&mut g, abi::FI_ECONNRESET);
                }
            }
            _ => {}
        }
    }

    /// Disconnects, when asked to, once nothing is queued or posted; ends a
    /// connection shutting down.
    fn answer_disconnect(&self, g: &mut Inner) {
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
    fn cm_error(&self, g: &mut Inner, err: u32) {
        if matches!(g.phase, Phase::Closed | Phase::Connected | Phase::Closing) {
            return;
        }
        g.phase = Phase::Closed;
        if let Some(ep) = &g.ep {
            let _ = ep.event_error(err, 0);
        }
    }
}

/// The connection's resources on the device, while it has them.
fn resources(res: &Option<Resources>) -> Result<&Resources> {
    res.as_ref().ok_or_else(|| fi_error(abi::FI_ENOTCONN))
}

/// What posting a work request needs of the connection.
struct SendCaps {
    dev: Device,
    lkey: u32,
    max_sge: usize,
    max_sge_rd: usize,
    max_inline: usize,
}

/// Splits bytes `offset .. offset + len` of `lent` into pieces that each
/// touch at most `max` of its kvecs or bio_vecs (a READ's SGE limit).
fn chunks(lent: &Lent, offset: usize, len: usize, max: usize) -> Result<KVec<(usize, usize)>> {
    let lens: KVec<usize> = {
        let mut v = KVec::new();
        match lent {
            Lent::Kvecs(k) => {
                for kv in k.kvecs() {
                    v.push(kv.iov_len, GFP_KERNEL)?;
                }
            }
            Lent::Pages(p) => {
                for bv in p.bvecs() {
                    v.push(bv.bv_len as usize, GFP_KERNEL)?;
                }
            }
        }
        v
    };
    let mut out = KVec::new();
    let (end, mut pos, mut at) = (offset + len, 0usize, offset);
    let (mut start, mut pieces) = (offset, 0);
    for l in lens.iter() {
        let (lo, hi) = (pos, pos + l);
        pos = hi;
        if hi <= at || *l == 0 {
            continue;
        }
        if lo >= end {
            break;
        }
        if pieces == max {
            out.push((start, at - start), GFP_KERNEL)?;
            start = at;
            pieces = 0;
        }
        pieces += 1;
        at = hi.min(end);
    }
    if at > start {
        out.push((start, at - start), GFP_KERNEL)?;
    }
    Ok(out)
}

impl Completion for Conn {
    fn completed(&self, wc: &WorkCompletion) {
        let mut g = self.inner.lock();
        if wc.slot < RX_DEPTH {
            self.rx_done(&mut g, wc);
        } else {
            self.tx_done(&mut g, wc);
        }
    }
}

impl CmHandler for Conn {
    fn cm_event(this: ArcBorrow<'_, Self>, event: CmEvent<'_>) -> bool {
        this.cm(event);
        false
    }
}

/// The provider's state of a connection request: the server connection
/// and, until an endpoint takes it, the request's id.
pub(crate) struct Request {
    pub(crate) conn: Arc<Conn>,
    pub(crate) id: CmIdSlot,
}

impl Drop for Request {
    fn drop(&mut self) {
        if self.conn.in_connreq() {
            // Not reported after all: the id goes back to rdma_cm.
            if let Some(id) = self.id.take() {
                // SAFETY: Still in the CONNECT_REQUEST callback that
                // adopted the id, which then returns true (`Listener`).
                unsafe { id.abandon() };
            }
            self.conn.forget_request();
        } else if !self.conn.is_bound() {
            // Not taken by an endpoint: nobody else will close it.
            self.conn.close();
            drop(self.id.take());
        }
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
    fn cm_event(this: ArcBorrow<'_, Self>, event: CmEvent<'_>) -> bool {
        match event {
            CmEvent::ConnectRequest(new, data) => Self::request(this, new, data),
            CmEvent::DeviceRemoval => match this.id.take() {
                // The listener was bound to the device's address: it goes
                // with it (rdma_cm waits for that).
                Some(id) => {
                    // SAFETY: In this id's callback, which returns true.
                    unsafe { id.abandon() };
                    true
                }
                None => false,
            },
            _ => false,
        }
    }
}

impl Listener {
    /// A connection request: reported as FI_CONNREQ; true when it could
    /// not be (its new id goes back to rdma_cm).
    fn request(this: ArcBorrow<'_, Self>, new: crate::rdma::NewId, data: &[u8]) -> bool {
        let Some(dev) = new.device() else {
            return true;
        };
        let Some(entry) = crate::device::entry_of(&dev) else {
            return true;
        };
        let (local, peer) = (new.addr(false), new.addr(true));
        let Ok(info) =
            crate::msg_info(Some(&local), Some(&peer), local.is_ipv6(), Some(dev.name()))
        else {
            return true;
        };
        let Ok(conn) = Conn::requested(entry) else {
            return true;
        };
        let id = new.adopt(conn.clone());
        // SAFETY: The state drops the handle (in `close`) before the
        // request or the endpoint drops the id.
        conn.set_handle(unsafe { id.handle() });
        conn.set_in_connreq(true);
        // Whatever fails from here drops the request, which abandons the id.
        let request = Request {
            conn: conn.clone(),
            id: CmIdSlot::new(id),
        };
        let reported = KBox::new(request, GFP_KERNEL)
            .map_err(Error::from)
            .and_then(|req| this.pep.connreq(info, req, wire::cm_data_decode(data)));
        conn.set_in_connreq(false);
        reported.is_err()
    }
}
