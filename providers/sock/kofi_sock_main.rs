// SPDX-License-Identifier: GPL-2.0

//! kofi_sock: the kernel TCP socket provider ("sock").
//!
//! FI_EP_MSG endpoints over kernel TCP sockets, IPv4 and IPv6: connection
//! management with private data, messages, and RMA served by the core's
//! memory key table. Progress needs no thread of its own: socket callbacks
//! queue each connection's work item on a WQ_MEM_RECLAIM workqueue. The
//! wire protocol is in `wire.rs` and `Documentation/kofi/sock-wire.rst`.

use kernel::alloc::KVVec;
use kernel::prelude::*;
use kernel::sync::{new_mutex, Arc, Mutex};
use kernel::{c_str, str::CStr};

#[path = "../../include/kofi/rust/abi.rs"]
mod abi;
#[path = "../../include/kofi/rust/compat.rs"]
#[allow(dead_code)]
mod compat;
mod conn;
#[path = "../../include/kofi/rust/context.rs"]
#[allow(dead_code)]
mod context;
#[path = "../../include/kofi/rust/fi_error.rs"]
mod fi_error;
#[path = "../../include/kofi/rust/flags.rs"]
#[allow(dead_code)]
mod flags;
#[path = "../../include/kofi/rust/iovec.rs"]
#[allow(dead_code)]
mod iovec;
#[path = "../common/mod.rs"]
#[allow(dead_code)]
mod kofi;
mod listener;
mod prefetch;
#[path = "../../include/kofi/rust/ring.rs"]
#[allow(dead_code)]
mod ring;
mod socket;
#[path = "../common/timer.rs"]
mod timer;
#[allow(dead_code)]
mod wire;
#[path = "../../include/kofi/rust/workqueue.rs"]
mod workqueue;

use conn::{Conn, Done, TxPayload};
use flags::*;
use kofi::ip_endpoint::IpEndpoint;
use kofi::{
    fi_error, Context, DomainRef, EpRef, Info, InfoList, InfoRef, Lent, Msg, PepRef, RmaMsg,
    TaggedMsg,
};
use kofi::{sockaddr, tagged};
use listener::Listener;
use socket::SockAddr;
use wire::{Header, Op};

kofi::module_kofi_provider! {
    provider: Sock,
    name: "kofi_sock",
    description: "kofi provider over kernel TCP sockets",
    license: "GPL",
    alias: ["kofi-sock"],
}
const INJECT_SIZE: usize = 8192;
/// The buffers of one operation, walked by an iov_iter: the pages of a
/// 1 MiB block request (kofi_verbs offers as many).
const IOV_LIMIT: usize = 256;
const RMA_IOV_LIMIT: usize = 4;
/// A region is the core's list of buffers, walked by an iov_iter: a storage
/// request's pages (a 1 MiB request is 256 of them, 257 unaligned) fit.
const MR_IOV_LIMIT: usize = 257;
const CQ_DATA_SIZE: usize = 8;

/// An FI_EP_MSG info with the provider's limits; `local`/`peer` become the
/// source and destination addresses.
pub(crate) fn msg_info(
    local: Option<&SockAddr>,
    peer: Option<&SockAddr>,
    ipv6: bool,
) -> Result<Info> {
    let mut info = Info::new()?;
    {
        let f = info.fields();
        f.info.caps = FI_MSG
            | FI_TAGGED
            | FI_RMA
            | FI_SEND
            | FI_RECV
            | FI_READ
            | FI_WRITE
            | FI_REMOTE_READ
            | FI_REMOTE_WRITE
            | FI_RMA_EVENT;
        f.info.addr_format = if ipv6 {
            abi::FI_SOCKADDR_IN6
        } else {
            abi::FI_SOCKADDR_IN
        };
        // To consumers that list it: remote CQ data takes a posted receive.
        f.info.mode = abi::FI_RX_CQ_DATA;
        f.ep.type_ = abi::fi_ep_type_FI_EP_MSG;
        f.ep.protocol = abi::FI_PROTO_SOCK_TCP;
        f.ep.max_msg_size = conn::MAX_MSG;
        // One TCP stream, handled in order at the target: a read or a
        // write sees every earlier write's data, whatever the sizes.
        f.ep.max_order_raw_size = conn::MAX_MSG;
        f.ep.max_order_waw_size = conn::MAX_MSG;
        f.tx.iov_limit = IOV_LIMIT;
        f.tx.rma_iov_limit = RMA_IOV_LIMIT;
        f.tx.inject_size = INJECT_SIZE;
        f.tx.size = conn::TX_DEPTH;
        // The defaults it honours: a send refuses the stronger levels.
        f.tx.op_flags = FI_COMPLETION | FI_INJECT | FI_MORE | FI_FENCE | FI_INJECT_COMPLETE;
        f.rx.op_flags = FI_COMPLETION | FI_MORE;
        f.tx.msg_order = u64::from(
            abi::FI_ORDER_SAS
                | abi::FI_ORDER_RAW
                | abi::FI_ORDER_WAW
                | abi::FI_ORDER_WAS
                | abi::FI_ORDER_SAW,
        );
        f.rx.iov_limit = IOV_LIMIT;
        f.rx.size = conn::RX_DEPTH;
        // FI_MR_ENDPOINT, to consumers that ask: the core binds and enables
        // regions; peers reach them through the core's table once enabled.
        f.domain.mr_mode = (abi::FI_MR_PROV_KEY | abi::FI_MR_ENDPOINT) as i32;
        f.domain.mr_key_size = core::mem::size_of::<u64>();
        f.domain.mr_iov_limit = MR_IOV_LIMIT;
        f.domain.cq_data_size = CQ_DATA_SIZE;
        f.domain.threading = abi::fi_threading_FI_THREAD_SAFE;
        f.domain.control_progress = abi::fi_progress_FI_PROGRESS_AUTO;
        f.domain.data_progress = abi::fi_progress_FI_PROGRESS_AUTO;
    }
    info.set_domain_name(c_str!("tcp"))?;
    info.set_fabric_name(c_str!("tcp"))?;
    sockaddr::set_info_addrs(&mut info, local, peer)?;
    Ok(info)
}

struct Sock;

#[vtable]
impl kofi::Provider for Sock {
    const NAME: &'static CStr = c_str!("sock");
    const VERSION: u32 = 1 << 16;
    const PRIORITY: i32 = 10;

    type Fabric = ();
    type Domain = DomainRef;
    type Endpoint = SockEp;
    type PassiveEp = SockPep;
    /// The workqueue; it goes after the registration: what work is left
    /// only finishes closed connections.
    type ModuleState = workqueue::OwnQueue;

    fn module_state() -> Result<workqueue::OwnQueue> {
        // Per-CPU, as nvme-tcp's: a connection's work runs on the CPU whose
        // softirq queued it, beside the consumer's own work items, where an
        // unbound worker woke another CPU for each hop (a 4 KiB kofi_blk
        // read took 10 context switches and 3 IPIs, against 2 and none).
        workqueue::OwnQueue::new(c_str!("kofi_sock"), 0)
    }

    fn getinfo(
        _version: u32,
        node: Option<&CStr>,
        service: Option<&CStr>,
        flags: u64,
    ) -> Result<InfoList> {
        let mut list = InfoList::default();
        let port = sockaddr::port_of(service)?;
        if node.is_none() && flags & FI_SOURCE == 0 {
            // No address given: offer both families, the consumer picks.
            list.push(msg_info(None, None, false)?)?;
            list.push(msg_info(None, None, true)?)?;
            return Ok(list);
        }
        let addr = SockAddr::parse(node, port)?;
        let info = if flags & FI_SOURCE != 0 {
            msg_info(Some(&addr), None, addr.is_ipv6())?
        } else {
            msg_info(None, Some(&addr), addr.is_ipv6())?
        };
        list.push(info)?;
        Ok(list)
    }

    fn fabric(_attr: &abi::fi_fabric_attr) -> Result {
        Ok(())
    }

    fn domain(_fabric: &(), domain: DomainRef, _info: &InfoRef<'_>) -> Result<DomainRef> {
        Ok(domain)
    }

    fn endpoint(domain: &DomainRef, ep: EpRef, info: &InfoRef<'_>) -> Result<SockEp> {
        let conn = match info.request::<Request>()? {
            Some(req) => {
                let conn = req.conn.clone();
                conn.bind(ep.clone(), domain.clone(), info.rx_cq_data())?;
                Some(conn)
            }
            None => None,
        };
        Ok(SockEp {
            ip: IpEndpoint::new(ep, info, conn, conn::RX_DEPTH)?,
            domain: domain.clone(),
        })
    }

    fn passive_ep(_fabric: &(), pep: PepRef, info: &InfoRef<'_>) -> Result<SockPep> {
        let src = match info.src_addr() {
            Some(b) => SockAddr::from_bytes(b)?,
            None => SockAddr::parse(None, 0)?,
        };
        Ok(SockPep {
            pep,
            src,
            listener: KBox::pin_init(new_mutex!(None, "kofi_sock_pep"), GFP_KERNEL)?,
        })
    }
}

/// A send's arguments, from an untagged or a tagged message.
struct SendParts<L, G> {
    context: Context,
    /// Remote CQ data (with FI_REMOTE_CQ_DATA).
    data: u64,
    /// The consumer's buffers, lent.
    lend: L,
    /// The bytes, and what copies them (an inject's) into a buffer as long.
    len: usize,
    copy: G,
}

/// An active endpoint: at most one connection.
struct SockEp {
    ip: IpEndpoint<Conn>,
    domain: DomainRef,
}

impl SockEp {
    fn conn(&self) -> Result<Arc<Conn>> {
        self.ip.conn()
    }

    /// Sends a message with header `h` (its op and tag set): from the
    /// consumer's buffers, or a copy of an inject's.
    fn send<L, G>(&self, mut h: Header, flags: u64, parts: SendParts<L, G>) -> Result
    where
        L: FnOnce() -> Result<Lent>,
        G: FnOnce(&mut [u8]) -> Result,
    {
        // A send completes once TCP has taken its bytes (FI_INJECT_COMPLETE),
        // not when the peer has them: refuse the levels that say more. (An
        // RMA completes on the target's answer: every level holds.)
        if flags & (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE) != 0 {
            return Err(fi_error(abi::FI_EBADFLAGS));
        }
        if flags & FI_REMOTE_CQ_DATA != 0 {
            h.flags |= wire::FLAG_CQ_DATA;
            h.data = parts.data;
        }
        // Every send reports once sent, an inject too: the core posts a CQ
        // entry only when one was asked for, and counts it on a counter.
        let done = Some(Done::send(parts.context, flags));
        let more = flags & FI_MORE != 0;
        // The payload goes out from the consumer's buffers, except an
        // inject's, whose buffer is the caller's again on return.
        if flags & FI_INJECT == 0 {
            return self.conn()?.post_payload(h, (parts.lend)()?, done, more);
        }
        self.conn()?.post_copy(h, parts.len, parts.copy, done, more)
    }
}

kofi::ip_endpoint::ip_endpoint_ops!(SockEp, Conn, {
    fn sendmsg(&self, msg: &Msg<'_>, flags: u64) -> Result {
        let h = Header::new(Op::Send);
        let parts = SendParts {
            context: msg.context(),
            data: msg.data(),
            lend: || msg.lend(),
            len: msg.len(),
            copy: |room: &mut [u8]| msg.copy_to(room),
        };
        self.send(h, flags, parts)
    }

    fn tsendmsg(&self, msg: &TaggedMsg<'_>, flags: u64) -> Result {
        let mut h = Header::new(Op::Send);
        h.flags = wire::FLAG_TAGGED;
        h.key = msg.tag();
        let parts = SendParts {
            context: msg.context(),
            data: msg.data(),
            lend: || msg.lend(),
            len: msg.len(),
            copy: |room: &mut [u8]| msg.copy_to(room),
        };
        self.send(h, flags | FI_TAGGED, parts)
    }

    fn writemsg(&self, msg: &RmaMsg<'_>, flags: u64) -> Result {
        let local = Local::Write {
            lent: msg.lend()?,
            inject: flags & FI_INJECT != 0,
        };
        let parts = rma_parts(msg, local)?;
        let len = parts.iter().map(|p| p.len).sum();
        let call = conn::rma_call(true, msg.context(), flags, len, None);
        let cq_data = (flags & FI_REMOTE_CQ_DATA != 0).then_some(msg.data());
        self.conn()?.post_rma(call, parts, cq_data)
    }

    fn readmsg(&self, msg: &RmaMsg<'_>, flags: u64) -> Result {
        let parts = rma_parts(msg, Local::Read)?;
        let len = parts.iter().map(|p| p.len).sum();
        let call = conn::rma_call(
            false,
            msg.context(),
            flags,
            len,
            Some(msg.to_posted(flags)?),
        );
        self.conn()?.post_rma(call, parts, None)
    }
});

/// An RMA call's local buffers, as its parts carry them.
enum Local {
    /// A read's: its parts carry nothing.
    Read,
    /// A write's: each part goes out from its share of the buffers, which
    /// the consumer lends until the call completes (on the target's
    /// answer), or from a copy when the call is an inject.
    Write { lent: Lent, inject: bool },
}

/// The parts of an RMA call: each remote buffer, and where its bytes are in
/// the local ones (the core checked the lengths add up). An inject's copies
/// are vmalloc'd when large: a payload never needs contiguous pages.
fn rma_parts(msg: &RmaMsg<'_>, local: Local) -> Result<KVec<conn::RmaPart>> {
    let mut parts = KVec::with_capacity(msg.remote().len(), GFP_KERNEL)?;
    // One remote buffer (nearly every call) goes out from the local ones as
    // lent: no second copy of their descriptors (32 for 128 KiB of pages).
    let local = match (local, msg.remote()) {
        (
            Local::Write {
                lent,
                inject: false,
            },
            [r],
        ) => {
            parts.push(
                conn::RmaPart {
                    key: r.key,
                    addr: r.addr,
                    offset: 0,
                    len: r.len,
                    payload: TxPayload::Lent(lent),
                },
                GFP_KERNEL,
            )?;
            return Ok(parts);
        }
        (local, _) => local,
    };
    let mut offset = 0;
    for r in msg.remote() {
        let payload = match &local {
            Local::Read => TxPayload::None,
            Local::Write { lent, inject: true } => {
                let mut data = KVVec::with_capacity(r.len, GFP_KERNEL)?;
                lent.gather_range(offset, r.len, &mut data)?;
                TxPayload::Copied(data)
            }
            Local::Write {
                lent,
                inject: false,
            } => TxPayload::Lent(lent.range(offset, r.len)?),
        };
        parts.push(
            conn::RmaPart {
                key: r.key,
                addr: r.addr,
                offset,
                len: r.len,
                payload,
            },
            GFP_KERNEL,
        )?;
        offset += r.len;
    }
    Ok(parts)
}

/// The provider's state of a connection request: the server connection.
pub(crate) struct Request {
    conn: Arc<Conn>,
}

impl Request {
    pub(crate) fn new(conn: Arc<Conn>) -> Request {
        Request { conn }
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        // Not taken by an endpoint: nobody else will close it.
        if !self.conn.is_bound() {
            self.conn.close();
        }
    }
}

/// A passive endpoint and its listening socket.
struct SockPep {
    pep: PepRef,
    src: SockAddr,
    listener: Pin<KBox<Mutex<Option<Arc<Listener>>>>>,
}

impl Drop for SockPep {
    fn drop(&mut self) {
        if let Some(l) = self.listener.lock().take() {
            l.close();
        }
    }
}

#[vtable]
impl kofi::PassiveEndpoint for SockPep {
    type Request = Request;

    fn listen(&self) -> Result {
        let mut slot = self.listener.lock();
        if slot.is_some() {
            return Err(fi_error(abi::FI_EOPBADSTATE));
        }
        *slot = Some(Listener::new(&self.src, self.pep.clone())?);
        Ok(())
    }

    fn reject(&self, request: &Request, param: &[u8]) -> Result {
        request.conn.reject(param)
    }

    fn getname(&self, out: &mut KVec<u8>) -> Result {
        let slot = self.listener.lock();
        let a = match slot.as_ref() {
            Some(l) => l.addr()?,
            None => self.src,
        };
        out.extend_from_slice(a.bytes(), GFP_KERNEL)?;
        Ok(())
    }
}
