// SPDX-License-Identifier: GPL-2.0

//! The safe Rust layer for kofi providers.
//!
//! Every Rust provider compiles this module tree in (out-of-tree modules
//! cannot share a crate): its crate root declares
//!
//! ```ignore
//! #[path = ".../include/kofi/rust/abi.rs"] mod abi;
//! #[path = ".../include/kofi/rust/flags.rs"] mod flags;
//! #[path = ".../providers/common/mod.rs"] mod kofi;
//! module_kofi_provider! { provider: MyProvider, name: "kofi_my", ... }
//! ```
//!
//! A provider implements [`Provider`], [`Endpoint`] and [`PassiveEndpoint`]
//! (`provider.rs`); [`module_kofi_provider!`] makes it a kernel module that
//! registers it (`registration.rs`). The layer builds the C dispatch tables
//! from `extern "C"` trampolines generic over the provider (`adapter.rs`,
//! as the kernel's `#[vtable]` adapters do: an op the provider does not
//! implement is NULL, and the core answers -FI_ENOSYS), stores the
//! provider's objects in `fid.prov_data` as boxed foreign pointers, and gives
//! the provider safe handles ([`EpRef`], [`DomainRef`], [`PepRef`],
//! `handles.rs`) to report through, descriptions of its operations
//! (`messages.rs`), of the consumer's memory (`buffers.rs`) and infos to
//! build (`info.rs`). The provider's own code needs no FFI. What IP
//! providers share beyond that lives here too: the active endpoint apart
//! from its transport (`ip_endpoint.rs`), socket addresses (`sockaddr.rs`),
//! tagged matching (`tagged.rs`) and the buffers a connection keeps for
//! its next sends (`kept.rs`); a count of the live connections, checked at
//! unload (`census.rs`). The provider's workqueue is
//! `include/kofi/rust/workqueue.rs`, which the core uses too.

mod adapter;
pub(crate) mod buffers;
pub(crate) mod census;
pub(crate) mod handles;
pub(crate) mod info;
pub(crate) mod ip_endpoint;
pub(crate) mod kept;
pub(crate) mod messages;
pub(crate) mod provider;
pub(crate) mod registration;
pub(crate) mod sockaddr;
pub(crate) mod tagged;

// What each provider uses of these differs.
#[allow(unused_imports)]
pub(crate) use self::{
    buffers::{Kvecs, Lent, LocalAt, MrHold, Pages, Premapped},
    handles::{DomainRef, EpRef, PeerAddr, PepRef, ProgressWaker},
    info::{Info, InfoFields, InfoList, InfoRef},
    messages::{
        cancel_posted, report_cancelled, send_kind, Msg, PostedRecv, RmaMsg, TagMatch, TaggedMsg,
    },
    provider::{Domain, Endpoint, MrAttr, NoPassiveEp, PassiveEndpoint, Provider},
    registration::{module_kofi_provider, ProviderModule, Registration},
};

crate::compat::kofi_modinfo!(import_kofi);

pub(crate) use crate::fi_error::fi_error;

/// The consumer's context of an operation, returned in its completion.
pub(crate) use crate::context::Context;
