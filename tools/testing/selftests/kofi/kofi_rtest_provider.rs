// SPDX-License-Identifier: GPL-2.0

//! kofi_rtest_provider: the test provider's twin in Rust, built on the safe
//! provider layer (`providers/common/`) that every Rust provider
//! uses. It registers provider "rtest" and completes operations locally,
//! like the C fixture: an endpoint's sends land in its own posted receives,
//! RMA reaches its own domain's regions through the core's key table, and
//! fi_connect is answered with FI_CONNECTED. The core's data suite runs
//! against both, so the layer is held to the C ABI's behaviour.

use kernel::prelude::*;
use kernel::sync::{new_spinlock, SpinLock};
use kernel::{c_str, str::CStr};

#[path = "../../../../include/kofi/rust/abi.rs"]
mod abi;
#[path = "../../../../include/kofi/rust/compat.rs"]
#[allow(dead_code)]
mod compat;
#[path = "../../../../include/kofi/rust/context.rs"]
#[allow(dead_code)]
mod context;
#[path = "../../../../include/kofi/rust/fi_error.rs"]
mod fi_error;
#[path = "../../../../include/kofi/rust/flags.rs"]
#[allow(dead_code)]
mod flags;
#[path = "../../../../include/kofi/rust/iovec.rs"]
#[allow(dead_code)]
mod iovec;
#[path = "../../../../providers/common/mod.rs"]
#[allow(dead_code)]
mod kofi;
#[path = "../../../../include/kofi/rust/ring.rs"]
#[allow(dead_code)]
mod ring;

use flags::*;
use kofi::{fi_error, Context, DomainRef, EpRef, Info, InfoList, InfoRef, Msg, PostedRecv, RmaMsg};
use ring::Ring;

kofi::module_kofi_provider! {
    provider: Rtest,
    name: "kofi_rtest_provider",
    description: "kofi test provider in Rust, over the safe provider layer",
    license: "GPL",
    alias: ["kofi-rtest"],
}
/// The same limits as the C test provider (kofi_test_provider.h).
const MAX_MSG: usize = 65536;
const IOV_LIMIT: usize = 4;
const INJECT_SIZE: usize = 64;
const MAX_RECV: usize = 16;

struct Rtest;

#[vtable]
impl kofi::Provider for Rtest {
    const NAME: &'static CStr = c_str!("rtest");
    const VERSION: u32 = 1 << 16;
    const PRIORITY: i32 = 0;

    type Fabric = ();
    type Domain = DomainRef;
    type Endpoint = RtestEp;
    type PassiveEp = kofi::NoPassiveEp;
    type ModuleState = ();

    fn module_state() -> Result {
        Ok(())
    }

    fn getinfo(
        _version: u32,
        _node: Option<&CStr>,
        _service: Option<&CStr>,
        _flags: u64,
    ) -> Result<InfoList> {
        let mut info = Info::new()?;
        {
            let f = info.fields();
            f.info.caps = FI_MSG
                | FI_RMA
                | FI_SEND
                | FI_RECV
                | FI_READ
                | FI_WRITE
                | FI_REMOTE_READ
                | FI_REMOTE_WRITE;
            f.info.addr_format = abi::FI_SOCKADDR_IN;
            f.ep.type_ = abi::fi_ep_type_FI_EP_MSG;
            f.ep.max_msg_size = MAX_MSG;
            f.tx.iov_limit = IOV_LIMIT;
            f.tx.rma_iov_limit = IOV_LIMIT;
            f.tx.inject_size = INJECT_SIZE;
            f.tx.size = 64;
            f.rx.iov_limit = IOV_LIMIT;
            f.rx.size = MAX_RECV;
            f.domain.mr_mode = abi::FI_MR_PROV_KEY as i32;
            f.domain.mr_iov_limit = IOV_LIMIT;
            f.domain.cq_data_size = 8;
            f.domain.threading = abi::fi_threading_FI_THREAD_SAFE;
            f.domain.data_progress = abi::fi_progress_FI_PROGRESS_AUTO;
        }
        info.set_domain_name(c_str!("rtest0"))?;
        info.set_fabric_name(c_str!("rtestfabric"))?;
        let mut list = InfoList::default();
        list.push(info)?;
        Ok(list)
    }

    fn fabric(_attr: &abi::fi_fabric_attr) -> Result {
        Ok(())
    }

    fn domain(_fabric: &(), domain: DomainRef, _info: &InfoRef<'_>) -> Result<DomainRef> {
        Ok(domain)
    }

    fn endpoint(domain: &DomainRef, ep: EpRef, _info: &InfoRef<'_>) -> Result<RtestEp> {
        let mut slots = KVec::with_capacity(MAX_RECV, GFP_KERNEL)?;
        for _ in 0..MAX_RECV {
            slots.push(None, GFP_KERNEL)?;
        }
        Ok(RtestEp {
            ep,
            domain: domain.clone(),
            recvs: KBox::pin_init(new_spinlock!(Ring::new(slots), "rtest_recvs"), GFP_KERNEL)?,
        })
    }
}

/// Posted receives, oldest first.
type RecvQueue = Ring<PostedRecv, KVec<Option<PostedRecv>>>;

/// An endpoint: its handle and posted receives.
struct RtestEp {
    ep: EpRef,
    domain: DomainRef,
    recvs: Pin<KBox<SpinLock<RecvQueue>>>,
}

impl RtestEp {
    /// RMA against the endpoint's own domain: each remote buffer in turn.
    fn rma(&self, msg: &RmaMsg<'_>, flags: u64, write: bool) -> Result {
        let mut local = KVec::new();
        if write {
            msg.gather(&mut local)?;
        }
        let total: usize = msg.remote().iter().map(|r| r.len).sum();
        if !write {
            local.extend_with(total, 0u8, GFP_KERNEL)?;
        }
        let access = if write {
            FI_REMOTE_WRITE
        } else {
            FI_REMOTE_READ
        };
        let mut offset = 0;
        let mut result = Ok(());
        for r in msg.remote() {
            let chunk = &mut local[offset..offset + r.len];
            result = self
                .domain
                .mr_get(r.key, r.addr, r.len, access)
                .and_then(|held| {
                    if write {
                        held.write(0, chunk)
                    } else {
                        held.read(0, chunk)
                    }
                });
            if result.is_err() {
                break;
            }
            offset += r.len;
        }
        let kind = FI_RMA | if write { FI_WRITE } else { FI_READ };
        if let Err(e) = result {
            // The failure goes to the initiator's CQ; the call itself succeeded.
            let _ = self.ep.complete_error(
                kind,
                msg.context(),
                e.to_errno().unsigned_abs(),
                0,
                0,
                e.to_errno(),
            );
            return Ok(());
        }
        if !write {
            msg.scatter(&local)?;
        }
        // A full CQ records its own overrun: nothing more to do here.
        if write && flags & FI_REMOTE_CQ_DATA != 0 {
            let _ = self.ep.complete(
                FI_REMOTE_WRITE | FI_RMA | FI_REMOTE_CQ_DATA,
                Context::NONE,
                total,
                msg.data(),
            );
        }
        let _ = self
            .ep
            .complete(kind | (flags & FI_COMPLETION), msg.context(), total, 0);
        Ok(())
    }
}

#[vtable]
impl kofi::Endpoint for RtestEp {
    fn connect(&self, _addr: kofi::PeerAddr, param: &[u8]) -> Result {
        self.ep.event(abi::FI_CONNECTED, param)
    }

    fn shutdown(&self) -> Result {
        self.ep.event(abi::FI_SHUTDOWN, &[])
    }

    fn getname(&self, out: &mut KVec<u8>) -> Result {
        out.extend_from_slice(b"rtest-ep\0", GFP_KERNEL)?;
        Ok(())
    }

    fn recvmsg(&self, msg: &Msg<'_>, flags: u64) -> Result {
        let posted = msg.to_posted(flags)?;
        self.recvs
            .lock()
            .push(posted)
            .map_err(|_| fi_error(abi::FI_EAGAIN))
    }

    fn sendmsg(&self, msg: &Msg<'_>, flags: u64) -> Result {
        let mut data = KVec::new();
        msg.gather(&mut data)?;
        let recv = self
            .recvs
            .lock()
            .pop()
            .ok_or_else(|| fi_error(abi::FI_EAGAIN))?;
        let copied = recv.fill(&data);
        // A full CQ records its own overrun: the results are not needed.
        if copied < data.len() {
            let _ = self.ep.complete_error(
                FI_RECV | FI_MSG,
                recv.context,
                abi::FI_ETRUNC,
                copied,
                data.len() - copied,
                0,
            );
        } else {
            let flags_rx =
                FI_RECV | FI_MSG | (recv.flags & FI_COMPLETION) | (flags & FI_REMOTE_CQ_DATA);
            let _ = self
                .ep
                .complete(flags_rx, recv.context, data.len(), msg.data());
        }
        let _ = self.ep.complete(
            FI_SEND | FI_MSG | (flags & FI_COMPLETION),
            msg.context(),
            0,
            0,
        );
        Ok(())
    }

    fn writemsg(&self, msg: &RmaMsg<'_>, flags: u64) -> Result {
        self.rma(msg, flags, true)
    }

    fn readmsg(&self, msg: &RmaMsg<'_>, flags: u64) -> Result {
        self.rma(msg, flags, false)
    }
}
