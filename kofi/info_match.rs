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
    let unsupported = offer.mode & !hints.mode;
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
    Ok(())
}

/// The mr_mode an offer keeps: bits in `optional` are modes the provider
/// can work with or without (FI_MR_ENDPOINT), so they stay only when the
/// consumer's hints list them (`hinted`: the hints' mr_mode, 0 without).
pub(crate) fn offered_mr_mode(hinted: i32, offer: i32, optional: i32) -> i32 {
    offer & !(optional & !hinted)
}

/// The order fi_getinfo lists providers in: higher priority first, then
/// registration order. `providers` holds (priority, registration sequence).
pub(crate) fn provider_order(a: (i32, u64), b: (i32, u64)) -> core::cmp::Ordering {
    b.0.cmp(&a.0).then(a.1.cmp(&b.1))
}
