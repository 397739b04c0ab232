// SPDX-License-Identifier: GPL-2.0

//! kofi_verbs: the RDMA verbs provider ("verbs").
//!
//! FI_EP_MSG endpoints over RC queue pairs, with connection management by
//! rdma_cm, on every RDMA device that is up (tested on siw and rxe). A kofi
//! domain is a device (its name is the device's) with a PD; an endpoint's
//! connection has its own QP and CQ. Messages follow the protocol in
//! `wire.rs`; RMA goes straight to the peer's fast-registered regions.
//! Devices come and go through an ib_client (`device.rs`); the RDMA calls
//! are wrapped in `rdma.rs`, the provider's one unsafe layer.

use kernel::bindings;
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
mod device;
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
mod rdma;
#[path = "../../include/kofi/rust/ring.rs"]
#[allow(dead_code)]
mod ring;
#[path = "../common/timer.rs"]
mod timer;
mod wire;
#[path = "../../include/kofi/rust/workqueue.rs"]
mod workqueue;

use conn::{Conn, Listener, Payload, Request, RmaLocal, RmaPart};
use device::{VDomain, VRegion, VerbsDomain};
use flags::*;
use kofi::ip_endpoint::IpEndpoint;
use kofi::sockaddr::SockAddr;
use kofi::{
    fi_error, Context, DomainRef, EpRef, Info, InfoList, InfoRef, Lent, Msg, PepRef, RmaMsg,
    TaggedMsg,
};
use kofi::{sockaddr, tagged};
use rdma::{CmId, CmIdSlot};

kofi::module_kofi_provider! {
    provider: Verbs,
    name: "kofi_verbs",
    description: "kofi provider over RDMA verbs (rdma_cm + ib_verbs)",
    license: "GPL",
    alias: ["kofi-verbs"],
}
const CQ_DATA_SIZE: usize = 8;
const INJECT_SIZE: usize = 8192;
const RMA_IOV_LIMIT: usize = 4;
/// The local buffers of an operation: the pages of a 1 MiB block request.
/// Beyond the device's SGE limit a send goes in more segments, a write in
/// more WRITEs, a read (an fi_read, a rendezvous message's into its
/// receive) through a region of its own (verbs.rst).
const IOV_LIMIT: usize = 256;

/// An FI_EP_MSG info for device `dev`, with its limits (queried once by
/// the caller); `local`/`peer` become the source and destination addresses.
pub(crate) fn msg_info(
    local: Option<&SockAddr>,
    peer: Option<&SockAddr>,
    ipv6: bool,
    dev: Option<(&CStr, &abi::kverbs_limits)>,
) -> Result<Info> {
    let limits = dev.map(|(_, l)| l);
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
            | FI_REMOTE_WRITE;
        f.info.addr_format = if ipv6 {
            abi::FI_SOCKADDR_IN6
        } else {
            abi::FI_SOCKADDR_IN
        };
        // To consumers that list it: remote CQ data takes a posted receive,
        // as a verbs write with immediate data does.
        f.info.mode = abi::FI_RX_CQ_DATA;
        f.ep.type_ = abi::fi_ep_type_FI_EP_MSG;
        // As libfabric's verbs provider names them: iWARP devices (siw)
        // apart from InfiniBand and RoCE ones (rxe).
        f.ep.protocol = if limits.is_some_and(|l| l.iwarp) {
            abi::FI_PROTO_IWARP
        } else {
            abi::FI_PROTO_RDMA_CM_IB_RC
        };
        // Messages go in segments; an RMA goes in one work request per
        // remote buffer, up to the port's message size.
        f.ep.max_msg_size = limits.map_or(conn::MAX_MSG, |l| conn::MAX_MSG.min(l.max_msg as usize));
        f.tx.iov_limit = IOV_LIMIT;
        f.tx.rma_iov_limit = RMA_IOV_LIMIT;
        f.tx.inject_size = INJECT_SIZE;
        f.tx.size = conn::TX_DEPTH;
        // The defaults it honours: all but FI_DELIVERY_COMPLETE.
        f.tx.op_flags = FI_COMPLETION
            | FI_INJECT
            | FI_MORE
            | FI_FENCE
            | FI_INJECT_COMPLETE
            | FI_TRANSMIT_COMPLETE;
        f.rx.op_flags = FI_COMPLETION | FI_MORE;
        if limits.is_some_and(|l| l.iwarp) {
            // Its sends and writes keep no more than FI_INJECT_COMPLETE
            // (verbs.rst).
            f.tx.op_flags &= !FI_TRANSMIT_COMPLETE;
        }
        // One RC QP per connection, every operation posted in the order
        // of the calls: the responder places a write before it takes a
        // later SEND (IB RC order; RDMAP's on iWARP), so a send after a
        // write finds its data in place (FI_ORDER_SAW).
        f.tx.msg_order = u64::from(
            abi::FI_ORDER_SAS | abi::FI_ORDER_WAW | abi::FI_ORDER_WAS | abi::FI_ORDER_SAW,
        );
        // The responder places one RC write's data before the next one's
        // (libfabric's verbs provider says the same: up to the port's
        // message size).
        f.ep.max_order_waw_size = f.ep.max_msg_size;
        f.rx.iov_limit = IOV_LIMIT;
        f.rx.size = conn::RECV_DEPTH;
        // FI_MR_ENDPOINT is offered to consumers that ask for it: regions
        // are then registered on the bound endpoint's QP without a wait.
        f.domain.mr_mode = (abi::FI_MR_PROV_KEY | abi::FI_MR_ENDPOINT) as i32;
        f.domain.mr_key_size = 8;
        if let Some(l) = limits {
            // Each connection is a QP and a CQ; each region with remote
            // access an MR.
            f.domain.ep_cnt = l.max_qp as usize;
            f.domain.cq_cnt = l.max_cq as usize;
            f.domain.mr_cnt = l.max_mr as usize;
            // A region spans at most PIECES_MAX MRs of the fast-registration
            // page list (wire::KEY_TABLE): the pages of that many.
            f.domain.mr_iov_limit = wire::PIECES_MAX * l.max_mr_pages.max(1) as usize;
            f.tx.size = conn::TX_DEPTH.min(l.max_qp_wr as usize);
        }
        f.domain.cq_data_size = CQ_DATA_SIZE;
        f.domain.threading = abi::fi_threading_FI_THREAD_SAFE;
        f.domain.control_progress = abi::fi_progress_FI_PROGRESS_AUTO;
        f.domain.data_progress = abi::fi_progress_FI_PROGRESS_AUTO;
    }
    if let Some((name, _)) = dev {
        info.set_domain_name(name)?;
    }
    info.set_fabric_name(c_str!("rdma"))?;
    sockaddr::set_info_addrs(&mut info, local, peer)?;
    Ok(info)
}

struct Verbs;

#[vtable]
impl kofi::Provider for Verbs {
    const NAME: &'static CStr = c_str!("verbs");
    const VERSION: u32 = 1 << 16;
    const PRIORITY: i32 = 20;

    type Fabric = ();
    type Domain = VerbsDomain;
    type Endpoint = VerbsEp;
    type PassiveEp = VerbsPep;
    type ModuleState = VerbsState;

    fn module_state() -> Result<VerbsState> {
        VerbsState::new()
    }

    fn getinfo(
        _version: u32,
        node: Option<&CStr>,
        service: Option<&CStr>,
        flags: u64,
    ) -> Result<InfoList> {
        let mut list = InfoList::default();
        let port = sockaddr::port_of(service)?;
        let addr = match node {
            Some(_) => Some(SockAddr::parse(node, port)?),
            None if flags & FI_SOURCE != 0 => Some(SockAddr::parse(None, port)?),
            None => None,
        };
        // One info per device that is up, per address family.
        for entry in device::devices()?.iter() {
            let dev = entry.device();
            let limits = dev.limits();
            if !limits.active {
                continue;
            }
            for ipv6 in [false, true] {
                if addr.as_ref().is_some_and(|a| a.is_ipv6() != ipv6) {
                    continue;
                }
                let (local, peer) = match &addr {
                    Some(a) if flags & FI_SOURCE != 0 => (Some(a), None),
                    Some(a) => (None, Some(a)),
                    None => (None, None),
                };
                list.push(msg_info(local, peer, ipv6, Some((dev.name(), &limits)))?)?;
            }
        }
        Ok(list)
    }

    fn fabric(_attr: &abi::fi_fabric_attr) -> Result {
        Ok(())
    }

    fn domain(_fabric: &(), domain: DomainRef, info: &InfoRef<'_>) -> Result<VerbsDomain> {
        let name = info.domain_name().ok_or(EINVAL)?;
        let entry = device::entry_named(name).ok_or(ENODEV)?;
        let mr_endpoint = info.mr_mode() & abi::FI_MR_ENDPOINT as i32 != 0;
        Ok(VerbsDomain::new(domain, VDomain::open(entry, mr_endpoint)?))
    }

    fn mr_enable(_domain: &VerbsDomain, region: &VRegion, ep: &VerbsEp) -> Result {
        let conn = ep.conn()?;
        region.enable_through(&conn)
    }

    fn endpoint(domain: &VerbsDomain, ep: EpRef, info: &InfoRef<'_>) -> Result<VerbsEp> {
        let conn = match info.request::<Request>()? {
            Some(req) => {
                let conn = req.conn.clone();
                conn.bind(ep.clone(), domain.inner.clone(), info.rx_cq_data())?;
                Some(conn)
            }
            None => None,
        };
        Ok(VerbsEp {
            ip: IpEndpoint::new(ep, info, conn, conn::RECV_DEPTH)?,
            domain: domain.inner.clone(),
        })
    }

    fn passive_ep(_fabric: &(), pep: PepRef, info: &InfoRef<'_>) -> Result<VerbsPep> {
        let src = match info.src_addr() {
            Some(b) => SockAddr::from_bytes(b)?,
            None => SockAddr::parse(None, 0)?,
        };
        Ok(VerbsPep {
            pep,
            src,
            listening: KBox::pin_init(new_mutex!(None, "kofi_verbs_pep"), GFP_KERNEL)?,
        })
    }
}

/// An active endpoint: at most one connection.
struct VerbsEp {
    ip: IpEndpoint<Conn>,
    domain: Arc<VDomain>,
}

impl VerbsEp {
    /// Sends a message (`tag`: a tagged one's, FI_TAGGED in `flags`) of
    /// `len` bytes from the consumer's buffers (`lend`), or an inject's from
    /// a copy of them appended to the frame that goes (`copy`).
    #[allow(clippy::too_many_arguments)]
    fn send(
        &self,
        flags: u64,
        context: Context,
        data: Option<u64>,
        tag: Option<u64>,
        len: usize,
        lend: impl FnOnce() -> Result<Lent>,
        copy: impl FnOnce(&mut KVec<u8>) -> Result,
    ) -> Result {
        refuse_unkept(flags)?;
        // Every send reports once sent, an inject too: the core posts a CQ
        // entry only when one was asked for, and counts it on a counter
        // (a failed inject is not reported yet: tx::reports_errors).
        let done = Some((context, flags));
        let payload = if flags & FI_INJECT != 0 {
            // The caller's buffer is its own again on return: copied, into
            // the frame that goes on the wire.
            if len > INJECT_SIZE {
                return Err(EINVAL);
            }
            Payload::Inject { len, fill: copy }
        } else {
            Payload::Lent(lend()?)
        };
        self.conn()?.send(payload, data, tag, done)
    }

    fn conn(&self) -> Result<Arc<Conn>> {
        self.ip.conn()
    }
}

kofi::ip_endpoint::ip_endpoint_ops!(VerbsEp, Conn, {
    fn sendmsg(&self, msg: &Msg<'_>, flags: u64) -> Result {
        let data = (flags & FI_REMOTE_CQ_DATA != 0).then_some(msg.data());
        let payload = || msg.lend();
        let copy = |frame: &mut KVec<u8>| msg.gather(frame);
        self.send(flags, msg.context(), data, None, msg.len(), payload, copy)
    }

    fn tsendmsg(&self, msg: &TaggedMsg<'_>, flags: u64) -> Result {
        let data = (flags & FI_REMOTE_CQ_DATA != 0).then_some(msg.data());
        let payload = || msg.lend();
        let copy = |frame: &mut KVec<u8>| msg.gather(frame);
        let flags = flags | FI_TAGGED;
        let tag = Some(msg.tag());
        self.send(flags, msg.context(), data, tag, msg.len(), payload, copy)
    }

    fn writemsg(&self, msg: &RmaMsg<'_>, flags: u64) -> Result {
        refuse_unkept(flags)?;
        let data = (flags & FI_REMOTE_CQ_DATA != 0).then_some(msg.data());
        let local = if flags & FI_INJECT != 0 {
            // The caller's buffer is its own again on return: copy it.
            let mut copy = KVec::new();
            msg.gather(&mut copy)?;
            RmaLocal::Copy(copy)
        } else {
            RmaLocal::Lent(msg.lend()?)
        };
        let parts = rma_parts(msg)?;
        self.conn()?
            .rma(true, local, parts, data, msg.context(), flags)
    }

    fn readmsg(&self, msg: &RmaMsg<'_>, flags: u64) -> Result {
        let local = RmaLocal::Lent(msg.lend()?);
        let parts = rma_parts(msg)?;
        self.conn()?
            .rma(false, local, parts, None, msg.context(), flags)
    }
});

/// Refuses a completion level the provider cannot keep. A send or write
/// completes when the peer's RC acknowledgement arrives (or, for a
/// rendezvous, its FIN): FI_INJECT_COMPLETE and FI_TRANSMIT_COMPLETE hold;
/// that the bytes are where the peer's consumer sees them is not promised.
fn refuse_unkept(flags: u64) -> Result {
    if flags & FI_DELIVERY_COMPLETE != 0 {
        return Err(fi_error(abi::FI_EBADFLAGS));
    }
    Ok(())
}

/// The parts of an RMA call: each remote buffer, and where its bytes are in
/// the local ones (the core checked the lengths add up).
fn rma_parts(msg: &RmaMsg<'_>) -> Result<KVec<RmaPart>> {
    let mut parts = KVec::with_capacity(msg.remote().len(), GFP_KERNEL)?;
    let mut offset = 0;
    for r in msg.remote() {
        parts.push(
            RmaPart {
                key: r.key,
                addr: r.addr,
                offset,
                len: r.len,
            },
            GFP_KERNEL,
        )?;
        offset += r.len;
    }
    Ok(parts)
}

/// A passive endpoint and, once listening, its listener.
struct VerbsPep {
    pep: PepRef,
    src: SockAddr,
    listening: Pin<KBox<Mutex<Option<Listening>>>>,
}

/// A listener and the address it is bound to.
struct Listening {
    listener: Arc<Listener>,
    addr: SockAddr,
}

impl Drop for VerbsPep {
    fn drop(&mut self) {
        if let Some(l) = self.listening.lock().take() {
            l.listener.close();
        }
    }
}

#[vtable]
impl kofi::PassiveEndpoint for VerbsPep {
    type Request = Request;

    fn listen(&self) -> Result {
        let mut slot = self.listening.lock();
        if slot.is_some() {
            return Err(fi_error(abi::FI_EOPBADSTATE));
        }
        let listener = Arc::new(
            Listener {
                pep: self.pep.clone(),
                id: CmIdSlot::empty(),
            },
            GFP_KERNEL,
        )?;
        let id = CmId::new(listener.clone())?;
        id.bind(&self.src)?;
        id.listen(128)?;
        let addr = id.addr(false);
        // No event comes before listening: the slot is still empty.
        if listener.id.put(id).is_err() {
            return Err(EINVAL);
        }
        *slot = Some(Listening { listener, addr });
        Ok(())
    }

    fn reject(&self, request: &Request, param: &[u8]) -> Result {
        request.conn.reject(param)
    }

    fn getname(&self, out: &mut KVec<u8>) -> Result {
        let slot = self.listening.lock();
        let a = slot.as_ref().map_or(self.src, |l| l.addr);
        out.extend_from_slice(a.bytes(), GFP_KERNEL)?;
        Ok(())
    }
}

/// What the module holds beside its registration: the devices' registry
/// and the ib_client that fills it, and the workqueue.
struct VerbsState {
    client: Option<rdma::ClientRegistration>,
    _registry: Pin<KBox<device::Registry>>,
    // Last: connections closed as their devices go poll their CQs there.
    _queue: workqueue::OwnQueue,
}

impl VerbsState {
    fn new() -> Result<Self> {
        // Completions, as the RDMA core's own CQ workqueue has them.
        let queue = workqueue::OwnQueue::new(c_str!("kofi_verbs"), bindings::wq_flags_WQ_HIGHPRI)?;
        // The registry first: the client's callbacks fill it at once.
        let registry = device::Registry::install()?;
        match rdma::ClientRegistration::register() {
            Ok(client) => Ok(VerbsState {
                client: Some(client),
                _registry: registry,
                _queue: queue,
            }),
            Err(e) => {
                device::Registry::uninstall();
                Err(e)
            }
        }
    }
}

impl Drop for VerbsState {
    fn drop(&mut self) {
        // The provider is deregistered and no fabric is open (the module
        // was pinned otherwise): let the devices go, then the registry.
        drop(self.client.take());
        device::Registry::uninstall();
    }
}
