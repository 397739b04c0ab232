// SPDX-License-Identifier: GPL-2.0

//! Capability, mode and operation bits as `u64` (bindgen types the ones
//! below 2^32 as `u32`) and the enum values the core compares against.

use crate::abi;

macro_rules! bits {
    ($($name:ident),* $(,)?) => {
        $(
            #[doc = concat!("`", stringify!($name), "`.")]
            pub(crate) const $name: u64 = abi::$name as u64;
        )*
    };
}

bits!(
    FI_MSG,
    FI_RMA,
    FI_TAGGED,
    FI_ATOMIC,
    FI_READ,
    FI_WRITE,
    FI_RECV,
    FI_SEND,
    FI_REMOTE_READ,
    FI_REMOTE_WRITE,
    FI_MULTI_RECV,
    FI_REMOTE_CQ_DATA,
    FI_MORE,
    FI_PEEK,
    FI_FENCE,
    FI_COMPLETION,
    FI_INJECT,
    FI_INJECT_COMPLETE,
    FI_TRANSMIT_COMPLETE,
    FI_DELIVERY_COMPLETE,
    FI_SOURCE,
    FI_NUMERICHOST,
    FI_PROV_ATTR_ONLY,
    FI_SELECTIVE_COMPLETION,
    FI_DIRECTED_RECV,
    FI_RMA_EVENT,
    FI_CLAIM,
    FI_DISCARD,
    FI_TRIGGER,
    FI_LOCAL_COMM,
    FI_REMOTE_COMM,
    FI_NAMED_RX_CTX,
);

/// `FI_ADDR_UNSPEC` (bindgen cannot evaluate its cast).
pub(crate) const FI_ADDR_UNSPEC: u64 = u64::MAX;
/// `FI_ADDR_NOTAVAIL`, the same value.
pub(crate) const FI_ADDR_NOTAVAIL: u64 = u64::MAX;

/// Flags a transmit (send or RMA) accepts from the consumer.
pub(crate) const TX_OP_FLAGS: u64 = FI_COMPLETION
    | FI_INJECT
    | FI_REMOTE_CQ_DATA
    | FI_MORE
    | FI_FENCE
    | FI_INJECT_COMPLETE
    | FI_TRANSMIT_COMPLETE
    | FI_DELIVERY_COMPLETE;

/// Flags a receive accepts from the consumer.
pub(crate) const RX_OP_FLAGS: u64 = FI_COMPLETION | FI_MORE;

/// The flags fi_getinfo() knows.
pub(crate) const GETINFO_FLAGS: u64 = FI_SOURCE | FI_NUMERICHOST | FI_PROV_ATTR_ONLY;

/// The bits fi_ep_bind() of a CQ knows.
pub(crate) const CQ_BIND_FLAGS: u64 = FI_SEND | FI_RECV | FI_SELECTIVE_COMPLETION;

pub(crate) const MR_ACCESS: u64 = abi::KOFI_MR_ACCESS as u64;
