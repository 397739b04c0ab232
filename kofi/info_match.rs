// SPDX-License-Identifier: GPL-2.0

//! fi_getinfo's filter: does a provider's offer satisfy the consumer's hints?
//! Pure logic without kernel dependencies, tested on the host.

/// The fields of an `fi_info` that hints constrain.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct InfoView<'a> {
    pub(crate) caps: u64,
    pub(crate) mode: u64,
    pub(crate) ep_type: u32,
    pub(crate) addr_format: u32,
    pub(crate) prov_name: Option<&'a [u8]>,
    pub(crate) fabric_name: Option<&'a [u8]>,
    pub(crate) domain_name: Option<&'a [u8]>,
    pub(crate) attrs: Attrs,
}

/// The attributes of the ep, tx, rx and domain attrs that hints bound: a
/// hint of 0 (or UNSPEC) leaves one open; otherwise the offer must reach
/// it, as libfabric's util providers check (`ofi_check_*_attr`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Attrs {
    pub(crate) protocol: u32,
    pub(crate) protocol_version: u32,
    pub(crate) max_msg_size: usize,
    pub(crate) tx_msg_order: u64,
    pub(crate) tx_comp_order: u64,
    /// The default flags of transmits: the hints' must be among those the
    /// offer lists (its provider honours as defaults).
    pub(crate) tx_op_flags: u64,
    pub(crate) inject_size: usize,
    pub(crate) tx_size: usize,
    pub(crate) tx_iov_limit: usize,
    pub(crate) rma_iov_limit: usize,
    pub(crate) rx_msg_order: u64,
    pub(crate) rx_comp_order: u64,
    pub(crate) rx_op_flags: u64,
    pub(crate) total_buffered_recv: usize,
    pub(crate) rx_size: usize,
    pub(crate) rx_iov_limit: usize,
    pub(crate) threading: u32,
    pub(crate) control_progress: u32,
    pub(crate) data_progress: u32,
    pub(crate) resource_mgmt: u32,
    pub(crate) mr_mode: i32,
    pub(crate) cq_data_size: usize,
    pub(crate) mr_iov_limit: usize,
    pub(crate) ep_cnt: usize,
    pub(crate) cq_cnt: usize,
    pub(crate) mr_cnt: usize,
    /// The capabilities of transmits and receives: the hints' must be
    /// among the offer's.
    pub(crate) tx_caps: u64,
    pub(crate) rx_caps: u64,
    /// Contexts per endpoint (more than one: scalable endpoints; shared
    /// contexts are `usize::MAX`): at most the offer's.
    pub(crate) tx_ctx_cnt: usize,
    pub(crate) rx_ctx_cnt: usize,
    pub(crate) max_ep_tx_ctx: usize,
    pub(crate) max_ep_rx_ctx: usize,
    /// The domain's contexts each way: at most the offer's.
    pub(crate) domain_tx_ctx_cnt: usize,
    pub(crate) domain_rx_ctx_cnt: usize,
}

/// The values of `fabric.h` this file reads (it is built on the host too,
/// without the bindings; `info.rs` checks they agree).
pub(crate) mod abi_values {
    pub(crate) const FI_THREAD_SAFE: u32 = 1;
    pub(crate) const FI_THREAD_FID: u32 = 2;
    pub(crate) const FI_THREAD_DOMAIN: u32 = 3;
    pub(crate) const FI_THREAD_COMPLETION: u32 = 4;
    pub(crate) const FI_THREAD_ENDPOINT: u32 = 5;
    pub(crate) const FI_PROGRESS_AUTO: u32 = 1;
    pub(crate) const FI_PROGRESS_MANUAL: u32 = 2;
    pub(crate) const FI_RM_DISABLED: u32 = 1;
    pub(crate) const FI_RM_ENABLED: u32 = 2;
    pub(crate) const FI_MR_LOCAL: i32 = 1 << 0;
    pub(crate) const FI_MR_RAW: i32 = 1 << 1;
    pub(crate) const FI_MR_VIRT_ADDR: i32 = 1 << 2;
    pub(crate) const FI_MR_PROV_KEY: i32 = 1 << 4;
    pub(crate) const FI_MR_RMA_EVENT: i32 = 1 << 6;
    pub(crate) const FI_MR_ENDPOINT: i32 = 1 << 7;
    pub(crate) const FI_MSG: u64 = 1 << 1;
    pub(crate) const FI_RMA: u64 = 1 << 2;
    pub(crate) const FI_TAGGED: u64 = 1 << 3;
    pub(crate) const FI_ATOMIC: u64 = 1 << 4;
    pub(crate) const FI_READ: u64 = 1 << 8;
    pub(crate) const FI_WRITE: u64 = 1 << 9;
    pub(crate) const FI_RECV: u64 = 1 << 10;
    pub(crate) const FI_SEND: u64 = 1 << 11;
    pub(crate) const FI_REMOTE_READ: u64 = 1 << 12;
    pub(crate) const FI_REMOTE_WRITE: u64 = 1 << 13;
    pub(crate) const FI_MULTI_RECV: u64 = 1 << 16;
    pub(crate) const FI_TRIGGER: u64 = 1 << 20;
    pub(crate) const FI_FENCE: u64 = 1 << 21;
    pub(crate) const FI_LOCAL_COMM: u64 = 1 << 51;
    pub(crate) const FI_REMOTE_COMM: u64 = 1 << 52;
    pub(crate) const FI_RMA_EVENT: u64 = 1 << 56;
    pub(crate) const FI_SOURCE: u64 = 1 << 57;
    pub(crate) const FI_NAMED_RX_CTX: u64 = 1 << 58;
    pub(crate) const FI_DIRECTED_RECV: u64 = 1 << 59;
    pub(crate) const FI_RX_CQ_DATA: u64 = 1 << 56;
}
use abi_values::*;

/// Registration modes a provider can work with or without: they stay in an
/// offer only when the consumer's hints list them (see [`offered_mr_mode`]).
pub(crate) const MR_OPTIONAL: i32 = FI_MR_ENDPOINT;

/// Modes a provider can work with or without: they stay in an offer (and
/// the endpoints opened from it work in that mode) only when the consumer's
/// hints list them (see [`offered_mode`]).
pub(crate) const MODE_OPTIONAL: u64 = FI_RX_CQ_DATA;

/// Capabilities a consumer must ask for to have them (fi_getinfo(3)): an
/// offer keeps those the hints name and drops the rest.
pub(crate) const PRIMARY_CAPS: u64 = FI_MSG
    | FI_RMA
    | FI_TAGGED
    | FI_ATOMIC
    | FI_NAMED_RX_CTX
    | FI_DIRECTED_RECV
    | FI_READ
    | FI_WRITE
    | FI_RECV
    | FI_SEND
    | FI_REMOTE_READ
    | FI_REMOTE_WRITE;

/// Capabilities an offer reports whether asked for or not.
pub(crate) const SECONDARY_CAPS: u64 = FI_MULTI_RECV
    | FI_SOURCE
    | FI_RMA_EVENT
    | FI_TRIGGER
    | FI_FENCE
    | FI_LOCAL_COMM
    | FI_REMOTE_COMM;

const MSG_DIRECTIONS: u64 = FI_SEND | FI_RECV;
const RMA_DIRECTIONS: u64 = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

/// The capabilities a matched offer gives a consumer, as libfabric's
/// `ofi_get_caps` does: "a provider must enable support for only those
/// primary capabilities which were selected" (fi_getinfo(3)). `offer` is
/// the attribute's own caps (the info's, its tx or rx attr's, its
/// domain's), `info` the info's caps already narrowed (for an attr), and
/// `hinted` the matching hint's caps (0: none named). A hint that names a
/// class (FI_MSG, FI_RMA) without a direction gets every direction the
/// attribute offers for it, and an attribute no direction its info lacks
/// (a send-only info's rx attr: FI_MSG alone).
pub(crate) fn offered_caps(info: u64, hinted: u64, offer: u64) -> u64 {
    let primary = if hinted == 0 {
        info & offer & PRIMARY_CAPS
    } else {
        hinted & PRIMARY_CAPS
    };
    let mut caps = primary | (offer & SECONDARY_CAPS);
    if caps & (FI_MSG | FI_TAGGED) != 0 && caps & MSG_DIRECTIONS == 0 {
        caps |= offer & info & MSG_DIRECTIONS;
    }
    if caps & (FI_RMA | FI_ATOMIC) != 0 && caps & RMA_DIRECTIONS == 0 {
        caps |= offer & info & RMA_DIRECTIONS;
    }
    caps
}

/// Whether an endpoint with `caps` may do an operation of direction `dir`
/// (FI_SEND, FI_RECV, FI_READ, FI_WRITE): a class's directions, once any
/// is named, are the only ones it has; none named, it has them all
/// (fi_getinfo(3)). [`offered_caps`] names them for every info it gives.
pub(crate) fn allows(caps: u64, dir: u64) -> bool {
    let group = if dir & MSG_DIRECTIONS != 0 {
        MSG_DIRECTIONS
    } else {
        RMA_DIRECTIONS
    };
    caps & group == 0 || caps & dir != 0
}

/// Why an offer does not satisfy hints.
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
pub(crate) enum Mismatch {
    /// The hints ask for capabilities the offer lacks.
    Caps(u64),
    /// The offer needs modes the consumer does not support.
    Mode(u64),
    EpType,
    AddrFormat,
    ProvName,
    FabricName,
    DomainName,
    /// The offer does not reach the hint for this attribute.
    Attr(&'static str),
}

const UNSPEC: u32 = 0;

fn name_matches(wanted: Option<&[u8]>, offered: Option<&[u8]>) -> bool {
    match wanted {
        None => true,
        Some(w) => offered.is_some_and(|o| o.eq_ignore_ascii_case(w)),
    }
}

/// Whether `offer` satisfies `hints`, as the Programmer's Guide has it:
/// the hinted capabilities are a subset of the offer's, the offer requires
/// no mode the consumer did not list, and every hinted type, format and name
/// (unspecified ones excepted) is the offer's.
pub(crate) fn check(hints: &InfoView<'_>, offer: &InfoView<'_>) -> Result<(), Mismatch> {
    let missing = hints.caps & !offer.caps;
    if missing != 0 {
        return Err(Mismatch::Caps(missing));
    }
    let unsupported = offered_mode(hints.mode, offer.mode) & !hints.mode;
    if unsupported != 0 {
        return Err(Mismatch::Mode(unsupported));
    }
    if hints.ep_type != UNSPEC && hints.ep_type != offer.ep_type {
        return Err(Mismatch::EpType);
    }
    if hints.addr_format != UNSPEC && hints.addr_format != offer.addr_format {
        return Err(Mismatch::AddrFormat);
    }
    if !name_matches(hints.prov_name, offer.prov_name) {
        return Err(Mismatch::ProvName);
    }
    if !name_matches(hints.fabric_name, offer.fabric_name) {
        return Err(Mismatch::FabricName);
    }
    if !name_matches(hints.domain_name, offer.domain_name) {
        return Err(Mismatch::DomainName);
    }
    check_attrs(hints.caps, &hints.attrs, &offer.attrs).map_err(Mismatch::Attr)
}

/// How much of the work of making calls safe a threading model leaves to
/// the consumer (higher: more); 0 for an unknown one.
fn thread_level(t: u32) -> u32 {
    match t {
        FI_THREAD_SAFE => 1,
        FI_THREAD_FID => 2,
        FI_THREAD_ENDPOINT => 3,
        FI_THREAD_COMPLETION => 4,
        FI_THREAD_DOMAIN => 5,
        UNSPEC => 6,
        _ => 0,
    }
}

/// As [`thread_level`] for progress: automatic asks nothing of the consumer.
fn progress_level(p: u32) -> u32 {
    match p {
        FI_PROGRESS_AUTO => 1,
        FI_PROGRESS_MANUAL => 2,
        UNSPEC => 3,
        _ => 0,
    }
}

/// As [`thread_level`] for resource management: enabled protects the most.
fn rm_level(r: u32) -> u32 {
    match r {
        FI_RM_ENABLED => 1,
        FI_RM_DISABLED => 2,
        UNSPEC => 3,
        _ => 0,
    }
}

/// Whether a model the consumer `wants` is served by the `offered` one: an
/// offer that does not say (UNSPEC) is not held against the hint.
fn model_ok(wants: u32, offered: u32, level: fn(u32) -> u32) -> bool {
    offered == UNSPEC || level(wants) >= level(offered)
}

/// Whether a consumer with `caps` lets peers reach its memory by RMA
/// (libfabric's `ofi_rma_target_allowed`).
fn rma_target(caps: u64) -> bool {
    let directions = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
    caps & (FI_RMA | FI_ATOMIC) != 0
        && (caps & directions == 0 || caps & (FI_REMOTE_READ | FI_REMOTE_WRITE) != 0)
}

/// Whether a consumer supporting registration modes `hinted` (0: any) with
/// `caps` can use a provider requiring `offer` (libfabric's
/// `ofi_check_mr_mode`): every mode the provider requires must be one the
/// consumer lists, leaving out those that matter only to an RMA target
/// when the consumer is none, and the optional ones it did not list.
pub(crate) fn mr_mode_ok(hinted: i32, caps: u64, offer: i32) -> bool {
    let mut required = offered_mr_mode(hinted, offer, MR_OPTIONAL);
    if !rma_target(caps) {
        if required & FI_MR_LOCAL == 0 {
            return true;
        }
        required &= !(FI_MR_RAW | FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_RMA_EVENT);
    }
    hinted == 0 || hinted & required == required
}

/// Checks the attributes of an offer against hints; the name of the first
/// one that falls short.
fn check_attrs(caps: u64, h: &Attrs, o: &Attrs) -> Result<(), &'static str> {
    let at_most = [
        (
            "ep_attr.protocol_version",
            h.protocol_version as usize,
            o.protocol_version as usize,
        ),
        ("ep_attr.max_msg_size", h.max_msg_size, o.max_msg_size),
        ("tx_attr.inject_size", h.inject_size, o.inject_size),
        ("tx_attr.size", h.tx_size, o.tx_size),
        ("tx_attr.iov_limit", h.tx_iov_limit, o.tx_iov_limit),
        ("tx_attr.rma_iov_limit", h.rma_iov_limit, o.rma_iov_limit),
        (
            "rx_attr.total_buffered_recv",
            h.total_buffered_recv,
            o.total_buffered_recv,
        ),
        ("rx_attr.size", h.rx_size, o.rx_size),
        ("rx_attr.iov_limit", h.rx_iov_limit, o.rx_iov_limit),
        ("domain_attr.cq_data_size", h.cq_data_size, o.cq_data_size),
        ("domain_attr.mr_iov_limit", h.mr_iov_limit, o.mr_iov_limit),
        ("ep_attr.tx_ctx_cnt", h.tx_ctx_cnt, o.tx_ctx_cnt),
        ("ep_attr.rx_ctx_cnt", h.rx_ctx_cnt, o.rx_ctx_cnt),
        (
            "domain_attr.max_ep_tx_ctx",
            h.max_ep_tx_ctx,
            o.max_ep_tx_ctx,
        ),
        (
            "domain_attr.max_ep_rx_ctx",
            h.max_ep_rx_ctx,
            o.max_ep_rx_ctx,
        ),
        (
            "domain_attr.tx_ctx_cnt",
            h.domain_tx_ctx_cnt,
            o.domain_tx_ctx_cnt,
        ),
        (
            "domain_attr.rx_ctx_cnt",
            h.domain_rx_ctx_cnt,
            o.domain_rx_ctx_cnt,
        ),
    ];
    for (name, hint, offer) in at_most {
        if hint > offer {
            return Err(name);
        }
    }
    // Counts an offer leaves at 0 are not limited by the provider.
    let counts = [
        ("domain_attr.ep_cnt", h.ep_cnt, o.ep_cnt),
        ("domain_attr.cq_cnt", h.cq_cnt, o.cq_cnt),
        ("domain_attr.mr_cnt", h.mr_cnt, o.mr_cnt),
    ];
    for (name, hint, offer) in counts {
        if offer != 0 && hint > offer {
            return Err(name);
        }
    }
    let subsets = [
        ("tx_attr.msg_order", h.tx_msg_order, o.tx_msg_order),
        ("tx_attr.comp_order", h.tx_comp_order, o.tx_comp_order),
        ("rx_attr.msg_order", h.rx_msg_order, o.rx_msg_order),
        ("rx_attr.comp_order", h.rx_comp_order, o.rx_comp_order),
        ("tx_attr.op_flags", h.tx_op_flags, o.tx_op_flags),
        ("rx_attr.op_flags", h.rx_op_flags, o.rx_op_flags),
        ("tx_attr.caps", h.tx_caps, o.tx_caps),
        ("rx_attr.caps", h.rx_caps, o.rx_caps),
    ];
    for (name, hint, offer) in subsets {
        if hint & !offer != 0 {
            return Err(name);
        }
    }
    if h.protocol != UNSPEC && h.protocol != o.protocol {
        return Err("ep_attr.protocol");
    }
    if !model_ok(h.threading, o.threading, thread_level) {
        return Err("domain_attr.threading");
    }
    if !model_ok(h.control_progress, o.control_progress, progress_level) {
        return Err("domain_attr.control_progress");
    }
    if !model_ok(h.data_progress, o.data_progress, progress_level) {
        return Err("domain_attr.data_progress");
    }
    if !model_ok(h.resource_mgmt, o.resource_mgmt, rm_level) {
        return Err("domain_attr.resource_mgmt");
    }
    if !mr_mode_ok(h.mr_mode, caps, o.mr_mode) {
        return Err("domain_attr.mr_mode");
    }
    Ok(())
}

/// The mr_mode an offer keeps: bits in `optional` are modes the provider
/// can work with or without (FI_MR_ENDPOINT), so they stay only when the
/// consumer's hints list them (`hinted`: the hints' mr_mode, 0 without).
pub(crate) fn offered_mr_mode(hinted: i32, offer: i32, optional: i32) -> i32 {
    offer & !(optional & !hinted)
}

/// The mode an offer keeps: the [`MODE_OPTIONAL`] bits it lists only when
/// the consumer's (`hinted`) do too.
pub(crate) fn offered_mode(hinted: u64, offer: u64) -> u64 {
    offer & !(MODE_OPTIONAL & !hinted)
}

/// The order fi_getinfo lists providers in: higher priority first, then
/// registration order. `providers` holds (priority, registration sequence).
pub(crate) fn provider_order(a: (i32, u64), b: (i32, u64)) -> core::cmp::Ordering {
    b.0.cmp(&a.0).then(a.1.cmp(&b.1))
}
