// SPDX-License-Identifier: GPL-2.0

//! fi_getinfo: asks every provider for its infos, adds the FI_EP_RDM infos
//! the core offers over their FI_EP_MSG ones, and filters by the hints.

use crate::abi;
use crate::compat::CStrBytes;
use crate::errno::{self, to_c};
use crate::flags;
use crate::info::{
    complete, dup_bytes, dup_one, fi_freeinfo, free_one, stamp, view, well_formed, Choices,
    RX_CAPS, TX_CAPS,
};
use crate::info_match;
use crate::registry::{ModuleRef, Registry};
use core::ptr;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;

/// Capabilities an RDM endpoint adds to its MSG endpoints'.
const RDM_CAPS: u64 = flags::FI_SOURCE
    | flags::FI_DIRECTED_RECV
    | flags::FI_TAGGED
    | flags::FI_MULTI_RECV
    | flags::FI_ATOMIC;

/// The FI_EP_RDM info the core offers over a provider's FI_EP_MSG `info`
/// (see `rdm.rs`): a send's header takes one iov, segments carry at most
/// `u32::MAX` bytes of message, sends are ordered per peer.
fn rdm_twin(info: *const abi::fi_info) -> Result<*mut abi::fi_info> {
    // SAFETY: A well-formed info from a provider.
    let twin = unsafe { dup_one(info) }?;
    // SAFETY: `dup_one` copied every attr.
    unsafe {
        let t = &mut *twin;
        t.caps |= RDM_CAPS;
        (*t.tx_attr).caps |= RDM_CAPS & TX_CAPS;
        (*t.rx_attr).caps |= RDM_CAPS & RX_CAPS;
        // A peer's RMA reaches the RDM endpoint's MSG ones, which report it
        // to nobody: no FI_RMA_EVENT.
        t.caps &= !flags::FI_RMA_EVENT;
        (*t.tx_attr).caps &= t.caps;
        (*t.rx_attr).caps &= t.caps;
        // Remote CQ data is the MSG endpoints' own business (rdm.rst).
        t.mode &= !abi::FI_RX_CQ_DATA;
        (*t.ep_attr).type_ = abi::fi_ep_type_FI_EP_RDM;
        let ep = &mut *t.ep_attr;
        ep.protocol_version = ep.protocol;
        ep.protocol = abi::FI_PROTO_KOFI_RDM;
        ep.max_msg_size = ep.max_msg_size.min(u32::MAX as usize);
        let tx = &mut *t.tx_attr;
        tx.iov_limit = tx.iov_limit.saturating_sub(1).max(1);
        tx.inject_size = tx.inject_size.min(crate::rdm::SEG);
        tx.msg_order = u64::from(abi::FI_ORDER_SAS);
        // Sends alone are ordered: no RMA data order either.
        ep.max_order_raw_size = 0;
        ep.max_order_war_size = 0;
        ep.max_order_waw_size = 0;
        // What an RDM operation refuses (rdm/tx.rs) is no default either.
        tx.op_flags &=
            !(flags::FI_TRANSMIT_COMPLETE | flags::FI_DELIVERY_COMPLETE | flags::FI_FENCE);
        (*t.rx_attr).msg_order = u64::from(abi::FI_ORDER_SAS);
        let d = &mut *t.domain_attr;
        // Regions cannot be bound to an RDM endpoint (see mr.rs).
        d.mr_mode &= !(abi::FI_MR_ENDPOINT as c_int);
        if d.av_type == abi::fi_av_type_FI_AV_UNSPEC {
            d.av_type = abi::fi_av_type_FI_AV_MAP;
        }
    }
    Ok(twin)
}

/// Appends to `out` the infos of one provider that satisfy `hints`.
#[allow(clippy::too_many_arguments)]
fn provider_infos(
    module: &ModuleRef,
    version: u32,
    node: *const c_char,
    service: *const c_char,
    flags: u64,
    hints: *const abi::fi_info,
    prov_hints: *const abi::fi_info,
    out: &mut *mut *mut abi::fi_info,
) -> Result {
    let table = module.table();
    let provider = module.provider();
    let Some(getinfo) = table.getinfo else {
        return Ok(());
    };
    let mut list: *mut abi::fi_info = ptr::null_mut();
    // SAFETY: The provider's module is pinned by `module`; the arguments are
    // the consumer's, passed on as the ABI says.
    let ret = unsafe { getinfo(version, node, service, flags, prov_hints, &mut list) };
    if ret != 0 {
        fi_freeinfo(list);
        // A provider with nothing to offer for these arguments is not an error.
        return Ok(());
    }
    // Each MSG info is followed by its RDM twin, filtered like the rest.
    let mut at = list;
    while !at.is_null() {
        // SAFETY: The provider's list, which we own.
        let info = unsafe { &mut *at };
        let next = info.next;
        if well_formed(info) {
            complete(info);
        }
        // SAFETY: `ep_attr` is null or valid.
        let msg =
            well_formed(info) && unsafe { (*info.ep_attr).type_ } == abi::fi_ep_type_FI_EP_MSG;
        if msg {
            match rdm_twin(info) {
                Ok(twin) => {
                    // SAFETY: A fresh, unlinked info.
                    unsafe { (*twin).next = next };
                    info.next = twin;
                }
                Err(e) => {
                    fi_freeinfo(list);
                    return Err(e);
                }
            }
        }
        at = next;
    }
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: The provider returns a valid list that we now own.
        let info = unsafe { &mut *cur };
        let next = info.next;
        info.next = ptr::null_mut();
        let keep = well_formed(info) && {
            // SAFETY: `info` is well formed; the provider name is set below
            // only after the match, so compare with the registered name.
            let mut offer = unsafe { view(info) };
            offer.prov_name = Some(provider.name.cstr_bytes());
            // SAFETY: `hints` is valid when non-null (ABI).
            match unsafe { hints.as_ref() } {
                None => true,
                Some(h) => {
                    // SAFETY: As above.
                    let h = unsafe { view(h) };
                    info_match::check(&h, &offer).is_ok()
                }
            }
        };
        if !keep {
            if let Some(freeinfo) = table.freeinfo {
                // SAFETY: The provider asked to see its infos before they go.
                unsafe { freeinfo(cur) };
            }
            // SAFETY: We own `cur`; it is unlinked.
            unsafe { free_one(cur) };
            cur = next;
            continue;
        }
        // SAFETY: `hints` is valid when non-null (ABI), its attrs null or
        // valid; `info` is well formed.
        unsafe {
            Choices::of(hints.as_ref()).apply(info);
            let hinted = hints
                .as_ref()
                .and_then(|h| h.domain_attr.as_ref())
                .map_or(0, |d| d.mr_mode);
            let d = &mut *info.domain_attr;
            d.mr_mode = info_match::offered_mr_mode(hinted, d.mr_mode, info_match::MR_OPTIONAL);
            // The core's AVs are either type: an RDM info takes the hinted one.
            let av_type = hints
                .as_ref()
                .and_then(|h| h.domain_attr.as_ref())
                .map_or(abi::fi_av_type_FI_AV_UNSPEC, |d| d.av_type);
            if (*info.ep_attr).protocol == abi::FI_PROTO_KOFI_RDM
                && matches!(
                    av_type,
                    abi::fi_av_type_FI_AV_MAP | abi::fi_av_type_FI_AV_TABLE
                )
            {
                d.av_type = av_type;
            }
        }
        if let Err(e) = stamp(info, provider, version) {
            // SAFETY: We own `cur`; it is unlinked.
            unsafe { free_one(cur) };
            fi_freeinfo(next);
            return Err(e);
        }
        // SAFETY: `*out` points to the list's last `next` (or its head).
        unsafe { **out = cur };
        *out = &mut info.next;
        cur = next;
    }
    Ok(())
}

/// Gives the infos of `list` without a source address the `len` bytes at
/// `addr` (a checked sockaddr) as theirs, where its family is theirs.
fn add_source(list: *mut abi::fi_info, addr: *const c_void, len: usize) -> Result {
    let format = if len == crate::addr::SIN6_LEN {
        abi::FI_SOCKADDR_IN6
    } else {
        abi::FI_SOCKADDR_IN
    };
    let mut at = list;
    // SAFETY: A list of valid infos the caller owns.
    while let Some(info) = unsafe { at.as_mut() } {
        if info.src_addr.is_null() && info.addr_format == format {
            info.src_addr = dup_bytes(addr, len)?;
            info.src_addrlen = len;
        }
        at = info.next;
    }
    Ok(())
}

/// A node and service made of an address a consumer names in its hints
/// instead (kfabric's kfi_getinfo has no node or service at all), for the
/// providers, which parse numeric nodes and services.
struct HintedNode {
    node: [u8; 48],
    service: [u8; 8],
}

impl HintedNode {
    /// From the `len` bytes at `addr`: a whole sockaddr_in or sockaddr_in6.
    fn new(addr: *const c_void, len: usize) -> Result<HintedNode> {
        if len != crate::addr::SIN_LEN && len != crate::addr::SIN6_LEN {
            return Err(EINVAL);
        }
        // SAFETY: The hints hold `len` bytes at `addr` (ABI), non-null here.
        let raw = unsafe { core::slice::from_raw_parts(addr.cast::<u8>(), len) };
        let name = crate::addr::Name::parse(raw).map_err(|_| EINVAL)?;
        if name.as_bytes().len() != len {
            return Err(EINVAL);
        }
        let mut ss = abi::__kernel_sockaddr_storage::default();
        // SAFETY: `ss` is larger than any name.
        unsafe {
            ptr::copy_nonoverlapping(
                name.as_bytes().as_ptr(),
                ptr::from_mut(&mut ss).cast::<u8>(),
                len,
            )
        };
        let mut h = HintedNode {
            node: [0; 48],
            service: [0; 8],
        };
        // SAFETY: Both buffers hold their lengths in bytes; snprintf ends
        // them with NUL.
        let ret = unsafe {
            abi::kofi_sockaddr_node(
                &ss,
                h.node.as_mut_ptr().cast(),
                h.node.len(),
                h.service.as_mut_ptr().cast(),
                h.service.len(),
            )
        };
        if ret != 0 {
            return Err(EINVAL);
        }
        Ok(h)
    }
}

/// fi_getinfo's work, for the export and for the core's own askers.
pub(crate) fn getinfo(
    version: u32,
    node: *const c_char,
    service: *const c_char,
    flags: u64,
    hints: *const abi::fi_info,
    info: *mut *mut abi::fi_info,
) -> Result {
    if info.is_null() {
        return Err(EINVAL);
    }
    // SAFETY: `info` is valid for write (ABI).
    unsafe { *info = ptr::null_mut() };
    if version >> 16 != abi::FI_MAJOR_VERSION {
        return Err(errno::enosys());
    }
    if flags & !flags::GETINFO_FLAGS != 0 {
        return Err(errno::ebadflags());
    }
    let registry = Registry::get()?;
    // Without node and service, an address in the hints says where: the
    // destination (connect to it), else the source (FI_SOURCE: listen on
    // it); with FI_SOURCE, the source first.
    let mut node = node;
    let mut service = service;
    let mut flags = flags;
    let mut hinted_src = None;
    let named;
    // SAFETY: `hints` is null or a valid info (ABI).
    if let (true, Some(h)) = (node.is_null() && service.is_null(), unsafe {
        hints.as_ref()
    }) {
        let src = (!h.src_addr.is_null()).then_some((h.src_addr, h.src_addrlen));
        let dest = (!h.dest_addr.is_null()).then_some((h.dest_addr, h.dest_addrlen));
        let pick = match (src, dest) {
            (Some(s), _) if flags & flags::FI_SOURCE != 0 => Some((s, true)),
            (_, Some(d)) => Some((d, false)),
            (Some(s), None) => Some((s, true)),
            (None, None) => None,
        };
        if let Some(((addr, len), source)) = pick {
            named = HintedNode::new(addr, len)?;
            node = named.node.as_ptr().cast();
            service = named.service.as_ptr().cast();
            if source {
                flags |= flags::FI_SOURCE;
            } else {
                // Both named: the source goes into the infos as given.
                hinted_src = src
                    .map(|s| HintedNode::new(s.0, s.1).map(|_| s))
                    .transpose()?;
            }
        }
    }
    // SAFETY: `hints` is null or a valid info (ABI), its strings valid.
    let wanted = unsafe { hints.as_ref() }.map(|h| unsafe { view(h) });
    if let Some(h) = &wanted {
        let known = flags::FI_MSG
            | flags::FI_RMA
            | flags::FI_TAGGED
            | flags::FI_ATOMIC
            | flags::FI_READ
            | flags::FI_WRITE
            | flags::FI_RECV
            | flags::FI_SEND
            | flags::FI_REMOTE_READ
            | flags::FI_REMOTE_WRITE
            | flags::FI_MULTI_RECV
            | flags::FI_REMOTE_CQ_DATA
            | flags::FI_SOURCE
            | (1u64 << 51)
            | (1u64 << 52)
            | (1u64 << 56)
            | (1u64 << 58)
            | (1u64 << 59);
        if h.caps & !known != 0 {
            return Err(errno::ebadflags());
        }
        if h.ep_type > abi::fi_ep_type_FI_EP_RDM {
            return Err(EINVAL);
        }
    }
    let providers = match wanted.and_then(|h| h.prov_name) {
        Some(_) => {
            // SAFETY: `hints` and its fabric_attr are valid (checked by `view`).
            let name = unsafe { CStr::from_char_ptr((*(*hints).fabric_attr).prov_name) };
            let mut one = KVec::new();
            if let Some(p) = registry.pin_or_load(name) {
                one.push(p, GFP_KERNEL)?;
            }
            one
        }
        None => registry.pinned()?,
    };
    // Providers offer MSG endpoints; the core builds RDM ones over them.
    let mut prov_hints = hints;
    let mut msg_hints: *mut abi::fi_info = ptr::null_mut();
    if wanted.is_some_and(|h| h.ep_type == abi::fi_ep_type_FI_EP_RDM) {
        // SAFETY: `hints` is a valid info (ABI).
        msg_hints = unsafe { dup_one(hints) }?;
        // SAFETY: Our copy; `ep_attr` is set since the hints name a type.
        unsafe {
            (*msg_hints).caps &= !RDM_CAPS;
            (*(*msg_hints).ep_attr).type_ = abi::fi_ep_type_FI_EP_MSG;
        }
        prov_hints = msg_hints;
    }
    let mut head: *mut abi::fi_info = ptr::null_mut();
    let mut tail: *mut *mut abi::fi_info = &mut head;
    for module in providers.iter() {
        let r = provider_infos(
            module, version, node, service, flags, hints, prov_hints, &mut tail,
        );
        if let Err(e) = r {
            fi_freeinfo(head);
            fi_freeinfo(msg_hints);
            return Err(e);
        }
    }
    fi_freeinfo(msg_hints);
    if head.is_null() {
        return Err(errno::enodata());
    }
    if let Some((addr, len)) = hinted_src {
        if let Err(e) = add_source(head, addr, len) {
            fi_freeinfo(head);
            return Err(e);
        }
    }
    // SAFETY: `info` is valid for write.
    unsafe { *info = head };
    Ok(())
}

/// `fi_getinfo()`: the infos of every provider that satisfy `hints`, by
/// provider preference. Process context.
#[no_mangle]
pub(crate) extern "C" fn fi_getinfo(
    version: u32,
    node: *const c_char,
    service: *const c_char,
    flags: u64,
    hints: *const abi::fi_info,
    info: *mut *mut abi::fi_info,
) -> c_int {
    to_c(getinfo(version, node, service, flags, hints, info))
}
