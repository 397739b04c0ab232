// SPDX-License-Identifier: GPL-2.0

//! The traits a provider implements: [`Provider`] (fabric, domain,
//! registration), [`Endpoint`], [`PassiveEndpoint`] and [`Domain`].

use super::buffers::Premapped;
use super::handles::{DomainRef, EpRef, PeerAddr, PepRef};
use super::info::{InfoList, InfoRef};
use super::messages::{Msg, RmaMsg, TaggedMsg};
use super::Context;
use crate::abi;
use crate::iovec::Iov;
use kernel::error::VTABLE_DEFAULT_ERROR;
use kernel::prelude::*;

/// A registration's arguments, checked by the core, borrowed for the op.
///
/// # Invariants
///
/// Made by the adapter from an fi_mr_reg's attributes only: the memory it
/// names is the consumer's, registered until the region's fi_close returns
/// (fi_mr(3)); the provider lets go of what it maps of it by then.
pub(crate) struct MrAttr<'a> {
    pub(super) raw: &'a abi::fi_mr_attr,
}

impl MrAttr<'_> {
    /// FI_REMOTE_READ, FI_REMOTE_WRITE and the local access flags.
    pub(crate) fn access(&self) -> u64 {
        self.raw.access
    }

    /// The RMA address of the region's first byte.
    pub(crate) fn offset(&self) -> u64 {
        self.raw.offset
    }

    /// The registration's memory.
    pub(crate) fn memory(&self) -> Iov<'_> {
        let n = self.raw.iov_count;
        // SAFETY: The core checked the array of the iov type holds `n`
        // entries; it lives as long as the registration call.
        unsafe {
            if self.raw.iov_type == abi::kofi_iov_type_KOFI_IOV_BVEC {
                Iov::Bvec(core::slice::from_raw_parts(self.raw.mr_bvec, n))
            } else {
                Iov::Kvec(core::slice::from_raw_parts(self.raw.mr_iov, n))
            }
        }
    }
}

/// A domain's operations: memory registration with the provider, for
/// providers whose hardware serves RMA (the others leave it to the core's
/// key table).
#[vtable]
pub(crate) trait Domain: Send + Sync + Sized + 'static {
    /// What the provider keeps per registered region.
    type Region: Send + Sync + 'static;

    /// Registers memory; returns the region's key (the domain has
    /// FI_MR_PROV_KEY) and the provider's state of it, dropped at fi_close.
    fn mr_reg(&self, _attr: &MrAttr<'_>) -> Result<(u64, Self::Region)> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// What the operations whose buffers carry `region`'s descriptor hold
    /// of it, to use instead of preparing those buffers themselves (a DMA
    /// mapping made at registration); `None`: nothing.
    fn premapped(_region: &Self::Region) -> Option<Premapped> {
        None
    }
}

#[vtable]
impl Domain for DomainRef {
    type Region = ();
}

/// A provider: its identity, getinfo, and how to open its objects.
#[vtable]
pub(crate) trait Provider: Sync + Sized + 'static {
    const NAME: &'static CStr;
    /// `FI_VERSION(major, minor)` of the provider.
    const VERSION: u32;
    const PRIORITY: i32;

    type Fabric: Send + Sync;
    type Domain: Domain;
    type Endpoint: Endpoint;
    type PassiveEp: PassiveEndpoint;
    /// What the provider's module holds beside its registration (its
    /// workqueue, say): made before the provider is registered, dropped
    /// after it is deregistered (see `ProviderModule`).
    type ModuleState: Send + Sync;

    /// Makes the module's state as the module loads.
    fn module_state() -> Result<Self::ModuleState>;

    /// The infos this provider offers (the core filters them by the hints).
    fn getinfo(
        version: u32,
        node: Option<&CStr>,
        service: Option<&CStr>,
        flags: u64,
    ) -> Result<InfoList>;

    fn fabric(attr: &abi::fi_fabric_attr) -> Result<Self::Fabric>;

    fn domain(fabric: &Self::Fabric, domain: DomainRef, info: &InfoRef<'_>)
        -> Result<Self::Domain>;

    /// An FI_MR_ENDPOINT domain's fi_mr_enable: makes `region`, bound to
    /// `ep`, usable for operations posted on `ep` from now on, without
    /// waiting (see `mr_enable` in kofi_provider.h).
    fn mr_enable(
        _domain: &Self::Domain,
        _region: &<Self::Domain as Domain>::Region,
        _ep: &Self::Endpoint,
    ) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }

    fn endpoint(domain: &Self::Domain, ep: EpRef, info: &InfoRef<'_>) -> Result<Self::Endpoint>;

    fn passive_ep(
        _fabric: &Self::Fabric,
        _pep: PepRef,
        _info: &InfoRef<'_>,
    ) -> Result<Self::PassiveEp> {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// An active endpoint's operations. Those not implemented are NULL in the
/// table and the core answers -FI_ENOSYS.
#[vtable]
pub(crate) trait Endpoint: Send + Sync + Sized + 'static {
    fn enable(&self) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// `addr`: the consumer's address argument, read with [`PeerAddr::bytes`].
    fn connect(&self, _addr: PeerAddr, _param: &[u8]) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn accept(&self, _param: &[u8]) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn shutdown(&self) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Appends the local address to `out`.
    fn getname(&self, _out: &mut KVec<u8>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Appends the peer's address to `out`.
    fn getpeer(&self, _out: &mut KVec<u8>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn sendmsg(&self, _msg: &Msg<'_>, _flags: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn recvmsg(&self, _msg: &Msg<'_>, _flags: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn readmsg(&self, _msg: &RmaMsg<'_>, _flags: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn writemsg(&self, _msg: &RmaMsg<'_>, _flags: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// A tagged send (an endpoint whose info offers FI_TAGGED).
    fn tsendmsg(&self, _msg: &TaggedMsg<'_>, _flags: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// A tagged receive, with FI_PEEK, FI_CLAIM and FI_DISCARD as the
    /// consumer gave them (a combination the core checked).
    fn trecvmsg(&self, _msg: &TaggedMsg<'_>, _flags: u64) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// fi_cancel: takes back the oldest receive posted with `context` that
    /// no data reached yet, reporting it FI_ECANCELED; -FI_EBUSY while it is
    /// being filled, -FI_ENOENT when none waits.
    fn cancel(&self, _context: Context) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    /// Makes the progress the endpoint can without waiting for its peer, in
    /// a consumer's thread that a [`ProgressWaker`] woke.
    fn progress(&self) {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// A passive endpoint's operations.
#[vtable]
pub(crate) trait PassiveEndpoint: Send + Sync + Sized + 'static {
    /// What the provider keeps per connection request ([`PepRef::connreq`]).
    type Request: Send + 'static;

    fn listen(&self) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn reject(&self, _request: &Self::Request, _param: &[u8]) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
    fn getname(&self, _out: &mut KVec<u8>) -> Result {
        kernel::build_error!(VTABLE_DEFAULT_ERROR)
    }
}

/// A provider that offers no passive endpoints.
pub(crate) struct NoPassiveEp;

#[vtable]
impl PassiveEndpoint for NoPassiveEp {
    type Request = ();
}
